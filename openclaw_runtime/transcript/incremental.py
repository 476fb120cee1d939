"""Sanitizing a growing history without re-reading all of it before every request.

The built-in pipeline is a function of the whole history, but the part of a history before a
*stable boundary* sanitizes the same way no matter what is appended after it. A boundary is a
user message that

* is preceded by no tool call still waiting for a result that comes later (pairing is
  closed: the pairing stage looks for a call's results only up to the next assistant turn
  with calls, and a call whose result never came gets a synthetic one right after it whatever
  follows; a later result naming it, or naming no id, is in the part still to sanitize,
  which then runs in full, see "Ids across the history"),
* is followed by at least one assistant turn that is replayed (not failed, not empty), so
  "the latest assistant turn", which some stages treat specially, lies after it, and
* comes after every message the latest compaction kept (their usage is zeroed by the
  stale-usage stage because they predate the compaction).

``IncrementalSanitizer`` keeps the sanitized output of the history up to the last boundary it
saw; the next call whose history starts with the very same message objects only sanitizes the
messages after that boundary. Anything else (another policy, other sanitizers, a compaction
that replaced the start of the history, a message edited in place) falls back to the full
pipeline. Only the built-in stages are known to be boundary-stable, so a pipeline with any
plugin sanitizer always runs in full.

**Inside a tool loop.** A tool loop appends no user message, so the boundary above cannot move
while the model calls tool after tool. Within the current user turn a second, finer boundary
advances at every *stable entry*: an assistant turn with tool calls whose results have all
arrived (see :func:`find_tool_loop_boundary`). The prefix before it sanitizes the same way as
long as only assistant turns and tool results are appended (a new user message would end "the
tool turn in progress", whose first assistant turn keeps its reasoning), so that cache is only
used while that holds. The messages after it are sanitized behind a short *context*: the
compaction summary (if the history starts with one), the user message and the first assistant
turn of the loop with its results; what the pipeline makes of the context is thrown away. The
context stands in for everything the stages look at outside the tail: the latest user message,
an earlier assistant turn of the same tool loop, the compaction stamp, a user-first history.
In the normal case even that is skipped: when the part after the boundary is a *clean tail*
(``transcript.loop_tail``: whole tool groups that no stage changes in any such context, told
per message and read once per message), it is appended as it is. Until the loop has a second
group, the boundary is the loop's first assistant turn and the context the user message alone
(the first group is then in the part to sanitize, so nothing outside it is "an earlier
assistant turn of the loop"); the context takes the first group in when the boundary moves
past it. So only a loop's first request goes without the loop cache, and a fresh session's
plain prompt followed by one group needs no stage at all.

**A new turn.** The first two requests of a session's next turn sanitize the part after the
last stable boundary: the previous turn and the new prompt (the boundary moves to the new
prompt only once an assistant turn follows it). When that part is a *clean region*
(``transcript.clean_turns``: plain prompts, clean text answers and clean tool groups, which no
stage changes), it is taken as it is instead of running the stages.

**Ids across the history.** A few rules match tool calls and results by id across the whole
history: a signed-thinking turn that reuses an earlier call's id while its result is displaced
is dropped, and a real result replaces an earlier synthetic one for the same call. Both caches
keep the ids their cached part names, and a part still to sanitize that names one of them runs
in full, unless it is a clean tail or a clean region: neither rule can reach those
(``loop_tail``, "Ids named again"), so a provider that numbers its calls afresh in every turn
(``call_0`` each time) keeps the caches too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from .._prefix import starts_with
from .clean_turns import clean_region_outputs
from .entries import parse_timestamp_ms
from .loop_tail import (
    MessageFacts,
    TailFacts,
    clean_tail,
    message_facts,
    sanitized,
    without_thinking,
)
from .policy import TranscriptPolicy
from .sanitize import (
    OnError,
    SanitizerSpec,
    earlier_thinking_dropped,
    has_declared_types,
    is_plain_user_turn,
    reasoning_dropped,
    run_transcript_sanitizers,
    signed_thinking_kept,
    thinking_untouched,
)
from .stage_specs import StageSpecs, stage_specs
from .tool_calls import (
    extract_tool_calls_from_assistant,
    extract_tool_result_id,
    extract_tool_result_ids,
    normalize_allowed_names,
)
from .wire import role_of, wget

__all__ = [
    "IncrementalSanitizer",
    "ToolLoopBoundary",
    "boundary_holds_after",
    "find_stable_boundary",
    "find_tool_loop_boundary",
]

_NO_IDS: frozenset[str] = frozenset()


def find_stable_boundary(messages: Sequence[Any], start: int = 0, below: int | None = None) -> int:
    """The largest stable boundary at or after ``start`` (module docstring), or ``start``;
    with ``below``, the largest one before that index (what follows it is still read, for
    the assistant turn that makes a user message a boundary).

    ``start`` must itself be a boundary (or 0): the scan only reads the messages after it.
    """
    compaction_stamp: float | None = None
    # a compaction's summary opens the context it applies to
    if messages and role_of(messages[0]) == "compactionSummary":
        stamp = parse_timestamp_ms(wget(messages[0], "timestamp"))
        compaction_stamp = float(stamp) if stamp is not None else None
    open_calls: set[str] = set()
    later: tuple[dict[str, int], int] | None = None  # ``_results_after``, when first needed
    best = start
    candidate: int | None = None
    for index in range(start, len(messages)):
        if below is not None and index >= below and candidate is None:
            break  # no boundary before ``below`` waits for its assistant turn any more
        message = messages[index]
        role = role_of(message)
        if role == "assistant":
            if candidate is not None and _is_replayed_turn(message):
                best = candidate
                candidate = None
            calls = extract_tool_calls_from_assistant(message)
            if calls:
                # a new frame of the pairing stage (``pairing._classify``): results are only
                # looked for up to the next assistant turn with calls, so the calls of the
                # frame before are settled now (answered, or given a synthetic result right
                # after them) whatever follows; a later result naming one of them is in the
                # part still to sanitize, which then runs in full (``_prefix_ids``)
                open_calls = {call.id for call in calls}
            continue
        if role == "toolResult":
            call_id = extract_tool_result_id(message)
            if call_id is not None:
                open_calls.discard(call_id)
            continue
        if compaction_stamp is not None:
            stamp = parse_timestamp_ms(wget(message, "timestamp"))
            if stamp is None or stamp <= compaction_stamp:
                candidate = None
                continue
        if role == "user" and index > 0:
            if open_calls:
                if later is None:
                    later = _results_after(messages, start)
                if not _lost(open_calls, index, later):
                    continue
            if below is not None and index >= below:
                break  # it would take the candidate's place, and it is not before ``below``
            candidate = index
    return best


def _results_after(messages: Sequence[Any], start: int) -> tuple[dict[str, int], int]:
    """Where the tool results from ``start`` on are: the last index of a result for each
    id, and the last index of a result that names no id (-1: none)."""
    last: dict[str, int] = {}
    no_id = -1
    for index in range(start, len(messages)):
        message = messages[index]
        if role_of(message) == "toolResult":
            ids = extract_tool_result_ids(message)
            if not ids:
                no_id = index
            for call_id in ids:
                last[call_id] = index
    return last, no_id


def _lost(open_calls: AbstractSet[str], index: int, later: tuple[dict[str, int], int]) -> bool:
    """Whether calls still waiting at ``index`` wait for good, as far as the history goes: no
    result after ``index`` names one of them, and none there names no id (a legacy result may
    answer a turn's only call). Then the pairing stage gives each a synthetic result right
    after its call whatever follows, as long as nothing later names them, which the cached
    ids check (``_names_cached``) makes the part still to sanitize run in full for."""
    last, no_id = later
    return no_id < index and all(last.get(call_id, -1) < index for call_id in open_calls)


def boundary_holds_after(messages: Sequence[Any], index: int) -> bool:
    """Whether ``index`` is a stable boundary, given that it was one for the same
    ``messages[:index]`` followed by other messages (a persisted checkpoint): what the
    prefix decides (pairing closed before it) still holds, so only the message at ``index``
    (a user message, after the compaction's kept messages) and what follows it (a replayed
    assistant turn) are checked."""
    if index <= 0 or index >= len(messages) or role_of(messages[index]) != "user":
        return False
    if role_of(messages[0]) == "compactionSummary":
        stamp = parse_timestamp_ms(wget(messages[0], "timestamp"))
        own = parse_timestamp_ms(wget(messages[index], "timestamp"))
        if stamp is not None and (own is None or own <= stamp):
            return False
    return any(
        role_of(message) == "assistant" and _is_replayed_turn(message)
        for message in messages[index + 1 :]
    )


def _is_replayed_turn(message: Any) -> bool:
    """An assistant turn that stays in the replayed history (failed and empty turns are
    dropped, so they cannot be "the latest assistant turn")."""
    if wget(message, "stopReason") in ("error", "aborted"):
        return False
    content = wget(message, "content")
    if not isinstance(content, list):
        return False
    for block in content:
        if wget(block, "type") != "text":
            return True
        text = wget(block, "text")
        if isinstance(text, str) and text.strip():
            return True
    return False


_LOOP_ROLES = frozenset({"assistant", "toolResult"})


@dataclass(frozen=True, slots=True)
class ToolLoopBoundary:
    """A stable entry inside the tool loop of the current user turn.

    ``index`` is the assistant turn that starts the part still to sanitize; ``user`` is the
    user message that opened the loop and ``context_end`` the end of the loop's first
    assistant turn and its results (``messages[user:context_end]`` is the context).
    """

    index: int
    user: int
    context_end: int


def _tool_group_end(messages: Sequence[Any], index: int) -> int | None:
    """Where the tool group at ``index`` ends, or ``None`` when it is not a stable entry.

    A stable entry is a replayed assistant turn with tool calls (no id twice) followed by
    exactly one result for each call and nothing else.
    """
    message = messages[index]
    if role_of(message) != "assistant" or not _is_replayed_turn(message):
        return None
    ids = [call.id for call in extract_tool_calls_from_assistant(message)]
    pending = set(ids)
    if not ids or len(pending) != len(ids):
        return None
    end = index + 1
    while end < len(messages) and role_of(messages[end]) == "toolResult":
        call_id = extract_tool_result_id(messages[end])
        if call_id not in pending:
            return None
        pending.discard(call_id)
        end += 1
    return end if not pending else None


def _opens_tool_group(message: Any) -> bool:
    return (
        role_of(message) == "assistant"
        and _is_replayed_turn(message)
        and bool(extract_tool_calls_from_assistant(message))
    )


def find_tool_loop_boundary(
    messages: Sequence[Any], user: int, resume: ToolLoopBoundary | None = None
) -> ToolLoopBoundary | None:
    """The last stable entry of the tool loop after the user message at ``user``, if any.

    The loop must be clean from its start: the user message, then tool groups (see
    :func:`_tool_group_end`), the last of which may still wait for results. The boundary is
    the last tool-calling assistant turn that follows at least one complete group; the first
    group is the context, so the boundary is never before the loop's second assistant turn
    (``_loop_start`` gives the boundary of a loop with one group: its first assistant turn).
    ``resume`` (an earlier result for the same ``user``) skips the part already checked.
    """
    if user < 0 or user >= len(messages) or role_of(messages[user]) != "user":
        return None
    if resume is not None:
        context_end, index, best = resume.context_end, resume.index, resume.index
    else:
        first = user + 1
        if first >= len(messages):
            return None
        end = _tool_group_end(messages, first)
        if end is None:
            return None
        context_end, index, best = end, end, None
    while index < len(messages) and _opens_tool_group(messages[index]):
        best = index
        end = _tool_group_end(messages, index)
        if end is None:
            break
        index = end
    if best is None:
        return None
    return ToolLoopBoundary(best, user, context_end)


def _call_ids(messages: Sequence[Any]) -> set[str]:
    """Every tool-call id the messages name (their assistant turns' calls, their results)."""
    ids: set[str] = set()
    for message in messages:
        role = role_of(message)
        if role == "assistant":
            ids.update(call.id for call in extract_tool_calls_from_assistant(message))
        elif role == "toolResult":
            ids.update(extract_tool_result_ids(message))
    return ids


def _names_cached(cached_ids: AbstractSet[str], rest: Sequence[Any]) -> bool:
    """Whether the part after a stable boundary (``rest``) may change the cached part before
    it: it names one of its ids, or before its first assistant turn with calls holds a
    result that names no id (a legacy result may answer the only call of a turn still
    waiting at the boundary, ``pairing.normalize_legacy_result_id``)."""
    if not cached_ids.isdisjoint(_call_ids(rest)):
        return True
    for message in rest:
        role = role_of(message)
        if role == "assistant" and extract_tool_calls_from_assistant(message):
            return False
        if role == "toolResult" and not extract_tool_result_ids(message):
            return True
    return False


def _predates_compaction(messages: Sequence[Any], start: int) -> bool:
    """Whether a message from ``start`` on is stamped at or before the compaction summary that
    opens the history (a clock that went back): the stages that compare stamps with the
    summary's would treat it as compacted, which the part after a boundary cannot see alone."""
    if not messages or role_of(messages[0]) != "compactionSummary":
        return False
    stamp = parse_timestamp_ms(wget(messages[0], "timestamp"))
    if stamp is None:
        return False
    for message in messages[start:]:
        own = parse_timestamp_ms(wget(message, "timestamp"))
        if own is not None and own <= stamp:
            return True
    return False


def _position(items: Sequence[Any], target: Any, start: int = 0) -> int | None:
    for index in range(start, len(items)):
        if items[index] is target:
            return index
    return None


def _extends(cached: Sequence[Any], messages: Sequence[Any]) -> bool:
    """``messages`` is ``cached`` (the same objects) plus at least one more message."""
    return bool(cached) and len(messages) > len(cached) and starts_with(messages, cached)


@dataclass(slots=True)
class _LoopCache:
    """The sanitized prefix up to a tool-loop boundary and the context for what follows."""

    key: tuple[Any, ...]
    boundary: ToolLoopBoundary
    inputs: list[Any]
    outputs: list[Any]
    context: list[Any]
    #: the tool-call ids ``inputs`` name (see ``IncrementalSanitizer._prefix_ids``)
    ids: set[str]
    #: the policy's tool allowlist, normalized, and the context's compaction timestamp (for
    #: ``loop_tail``: whether the part after the boundary sanitizes to itself)
    allowed: frozenset[str] | None = None
    compaction_stamp: float | None = None
    #: ``loop_tail`` facts and sanitized form of the messages after the boundary, by identity
    #: (read and made once each: a result without its details is the same copy every time)
    facts: dict[int, tuple[Any, MessageFacts, Any]] | None = None
    #: whether the stages remove a clean result's ``details`` (the details stage is among
    #: them and the policy wants it): else a clean message comes out as it went in
    strip_details: bool = True
    #: whether no stage touches thinking blocks under the policy
    #: (``sanitize.thinking_untouched``): a turn clean but for them is clean then
    thinking: bool = False
    #: whether, short of that, the stages keep signed thinking (``sanitize.signed_thinking_kept``):
    #: a turn clean but for signed thinking blocks is clean then when its ids are new (``ids``)
    signed: bool = False
    #: whether they drop the thinking of every turn but one (``loop_tail``, "Dropped
    #: thinking"): the latest's (``sanitize.earlier_thinking_dropped``) or, with
    #: ``first_keeps``, the loop's first turn's (``sanitize.reasoning_dropped``)
    dropped: bool = False
    first_keeps: bool = False

    def clean_tail_of(self, rest: Sequence[Any]) -> tuple[TailFacts, list[Any]] | None:
        """The shape of ``rest`` and what the pipeline makes of it, when it is a clean tail
        (``loop_tail.clean_tail``)."""
        memo = self.facts or {}
        known: dict[int, tuple[Any, MessageFacts, Any]] = {}
        facts = []
        outputs = []
        for message in rest:
            key = id(message)
            hit = memo.get(key)
            if hit is None or hit[0] is not message:
                found = message_facts(message, self.allowed)
                if self.dropped and found.thinking:
                    out = without_thinking(message)  # as an earlier turn; the latest below
                else:
                    clean = (
                        found.clean
                        or (self.thinking and found.thinking)
                        or (self.signed and found.signed)
                    )
                    out = sanitized(message, found, self.strip_details) if clean else None
                hit = (message, found, out)
            known[key] = hit
            facts.append(hit[1])
            outputs.append(hit[2])
        self.facts = known
        known_ids = self.ids if self.signed else None
        last_kept = not self.first_keeps
        stamp = self.compaction_stamp
        tail = clean_tail(facts, stamp, self.thinking, known_ids, self.dropped, last_kept)
        if tail is None:
            return None
        if self.dropped:
            # the one turn that keeps its thinking comes out as itself, not its copy: the
            # latest (signed), or the loop's first when the tail starts with it
            if last_kept:
                keeper = tail.last_group
            else:
                keeper = 0 if self.boundary.index == self.boundary.user + 1 else -1
            if keeper >= 0 and facts[keeper].thinking:
                outputs[keeper] = rest[keeper]
        return tail, outputs


class IncrementalSanitizer:
    """The pipeline's output for one session's history, reused as the history grows."""

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        # empty: the shared empty tuple and frozenset, not containers per session (a fresh
        # session's first request finds no boundary and stays empty while it waits)
        self._inputs: Sequence[Any] = ()
        self._outputs: Sequence[Any] = ()
        #: The tool-call ids ``_inputs`` name. Some rules look across the whole history by id
        #: (a signed-thinking turn is dropped when it reuses an earlier call's id with its
        #: result displaced; a late real result replaces an earlier synthetic one), so a part
        #: still to sanitize that names an id of the cached part runs in full.
        self._prefix_ids: AbstractSet[str] = _NO_IDS
        self._loop: _LoopCache | None = None
        #: The stages' specs (``transcript.stage_specs``: shared by every session).
        self._seen_sanitizers: StageSpecs | None = None
        #: Called with the history and the cache key when nothing is cached (a cold start):
        #: how many leading messages are known to sanitize to themselves (a persisted
        #: checkpoint, ``transcript.replay_checkpoint``); 0 when unknown.
        self.restore: Callable[[Sequence[Any], tuple[Any, ...]], int] | None = None
        #: Called right after ``restore`` took a prefix: the tool-call ids that prefix names,
        #: when the checkpoint kept them (``None``: worked out from the messages).
        self.restored_ids: Callable[[], set[str] | None] | None = None

    @property
    def cached_length(self) -> int:
        """How many leading messages the cache holds (an upper bound of ``stable_prefix``)."""
        return len(self._inputs) if self._key is not None else 0

    def prefix_call_ids(self, prefix: Sequence[Any]) -> set[str]:
        """The tool-call ids ``prefix`` (a prefix of the cached history, as ``stable_prefix``
        returns it) names: kept for the whole cached prefix, else read out of it."""
        if self._key is not None and len(prefix) == len(self._inputs):
            return set(self._prefix_ids)
        return _call_ids(prefix)

    @property
    def cached_outputs(self) -> Sequence[Any]:
        """The pipeline's output for the cached prefix (empty when nothing is cached)."""
        return self._outputs if self._key is not None else ()

    def end_attempt(self) -> None:
        """Forget the tool-loop cache at the end of an attempt.

        It holds the attempt's own messages (the kernel's objects: the prompt, the assistant
        turns, the tool results, and their sanitized copies), which no later call can match
        by identity: the next attempt starts from the session's models, other objects. The
        cached prefix (before the last stable boundary: the session's models) is kept, and so
        is what the replay checkpoint reads (``stable_prefix``)."""
        self._loop = None

    def stable_prefix(self) -> tuple[tuple[Any, ...], list[Any]] | None:
        """The cache key and the longest cached prefix ending at a stable boundary that the
        pipeline leaves exactly as it is (the same objects), or ``None``."""
        if self._key is None or not self._inputs:
            return None
        inputs, outputs = self._inputs, self._outputs
        limit = min(len(inputs), len(outputs))
        for index in range(limit):
            if inputs[index] is not outputs[index]:
                limit = index
                break
        if limit == len(inputs) == len(outputs):
            return self._key, list(inputs)
        # a boundary strictly before the first change: the pipeline's output for the part
        # before it is that part (the boundary message itself is still in place); the turn
        # that makes it a boundary may follow the change
        boundary = find_stable_boundary(inputs, below=limit)
        return (self._key, list(inputs[:boundary])) if boundary > 0 else None

    def run(
        self,
        messages: Sequence[Any],
        policy: TranscriptPolicy,
        sanitizers: Sequence[Any],
        *,
        on_error: OnError | None = None,
        full: Callable[..., list[Any]] = run_transcript_sanitizers,
    ) -> list[Any]:
        """Same result as ``run_transcript_sanitizers(messages, policy, sanitizers)``."""
        specs, builtin_only, stages = self._specs_of(sanitizers)
        if not builtin_only:
            return full(messages, policy, sanitizers, on_error=on_error)
        key = (policy, stages)
        loop = self._loop
        if (
            loop is None
            and self._key is None
            and len(messages) > 2
            and is_plain_user_turn(messages[:1], policy)
        ):
            # a fresh session's second request, one tool group after its plain first prompt
            # (whose request needed no cache): the loop starts here, as it would have after
            # the pipeline had run over the three messages
            loop = self._open_fresh_loop(key, messages)
        if loop is not None and key == loop.key and _extends(loop.inputs, messages):
            start = len(loop.inputs)
            rest = messages[start:]
            clean = loop.clean_tail_of(rest)
            if clean is not None:
                # the normal case: the new tool group (and the one before it) come out as
                # they are (results without their details), whatever the context and
                # whatever ids of it they name again (``loop_tail``, "Ids named again"); no
                # stage needs to run
                out = [*loop.outputs, *clean[1]]
                self._advance_clean(messages, out, loop, clean[0])
                return out
            if all(role_of(m) in _LOOP_ROLES for m in rest) and loop.ids.isdisjoint(
                _call_ids(rest)
            ):
                ran = full([*loop.context, *messages[start:]], policy, specs, on_error=on_error)
                position = _position(ran, messages[start])
                if position is not None:
                    out = [*loop.outputs, *ran[position:]]
                    self._advance_loop(messages, out, loop)
                    return out
        self._loop = None
        if self._key is None and self.restore is not None:
            known = self.restore(messages, key)
            if known > 0:
                self._key = key
                self._inputs = list(messages[:known])
                self._outputs = list(self._inputs)
                # the restored prefix's call ids, for the same cross-history check as a warm cache
                ids = None if self.restored_ids is None else self.restored_ids()
                self._prefix_ids = ids if ids is not None else _call_ids(self._inputs)
        start = 0
        head: Sequence[Any] = ()
        region: list[Any] | None = None
        if (
            key == self._key
            and _extends(self._inputs, messages)
            and not _predates_compaction(messages, len(self._inputs))
        ):
            # a new turn's first requests: the previous turn and the new prompt, which in the
            # normal case come out as they are (``transcript.clean_turns``), even when they
            # name ids of the cached part again (``loop_tail``, "Ids named again")
            rest = messages[len(self._inputs) :]
            region = clean_region_outputs(rest, policy, self._strips_details())
            if region is not None or not _names_cached(self._prefix_ids, rest):
                start = len(self._inputs)
                head = self._outputs
        if start == 0 and is_plain_user_turn(messages, policy):
            tail = list(messages)  # what every built-in stage leaves of it (a fresh session)
        else:
            if not start:  # the region above was of another part, or not looked for
                region = clean_region_outputs(messages, policy, self._strips_details())
            if region is not None:
                tail = region
            else:
                # the stages as specs (worked out once): the same stages, names, orders, plugins
                tail = full(list(messages[start:]), policy, specs, on_error=on_error)
        out = [*head, *tail]
        boundary = find_stable_boundary(messages, start)
        if boundary > start:
            anchor = messages[boundary]
            position = next((i for i, m in enumerate(tail) if m is anchor), None)
            if position is not None:
                added = _call_ids(messages[start:boundary])
                self._prefix_ids = self._prefix_ids | added if start else added
                self._key = key
                self._inputs = list(messages[:boundary])
                self._outputs = [*head, *tail[:position]]
        elif start == 0:
            self._key, self._inputs, self._outputs = None, (), ()
            self._prefix_ids = _NO_IDS
        if self._key == key and self._inputs:
            self._open_loop(key, messages, out, len(self._inputs), len(self._outputs))
        elif messages and role_of(messages[0]) == "user":
            self._open_loop(key, messages, out, 0, 0)  # the session's first turn
        return out

    def _specs_of(
        self, sanitizers: Sequence[Any]
    ) -> tuple[tuple[SanitizerSpec, ...], bool, tuple[tuple[str, int], ...]]:
        """The stages as specs, whether all are built-in, and their names and orders (part of
        the cache key); looked up again only when the sanitizers are other objects than at
        the previous call (an attempt passes the same ones before every request), and then
        shared with every session handed the same objects (``transcript.stage_specs``)."""
        seen = self._seen_sanitizers
        if seen is None or not seen.made_from(sanitizers):
            seen = self._seen_sanitizers = stage_specs(sanitizers)
        return seen.specs, seen.builtin_only, seen.stages

    def _open_loop(
        self, key: tuple[Any, ...], messages: Sequence[Any], out: list[Any], user: int, after: int
    ) -> None:
        """Start the tool-loop cache after the user message at ``user`` (``out[after]``)."""
        found = find_tool_loop_boundary(messages, user) or _loop_start(messages, user)
        if found is None:
            return
        position = _position(out, messages[found.index], after)
        if position is None:
            return
        context = list(messages[user : found.context_end])
        if role_of(messages[0]) == "compactionSummary":
            context.insert(0, messages[0])
        ids = _call_ids(messages[user : found.index])
        if user:
            ids |= self._prefix_ids
        inputs = list(messages[: found.index])
        stamp = None
        if role_of(context[0]) == "compactionSummary":
            parsed = parse_timestamp_ms(wget(context[0], "timestamp"))
            stamp = None if parsed is None else float(parsed)
        strip = self._loop_strips_details(key[0])
        if strip is None:
            return
        allowed = normalize_allowed_names(key[0].allowed_tool_names)
        thinking, signed, dropped, first_keeps = _thinking_modes(key[0])
        self._loop = _LoopCache(
            key,
            found,
            inputs,
            out[:position],
            context,
            ids,
            allowed,
            stamp,
            strip_details=strip,
            thinking=thinking,
            signed=signed,
            dropped=dropped,
            first_keeps=first_keeps,
        )

    def _open_fresh_loop(self, key: tuple[Any, ...], messages: Sequence[Any]) -> _LoopCache | None:
        """The loop cache ``_open_loop`` would start after the pipeline ran over ``messages``:
        a plain user message (``is_plain_user_turn``: the pipeline's output for it is itself,
        whatever follows) and one complete tool group, which is the part still to sanitize.
        ``None`` for any other shape."""
        found = _loop_start(messages, 0)
        strip = None if found is None else self._loop_strips_details(key[0])
        if found is None or strip is None:
            return None
        allowed = normalize_allowed_names(key[0].allowed_tool_names)
        thinking, signed, dropped, first_keeps = _thinking_modes(key[0])
        first = messages[0]
        self._loop = _LoopCache(
            key,
            found,
            [first],
            [first],
            [first],
            set(),
            allowed,
            strip_details=strip,
            thinking=thinking,
            signed=signed,
            dropped=dropped,
            first_keeps=first_keeps,
        )
        return self._loop

    def _strips_details(self) -> bool:
        """Whether the stage removing results' ``details`` is among the current stages."""
        seen = self._seen_sanitizers
        return seen is None or seen.strips_details

    def _loop_strips_details(self, policy: TranscriptPolicy) -> bool | None:
        """Whether the stages remove a clean result's ``details`` under ``policy``, or
        ``None`` when the policy is not of its declared types (a stage may raise on it and be
        reported, so the pipeline must run: no loop cache)."""
        if not has_declared_types(policy):
            return None
        return self._strips_details() and policy.wants("tool_result_details", True)

    def _advance_clean(
        self, messages: Sequence[Any], out: list[Any], loop: _LoopCache, tail: TailFacts
    ) -> None:
        """Move the tool-loop cache to the last group of a clean tail: the boundary
        ``find_tool_loop_boundary`` finds there (every group of the tail is a stable entry)."""
        if tail.last_group == 0:
            return
        start = len(loop.inputs)
        index = start + tail.last_group
        facts = loop.facts or {}
        for message in messages[start:index]:
            loop.ids.update(facts[id(message)][1].ids)
        if not self._with_first_group(messages, loop):
            return
        loop.boundary = ToolLoopBoundary(index, loop.boundary.user, loop.boundary.context_end)
        # grown in place, not copied again (``run`` checked ``messages`` starts with
        # ``loop.inputs`` and ``out`` with ``loop.outputs``): the cost of a call stays that of
        # its new messages, not of the whole loop
        kept = len(loop.outputs)
        loop.outputs.extend(out[kept : kept + tail.last_group])
        loop.inputs.extend(messages[start:index])

    def _advance_loop(self, messages: Sequence[Any], out: list[Any], loop: _LoopCache) -> None:
        """Move the tool-loop cache to the latest stable entry."""
        found = find_tool_loop_boundary(messages, loop.boundary.user, loop.boundary)
        if found is None or found.index <= loop.boundary.index:
            return
        position = _position(out, messages[found.index], len(loop.outputs))
        if position is None or not self._with_first_group(messages, loop):
            return
        loop.ids |= _call_ids(messages[loop.boundary.index : found.index])
        found = ToolLoopBoundary(found.index, found.user, loop.boundary.context_end)
        loop.boundary = found
        loop.inputs = list(messages[: found.index])
        loop.outputs = out[:position]

    def _with_first_group(self, messages: Sequence[Any], loop: _LoopCache) -> bool:
        """Before the boundary moves past the loop's first tool group: make sure the context
        holds that group (a loop opened at its start, ``_loop_start``, has only the user
        message as context, since its first group was still in the part to sanitize). Once
        the boundary is past it, the stages must see it as the loop's first assistant turn,
        which keeps its reasoning. ``False`` (and the cache dropped) if the group cannot be
        found, which a clean tail or a scan of stable entries rules out."""
        boundary = loop.boundary
        if boundary.context_end > boundary.user + 1:
            return True
        end = _tool_group_end(messages, boundary.user + 1)
        if end is None:
            self._loop = None
            return False
        loop.context.extend(messages[boundary.user + 1 : end])
        loop.boundary = ToolLoopBoundary(boundary.index, boundary.user, end)
        return True


def _thinking_modes(policy: TranscriptPolicy) -> tuple[bool, bool, bool, bool]:
    """How a loop cache takes turns that think under ``policy``: ``thinking`` (no stage
    touches them), or short of that ``signed`` (signed ones are kept when their ids are
    new), or ``dropped`` (their thinking goes but the latest's, or with ``first_keeps`` but
    the loop's first turn's)."""
    untouched = thinking_untouched(policy)
    signed = not untouched and signed_thinking_kept(policy)
    first_keeps = reasoning_dropped(policy)
    return untouched, signed, earlier_thinking_dropped(policy) or first_keeps, first_keeps


def _loop_start(messages: Sequence[Any], user: int) -> ToolLoopBoundary | None:
    """A tool-loop boundary right after the user message at ``user``, for a loop whose only
    group so far is the one just completed (``find_tool_loop_boundary`` needs a group
    before its boundary, as context): that group is then part of what is still to sanitize,
    and the context is the user message alone, which is all the stages look at outside that
    part. So a loop's second and third requests take the loop path as the later ones do,
    instead of the whole pipeline over the turn. ``None`` unless exactly one complete tool
    group follows the user message."""
    if user < 0 or user >= len(messages) - 1 or role_of(messages[user]) != "user":
        return None
    first = user + 1
    if _tool_group_end(messages, first) != len(messages):
        return None
    return ToolLoopBoundary(first, user, first)
