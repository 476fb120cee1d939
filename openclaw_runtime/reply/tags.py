"""Split ``<think>``/``<thinking>``/``<final>`` tags out of streamed reply text, incrementally.

Some models write their reasoning inline (``<think>…</think>`` then the answer, or the answer
inside ``<final>…</final>``). OpenClaw's stream subscriber (``stripBlockTags``, spec 004 §4.1)
keeps that reasoning out of what the user sees; ``ReplyTagSplitter`` does the same, chunk by
chunk, and hands the reasoning back as its own segments so it can become thinking content.

Rules (OpenClaw's, with the differences named):

* Thinking tags: ``<think>``, ``<thinking>``, ``<thought>``, ``<antthinking>`` and their
  closing forms, case-insensitive, whitespace allowed inside (``< / think >``). Final tags:
  ``<final>``/``</final>``. Tags are removed from the output.
* Text between an opening and a closing thinking tag is reasoning. **An unclosed thinking tag
  hides everything after it**, later chunks included, until a closing tag arrives; at the end
  of the stream it stays reasoning. A stray closing tag is just removed.
* Tags inside code are text: inline code (a backtick run closed by a run of the same length;
  a blank line ends an unclosed one, as in Markdown) and fenced blocks (a line opening with
  three or more backticks or tildes, up to three spaces of indent, closed by a line of the
  same character at least as long).
* ``<final>`` marks the reply. Without ``enforce_final_tag`` only the final tags are removed
  (OpenClaw's default). With it, only text inside ``<final>…</final>`` is reply text; text
  outside it (before any ``<final>``, or after ``</final>``) is dropped, and an unclosed
  ``<final>`` passes text through until it closes.
* Final tags written inside reasoning belong to the reasoning (OpenClaw strips thinking first).
* Leading whitespace of the reply is dropped (what is left after ``<think>…</think>\\n\\n``).

Difference from OpenClaw: OpenClaw runs its regexes on each delta and does not buffer a tag
cut in two (``<thi`` + ``nk>``). Here text that could still become a tag, a backtick run or a
fence line is held back until the next chunk decides it, so **the output never depends on how
the text was chunked** — feeding it in any pieces gives exactly the segments (joined) that
one call gives. Whitespace inside a tag is bounded (16 characters per gap) so that holding
back is bounded too. ``finish()`` releases what is held: an unfinished tag is plain text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["ReplyTagSplitter", "Segment", "SegmentKind", "SplitText", "split_reply_tags"]

SegmentKind = Literal["text", "thinking"]

_WS = r"\s{0,16}"
_TAG_RE: Final = re.compile(
    rf"<{_WS}(/?){_WS}(thinking|think|thought|antthinking|final){_WS}>", re.IGNORECASE
)
_TAG_NAMES: Final = ("thinking", "think", "thought", "antthinking", "final")
_MAX_TAG_LEN: Final = 1 + 16 + 1 + 16 + len("antthinking") + 16 + 1
_FENCE_OPEN_RE: Final = re.compile(r" {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of output: reply ``text`` or ``thinking`` (reasoning)."""

    kind: SegmentKind
    text: str


@dataclass(frozen=True, slots=True)
class SplitText:
    """A whole text split at once: the reply and the reasoning."""

    text: str
    thinking: str


def _could_be_tag(fragment: str) -> bool:
    """Could ``fragment`` (starting with ``<``, no ``>``) still grow into a tag?"""
    if len(fragment) >= _MAX_TAG_LEN:
        return False
    m = re.fullmatch(rf"<{_WS}/?{_WS}([A-Za-z]*)({_WS})", fragment)
    if m is None:
        return False
    name, trailing = m.group(1).lower(), m.group(2)
    if trailing:
        return name in _TAG_NAMES
    return any(candidate.startswith(name) for candidate in _TAG_NAMES)


def _could_close_fence(partial_line: str, fence: str) -> bool:
    """Could this start of a line still become the line closing ``fence``?"""
    body = partial_line.lstrip(" ")
    if len(partial_line) - len(body) > 3:
        return False
    run = len(body) - len(body.lstrip(fence[0]))
    rest = body[run:]
    if not rest:
        return True
    return run >= len(fence) and not rest.strip()


