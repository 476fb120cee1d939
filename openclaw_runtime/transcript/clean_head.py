"""A session file's clean head: bytes the store's loader may take without checking each line.

A file the store wrote starts, nearly always, with a long run of lines the loader plans as
they are: the header, then entries with their own id, a parent that is none or an earlier
entry, no leaf record, every content block usable (``repair._untouched`` gives ``_CLEAN``),
and no line set aside. No later line can change how those are planned. The replay checkpoint
beside the file (``transcript.replay_checkpoint``, ``cleanBytes`` / ``cleanCrc``) keeps how
many bytes that run takes and their CRC-32; the next load that finds the very same bytes at
the start of what it parsed (one CRC of them) skips ``entry_problem`` and the plan's rules
for their lines, and extends the fact over the rest (O(rest)). A changed byte, a shorter
file, a side file without the fact: the full checks, as before.

The fact is always bound to the bytes a loader checked, never to bytes read later: a load
that had no fact keeps its bytes (``CleanHead.data``) until the fact is first asked for (the
checkpoint's first record), and works the CRC out of them then, so a load nobody records
pays nothing for it.
"""

from __future__ import annotations

import zlib
from bisect import bisect_left
from dataclasses import dataclass

__all__ = ["CleanHead", "KnownHead", "clean_entries", "found_head", "proven_head"]


@dataclass(frozen=True, slots=True)
class KnownHead:
    """What a side file says of its session file: ``clean`` = ``(bytes, CRC)`` of a clean
    head; ``file`` = ``(bytes, CRC)`` of the file's head at the checkpoint (or ``None``)."""

    clean: tuple[int, int]
    file: tuple[int, int] | None = None


@dataclass(slots=True)
class CleanHead:
    """The clean head of the bytes one load parsed (module docstring).

    ``crc`` is ``None`` until ``fact`` works it out of ``data`` (then let go). ``checked``:
    the side file's ``file`` when it holds for the loaded bytes (the checkpoint then need not
    read the file's head again)."""

    size: int
    crc: int | None = None
    data: bytes | None = None
    checked: tuple[int, int] | None = None

    def fact(self) -> tuple[int, int]:
        """``(bytes, CRC)`` to persist."""
        if self.crc is None:
            assert self.data is not None
            self.crc = zlib.crc32(memoryview(self.data)[: self.size])
            self.data = None
        return self.size, self.crc


def proven_head(data: bytes, known: KnownHead | None) -> tuple[int, int] | None:
    """``known.clean`` when ``data`` starts with those very bytes (their CRC), else ``None``."""
    if known is None:
        return None
    size, crc = known.clean
    if not 0 < size <= len(data) or data[size - 1] != 10:  # a clean head ends a line
        return None
    if zlib.crc32(memoryview(data)[:size]) != crc:
        return None
    return size, crc


def clean_entries(spans: list[tuple[int, int]], size: int) -> int:
    """How many parsed entries (``spans``: their byte ranges, in order) start in the first
    ``size`` bytes."""
    return bisect_left(spans, (size,))


def found_head(
    data: bytes,
    spans: list[tuple[int, int]],
    run: int,
    proven: tuple[int, int] | None,
    known: KnownHead | None,
) -> CleanHead | None:
    """The clean head of a load: ``proven`` (what ``proven_head`` gave) extended over the
    first ``run`` entries (``spans``: the parsed entries' byte ranges; pass 0 when a line was
    set aside), and ``checked`` set when ``known.file`` holds for ``data``."""
    head = None if proven is None else CleanHead(proven[0], proven[1])
    if run:
        end = spans[run - 1][1]
        if end >= len(data):  # an unterminated last line: the run ends before it
            end = spans[run - 2][1] if run > 1 else -1
        size = end + 1
        if head is None:
            if size > 0:
                head = CleanHead(size, data=data)
        elif size > head.size:
            assert head.crc is not None
            head.crc = zlib.crc32(memoryview(data)[head.size : size], head.crc)
            head.size = size
    if head is not None and known is not None and known.file is not None and proven is not None:
        start, crc = proven
        file_bytes, file_crc = known.file
        view = memoryview(data)[start:file_bytes]
        if start <= file_bytes <= len(data) and zlib.crc32(view, crc) == file_crc:
            head.checked = known.file
    return head
