"""Every built-in backend passes the contract suite of its protocol (openclaw_runtime.testing).

The embedded defaults are checked twice: constructed directly, and as the runtime builds them
when ``[backends]`` names them ``embedded`` (the registered factories), so what a user selects
is what passed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime.auth.json_file import JsonFileAuthProfileStore
from openclaw_runtime.auth.store import InMemoryAuthProfileStore
from openclaw_runtime.runner.lanes import InProcessLanes
from openclaw_runtime.runner.session_index import JsonFileSessionIndex
from openclaw_runtime.runner.steering_store import InMemorySteeringStore, JsonFileSteeringStore
from openclaw_runtime.testing import (
    AuthStoreContract,
    LaneBackendContract,
    SessionIndexContract,
    SessionStoreContract,
    SteeringStoreContract,
)
from openclaw_runtime.transcript.store import JsonlSessionStore

EMBEDDED = {
    "lanes": "embedded",
    "auth_store": "embedded",
    "steering_store": "embedded",
    "session_index": "embedded",
    "session_store": "embedded",
}


@pytest.fixture
def embedded_runtime(runtime_factory: Any, tmp_path: Path) -> Any:
    return runtime_factory(
        {
            "state_dir": str(tmp_path / "state"),
            "backends": EMBEDDED,
            "auth": {"profiles": [p.model_dump() for p in AuthStoreContract.profiles]},
        }
    )


# --------------------------------------------------------------------------- lanes


class TestInProcessLanes(LaneBackendContract):
    @pytest.fixture
    def lane_backend(self) -> Any:
        return InProcessLanes()


class TestEmbeddedLanesFromTheRuntime(LaneBackendContract):
    @pytest.fixture
    def lane_backend(self, embedded_runtime: Any) -> Any:
        return embedded_runtime.services.lanes


# --------------------------------------------------------------------------- auth store


class TestJsonFileAuthStore(AuthStoreContract):
    @pytest.fixture
    def auth_store(self, tmp_path: Path) -> Any:
        return JsonFileAuthProfileStore(tmp_path / "auth-profiles.json", profiles=self.profiles)


class TestInMemoryAuthStore(AuthStoreContract):
    @pytest.fixture
    def auth_store(self) -> Any:
        return InMemoryAuthProfileStore(profiles=self.profiles)


class TestEmbeddedAuthStoreFromTheRuntime(AuthStoreContract):
    @pytest.fixture
    def auth_store(self, embedded_runtime: Any) -> Any:
        return embedded_runtime.services.auth_store


# --------------------------------------------------------------------------- steering store


class TestJsonFileSteeringStore(SteeringStoreContract):
    @pytest.fixture
    def steering_store(self, tmp_path: Path) -> Any:
        return JsonFileSteeringStore(tmp_path / "subagents" / "runs.json")


class TestInMemorySteeringStore(SteeringStoreContract):
    @pytest.fixture
    def steering_store(self) -> Any:
        return InMemorySteeringStore()


class TestEmbeddedSteeringStoreFromTheRuntime(SteeringStoreContract):
    @pytest.fixture
    def steering_store(self, embedded_runtime: Any) -> Any:
        return embedded_runtime.services.steering_store


# --------------------------------------------------------------------------- session index


class TestJsonFileSessionIndex(SessionIndexContract):
    @pytest.fixture
    def session_index(self, tmp_path: Path) -> Any:
        return JsonFileSessionIndex(tmp_path / "sessions" / "index.json")

    @pytest.fixture
    def session_index_peer(self, tmp_path: Path) -> Any:
        # a second handle on the same file, as another process opens it
        return JsonFileSessionIndex(tmp_path / "sessions" / "index.json")


class TestEmbeddedSessionIndexFromTheRuntime(SessionIndexContract):
    @pytest.fixture
    def session_index(self, embedded_runtime: Any) -> Any:
        return embedded_runtime.services.session_index


# --------------------------------------------------------------------------- session store


class TestJsonlSessionStore(SessionStoreContract):
    @pytest.fixture
    def session_store(self, tmp_path: Path) -> Any:
        return JsonlSessionStore(tmp_path / "sessions")


class TestEmbeddedSessionStoreFromTheRuntime(SessionStoreContract):
    """Buffered appends (durability "none"), as runs use it."""

    @pytest.fixture
    def session_store(self, embedded_runtime: Any) -> Any:
        return embedded_runtime.services.session_store
