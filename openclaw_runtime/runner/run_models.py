"""The run's own view of its transcript entries at its end: facts from the wire, models on demand.

A run's end reads its messages more than once (the payloads, the facts, the ``RunResult``).
Building a pydantic model of every message for that was most of the end's cost, and nobody
needs most of them: the payloads and the failure texts need the visible texts, the tool
metas and the last tool error (``run_facts_of`` reads them from the entries' wire dicts, the
same values ``collect_attempt_facts`` reads from the models) and at most the last assistant
message as a model (parsed when asked for: ``RunFacts.assistant``). ``RunResult.messages``
is parsed from the entries when the caller first reads it (``deferred_messages``).

Every model handed out is the run's own, never the session's: the session makes its own
models only when its context is read (``transcript.reader``), and a caller editing a
result's message must not change the next request. ``RunEntryModels`` parses each of the
run's entries once, with the same function the session uses (``entry_message``). An entry
is recognised by its id *and* by identity (a tree rebuilt from the file after another
writer's change has new entry dicts under the same ids: they are parsed again). Entries are
never edited in place (a rewrite re-grows the branch with new ones), so a list of them read
at the run's end parses later to what it would have parsed to then.

The wire reading covers the shape the runtime writes (camelCase keys, exact types); a message
in any other shape (a snake_case key, a non-string text, an unknown stop reason) sends the
whole read to the models (``collect_attempt_facts``), so the answers stay the models' own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..messages import AssistantMessage
from ..transcript.session_context import entry_message
from .attempt import collect_attempt_facts
from .failure_signal import ToolErrorSummary
from .reply_payload import ToolMeta

__all__ = ["RunEntryModels", "RunFacts", "deferred_messages", "messages_of", "run_facts_of"]


class RunEntryModels:
    """``entry`` → this run's model of its message (``entry_message``), made once."""

    __slots__ = ("_models",)

    def __init__(self) -> None:
        self._models: dict[str, tuple[Mapping[str, Any], Any]] = {}

    def message_of(self, entry: Mapping[str, Any]) -> Any:
        """``entry_message(entry)``, the same object for the same entry within the run."""
        key = entry.get("id")
        if not isinstance(key, str):
            return entry_message(entry)
        kept = self._models.get(key)
        if kept is not None and kept[0] is entry:
            return kept[1]
        model = entry_message(entry)
        self._models[key] = (entry, model)
        return model


class RunFacts:
    """What the run's messages say (``collect_attempt_facts``' answers the run's end reads):
    the visible assistant texts, the tool metas, the last tool error, and the last assistant
    message (a model, parsed on first read from the entries that may hold it)."""

    __slots__ = ("_candidates", "_found", "_models", "assistant_texts", "last_tool_error",
                 "tool_metas")  # fmt: skip

    def __init__(
        self,
        *,
        assistant_texts: tuple[str, ...],
        tool_metas: tuple[ToolMeta, ...],
        last_tool_error: ToolErrorSummary | None,
        candidates: Sequence[Mapping[str, Any]] = (),
        models: RunEntryModels | None = None,
        assistant: AssistantMessage | None = None,
    ) -> None:
        self.assistant_texts = assistant_texts
        self.tool_metas = tool_metas
        self.last_tool_error = last_tool_error
        self._candidates = candidates  # assistant entries, in order
        self._models = models
        self._found: tuple[AssistantMessage | None] | None = (
            (assistant,) if models is None else None
        )

    @property
    def assistant(self) -> AssistantMessage | None:
        """The last assistant message (``collect_attempt_facts(...).assistant``)."""
        found = self._found
        if found is None:
            models = self._models
            assert models is not None
            last: AssistantMessage | None = None
            for entry in reversed(self._candidates):
                message = models.message_of(entry)
                if isinstance(message, AssistantMessage):
                    last = message
                    break
            found = self._found = (last,)
        return found[0]


_STOP_REASONS = frozenset({"stop", "length", "toolUse", "error", "aborted"})
_SNAKE_KEYS = frozenset({"stop_reason", "tool_name", "tool_call_id", "is_error"})


def _wire_text(content: object) -> str | None:
    """``_joined_text`` of a wire content list (None: not the shape the runtime writes)."""
    if type(content) is not list:
        return None
    texts: list[str] = []
    for block in content:
        if type(block) is not dict:
            return None
        if block.get("type") == "text":
            text = block.get("text")
            if type(text) is not str:
                return None
            texts.append(text)
    return "\n".join(texts)


def run_facts_of(entries: Sequence[Mapping[str, Any]], models: RunEntryModels) -> RunFacts:
    """The facts of the run's message ``entries`` (in branch order), from their wire dicts.

    Equal to ``collect_attempt_facts`` over ``models``' messages of the entries; a message
    not in the shape the runtime writes makes it exactly that (every entry parsed)."""
    texts: list[str] = []
    metas: list[ToolMeta] = []
    last_error: ToolErrorSummary | None = None
    candidates: list[Mapping[str, Any]] = []
    for entry in entries:
        if entry.get("type") != "message":
            continue  # not a message entry: never an assistant message or a tool result
        message = entry.get("message")
        if type(message) is not dict or not _SNAKE_KEYS.isdisjoint(message):
            return _facts_from_models(entries, models)
        if message.get("excludeFromContext") is True:
            continue
        role = message.get("role")
        if role == "assistant":
            stop = message.get("stopReason", "stop")
            text = _wire_text(message.get("content", []))
            if text is None or type(stop) is not str or stop not in _STOP_REASONS:
                return _facts_from_models(entries, models)
            candidates.append(entry)
            if stop not in ("error", "aborted") and text.strip():
                texts.append(text)
        elif role == "toolResult":
            name = message.get("toolName")
            call_id = message.get("toolCallId")
            is_error = message.get("isError", False)
            text = _wire_text(message.get("content", []))
            if (
                text is None
                or type(name) is not str
                or type(call_id) is not str
                or type(is_error) is not bool
            ):
                return _facts_from_models(entries, models)
            metas.append(ToolMeta(tool_name=name, tool_call_id=call_id, is_error=is_error))
            if is_error:
                last_error = ToolErrorSummary(tool_name=name, error=text.strip()[:2_000])
    return RunFacts(
        assistant_texts=tuple(texts),
        tool_metas=tuple(metas),
        last_tool_error=last_error,
        candidates=candidates,
        models=models,
    )


def _facts_from_models(entries: Sequence[Mapping[str, Any]], models: RunEntryModels) -> RunFacts:
    facts = collect_attempt_facts(messages_of(entries, models.message_of))
    return RunFacts(
        assistant_texts=facts.assistant_texts,
        tool_metas=facts.tool_metas,
        last_tool_error=facts.last_tool_error,
        assistant=facts.assistant,
    )


def messages_of(
    entries: Sequence[Mapping[str, Any]], parse: Callable[[Mapping[str, Any]], Any]
) -> list[Any]:
    """The messages of ``entries`` (``parse`` of each; the entries that give none left out)."""
    out = []
    for entry in entries:
        message = parse(entry)
        if message is not None:
            out.append(message)
    return out


def deferred_messages(entries: Sequence[Mapping[str, Any]]) -> Callable[[], list[Any]]:
    """What makes ``RunResult.messages`` when first read: fresh models of ``entries``."""
    kept = tuple(entries)

    def make() -> list[Any]:
        return messages_of(kept, lambda entry: entry_message(entry))

    return make
