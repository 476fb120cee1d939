"""Writing small state files so readers see the old version or the new one, never half.

Shared by every file-backed store (transcripts, the auth-profile ledger, the steering queue,
the session index): a temp file in the same folder, ``fsync``, ``os.replace``, then an
``fsync`` of the folder where the OS allows it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["atomic_write"]


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _write_temp(
    path: Path, content: bytes, mode: int | None, tag: str, *, fsync: bool = True
) -> Path:
    temp = path.with_name(f"{path.name}.{tag}-{os.getpid()}-{os.urandom(4).hex()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if mode is None else mode)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    os.close(fd)
    if mode is not None:
        os.chmod(temp, mode)
    return temp


def atomic_write(path: str | Path, content: bytes, *, tag: str = "rewrite") -> None:
    """Replace ``path`` with ``content`` so readers see the old file or the new one, never half."""
    target = Path(path)
    try:
        mode: int | None = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    temp = _write_temp(target, content, mode, tag)
    try:
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_dir(target.parent)
