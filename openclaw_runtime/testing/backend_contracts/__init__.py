"""Contract suites for the five backend protocols (``openclaw_runtime.backends``).

A backend author proves a backend by inheriting the suite of its kind and overriding one
fixture that builds a fresh backend::

    from openclaw_runtime.testing import SessionIndexContract

    class TestRedisSessionIndex(SessionIndexContract):
        @pytest.fixture
        def session_index(self, redis_url):
            return RedisSessionIndex(redis_url, prefix=uuid.uuid4().hex)

Every test checks a guarantee the protocol's docstring states: a session lane serializes, waiters
are served by priority then in arrival order, a lease times out unless it heartbeats, a claim is
atomic under concurrency, a steering item is neither lost nor leased twice, a ledger update is an
atomic read-modify-write, a transcript round-trips. The tests wait for conditions, never for
times: where one needs to know that a waiter is queued, the suite asks ``waiting()`` (override it
when the backend has no ``stats()``), and a generous ``fail_after`` turns a hang into a failure.
"""

from .auth_store import AuthStoreContract
from .lanes import LaneBackendContract
from .session_index import SessionIndexContract
from .session_store import SessionStoreContract
from .steering_store import SteeringStoreContract

__all__ = [
    "AuthStoreContract",
    "LaneBackendContract",
    "SessionIndexContract",
    "SessionStoreContract",
    "SteeringStoreContract",
]
