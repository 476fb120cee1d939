"""Auth-profile stores: both backends, the JSON file, scoped views, secrets, success logging."""

from __future__ import annotations

import json
import logging
import stat
import threading

import anyio
import filelock
import pytest
from pydantic import ValidationError

from openclaw_runtime import ConfigurationError, RuntimeConfig
from openclaw_runtime.auth import (
    AuthProfile,
    AuthProfileScopeError,
    AuthProfileStore,
    AuthProfileStoreError,
    AuthProfileStoreState,
    CredentialRef,
    InMemoryAuthProfileStore,
    JsonFileAuthProfileStore,
    ProfileUsageStats,
    UnresolvedCredentialError,
    clear_auth_profile_cooldown,
    create_scoped_auth_profile_store,
    mark_auth_profile_blocked_until,
    mark_auth_profile_failure,
    mark_auth_profile_success,
    mark_auth_profile_used,
    mark_embedded_run_auth_profile_success,
    open_auth_profile_store,
    record_auth_profile_success,
)
from openclaw_runtime.auth.operations import POST_RUN_AUTH_PROFILE_SUCCESS_SLOW_MS

pytestmark = pytest.mark.anyio

NOW = 1_700_000_000_000
SECRET = "sk-TOPSECRET-4242"
STORED_SECRET = "sk-STORED-SECRET-7777"


def profiles() -> list[AuthProfile]:
    return [
        AuthProfile(id="openai:a", provider="openai", mode="api_key", credential=SECRET),
        AuthProfile(id="openai:b", provider="openai", mode="api_key", credential={"env": "K_B"}),
        AuthProfile(id="anthropic:c", provider="anthropic", mode="token", credential=SECRET),
    ]


@pytest.fixture(params=["memory", "json"])
def make_store(request, tmp_path):
    def make(**kwargs) -> AuthProfileStore:
        if request.param == "memory":
            return InMemoryAuthProfileStore(profiles=profiles(), **kwargs)
        return JsonFileAuthProfileStore(tmp_path / "auth-profiles.json", profiles=profiles())

    return make


# --- both backends ---------------------------------------------------------------------------


async def test_failure_then_success_round_trip(make_store):
    store = make_store()
    entry = await mark_auth_profile_failure(
        store, "openai:a", "rate_limit", model_id="gpt-5", now_ms=NOW
    )
    assert entry.cooldown_until == NOW + 30_000 and entry.cooldown_model == "gpt-5"
    entry = await mark_auth_profile_failure(store, "openai:a", "auth", now_ms=NOW + 1)
    assert entry.error_count == 2 and entry.cooldown_model is None  # widened
    state = await store.load()
    assert state.stats_for("openai:a").failure_counts == {"rate_limit": 1, "auth": 1}

    entry = await mark_auth_profile_success(store, "openai:a", now_ms=NOW + 2)
    assert entry.to_dict() == {"errorCount": 0, "lastFailureAt": NOW + 1, "lastUsed": NOW + 2}
    assert dict((await store.load()).last_good) == {"openai": "openai:a"}


async def test_unknown_profiles_and_provider_mismatch_are_ignored(make_store):
    store = make_store()
    assert await mark_auth_profile_failure(store, "nope", "auth", now_ms=NOW) is None
    assert await mark_auth_profile_success(store, "openai:a", "anthropic", now_ms=NOW) is None
    assert await mark_auth_profile_used(store, "nope", now_ms=NOW) is None
    assert await clear_auth_profile_cooldown(store, "openai:a") is None  # nothing to clear
    state = await store.load()
    assert dict(state.usage_stats) == {} and dict(state.last_good) == {}


async def test_used_blocked_and_manual_clear(make_store):
    store = make_store()
    blocked = await mark_auth_profile_blocked_until(
        store, "openai:a", NOW + 60_000, "codex_rate_limits", model_id="gpt-5", now_ms=NOW
    )
    assert blocked.blocked_scope == "model" and blocked.blocked_until == NOW + 60_000
    assert (
        await mark_auth_profile_blocked_until(store, "openai:a", NOW - 1, "wham", now_ms=NOW)
        is None
    )
    cleared = await clear_auth_profile_cooldown(store, "openai:a")
    assert cleared.blocked_until is None and cleared.error_count == 0
    used = await mark_auth_profile_used(store, "openai:b", now_ms=NOW)
    assert used.last_used == NOW
    assert "openai" not in (await store.load()).last_good  # "used" is not "last good"


