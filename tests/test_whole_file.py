"""A fresh session file is created whole through ``O_TMPFILE`` where Linux allows (issue 13,
session 8): the same file, inode, mode, errors and folder contents as the named temp file it
replaces, a fallback where the system refuses it, and nothing left by a writer killed before
the link (a real second process), while a racing creator of the same name still loses cleanly.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import anyio
import orjson
import pytest

from openclaw_runtime.messages import UserMessage
from openclaw_runtime.transcript import whole_file
from openclaw_runtime.transcript.jsonl import create_exclusive
from openclaw_runtime.transcript.store import JsonlSessionStore
from openclaw_runtime.transcript.whole_file import create_whole

ANONYMOUS = whole_file.anonymous_create_enabled()
needs_anonymous = pytest.mark.skipif(not ANONYMOUS, reason="no O_TMPFILE here")

CONTENTS = [
    b"",
    b"x",
    b'{"type":"session","version":3,"id":"s1"}\n',
    b'{"type":"session"}\n' + b'{"type":"message","id":"a"}\n' * 3,
    bytes(range(256)) * 300,  # 76,800 bytes: more than one write may take
]


@pytest.fixture
def way() -> Iterator[None]:
    """Restore the process-wide switch whatever a test set it to."""
    before = whole_file.anonymous_create_enabled()
    yield
    whole_file.set_anonymous_create(before)


def observe(folder: Path, name: str, inode: int) -> tuple[bytes, int, list[str], bool]:
    target = folder / name
    info = os.stat(target)
    return (
        target.read_bytes(),
        stat.S_IMODE(info.st_mode),
        sorted(p.name for p in folder.iterdir()),
        info.st_ino == inode and info.st_nlink == 1,
    )


@needs_anonymous
@pytest.mark.parametrize("content", CONTENTS, ids=lambda c: f"{len(c)}b")
@pytest.mark.parametrize("fsync", [False, True])
@pytest.mark.parametrize("umask", [0o022, 0o077, 0o000])
def test_anonymous_and_named_make_the_same_file(
    tmp_path: Path, way: None, content: bytes, fsync: bool, umask: int
) -> None:
    seen = []
    for anonymous in (True, False):
        whole_file.set_anonymous_create(anonymous)
        folder = tmp_path / ("anon" if anonymous else "named")
        folder.mkdir()
        previous = os.umask(umask)
        try:
            inode = create_whole(str(folder / "s.jsonl"), content, fsync=fsync)
        finally:
            os.umask(previous)
        assert whole_file.anonymous_create_enabled() is anonymous  # not turned off
        seen.append(observe(folder, "s.jsonl", inode))
    assert seen[0] == seen[1]
    assert seen[0][0] == content and seen[0][2] == ["s.jsonl"] and seen[0][3]


@pytest.mark.parametrize("anonymous", [True, False])
def test_a_taken_name_and_a_missing_folder_fail_alike(
    tmp_path: Path, way: None, anonymous: bool
) -> None:
    if anonymous and not ANONYMOUS:
        pytest.skip("no O_TMPFILE here")
    whole_file.set_anonymous_create(anonymous)
    (tmp_path / "s.jsonl").write_bytes(b"theirs\n")
    os.symlink(tmp_path / "nowhere", tmp_path / "link.jsonl")
    with pytest.raises(FileExistsError):
        create_whole(str(tmp_path / "s.jsonl"), b"ours\n", fsync=False)
    with pytest.raises(FileExistsError):  # a dangling symbolic link is a taken name too
        create_whole(str(tmp_path / "link.jsonl"), b"ours\n", fsync=False)
    with pytest.raises(FileNotFoundError):
        create_whole(str(tmp_path / "missing" / "s.jsonl"), b"ours\n", fsync=False)
    assert (tmp_path / "s.jsonl").read_bytes() == b"theirs\n"
    assert not (tmp_path / "nowhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.jsonl", "s.jsonl"]
    assert whole_file.anonymous_create_enabled() is anonymous


@needs_anonymous
@pytest.mark.parametrize("code", [errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL])
def test_a_file_system_without_o_tmpfile_falls_back_for_good(
    tmp_path: Path, way: None, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    real_open = os.open
    tried: list[int] = []

    def refusing(path: str, flags: int, mode: int = 0o777) -> int:
        if flags & whole_file._O_TMPFILE == whole_file._O_TMPFILE:
            tried.append(flags)
            raise OSError(code, os.strerror(code))
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", refusing)
    for name in ("a.jsonl", "b.jsonl"):
        inode = create_whole(str(tmp_path / name), b"head\n", fsync=False)
        assert observe(tmp_path, name, inode)[0] == b"head\n"
    assert len(tried) == 1  # refused once, then the named way only
    assert not whole_file.anonymous_create_enabled()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl"]


@needs_anonymous
@pytest.mark.parametrize(
    ("where", "code", "stays_on"),
    [
        ("open", errno.EACCES, True),  # the folder's own problem: the named way meets it
        ("open", errno.ENOENT, True),
        ("link", errno.ENOSPC, True),
        ("link", errno.EMLINK, True),
        ("link", errno.EPERM, False),  # a policy that will not link it: off for good
        ("link", errno.EXDEV, False),
    ],
)
def test_other_errors_leave_the_file_to_the_named_way(
    tmp_path: Path,
    way: None,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    code: int,
    stays_on: bool,
) -> None:
    real_open, real_link = os.open, os.link

    def failing_open(path: str, flags: int, mode: int = 0o777) -> int:
        if where == "open" and flags & whole_file._O_TMPFILE == whole_file._O_TMPFILE:
            raise OSError(code, os.strerror(code))
        return real_open(path, flags, mode)

    def failing_link(src: str, dst: str, **kwargs: object) -> None:
        if where == "link" and src.startswith(whole_file._PROC_FDS):
            raise OSError(code, os.strerror(code))
        real_link(src, dst, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", failing_open)
    monkeypatch.setattr(os, "link", failing_link)
    inode = create_whole(str(tmp_path / "s.jsonl"), b"head\n", fsync=False)
    assert observe(tmp_path, "s.jsonl", inode)[::2] == (b"head\n", ["s.jsonl"])
    assert whole_file.anonymous_create_enabled() is stays_on


@needs_anonymous
def test_no_proc_falls_back_and_leaves_nothing(
    tmp_path: Path, way: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(whole_file, "_PROC_FDS", str(tmp_path / "no-proc"))
    inode = create_whole(str(tmp_path / "s.jsonl"), b"head\n", fsync=False)
    assert observe(tmp_path, "s.jsonl", inode) == (b"head\n", 0o600 & ~_umask(), ["s.jsonl"], True)
    assert not whole_file.anonymous_create_enabled()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


@pytest.mark.anyio
@pytest.mark.parametrize("anonymous", [True, False])
async def test_a_created_session_is_the_same_either_way(
    tmp_path: Path, way: None, anonymous: bool
) -> None:
    """What a session store makes and flushes: the same bytes and state either way."""
    if anonymous and not ANONYMOUS:
        pytest.skip("no O_TMPFILE here")
    whole_file.set_anonymous_create(anonymous)
    store = JsonlSessionStore(tmp_path / "sessions", durability="none")
    session = await store.open_or_create("s1", cwd="/w")
    path = tmp_path / "sessions" / "s1.jsonl"
    assert session._file_state == (os.stat(path).st_ino, os.stat(path).st_size)
    await session.append_message(UserMessage(content="hi", timestamp=1))
    await session.flush()
    assert session._file_state == (os.stat(path).st_ino, os.stat(path).st_size)
    lines = path.read_bytes().splitlines()
    assert [orjson.loads(line)["type"] for line in lines] == ["session", "message"]
    await session.aclose()
    assert sorted(p.name for p in path.parent.iterdir()) == ["s1.jsonl", "s1.jsonl.runtime.lock"]


_KILLED_BEFORE_THE_LINK = textwrap.dedent(
    """
    import os, sys
    from openclaw_runtime.transcript import whole_file
    whole_file.set_anonymous_create(sys.argv[2] == "anonymous")

    def killed(*args, **kwargs):
        os._exit(9)  # the process dies with the file written, before it has the name

    os.link = killed
    whole_file.create_whole(os.path.join(sys.argv[1], "s1.jsonl"), b"half", fsync=False)
    """
)


@pytest.mark.anyio
@pytest.mark.parametrize("anonymous", [True, False])
async def test_a_writer_killed_before_the_link_leaves_a_session_the_next_process_creates(
    tmp_path: Path, anonymous: bool
) -> None:
    """A real second process dies between writing and linking: no session file appears, so
    the next process creates the session afresh; the anonymous way leaves no temp file at all
    (the named way leaves one, for ``remove_stale_temps``)."""
    if anonymous and not ANONYMOUS:
        pytest.skip("no O_TMPFILE here")
    folder = tmp_path / "sessions"
    folder.mkdir()
    mode = "anonymous" if anonymous else "named"
    done = await anyio.run_process(
        [sys.executable, "-c", _KILLED_BEFORE_THE_LINK, str(folder), mode], check=False
    )
    assert done.returncode == 9, done.stderr.decode()
    left = sorted(p.name for p in folder.iterdir())
    if anonymous:
        assert left == []
    else:
        assert len(left) == 1 and left[0].startswith("s1.jsonl.create-")
    store = JsonlSessionStore(folder, durability="none")
    session = await store.open_or_create("s1", cwd="/w")
    assert session.get_entries() == [] and session.header["id"] == "s1"
    await session.aclose()


_RACER = textwrap.dedent(
    """
    import os, sys
    from openclaw_runtime.transcript.jsonl import create_exclusive
    content = (sys.argv[2] * 5000).encode() + b"\\n"
    sys.stdin.readline()  # start together
    try:
        create_exclusive(sys.argv[1], content, fsync=False)
    except FileExistsError:
        print("lost", flush=True)
    else:
        print("won", flush=True)
    """
)


def test_racing_processes_one_wins_and_its_file_is_whole(tmp_path: Path) -> None:
    target = tmp_path / "s1.jsonl"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(target), letter],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for letter in "abcd"
    ]
    for racer in racers:
        assert racer.stdin is not None
        racer.stdin.write(b"go\n")
        racer.stdin.flush()
    outcomes = [racer.communicate(timeout=60)[0].decode().strip() for racer in racers]
    assert sorted(outcomes) == ["lost", "lost", "lost", "won"]
    winner = "abcd"[outcomes.index("won")]
    assert target.read_bytes() == (winner * 5000).encode() + b"\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s1.jsonl"]  # no temp file left


def test_create_exclusive_returns_the_inode_at_the_name(tmp_path: Path) -> None:
    target = tmp_path / "s.jsonl"
    assert create_exclusive(target, b"head\n", fsync=True) == os.stat(target).st_ino