class ReplyTagSplitter:
    """Incremental splitter: ``feed(chunk)`` → segments decided so far; ``finish()`` → the rest.

    One splitter per assistant message (the state carries across its text blocks and deltas).
    Consecutive segments of one kind are merged within a call; empty segments never appear.
    """

    def __init__(self, *, enforce_final_tag: bool = False) -> None:
        self.enforce_final_tag = enforce_final_tag
        self.thinking = False
        self.in_final = False
        self.ever_final = False
        self._pending = ""
        self._inline_ticks = 0  # length of the open inline-code backtick run (0: none)
        self._fence: str | None = None  # the open fence run ("```", "~~~~"…)
        self._line_start = True
        self._line_blank = True
        self._reply_started = False
        self._out: list[Segment] = []

    # ------------------------------------------------------------------ public

    def feed(self, chunk: str) -> list[Segment]:
        """Segments decided by ``chunk`` (text that might still be a tag is held back)."""
        self._pending += chunk
        self._scan(final=False)
        return self._take()

    def flush(self) -> list[Segment]:
        """Release what is held back (end of a text block); the modes carry on."""
        self._scan(final=True)
        return self._take()

    def finish(self) -> list[Segment]:
        """End of the message: release what is held back (an unfinished tag is text)."""
        return self.flush()

    # ------------------------------------------------------------------ scanning

    def _take(self) -> list[Segment]:
        out, self._out = self._out, []
        return out

    def _emit(self, text: str) -> None:
        if not text:
            return
        kind: SegmentKind = "thinking" if self.thinking else "text"
        if kind == "text":
            if self.enforce_final_tag and not self.in_final:
                return
            if not self._reply_started:
                text = text.lstrip()
                if not text:
                    return
                self._reply_started = True
        if self._out and self._out[-1].kind == kind:
            self._out[-1] = Segment(kind, self._out[-1].text + text)
        else:
            self._out.append(Segment(kind, text))

    def _advance_lines(self, text: str) -> None:
        for ch in text:
            if ch == "\n":
                if self._line_blank:
                    self._inline_ticks = 0  # a blank line ends an unclosed code span
                self._line_start = True
                self._line_blank = True
            else:
                self._line_start = False
                if not ch.isspace():
                    self._line_blank = False

    def _scan(self, *, final: bool) -> None:
        text = self._pending
        i = 0
        n = len(text)
        plain_from = 0

        def plain_until(j: int) -> None:
            nonlocal plain_from
            if j > plain_from:
                piece = text[plain_from:j]
                self._emit(piece)
            plain_from = j

        while i < n:
            if self._fence is not None:
                # inside a fence: only a closing fence line matters, decided per whole line
                if self._line_start:
                    end = text.find("\n", i)
                    if end < 0 and not final:
                        if _could_close_fence(text[i:], self._fence):
                            break  # the rest of the line decides
                        self._advance_lines(text[i:])  # cannot close: it is code
                        i = n
                        continue
                    line_end = n if end < 0 else end + 1
                    line = text[i:line_end]
                    stripped = line.rstrip("\r\n")
                    m = _FENCE_OPEN_RE.match(stripped)
                    if (
                        m is not None
                        and m.group(1)[0] == self._fence[0]
                        and len(m.group(1)) >= len(self._fence)
                        and not stripped[m.end() :].strip()
                    ):
                        self._fence = None
                    self._advance_lines(line)
                    i = line_end
                    continue
                end = text.find("\n", i)
                line_end = n if end < 0 else end + 1
                self._advance_lines(text[i:line_end])
                i = line_end
                continue
            ch = text[i]
            if self._line_start and self._inline_ticks == 0 and ch in " `~":
                # a possible fence opening (up to 3 spaces, then 3+ backticks or tildes)
                j = i
                while j < n and j - i < 3 and text[j] == " ":
                    j += 1
                if j == n and not final:
                    break  # only indent so far: the next chunk decides
                if j < n and text[j] in "`~":
                    k = j
                    while k < n and text[k] == text[j]:
                        k += 1
                    if k == n and not final:
                        break  # the run may be longer
                    if k - j >= 3:
                        self._fence = text[j:k]
                        self._advance_lines(text[i:k])
                        i = k
                        continue
            if ch == "`":
                k = i
                while k < n and text[k] == "`":
                    k += 1
                if k == n and not final:
                    break  # the run may be longer
                run = k - i
                if self._inline_ticks == 0:
                    self._inline_ticks = run
                elif self._inline_ticks == run:
                    self._inline_ticks = 0
                self._advance_lines(text[i:k])
                i = k
                continue
            if ch == "<" and self._inline_ticks == 0:
                m = _TAG_RE.match(text, i)
                if m is None:
                    close = text.find(">", i)
                    fragment = text[i:] if close < 0 else ""
                    if fragment and not final and _could_be_tag(fragment):
                        break
                else:
                    plain_until(i)
                    self._apply_tag(
                        closing=bool(m.group(1)), name=m.group(2).lower(), raw=m.group(0)
                    )
                    self._advance_lines(m.group(0))
                    i = plain_from = m.end()
                    continue
            self._advance_lines(ch)
            i += 1
            continue
        # everything before i is decided
        plain_until(i)
        self._pending = text[i:]
        if final and self._pending:
            # nothing more will come: what is held is plain text
            rest, self._pending = self._pending, ""
            self._advance_lines(rest)
            self._emit(rest)

    def _apply_tag(self, *, closing: bool, name: str, raw: str) -> None:
        if name == "final":
            if self.thinking:
                self._emit(raw)  # a final tag inside reasoning is reasoning
                return
            self.in_final = not closing
            if not closing:
                self.ever_final = True
            return
        self.thinking = not closing


def split_reply_tags(text: str, *, enforce_final_tag: bool = False) -> SplitText:
    """Split a whole text at once (the result any chunking of ``text`` also gives)."""
    splitter = ReplyTagSplitter(enforce_final_tag=enforce_final_tag)
    segments = splitter.feed(text) + splitter.finish()
    return SplitText(
        text="".join(s.text for s in segments if s.kind == "text"),
        thinking="".join(s.text for s in segments if s.kind == "thinking"),
    )
