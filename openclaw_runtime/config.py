"""``RuntimeConfig``: the runtime's settings, from ``openclaw-runtime.toml``, a dict, or defaults.

Unknown keys are errors that name the key, so a typo never silently does nothing.
Environment variables for plugins (``OPENCLAW_RUNTIME_PLUGINS``...) override the file, and
so do ``OPENCLAW_RUNTIME_STATE_DIR`` and ``OPENCLAW_RUNTIME_MODEL`` (applied by ``load``).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ._exceptions import ConfigurationError
from .auth.cooldown import AuthCooldownPolicy
from .auth.profiles import AuthProfile
from .llm import Model, ThinkingLevel
from .prompt.settings import PromptSettings
from .reply.settings import ReplySettings
from .toolpolicy.settings import AgentEntrySettings, GroupSettings, ToolPolicySettings

__all__ = [
    "CONFIG_FILENAME",
    "AgentDefaults",
    "AuthCooldownSettings",
    "AuthSettings",
    "BackendSettings",
    "PluginSettings",
    "RunRetrySettings",
    "RuntimeConfig",
]

CONFIG_FILENAME = "openclaw-runtime.toml"
ENV_CONFIG = "OPENCLAW_RUNTIME_CONFIG"
ENV_STATE_DIR = "OPENCLAW_RUNTIME_STATE_DIR"
ENV_MODEL = "OPENCLAW_RUNTIME_MODEL"


class _Section(BaseModel):
    # inputs stay out of validation errors: a misplaced key may hold a credential
    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, hide_input_in_errors=True
    )


class PluginSettings(_Section):
    """``[plugins]``: which entry-point plugins load, and how strictly.

    Containment (see ``openclaw_runtime.containment``): ``fault_threshold`` faults of one plugin
    unit within ``fault_window_seconds`` quarantine it for ``quarantine_seconds``, then one
    trial call decides. ``prefer`` settles a component-name clash: component name → the plugin
    whose registration wins (otherwise built-ins win, then the first registered).
    ``settings``: ``[plugins.settings.<name>]`` tables, one per plugin, each validated by the
    pydantic model that plugin declares (``register_plugin_settings``).
    """

    allow: list[str] | None = None
    disable: list[str] = Field(default_factory=list)
    strict: bool = False
    trace: bool = False
    fault_threshold: int = Field(default=3, ge=1)
    fault_window_seconds: float = Field(default=300.0, gt=0)
    quarantine_seconds: float = Field(default=600.0, ge=0)
    prefer: dict[str, str] = Field(default_factory=dict)
    settings: dict[str, dict[str, Any]] = Field(default_factory=dict)


class RunRetrySettings(_Section):
    """``[agent.run_retries]``: the attempt budget ``clamp(base + max(1, n)·per_profile, min,
    max)`` for n auth-profile candidates (OpenClaw: 24, 8, 32, 160)."""

    base: int | None = Field(default=None, ge=1)
    per_profile: int | None = Field(default=None, ge=0)
    min: int | None = Field(default=None, ge=1)
    max: int | None = Field(default=None, ge=1)


class AgentDefaults(PromptSettings, _Section):
    """``[agent]``: defaults for runs that do not say otherwise.

    ``model`` and ``fallbacks`` are ``provider/model`` refs, aliases or ids;
    ``timeout_seconds`` bounds one attempt (0 = no limit) and the lanes wait that plus a
    30 s grace; ``max_concurrent`` is the global lane's capacity, per process unless
    ``global_cap_scope = "machine"`` (shared by the processes on one state dir);
    ``context_tokens`` caps the model's context window; ``max_tokens`` caps each model
    call's output (default: the model's ``max_tokens``); ``compaction_model`` summarizes
    (default: the run's model); ``steering_mode`` / ``follow_up_mode`` say whether a live
    run takes its queued steered / follow-up messages ``one-at-a-time`` (the default, as in
    OpenClaw) or ``all`` at each drain point. The system-prompt and skills keys (``prompt_mode``,
    ``workspace``, ``skills_dir``, ``timezone``...) come from ``PromptSettings``.
    """

    model: str | None = None
    fallbacks: list[str] = Field(default_factory=list)
    model_aliases: dict[str, str] = Field(default_factory=dict)
    thinking_level: ThinkingLevel = "off"
    system_prompt: str = ""
    timeout_seconds: float = Field(default=600, ge=0, allow_inf_nan=False)
    idle_timeout_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    max_concurrent: int = Field(default=4, ge=1)
    global_cap_scope: Literal["process", "machine"] = "process"
    context_tokens: int | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0, strict=True)
    compaction_model: str | None = None
    keep_recent_tokens: int = Field(default=20_000, gt=0)
    steering_mode: Literal["all", "one-at-a-time"] = "one-at-a-time"
    follow_up_mode: Literal["all", "one-at-a-time"] = "one-at-a-time"
    run_retries: RunRetrySettings = Field(default_factory=RunRetrySettings)
    tools: ToolPolicySettings = Field(default_factory=ToolPolicySettings)  # docs/tools.md
    reply: ReplySettings = Field(default_factory=ReplySettings)  # [agent.reply]


class AuthCooldownSettings(_Section):
    """``[auth.cooldowns]``: the disabled track (billing, auth_permanent) and failure window.

    Ordinary cooldowns (30 s → 60 s → 5 min) and the rate-limit backoff (30 s → 24 h) are
    fixed, as in OpenClaw.
    """

    billing_backoff_minutes: float = Field(default=10, gt=0, allow_inf_nan=False)
    billing_max_hours: float = Field(default=24, gt=0, allow_inf_nan=False)
    billing_backoff_minutes_by_provider: dict[str, float] = Field(default_factory=dict)
    auth_permanent_backoff_minutes: float = Field(default=10, gt=0, allow_inf_nan=False)
    auth_permanent_max_minutes: float = Field(default=60, gt=0, allow_inf_nan=False)
    failure_window_hours: float = Field(default=24, gt=0, allow_inf_nan=False)

    @field_validator("billing_backoff_minutes_by_provider")
    @classmethod
    def _positive_overrides(cls, value: dict[str, float]) -> dict[str, float]:
        for provider, minutes in value.items():
            if not minutes > 0 or minutes == float("inf"):
                raise ValueError(f"{provider}: must be a positive number of minutes")
        return value

    def policy(self) -> AuthCooldownPolicy:
        """These knobs as the cooldown math's ``AuthCooldownPolicy`` (milliseconds)."""
        minute, hour = 60_000, 3_600_000
        return AuthCooldownPolicy(
            billing_backoff_ms=self.billing_backoff_minutes * minute,
            billing_max_ms=self.billing_max_hours * hour,
            auth_permanent_backoff_ms=self.auth_permanent_backoff_minutes * minute,
            auth_permanent_max_ms=self.auth_permanent_max_minutes * minute,
            failure_window_ms=self.failure_window_hours * hour,
            billing_backoff_ms_by_provider={
                provider: minutes * minute
                for provider, minutes in self.billing_backoff_minutes_by_provider.items()
            },
        )


class AuthSettings(_Section):
    """``[auth]``: auth profiles, explicit order per provider, and the shared ledger.

    ``[[auth.profiles]]`` entries are ``AuthProfile``-s (id, provider, mode, credential as
    ``{env = "..."}``, ``{file = "..."}`` or an inline value). ``order`` maps a provider to the
    profile ids to try, a hard constraint (the store's own order wins over it).
    ``store_path`` defaults to ``<state_dir>/auth-profiles.json``.
    """

    profiles: list[AuthProfile] = Field(default_factory=list)
    order: dict[str, list[str]] = Field(default_factory=dict)
    preferred_profile: str | None = None
    store_path: Path | None = None
    cooldowns: AuthCooldownSettings = Field(default_factory=AuthCooldownSettings)

    @field_validator("profiles")
    @classmethod
    def _unique_ids(cls, value: list[AuthProfile]) -> list[AuthProfile]:
        seen: set[str] = set()
        for profile in value:
            if profile.id in seen:
                raise ValueError(f"auth profile {profile.id!r} is configured twice")
            seen.add(profile.id)
        return value

    def profile(self, profile_id: str) -> AuthProfile | None:
        """The configured profile ``profile_id``, if any."""
        return next((p for p in self.profiles if p.id == profile_id), None)


class BackendSettings(_Section):
    """``[backends]``: which registered backend serves each kind (unset: the embedded
    default, also registered as ``"embedded"``; see docs/backends.md)."""

    lanes: str | None = None
    auth_store: str | None = None
    steering_store: str | None = None
    session_index: str | None = None
    session_store: str | None = None


class RuntimeConfig(_Section):
    """All runtime settings."""

    plugins: PluginSettings = Field(default_factory=PluginSettings)
    agent: AgentDefaults = Field(default_factory=AgentDefaults)
    models: list[Model] = Field(default_factory=list)
    context_engine: str = "legacy"
    state_dir: Path = Field(default_factory=lambda: Path.home() / ".openclaw-runtime")
    auth: AuthSettings = Field(default_factory=AuthSettings)
    backends: BackendSettings = Field(default_factory=BackendSettings)
    # tool policy layers (docs/tools.md): [tools], [agents.<id>.tools], [groups.<id>.tools]
    tools: ToolPolicySettings = Field(default_factory=ToolPolicySettings)
    agents: dict[str, AgentEntrySettings] = Field(default_factory=dict)
    groups: dict[str, GroupSettings] = Field(default_factory=dict)

    def auth_store_path(self) -> Path:
        """Where the auth-profile ledger lives (``auth.store_path`` or the state dir)."""
        return (self.auth.store_path or self.state_dir / "auth-profiles.json").expanduser()

    @classmethod
    def coerce(cls, value: RuntimeConfig | Mapping[str, Any] | None) -> RuntimeConfig:
        """Accept a config, a plain mapping (e.g. parsed TOML) or None (defaults)."""
        if isinstance(value, RuntimeConfig):
            return value
        try:
            return cls.model_validate(dict(value or {}))
        except ValidationError as exc:
            raise ConfigurationError(_describe(exc)) from exc

    @classmethod
    def load(cls, path: str | Path | None = None) -> RuntimeConfig:
        """Read ``path``, else ``$OPENCLAW_RUNTIME_CONFIG``, else ``./openclaw-runtime.toml``.

        A missing default file gives the defaults; a missing explicit file is an error.
        ``$OPENCLAW_RUNTIME_STATE_DIR`` and ``$OPENCLAW_RUNTIME_MODEL`` then override
        ``state_dir`` and ``[agent] model`` (so one shell, CI job or container can point the
        CLI elsewhere without editing the file).
        """
        explicit = path is not None or ENV_CONFIG in os.environ
        target = Path(path or os.environ.get(ENV_CONFIG) or CONFIG_FILENAME)
        data: dict[str, Any] = {}
        if target.exists():
            try:
                data = tomllib.loads(target.read_text(encoding="utf-8"))
            except UnicodeDecodeError as exc:
                raise ConfigurationError(
                    f"cannot read config file {str(target)!r}: not UTF-8 text "
                    f"(invalid byte at offset {exc.start})"
                ) from None
            except (OSError, tomllib.TOMLDecodeError) as exc:
                raise ConfigurationError(f"cannot read config file {str(target)!r}: {exc}") from exc
            except RecursionError:  # tomllib recurses once per nested array or table
                raise ConfigurationError(
                    f"cannot read config file {str(target)!r}: values are nested too deeply"
                ) from None
        elif explicit:
            raise ConfigurationError(f"config file {str(target)!r} does not exist")
        overridden = _apply_env_overrides(data, os.environ)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            blamed = [
                name
                for name, loc in overridden.items()
                if any(tuple(e["loc"][: len(loc)]) == loc for e in exc.errors())
            ]
            where = str(target) if target.exists() else "configuration"
            origin = f" (from ${', $'.join(blamed)})" if blamed else ""
            raise ConfigurationError(f"{where}{origin}: {_describe(exc)}") from exc


def _apply_env_overrides(
    data: dict[str, Any], env: Mapping[str, str]
) -> dict[str, tuple[str, ...]]:
    """Put ``OPENCLAW_RUNTIME_STATE_DIR`` / ``OPENCLAW_RUNTIME_MODEL`` into ``data``; returns
    each variable applied with the config location it set (to blame it in errors). A
    set-but-unusable value is an error naming the variable."""
    applied: dict[str, tuple[str, ...]] = {}
    state_dir = env.get(ENV_STATE_DIR)
    if state_dir is not None:
        value = state_dir.strip()
        if not value:
            raise ConfigurationError(f"{ENV_STATE_DIR} is set but empty")
        resolved = Path(value).expanduser()
        if resolved.exists() and not resolved.is_dir():
            raise ConfigurationError(f"{ENV_STATE_DIR}={value!r} is not a directory")
        data["state_dir"] = str(resolved)
        applied[ENV_STATE_DIR] = ("state_dir",)
    model = env.get(ENV_MODEL)
    if model is not None:
        value = model.strip()
        if not value:
            raise ConfigurationError(f"{ENV_MODEL} is set but empty")
        if any(ch.isspace() for ch in value) or value.startswith("/") or value.endswith("/"):
            raise ConfigurationError(
                f"{ENV_MODEL}={value!r} is not a model reference (expected provider/model, "
                "an alias or a model id)"
            )
        agent = data.get("agent")
        if agent is None:
            agent = data["agent"] = {}
        if not isinstance(agent, dict):
            raise ConfigurationError(f"cannot apply {ENV_MODEL}: [agent] is not a table")
        agent["model"] = value
        applied[ENV_MODEL] = ("agent", "model")
    return applied


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "config"
        hint = ""
        loc = error["loc"]
        if error["type"] == "extra_forbidden" and len(loc) == 2 and loc[0] == "plugins":
            # a plugin's own table belongs one level down
            hint = f" (a plugin's settings go in [plugins.settings.{loc[1]}])"
        parts.append(f"{where}: {error['msg']}{hint}")
    return "invalid configuration: " + "; ".join(parts)
