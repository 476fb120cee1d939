"""Create a file that appears whole or not at all, with as few changes to its folder as the OS
allows (a fresh session file: its header must never be seen half-written).

The portable way writes a named temp file beside the target and hard-links it into place:
three changes to the folder (the temp's name made, the target's name made, the temp's name
removed), each a journalled directory update that costs tens of µs on a busy disk, paid by
every fresh durable session. On Linux a file opened with ``O_TMPFILE`` has no name until it is
linked (``linkat`` through ``/proc/self/fd``): one change to the folder, the same guarantee
(the name appears holding every byte, or does not appear: ``FileExistsError`` when something
is already there), and a process killed before the link leaves nothing behind (a named temp
file waits for ``remove_stale_temps``). Where ``O_TMPFILE`` or ``/proc`` is unusable (other
systems, some file systems), the named temp file is used, as before; the first such refusal
turns the anonymous way off for the rest of the process. Any other failure (a full disk, a
folder that is missing or not writable) is left to the named way, which meets it and reports
it exactly as it did before.
"""

from __future__ import annotations

import contextlib
import errno
import os

from .._files import _write_temp, write_all

__all__ = ["anonymous_create_enabled", "create_whole", "set_anonymous_create"]

_O_TMPFILE: int = getattr(os, "O_TMPFILE", 0)
#: errors that mean "this system or file system cannot make or link an anonymous file"
#: (EISDIR: kernels before 3.11 read O_TMPFILE as O_DIRECTORY); a link that fails while
#: ``/proc/self/fd`` is missing means the same
_UNSUPPORTED = frozenset(
    {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOSYS, errno.EXDEV, errno.EPERM}
)

_PROC_FDS = "/proc/self/fd"

_anonymous = _O_TMPFILE != 0


def anonymous_create_enabled() -> bool:
    """Whether :func:`create_whole` tries ``O_TMPFILE`` first (for tests and diagnostics)."""
    return _anonymous


def set_anonymous_create(enabled: bool) -> bool:
    """Turn the ``O_TMPFILE`` way on or off (on only where the OS has it); returns the
    previous setting. For tests that compare it with the named temp file."""
    global _anonymous
    previous = _anonymous
    _anonymous = enabled and _O_TMPFILE != 0
    return previous


def create_whole(target: str, content: bytes, *, fsync: bool) -> int:
    """Create ``target`` holding ``content`` (``FileExistsError`` if the name is taken,
    ``FileNotFoundError`` if its folder is missing); returns the new file's inode. ``fsync``
    flushes the file to disk before it gets its name (the caller syncs the folder)."""
    if _anonymous:
        inode = _create_anonymous(target, content, fsync=fsync)
        if inode is not None:
            return inode
    temp = _write_temp(target, content, None, "create", fsync=fsync)
    try:
        os.link(temp, target)
        return os.stat(temp).st_ino
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)


def _create_anonymous(target: str, content: bytes, *, fsync: bool) -> int | None:
    """The ``O_TMPFILE`` way; ``None``: use the named way for this file (which then meets any
    error the folder has, as before), and from now on when the system refused the way itself.
    Only a taken name raises here."""
    global _anonymous
    folder = os.path.dirname(target) or "."
    try:
        fd = os.open(folder, _O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno in _UNSUPPORTED:
            _anonymous = False
        return None  # e.g. no folder yet: the named way raises what it raised before
    try:
        write_all(fd, content)
        if fsync:
            os.fsync(fd)
        inode = os.fstat(fd).st_ino
        # linkat(AT_SYMLINK_FOLLOW) of the descriptor's /proc name: Python calls linkat (not
        # link, which would link the /proc symbolic link itself) only when given a folder
        # descriptor; for an absolute source path the kernel ignores it
        os.link(f"{_PROC_FDS}/{fd}", target, src_dir_fd=fd, follow_symlinks=True)
    except FileExistsError:
        raise
    except OSError as exc:
        # no /proc (ENOENT), a file system or policy that will not link it (EPERM, EXDEV…):
        # off for good; anything else (a full disk, a folder removed meanwhile) is the named
        # way's to meet and report as before
        if exc.errno in _UNSUPPORTED or not os.path.isdir(_PROC_FDS):
            _anonymous = False
        return None
    finally:
        os.close(fd)  # an anonymous file never linked is freed here
    return inode
