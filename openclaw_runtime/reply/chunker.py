"""Block replies: cut a streaming answer into chunks a channel can send one message at a time.

OpenClaw's ``EmbeddedBlockChunker`` (spec 004 §4.4): text is appended as it streams and
``drain()`` gives back the chunks that are ready.

* ``flush_on_paragraph`` (and not forced): each complete paragraph (a break matching
  ``\\n[\\t ]*\\n+`` outside code fences) goes out at once, whatever ``min_chars`` says; a
  buffer that starts with a paragraph break keeps it (it separates turns). When no paragraph
  break exists and the buffer has reached ``max_chars``, the normal break picking applies.
* Not forced and fewer than ``min_chars`` buffered: wait.
* Forced and at most ``max_chars`` buffered: the whole buffer (if not blank).
* Otherwise the latest break inside ``buffer[:max_chars]``, searched backwards: paragraph
  (``\\n\\n``) → newline → sentence end (``.!?`` then whitespace or the end) → whitespace →
  a hard cut at ``max_chars``. ``break_preference="newline"`` skips sentence ends and waits
  (no whitespace break, no hard cut) while the buffer is shorter than ``max_chars``;
  ``"sentence"`` skips paragraph and newline breaks. Every break is at or after
  ``min_chars`` and **never inside a code fence**.
* A hard cut inside a fence closes the fence in the chunk (``<indent><marker>``) and reopens
  it (the original opening line) at the start of the rest, so both stay valid Markdown.
* After a break one whitespace character at the break and any leading newlines are dropped.

Pure: no I/O, no clock. ``BlockChunking`` validates its sizes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "DEFAULT_BLOCK_MAX_CHARS",
    "DEFAULT_BLOCK_MIN_CHARS",
    "BlockChunking",
    "BreakPreference",
    "EmbeddedBlockChunker",
    "FenceSpan",
    "parse_fence_spans",
]

BreakPreference = Literal["paragraph", "newline", "sentence"]
BREAK_PREFERENCES: Final = ("paragraph", "newline", "sentence")
#: OpenClaw's block-streaming defaults (``block-streaming.ts``; not in the spec extract).
DEFAULT_BLOCK_MIN_CHARS: Final = 800
DEFAULT_BLOCK_MAX_CHARS: Final = 1200

_FENCE_LINE_RE: Final = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_PARAGRAPH_RE: Final = re.compile(r"\n[\t ]*\n+")
_SENTENCE_RE: Final = re.compile(r"[.!?](?=\s|$)")


@dataclass(frozen=True, slots=True)
class BlockChunking:
    """Chunk sizes and where to prefer breaking (OpenClaw's ``BlockReplyChunking``)."""

    min_chars: int = DEFAULT_BLOCK_MIN_CHARS
    max_chars: int = DEFAULT_BLOCK_MAX_CHARS
    break_preference: BreakPreference = "paragraph"
    flush_on_paragraph: bool = False

    def __post_init__(self) -> None:
        for name in ("min_chars", "max_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"BlockChunking.{name} must be an int, got {value!r}")
        # OpenClaw clamps: min at least 1, max at least min
        object.__setattr__(self, "min_chars", max(1, self.min_chars))
        object.__setattr__(self, "max_chars", max(self.min_chars, self.max_chars))
        if self.break_preference not in BREAK_PREFERENCES:
            raise ValueError(
                f"BlockChunking.break_preference must be one of {', '.join(BREAK_PREFERENCES)}, "
                f"got {self.break_preference!r}"
            )


@dataclass(frozen=True, slots=True)
class FenceSpan:
    """A fenced code block: ``start`` (its opening line) to ``end`` (after its closing line,
    or the end of the text when unclosed); ``open_line``/``indent``/``marker`` reopen it."""

    start: int
    end: int
    open_line: str
    indent: str
    marker: str


def parse_fence_spans(text: str) -> list[FenceSpan]:
    """The fenced code blocks of ``text``, in order."""
    spans: list[FenceSpan] = []
    offset = 0
    open_at: tuple[int, str, str, str] | None = None  # start, open line, indent, marker
    for line in text.split("\n"):
        m = _FENCE_LINE_RE.match(line)
        if open_at is None:
            if m is not None and not (m.group(2)[0] == "`" and "`" in m.group(3)):
                open_at = (offset, line, m.group(1), m.group(2))
        elif (
            m is not None
            and m.group(2)[0] == open_at[3][0]
            and len(m.group(2)) >= len(open_at[3])
            and not m.group(3).strip()
        ):
            spans.append(FenceSpan(open_at[0], offset + len(line), *open_at[1:]))
            open_at = None
        offset += len(line) + 1
    if open_at is not None:
        spans.append(FenceSpan(open_at[0], len(text), *open_at[1:]))
    return spans


def _fence_at(spans: list[FenceSpan], index: int) -> FenceSpan | None:
    for span in spans:
        if span.start < index < span.end:
            return span
    return None


class EmbeddedBlockChunker:
    """Buffers streamed text; ``drain()`` returns the chunks ready to send."""

    def __init__(self, chunking: BlockChunking | None = None) -> None:
        self.chunking = chunking or BlockChunking()
        self.buffer = ""

    def append(self, text: str) -> None:
        """Add streamed text."""
        self.buffer += text

    def has_buffered(self) -> bool:
        """Is any text waiting?"""
        return bool(self.buffer)

    def reset(self) -> None:
        """Forget the buffer."""
        self.buffer = ""

    def drain(self, *, force: bool = False) -> list[str]:
        """The chunks ready now (``force``: everything, e.g. at the end of the text)."""
        out: list[str] = []
        c = self.chunking
        if c.flush_on_paragraph and not force:
            self._drain_paragraphs(out)
            if len(self.buffer) < c.max_chars:
                return out  # no paragraph break yet: wait for one (or for max_chars)
        while self.buffer:
            if not force and len(self.buffer) < c.min_chars:
                break
            if force and len(self.buffer) <= c.max_chars:
                if self.buffer.strip():
                    out.append(self.buffer)
                self.buffer = ""
                break
            if not self._cut(out, self._pick_break(self.buffer, 1 if force else c.min_chars)):
                break
        return out

    # ------------------------------------------------------------------ internals

    def _drain_paragraphs(self, out: list[str]) -> None:
        while True:
            spans = parse_fence_spans(self.buffer)
            found = None
            for m in _PARAGRAPH_RE.finditer(self.buffer):
                if m.start() == 0:
                    continue  # a leading break separates turns: keep it
                if _fence_at(spans, m.start()) is None:
                    found = m
                    break
            if found is None:
                return  # the caller falls back to normal picking once max_chars is reached
            chunk = self.buffer[: found.start()]
            self.buffer = self.buffer[found.end() :]
            if chunk.strip():
                out.append(chunk)

    def _cut(self, out: list[str], pick: tuple[int, FenceSpan | None] | None) -> bool:
        if pick is None:
            return False
        index, fence = pick
        buffer = self.buffer
        chunk, rest = buffer[:index], buffer[index:]
        if fence is not None and len(fence.open_line) + 1 >= self.chunking.max_chars // 2:
            fence = None  # reopening would not leave room to progress: a plain cut
        if fence is not None:
            # a hard cut inside a fence: close it here, reopen it in the rest
            if not chunk.endswith("\n"):
                chunk += "\n"
            chunk += fence.indent + fence.marker
            rest = fence.open_line + "\n" + rest
        else:
            if rest[:1].isspace():
                rest = rest[1:]
            rest = rest.lstrip("\n")
        if chunk.strip():
            out.append(chunk)
        self.buffer = rest
        return True

    def _pick_break(self, buffer: str, min_chars: int) -> tuple[int, FenceSpan | None] | None:
        c = self.chunking
        window = buffer[: c.max_chars]
        spans = parse_fence_spans(buffer)
        pref = c.break_preference

        def safe(index: int) -> bool:
            return index >= min_chars and _fence_at(spans, index) is None

        if pref == "paragraph":
            index = window.rfind("\n\n")
            while index >= min_chars:
                if safe(index):
                    return index, None
                index = window.rfind("\n\n", 0, index)
        if pref in ("paragraph", "newline"):
            index = window.rfind("\n")
            while index >= min_chars:
                if safe(index):
                    return index, None
                index = window.rfind("\n", 0, index)
        if pref != "newline":
            for m in reversed(list(_SENTENCE_RE.finditer(window))):
                # the end of the window only counts as "the end" when it ends the buffer
                cut_short = m.end() == len(window) < len(buffer)
                if cut_short and not buffer[m.end()].isspace():
                    continue
                if safe(m.end()):
                    return m.end(), None
        if pref == "newline" and len(buffer) < c.max_chars:
            return None
        for index in range(len(window) - 1, min_chars - 1, -1):
            if window[index].isspace() and safe(index):
                return index, None
        if len(buffer) >= c.max_chars:
            return c.max_chars, _fence_at(spans, c.max_chars)
        return None