async def test_store_methods_delegate(make_store):
    store = make_store()
    await store.mark_auth_profile_failure("anthropic:c", "billing", now_ms=NOW)
    state = await store.load()
    assert state.stats_for("anthropic:c").disabled_until == NOW + 600_000
    await store.mark_auth_profile_success("anthropic:c", now_ms=NOW)
    assert (await store.load()).stats_for("anthropic:c").disabled_until is None


async def test_updates_may_not_change_profiles(make_store):
    store = make_store()
    with pytest.raises(AuthProfileStoreError, match="not profiles"):
        await store.update(lambda state: state.replace(profiles={}))


async def test_concurrent_failures_in_one_process_lose_nothing(make_store):
    store = make_store()
    async with anyio.create_task_group() as tg:
        for _ in range(25):
            tg.start_soon(lambda: mark_auth_profile_failure(store, "openai:a", "auth", now_ms=NOW))
    entry = (await store.load()).stats_for("openai:a")
    assert entry.error_count == 25 and entry.failure_count("auth") == 25


# --- the JSON file -----------------------------------------------------------------------------


def openclaw_document() -> dict:
    return {
        "version": 1,
        "profiles": {
            "openai:stored": {"type": "api_key", "provider": "openai", "key": STORED_SECRET},
            "openai:ref": {
                "type": "token",
                "provider": "openai",
                "tokenRef": {"source": "env", "provider": "default", "id": "OPENAI_TOKEN"},
                "expires": NOW + 1000,
            },
            "openai:codex": {
                "type": "oauth",
                "provider": "openai",
                "access": STORED_SECRET,
                "refresh": "rt-" + STORED_SECRET,
                "expires": NOW,
                "accountId": "acct_1",
                "customField": {"keep": True},
            },
        },
        "order": {"openai": ["openai:stored"]},
        "lastGood": {"openai": "openai:stored"},
        "usageStats": {"openai:stored": {"errorCount": 1, "futureKey": "x"}},
        "somethingNew": [1, 2, 3],
    }


async def test_reads_openclaw_files_and_passes_stored_profiles_through(tmp_path):
    path = tmp_path / "auth-profiles.json"
    path.write_text(json.dumps(openclaw_document()))
    store = JsonFileAuthProfileStore(path)
    state = await store.load()
    assert sorted(state.profiles) == ["openai:codex", "openai:ref", "openai:stored"]
    assert state.profiles["openai:ref"].credential == CredentialRef(env="OPENAI_TOKEN")
    assert state.profiles["openai:codex"].account_id == "acct_1"
    assert state.order["openai"] == ("openai:stored",)

    await mark_auth_profile_failure(store, "openai:codex", "auth", now_ms=NOW)
    written = json.loads(path.read_text())
    expected = openclaw_document()
    expected["usageStats"]["openai:codex"] = {
        "cooldownUntil": NOW + 30_000,
        "cooldownReason": "auth",
        "errorCount": 1,
        "failureCounts": {"auth": 1},
        "lastFailureAt": NOW,
    }
    assert written == expected  # profiles, unknown keys and other entries untouched


async def test_ledger_survives_a_restart_with_openclaw_field_names(tmp_path):
    path = tmp_path / "state" / "auth-profiles.json"
    first = JsonFileAuthProfileStore(path, profiles=profiles())
    await mark_auth_profile_failure(first, "openai:a", "rate_limit", model_id="m", now_ms=NOW)
    await mark_auth_profile_failure(first, "anthropic:c", "billing", now_ms=NOW)

    raw = json.loads(path.read_text())
    assert raw["usageStats"]["openai:a"] == {
        "cooldownUntil": NOW + 30_000,
        "cooldownReason": "rate_limit",
        "cooldownModel": "m",
        "errorCount": 1,
        "failureCounts": {"rate_limit": 1},
        "lastFailureAt": NOW,
    }
    assert raw["usageStats"]["anthropic:c"]["disabledReason"] == "billing"
    assert "profiles" not in raw  # configured profiles (and their secrets) stay out of the file
    assert SECRET not in path.read_text()

    second = JsonFileAuthProfileStore(path, profiles=profiles())  # a "new process"
    state = await second.load()
    assert state.stats_for("openai:a") == (await first.load()).stats_for("openai:a")
    assert state.stats_for("anthropic:c").disabled_until == NOW + 600_000


