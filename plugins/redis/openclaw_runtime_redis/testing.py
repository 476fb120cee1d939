"""A real ``redis-server`` for tests: ``OPENCLAW_RUNTIME_REDIS_URL`` if set, else one started here.

``redis_server_url()`` is what the pytest fixture and the benchmark use. With ``CI=true`` a
missing Redis is an error, never a skip: CI must prove the Redis backends, not pass quietly.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ._conn import REDIS_URL_ENV

__all__ = ["RedisUnavailable", "free_port", "redis_server_url", "start_redis_server"]


class RedisUnavailable(RuntimeError):
    """No Redis URL is configured and no ``redis-server`` binary is installed."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def start_redis_server() -> Iterator[str]:
    """Run a throwaway ``redis-server`` on a free loopback port (no persistence); yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RedisUnavailable(
            f"no redis-server on PATH and {REDIS_URL_ENV} is not set "
            "(install it: apt-get install -y redis-server)"
        )
    port = free_port()
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--protected-mode",
            "yes",
            "--loglevel",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            if process.poll() is not None:
                raise RedisUnavailable(f"redis-server exited with status {process.returncode}")
            if _ping(port):
                break
            time.sleep(0.05)
        else:
            raise RedisUnavailable("redis-server did not answer PING within 10 s")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def redis_server_url() -> Iterator[str]:
    """``OPENCLAW_RUNTIME_REDIS_URL`` when set, else a server started for the block."""
    url = os.environ.get(REDIS_URL_ENV)
    if url:
        yield url
        return
    with start_redis_server() as started:
        yield started
