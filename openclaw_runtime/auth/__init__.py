"""Auth profiles: credentials, their shared health ledger (cooldowns, disables) and ordering.

What the orchestrator calls (OpenClaw's names in snake_case):

* order the candidates of a run: ``resolve_auth_profile_order(store=await s.load(), ...)``,
  then ``create_scoped_auth_profile_store(s, order)`` for the run;
* skip a cooling candidate: ``is_auth_profile_in_cooldown(state, profile_id, ...)``;
* record a failure: ``resolve_auth_profile_failure_reason(...)`` then
  ``await mark_auth_profile_failure(s, profile_id, reason, model_id=...)``;
* record a success: ``mark_embedded_run_auth_profile_success(task_group, s, profile_id)``
  (fire and forget) or ``await mark_auth_profile_success(s, profile_id)``.

Modules: ``profiles`` (credentials), ``state`` (the ledger), ``cooldown`` (its rules),
``order``, ``recording``, ``wham``, ``operations`` (the ledger calls), ``store`` (in memory,
scoped), ``json_file`` (``auth-profiles.json``). This face re-exports what the runner, the
CLI, plugins and docs use; the rest is imported from its module.
"""

import typing as _typing

from .._lazy_face import lazy_getattr as _lazy_getattr

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from .cooldown import (  # noqa: I001 (packed: a face has at most 100 lines)
        DEFAULT_AUTH_COOLDOWN_POLICY, AuthCooldownPolicy, clear_expired_cooldowns,
    )
    from .json_file import JsonFileAuthProfileStore, open_auth_profile_store
    from .operations import (
        AuthProfileScopeError, AuthProfileStore, AuthProfileStoreError, clear_auth_profile_cooldown,
        mark_auth_profile_blocked_until, mark_auth_profile_failure, mark_auth_profile_success,
        mark_auth_profile_used, mark_embedded_run_auth_profile_success, record_auth_profile_success,
    )
    from .order import (
        is_auth_profile_in_cooldown, resolve_auth_profile_order,
        resolve_profiles_unavailable_reason,
    )
    from .profiles import AuthProfile, CredentialRef, UnresolvedCredentialError
    from .recording import resolve_auth_profile_failure_reason
    from .state import AuthProfileStoreState, ProfileUsageStats
    from .store import (
        InMemoryAuthProfileStore, ScopedAuthProfileStore, create_scoped_auth_profile_store,
    )
    # fmt: on

#: module -> the public names it provides, each imported on first use (start-up time)
_LAZY = {
    "cooldown": "DEFAULT_AUTH_COOLDOWN_POLICY AuthCooldownPolicy clear_expired_cooldowns",
    "json_file": "JsonFileAuthProfileStore open_auth_profile_store",
    "operations": (
        "AuthProfileScopeError AuthProfileStore AuthProfileStoreError "
        "clear_auth_profile_cooldown mark_auth_profile_blocked_until mark_auth_profile_failure "
        "mark_auth_profile_success mark_auth_profile_used mark_embedded_run_auth_profile_success "
        "record_auth_profile_success"
    ),
    "order": (
        "is_auth_profile_in_cooldown resolve_auth_profile_order resolve_profiles_unavailable_reason"
    ),
    "profiles": "AuthProfile CredentialRef UnresolvedCredentialError",
    "recording": "resolve_auth_profile_failure_reason",
    "state": "AuthProfileStoreState ProfileUsageStats",
    "store": "InMemoryAuthProfileStore ScopedAuthProfileStore create_scoped_auth_profile_store",
}
__getattr__ = _lazy_getattr(__name__, _LAZY)


__all__ = [
    "DEFAULT_AUTH_COOLDOWN_POLICY", "AuthCooldownPolicy", "AuthProfile", "AuthProfileScopeError",
    "AuthProfileStore", "AuthProfileStoreError", "AuthProfileStoreState", "CredentialRef",
    "InMemoryAuthProfileStore", "JsonFileAuthProfileStore", "ProfileUsageStats",
    "ScopedAuthProfileStore", "UnresolvedCredentialError", "clear_auth_profile_cooldown",
    "clear_expired_cooldowns", "create_scoped_auth_profile_store", "is_auth_profile_in_cooldown",
    "mark_auth_profile_blocked_until", "mark_auth_profile_failure", "mark_auth_profile_success",
    "mark_auth_profile_used", "mark_embedded_run_auth_profile_success", "open_auth_profile_store",
    "record_auth_profile_success", "resolve_auth_profile_failure_reason",
    "resolve_auth_profile_order", "resolve_profiles_unavailable_reason",
]  # fmt: skip