async def test_file_is_private_and_replaced_atomically(tmp_path):
    path = tmp_path / "auth-profiles.json"
    store = JsonFileAuthProfileStore(path, profiles=profiles())
    await mark_auth_profile_failure(store, "openai:a", "auth", now_ms=NOW)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


async def test_blocking_file_io_runs_off_the_event_loop_thread(tmp_path):
    store = JsonFileAuthProfileStore(tmp_path / "a.json", profiles=profiles())
    seen = []

    def fn(state: AuthProfileStoreState) -> None:
        seen.append(threading.current_thread())

    await store.update(fn)
    assert seen and seen[0] is not threading.current_thread()


async def test_corrupt_file_is_set_aside_and_the_ledger_starts_empty(tmp_path, caplog):
    path = tmp_path / "auth-profiles.json"
    damaged = '{"profiles": {"x": {"key": "' + STORED_SECRET + '"}'  # truncated
    path.write_text(damaged)
    store = JsonFileAuthProfileStore(path, profiles=profiles())
    with caplog.at_level(logging.WARNING, logger="openclaw_runtime.auth"):
        state = await store.load()
    assert set(state.profiles) == {p.id for p in profiles()}  # configured ones still there
    assert not state.usage_stats
    (aside,) = tmp_path.glob("auth-profiles.json.corrupt-*")
    assert aside.read_text() == damaged  # kept byte for byte
    assert not path.exists()
    assert (
        str(path) in caplog.text and aside.name in caplog.text and "not valid JSON" in caplog.text
    )
    assert STORED_SECRET not in caplog.text

    # bookkeeping goes on in a fresh ledger
    assert await mark_auth_profile_failure(store, "openai:a", "auth", now_ms=NOW) is not None
    assert json.loads(path.read_text())["usageStats"]["openai:a"]["errorCount"] == 1
    assert aside.read_text() == damaged


async def test_non_object_file_is_set_aside(tmp_path):
    path = tmp_path / "auth-profiles.json"
    path.write_text("[]")
    state = await JsonFileAuthProfileStore(path).load()
    assert not state.profiles
    (aside,) = tmp_path.glob("auth-profiles.json.corrupt-*")
    assert aside.read_text() == "[]"


async def test_unparseable_stored_profile_is_skipped_without_its_secret(tmp_path, caplog):
    path = tmp_path / "auth-profiles.json"
    doc = {
        "profiles": {
            "bad:type": {"type": "magic", "provider": "x", "key": STORED_SECRET},
            "bad:provider": {"type": "api_key", "provider": 5, "key": STORED_SECRET},
            "good": {"type": "api_key", "provider": "openai", "key": STORED_SECRET},
        }
    }
    path.write_text(json.dumps(doc))
    with caplog.at_level(logging.WARNING, logger="openclaw_runtime.auth"):
        state = await JsonFileAuthProfileStore(path).load()
    assert list(state.profiles) == ["good"]
    assert "bad:type" in caplog.text and "bad:provider" in caplog.text
    assert STORED_SECRET not in caplog.text


async def test_lock_timeout_is_a_clear_error(tmp_path):
    path = tmp_path / "auth-profiles.json"
    store = JsonFileAuthProfileStore(path, profiles=profiles(), lock_timeout=0.05)
    with (
        filelock.FileLock(store.lock_path),
        pytest.raises(AuthProfileStoreError, match="timed out"),
    ):
        await store.update(lambda s: None)


# --- scoped view ----------------------------------------------------------------------------


async def seeded(make_store) -> AuthProfileStore:
    store = make_store()
    for pid in ("openai:a", "openai:b", "anthropic:c"):
        await mark_auth_profile_failure(store, pid, "auth", now_ms=NOW)
    await mark_auth_profile_success(store, "anthropic:c", now_ms=NOW)
    return store


async def test_scoped_view_sees_only_the_run_candidates(make_store):
    inner = await seeded(make_store)
    scoped = create_scoped_auth_profile_store(inner, [" openai:a ", "", "openai:a", "ghost"])
    assert scoped.profile_ids == ("openai:a", "ghost")
    view = await scoped.load()
    assert list(view.profiles) == ["openai:a"]
    assert list(view.usage_stats) == ["openai:a"]
    assert dict(view.last_good) == {}  # anthropic's last good is someone else's


