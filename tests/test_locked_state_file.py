"""``_files.LockedStateFile``: the shared file + lock pattern of the auth ledger (and, after the
merge, the steering queue). Real files, real locks; every failure comes back as the store's own
error naming the file, never its bytes."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import filelock
import orjson
import pytest

from openclaw_runtime._files import DamagedStateFile, LockedStateFile, find_set_aside_files
from openclaw_runtime.auth import AuthProfile
from openclaw_runtime.auth.json_file import JsonFileAuthProfileStore
from openclaw_runtime.auth.operations import AuthProfileStoreError

LOGGER = logging.getLogger("openclaw_runtime.tests.locked_state_file")


class StoreError(Exception):
    pass


def parse(data: bytes) -> dict[str, object]:
    if not data.strip():
        return {}
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise DamagedStateFile("not valid JSON") from None
    if not isinstance(document, dict):
        raise DamagedStateFile("not a JSON object")
    return document


def empty() -> dict[str, object]:
    return {}


def state_file(path: Path, *, lock_timeout: float = 5.0) -> LockedStateFile:
    return LockedStateFile(
        path,
        what="test store",
        tag="test",
        lock_timeout=lock_timeout,
        logger=LOGGER,
        error=StoreError,
    )


def test_write_then_read_round_trips_and_leaves_no_temp(tmp_path):
    file = state_file(tmp_path / "deep" / "state.json")
    with file.locked():  # creates the folder
        assert file.read(parse, empty, locked=True) == {}
        file.write(b'{"a": 1}\n')
    assert file.read(parse, empty) == {"a": 1}
    assert sorted(p.name for p in (tmp_path / "deep").iterdir()) == [
        "state.json",
        "state.json.lock",
    ]


def test_first_read_sweeps_temps_of_dead_writers(tmp_path):
    path = tmp_path / "state.json"
    path.write_bytes(b"{}")
    dead = 2**22 + 12345  # above any pid_max this test runs with
    stale = tmp_path / f"state.json.test-{dead}-0a1b2c3d.tmp"
    stale.write_bytes(b"half")
    own = tmp_path / f"state.json.test-{os.getpid()}-0a1b2c3d.tmp"  # in flight: kept
    own.write_bytes(b"half")
    file = state_file(path)
    assert file.read(parse, empty) == {}
    assert not stale.exists() and own.exists()


def test_a_damaged_file_is_set_aside_and_reads_as_empty(tmp_path, caplog):
    path = tmp_path / "state.json"
    path.write_bytes(b"[1, 2]")
    with caplog.at_level(logging.WARNING, logger=LOGGER.name):
        assert state_file(path).read(parse, empty) == {}
    (aside,) = find_set_aside_files([tmp_path])
    assert aside.read_bytes() == b"[1, 2]" and not path.exists()
    assert "test store" in caplog.text and "not a JSON object" in caplog.text


def test_an_unreadable_file_is_the_store_error_naming_it(tmp_path):
    path = tmp_path / "state.json"
    path.mkdir()
    with pytest.raises(StoreError, match=r"cannot read test store '.*state\.json': Is a directory"):
        state_file(path).read(parse, empty)


def test_a_held_lock_is_the_store_error_naming_the_lock(tmp_path):
    path = tmp_path / "state.json"
    holder = filelock.FileLock(str(path) + ".lock")
    with holder:
        file = state_file(path, lock_timeout=0.01)
        held = r"waiting for the lock '.*state\.json\.lock'"
        with pytest.raises(StoreError, match=held), file.locked():
            pytest.fail("entered the lock another holder has")
        # a lock-free read still works while a writer holds the lock
        assert file.read(parse, empty) == {}


def test_a_folder_that_cannot_be_made_is_the_store_error(tmp_path):
    (tmp_path / "file").write_text("")
    file = state_file(tmp_path / "file" / "state.json")
    with pytest.raises(StoreError, match="cannot create directory"), file.locked():
        pytest.fail("entered without a folder")


def test_the_auth_ledger_raises_its_own_error_through_the_helper(tmp_path):
    path = tmp_path / "auth-profiles.json"
    store = JsonFileAuthProfileStore(
        path,
        profiles=[
            AuthProfile(
                id="p1", provider="openai", mode="api_key", credential="sk-test-secret-1234"
            )
        ],
        lock_timeout=0.01,
    )
    held = filelock.FileLock(str(path) + ".lock")
    with held, pytest.raises(AuthProfileStoreError, match="waiting for the lock"):
        store.update_sync(lambda state: state.replace(last_good={"openai": "p1"}))
    after = store.update_sync(lambda state: state.replace(last_good={"openai": "p1"}))
    assert after.last_good == {"openai": "p1"}
    assert orjson.loads(path.read_bytes())["lastGood"] == {"openai": "p1"}
    assert (
        b"sk-test-secret-1234" not in path.read_bytes()
    )  # configured credentials are never written