async def test_scoped_view_cannot_touch_other_profiles(make_store):
    inner = await seeded(make_store)
    before = await inner.load()
    scoped = create_scoped_auth_profile_store(inner, ["openai:a"])

    assert await mark_auth_profile_failure(scoped, "openai:b", "auth", now_ms=NOW + 5) is None
    assert await mark_auth_profile_success(scoped, "anthropic:c", now_ms=NOW + 5) is None
    assert (await inner.load()).usage_stats == before.usage_stats

    foreign = ProfileUsageStats(error_count=0)
    with pytest.raises(AuthProfileScopeError, match="openai:b"):
        await scoped.update(lambda s: s.with_usage_stats("openai:b", foreign))
    with pytest.raises(AuthProfileScopeError, match="anthropic:c"):
        await scoped.update(lambda s: s.with_last_good("anthropic", "anthropic:c"))
    with pytest.raises(AuthProfileScopeError, match="order"):
        await scoped.update(lambda s: s.replace(order={"openai": ("openai:a",)}))
    assert (await inner.load()).usage_stats == before.usage_stats


async def test_scoped_writes_reach_the_shared_ledger(make_store):
    inner = await seeded(make_store)
    scoped = inner.scoped("openai:a")
    await mark_auth_profile_failure(scoped, "openai:a", "auth", now_ms=NOW + 1)
    await mark_auth_profile_success(scoped, "openai:a", now_ms=NOW + 2)
    state = await inner.load()
    assert state.stats_for("openai:a").last_used == NOW + 2
    assert state.stats_for("openai:b").error_count == 1  # untouched
    assert dict(state.last_good) == {"anthropic": "anthropic:c", "openai": "openai:a"}


@pytest.mark.parametrize("ids", [None, [], "", ["  "], ["ghost"]])
async def test_empty_scope_sees_an_empty_store(make_store, ids):
    inner = await seeded(make_store)
    view = await create_scoped_auth_profile_store(inner, ids).load()
    assert dict(view.profiles) == {} and dict(view.usage_stats) == {}


# --- secrets ---------------------------------------------------------------------------------


async def test_secrets_never_appear_in_reprs_logs_or_errors(make_store, caplog):
    store = make_store()
    with caplog.at_level(logging.DEBUG):
        await mark_auth_profile_failure(store, "openai:a", "auth", now_ms=NOW)
        await mark_auth_profile_success(store, "anthropic:c", now_ms=NOW)
        await record_auth_profile_success(store, "openai:a", "openai")
    state = await store.load()
    profile = state.profiles["openai:a"]
    texts = [
        caplog.text,
        repr(state),
        str(state),
        repr(store),
        repr(profile),
        str(profile),
        profile.model_dump_json(),
        repr(profile.credential),
        str(profile.credential),
        repr(profiles()),
    ]
    for text in texts:
        assert SECRET not in text
    assert profile.resolve_secret().get_secret_value() == SECRET  # resolvable when needed


def test_unresolved_references_name_the_reference_only(tmp_path):
    ref = CredentialRef(env="NOT_SET_ANYWHERE")
    with pytest.raises(UnresolvedCredentialError, match="NOT_SET_ANYWHERE"):
        ref.resolve({})
    missing = CredentialRef(file=tmp_path / "missing")
    with pytest.raises(UnresolvedCredentialError, match="cannot read credential file"):
        missing.resolve()
    assert CredentialRef(env="X").resolve({"X": "  v \n"}).get_secret_value() == "v"


@pytest.mark.parametrize(
    "bad",
    [
        {"env": "X", "value": SECRET},
        {"value": "   "},
        {},
        {"source": "vault", "id": SECRET},
        {"value": SECRET, "extra": 1},
    ],
)
def test_bad_credential_refs_fail_without_echoing_the_secret(bad):
    with pytest.raises(ValueError) as info:
        CredentialRef.model_validate(bad)
    assert SECRET not in str(info.value)


@pytest.mark.parametrize(
    "entry",
    [
        {"id": "a", "provider": "openai", "mode": "api_key", "credential": {"value": SECRET, "env": "X"}},
        {"id": "a", "provider": "openai", "mode": "api_key", "credential": SECRET, "oops": SECRET},
        {"id": "a", "provider": "openai", "mode": SECRET, "credential": SECRET},
    ],
)  # fmt: skip
def test_config_errors_never_echo_secrets(entry):
    with pytest.raises(ValidationError) as info:
        RuntimeConfig.model_validate({"auth": {"profiles": [entry]}})
    assert SECRET not in str(info.value)
    with pytest.raises(ConfigurationError) as info:
        RuntimeConfig.coerce({"auth": {"profiles": [entry]}})
    assert SECRET not in str(info.value) and "auth.profiles.0" in str(info.value)


def test_config_builds_the_default_store(tmp_path):
    config = RuntimeConfig.coerce({"state_dir": str(tmp_path), "auth": {"profiles": [
        {"id": "openai:a", "provider": "openai", "mode": "api_key", "credential": {"env": "K"}}
    ]}})  # fmt: skip
    store = open_auth_profile_store(config)
    assert store.path == tmp_path / "auth-profiles.json"
    assert list(store.load_sync().profiles) == ["openai:a"]
    custom = RuntimeConfig.coerce({"auth": {"store_path": str(tmp_path / "x.json")}})
    assert open_auth_profile_store(custom).path == tmp_path / "x.json"


# --- success bookkeeping -----------------------------------------------------------------------


class SlowStore(InMemoryAuthProfileStore):
    """Advances a fake clock during ``update`` (no real sleeping)."""

    def __init__(self, clock: list[float], seconds: float) -> None:
        super().__init__(profiles=profiles())
        self.clock, self.seconds = clock, seconds

    async def update(self, fn):
        self.clock[0] += self.seconds
        return await super().update(fn)


class BrokenStore(InMemoryAuthProfileStore):
    async def update(self, fn):
        raise RuntimeError("disk on fire")


@pytest.mark.parametrize(
    ("seconds", "warned"),
    [(POST_RUN_AUTH_PROFILE_SUCCESS_SLOW_MS / 1000, True), (2.5, True), (0.999, False)],
)
async def test_slow_success_bookkeeping_is_logged(seconds, warned, caplog):
    clock = [100.0]
    store = SlowStore(clock, seconds)
    with caplog.at_level(logging.WARNING, logger="openclaw_runtime.auth"):
        await record_auth_profile_success(
            store, "openai:a", "openai", run_id="r1", session_id="s1", clock=lambda: clock[0]
        )
    assert (await store.load()).stats_for("openai:a").error_count == 0  # recorded either way
    slow = [r for r in caplog.records if "completed after" in r.getMessage()]
    assert bool(slow) is warned
    if warned:
        message = slow[0].getMessage()
        assert f"completed after {round(seconds * 1000)}ms" in message
        assert "runId=r1" in message and "sessionId=s1" in message
        assert "openai:a" not in message  # the profile id is redacted


async def test_failed_success_bookkeeping_never_raises(caplog):
    with caplog.at_level(logging.WARNING, logger="openclaw_runtime.auth"):
        await record_auth_profile_success(BrokenStore(profiles=profiles()), "openai:a")
    assert "success bookkeeping failed" in caplog.text and "disk on fire" in caplog.text


async def test_success_is_fire_and_forget():
    store = InMemoryAuthProfileStore(profiles=profiles())
    gate = anyio.Event()

    class GatedStore(InMemoryAuthProfileStore):
        async def update(self, fn):
            await gate.wait()
            return await store.update(fn)

    gated = GatedStore(profiles=profiles())
    async with anyio.create_task_group() as tg:
        mark_embedded_run_auth_profile_success(tg, gated, "openai:a", "openai", run_id="r")
        # the caller returned immediately; nothing is recorded until the store answers
        assert (await store.load()).stats_for("openai:a") is None
        gate.set()
    assert (await store.load()).stats_for("openai:a").last_used is not None


@pytest.mark.parametrize(("mode", "profile_id"), [("read-only", "openai:a"), ("read-write", None)])
async def test_success_is_skipped_in_read_only_mode_or_without_a_profile(mode, profile_id):
    store = InMemoryAuthProfileStore(profiles=profiles())
    async with anyio.create_task_group() as tg:
        mark_embedded_run_auth_profile_success(
            tg, store, profile_id, "openai", auth_profile_state_mode=mode
        )
    assert dict((await store.load()).usage_stats) == {}


def test_configured_profile_without_credential_does_not_hide_a_stored_one(tmp_path):
    path = tmp_path / "auth-profiles.json"
    path.write_text(json.dumps(openclaw_document()))
    meta = AuthProfile(id="openai:stored", provider="openai", mode="api_key")
    state = JsonFileAuthProfileStore(path, profiles=[meta]).load_sync()
    assert state.profiles["openai:stored"].credential is not None
