"""What a run is asked to do (``RunRequest``) and what it ends with (``RunResult``).

A request is plain data: the prompt, which session it belongs to, which model and how long it
may take. Everything the orchestrator learns while running (the winning model and profile, the
attempts, the usage, the terminal outcome, the reply payloads) comes back in one ``RunResult``
— a run never raises for a provider failure; it ends with an error outcome and an error payload.
"""

from __future__ import annotations

import operator
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn, get_args

from ..abort import AbortSignal
from ..agent.tools import AgentTool
from ..containment import PluginFault
from ..llm import ThinkingLevel
from ..messages import ImageContent, Usage
from ..redaction import redact_diagnostic
from .failure_signal import EmbeddedRunFailureSignal
from .outcome import AgentRunTerminalOutcome
from .reply_payload import ReplyPayload

__all__ = ["RunErrorInfo", "RunRequest", "RunResult"]


@dataclass(kw_only=True)
class RunRequest:
    """One agent turn to run.

    * ``session_id`` / ``session_key``: give either (or both). A key alone finds its session
      through the session index, or starts one; an id alone gets its key backfilled from the
      index. Neither starts a fresh session.
    * ``model``: ``provider/model``, an alias, or a bare id (with ``provider``); default the
      configured ``[agent] model``. ``fallbacks`` replaces the configured fallback chain.
    * ``trigger``: ``user``/``manual`` queue in the foreground; ``cron``, ``heartbeat``,
      ``memory``, ``overflow`` in the background; anything else is normal priority.
    * ``timeout_s``: the limit for one attempt (default ``[agent] timeout_seconds``; 0 means
      none); the lanes allow that plus a 30 s grace, extended by progress.
    * ``auth_profile``: the preferred auth profile; with ``lock_auth_profile`` the only one.
    * ``max_tokens``: the output cap of each model call (default ``[agent] max_tokens``, else
      the model's ``max_tokens``).
    * ``sender_id`` / ``sender_is_owner`` / ``group_id``: who asked and where, for the tool
      policy (docs/tools.md). ``sender_is_owner`` defaults to False when a ``sender_id`` or a
      ``group_id`` is given and True otherwise (the local user owns the runtime); ``group_id``
      selects ``[groups.<id>.tools]``.
    * ``block_streaming`` / ``on_block_reply``: send the answer in blocks while it streams
      (``on_block_reply`` gets each block as a ``ReplyPayload``; default ``[agent.reply]
      block_streaming``). ``verbose``: inline tool summaries (``on``/True) or summaries and
      results (``full``) in the payloads (default ``[agent.reply] verbose``).

    Every field is checked on construction: a wrong type is a ``TypeError``, a bad value a
    ``ValueError``, each naming ``RunRequest.<field>`` (``RunRequest.tools[1]`` for an item).
    ``tools``, ``images`` and ``messaging_tool_sent_texts`` take a list or tuple (not a
    string, a single item or an iterator); ``None`` means none and becomes ``()``.
    """

    prompt: str
    session_id: str | None = None
    session_key: str | None = None
    model: str | None = None
    provider: str | None = None
    fallbacks: Sequence[str] | None = None
    thinking_level: ThinkingLevel | None = None
    system_prompt: str | None = None
    tools: Sequence[AgentTool] = ()
    images: Sequence[ImageContent] = ()
    trigger: str = "user"
    input_provenance: Mapping[str, Any] | None = None
    timeout_s: float | None = None
    idle_timeout_s: float | None = None
    auth_profile: str | None = None
    lock_auth_profile: bool = False
    lane: str | None = None
    abort_signal: AbortSignal | None = None
    run_id: str | None = None
    messaging_tool_sent_texts: Sequence[str] = ()
    current_message_id: str | None = None
    max_tokens: int | None = None
    sender_id: str | None = None
    sender_is_owner: bool | None = None
    group_id: str | None = None
    block_streaming: bool | None = None
    on_block_reply: Callable[[ReplyPayload], Awaitable[None] | None] | None = None
    verbose: bool | Literal["off", "on", "full"] | None = None

    def __post_init__(self) -> None:
        # Every field is checked, cheapest test first (this runs once a run): a wrong type is
        # a TypeError, a bad value a ValueError, each naming ``RunRequest.<field>``.
        if not isinstance(self.prompt, str):
            raise TypeError(f"RunRequest.prompt must be a str, got {type(self.prompt).__name__}")
        for value in _optional_strs(self):  # blank strings keep their meaning
            if value is not None and type(value) is not str:
                _check_optional_strs(self)
        if type(self.trigger) is not str and not isinstance(self.trigger, str):
            _reject("trigger", "a str (user, manual, cron, heartbeat ...)", self.trigger)
        level = self.thinking_level
        if level is not None and (type(level) is not str or level not in _THINKING_LEVELS):
            _reject_thinking_level(level)
        # the three sequences: None means none; the default () is not walked
        tools, images, texts = self.tools, self.images, self.messaging_tool_sent_texts
        if tools is None:
            self.tools = ()
        elif tools is not _EMPTY:
            _check_items("tools", tools, AgentTool)
            if len(tools) > 1:
                _check_tool_names(tools)
        if images is None:
            self.images = ()
        elif images is not _EMPTY:
            _check_items("images", images, ImageContent)
        if texts is None:
            self.messaging_tool_sent_texts = ()
        elif texts is not _EMPTY:
            _check_items("messaging_tool_sent_texts", texts, str)
        if self.fallbacks is not None:  # None: the configured chain
            _check_fallbacks(self.fallbacks)
        provenance, signal = self.input_provenance, self.abort_signal
        if provenance is not None and not isinstance(provenance, Mapping):
            _reject("input_provenance", "a mapping (dict) or None", provenance)
        if signal is not None and not isinstance(signal, AbortSignal):
            _reject("abort_signal", "an AbortSignal (AbortController().signal) or None", signal)
        if self.block_streaming is not None and type(self.block_streaming) is not bool:
            _reject("block_streaming", "a bool or None", self.block_streaming)
        if type(self.lock_auth_profile) is not bool:
            _reject("lock_auth_profile", "a bool", self.lock_auth_profile)
        timeout_s, idle_timeout_s = self.timeout_s, self.idle_timeout_s
        if timeout_s is not None and type(timeout_s) not in (float, int):
            _check_seconds("timeout_s", timeout_s)
        if idle_timeout_s is not None and type(idle_timeout_s) not in (float, int):
            _check_seconds("idle_timeout_s", idle_timeout_s)
        if self.sender_is_owner is None:
            self.sender_is_owner = self.sender_id is None and self.group_id is None
        elif not isinstance(self.sender_is_owner, bool):
            raise TypeError(
                "RunRequest.sender_is_owner must be a bool, got "
                f"{type(self.sender_is_owner).__name__}"
            )
        if self.timeout_s is not None and not self.timeout_s >= 0:
            raise ValueError(f"RunRequest.timeout_s must be >= 0, got {self.timeout_s!r}")
        if self.idle_timeout_s is not None and not self.idle_timeout_s > 0:
            raise ValueError(f"RunRequest.idle_timeout_s must be > 0, got {self.idle_timeout_s!r}")
        if self.max_tokens is not None and (
            isinstance(self.max_tokens, bool)
            or not isinstance(self.max_tokens, int)
            or self.max_tokens < 1
        ):
            raise ValueError(
                f"RunRequest.max_tokens must be a positive integer, got {self.max_tokens!r}"
            )
        if self.verbose not in (None, True, False, "off", "on", "full"):
            raise ValueError(
                f"RunRequest.verbose must be a bool or off/on/full, got {self.verbose!r}"
            )
        if self.on_block_reply is not None and not callable(self.on_block_reply):
            raise TypeError("RunRequest.on_block_reply must be callable")
        if self.lock_auth_profile and not self.auth_profile:
            raise ValueError("RunRequest.lock_auth_profile needs auth_profile")


# validation of RunRequest's fields ---------------------------------------------------------------

#: The ``str | None`` fields. A blank value keeps the meaning it has downstream (a blank
#: session id or key: none given; a blank model: the default; a blank lane: ``main`` ...).
_OPTIONAL_STR_FIELDS = (
    "session_id",
    "session_key",
    "model",
    "provider",
    "system_prompt",
    "lane",
    "run_id",
    "current_message_id",
    "sender_id",
    "group_id",
    "auth_profile",
)
_optional_strs = operator.attrgetter(*_OPTIONAL_STR_FIELDS)
#: The default of the three sequence fields, which needs no walk (a shared empty tuple; any
#: other empty sequence is walked, which costs nothing either).
_EMPTY: tuple[()] = ()
#: Fields whose values an error never shows (they may hold secrets): type names only.
_UNSHOWN = frozenset(
    {"prompt", "system_prompt", "input_provenance", "images", "messaging_tool_sent_texts"}
)
_THINKING_LEVELS: frozenset[str] = frozenset(get_args(ThinkingLevel))
#: What a sequence field holds, for its messages.
_ITEM_NOUNS = {
    "tools": "tools",
    "images": "images (ImageContent)",
    "messaging_tool_sent_texts": "str",
    "fallbacks": "model names",
}
_SHOWN_STR_CHARS = 60


def _got(value: object, *, show: bool = True) -> str:
    """What a message says it got: the type name, with the value when it is short and plain
    (a number, a bool, a short string when ``show``), or the name of a function or tool."""
    kind = type(value).__name__
    if value is None or type(value) in (bool, int, float):
        return repr(value)
    if isinstance(value, str):
        return f"str {value!r}" if show and len(value) <= _SHOWN_STR_CHARS else "str"
    if isinstance(value, AgentTool):
        return f"{kind} {value.name!r}"
    name = getattr(value, "__name__", None)
    if callable(value) and isinstance(name, str):
        return f"{kind} {name!r}"
    return kind


def _reject(name: str, expected: str, value: object) -> NoReturn:
    raise TypeError(
        f"RunRequest.{name} must be {expected}, got {_got(value, show=name not in _UNSHOWN)}"
    )


def _check_optional_strs(request: RunRequest) -> None:
    """The ``str | None`` fields (a str subclass passes)."""
    for name in _OPTIONAL_STR_FIELDS:
        value = getattr(request, name)
        if value is not None and not isinstance(value, str):
            _reject(name, "a str or None", value)


def _reject_thinking_level(value: object) -> NoReturn:
    levels = ", ".join(get_args(ThinkingLevel))
    if not isinstance(value, str):
        _reject("thinking_level", f"one of {levels} or None", value)
    raise ValueError(f"RunRequest.thinking_level must be one of {levels} or None, got {value!r}")


def _check_seconds(name: str, value: object) -> None:
    """A real number of seconds: an int or float (a subclass passes), not a bool. NaN and
    the range are the range checks' business (ValueError)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _reject(name, "a number of seconds (int or float) or None", value)


def _sequence(name: str, value: object) -> Sequence[Any]:
    """``value`` when it is a real sequence of items (a list, a tuple ...); otherwise a
    ``TypeError`` saying what to pass instead. A string, a single item, a mapping, a set or an
    iterator (a generator would be used up by the first look) is not a sequence of items."""
    if (type(value) is list or type(value) is tuple) or (
        isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))
    ):
        return value
    noun = _ITEM_NOUNS[name]
    got = _got(value, show=name not in _UNSHOWN)
    message = f"RunRequest.{name} must be a list of {noun}, got {got}"
    if name == "tools" and isinstance(value, AgentTool):
        message += f": wrap one tool in a list (tools=[{value.name}])"
    elif name == "tools" and isinstance(value, str):
        message += ": pass the tools themselves (functions decorated with @tool) in a list"
    elif name == "tools" and callable(value):
        message += (
            ": decorate it with @tool (from openclaw_runtime import tool) and wrap it in a list"
        )
    elif name == "fallbacks" and isinstance(value, str):
        message += f": pass a list of model names (fallbacks=[{value!r}])"
    elif isinstance(value, (str, bytes, bytearray, ImageContent)):
        message += ": wrap one in a list"
    elif not isinstance(value, Mapping) and hasattr(value, "__iter__"):
        message += " (an iterator, generator or set is not accepted): pass a list, e.g. list(...)"
    raise TypeError(message)


def _check_items(name: str, value: object, item_type: type) -> None:
    """``value`` is a sequence of ``item_type`` (subclasses pass); the error names the index."""
    items = value if type(value) is list or type(value) is tuple else _sequence(name, value)
    for index, item in enumerate(items):
        if type(item) is not item_type and not isinstance(item, item_type):
            _reject_item(name, index, item)


def _check_tool_names(tools: Sequence[AgentTool]) -> None:
    """No two tools of one name: a provider refuses a request offering them (and a call to
    that name could not say which tool it meant). The same tool twice is refused too: it is
    most likely two lists joined by mistake."""
    seen: dict[str, int] = {}
    for index, tool in enumerate(tools):
        first = seen.setdefault(tool.name, index)
        if first != index:
            raise ValueError(
                f"RunRequest.tools[{index}] is named {tool.name!r}, as RunRequest.tools[{first}] "
                "is: tool names must be unique"
                + (" (the same tool twice)" if tools[first] is tool else "")
            )


def _reject_item(name: str, index: int, item: object) -> NoReturn:
    where = f"RunRequest.{name}[{index}]"
    if name == "tools":
        message = f"{where} must be an AgentTool, got {_got(item)}"
        if isinstance(item, str):
            message += ": pass the tool itself (a function decorated with @tool), not its name"
        elif callable(item):
            message += ": decorate it with @tool (from openclaw_runtime import tool)"
        raise TypeError(message)
    if name == "images":
        raise TypeError(f"{where} must be an ImageContent, got {_got(item, show=False)}")
    raise TypeError(f"{where} must be a str, got {_got(item, show=False)}")


def _check_fallbacks(value: object) -> None:
    """A sequence of model names (non-blank strings); ``None`` (the configured chain) never
    gets here."""
    items = _sequence("fallbacks", value)
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(
                f"RunRequest.fallbacks[{index}] must be a model name (str), got {_got(item)}"
            )
        if not item.strip():
            raise ValueError(f"RunRequest.fallbacks[{index}] must be a model name, got {item!r}")


@dataclass(frozen=True, slots=True)
class RunErrorInfo:
    """Why a run failed: ``kind`` (``retry_limit``, ``context_overflow``,
    ``compaction_failure``, ``failover``, ``blocked``, ``aborted``, ``timeout``, ``provider``,
    ``network`` (the provider could not be reached), ``prompt_too_large`` (refused before
    sending), ``lane_timeout``, ``config``, ``incomplete_turn``, or the outcome's reason), the
    failover ``reason`` when one applies, and a redacted message. Every failed run has one."""

    kind: str
    message: str
    reason: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", redact_diagnostic(self.message))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = {"kind": self.kind, "message": self.message}
        if self.reason is not None:
            out["reason"] = self.reason
        return out


@dataclass(slots=True)
class RunResult:
    """How a run ended.

    ``outcome`` is the single terminal outcome (``status`` ok / error / timeout, ``reason``
    completed / failed / hard_timeout / cancelled ...); ``payloads`` are the replies to show;
    ``usage`` adds up every attempt, failed ones included. ``faults`` lists every plugin that
    raised during the run (it was skipped; see ``openclaw_runtime.containment``).
    """

    run_id: str
    session_id: str
    session_key: str | None
    session_file: str | None
    outcome: AgentRunTerminalOutcome
    payloads: list[ReplyPayload] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    provider: str | None = None
    model: str | None = None
    auth_profile_id: str | None = None
    attempts: int = 0
    compactions: int = 0
    messages: list[Any] = field(default_factory=list)
    error: RunErrorInfo | None = None
    failure_signal: EmbeddedRunFailureSignal | None = None
    liveness_state: str | None = None
    duration_ms: float = 0.0
    faults: list[PluginFault] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The run completed (it may still have produced no visible reply)."""
        return self.outcome.status == "ok" and self.error is None

    @property
    def text(self) -> str:
        """The visible, non-error reply text, payloads joined by blank lines."""
        return "\n\n".join(
            p.text for p in self.payloads if p.text and not p.is_error and not p.is_reasoning
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``openclaw-runtime run --json``)."""
        return {
            "runId": self.run_id,
            "sessionId": self.session_id,
            "sessionKey": self.session_key,
            "sessionFile": self.session_file,
            "ok": self.ok,
            "text": self.text,
            "outcome": self.outcome.to_dict(),
            "payloads": [p.to_dict() for p in self.payloads],
            "usage": self.usage.model_dump(mode="json", by_alias=True),
            "provider": self.provider,
            "model": self.model,
            "authProfileId": self.auth_profile_id,
            "attempts": self.attempts,
            "compactions": self.compactions,
            "error": None if self.error is None else self.error.to_dict(),
            "failureSignal": None if self.failure_signal is None else self.failure_signal.to_dict(),
            "livenessState": self.liveness_state,
            "durationMs": round(self.duration_ms, 3),
            "faults": [fault.to_dict() for fault in self.faults],
        }


class _Deferred:
    """What a ``RunResult``'s ``messages`` slot holds until the list is first read."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], list[Any]]) -> None:
        self.make = make


class _MessagesSlot:
    """``RunResult.messages``: the dataclass's slot, whose list may be made on first read.

    The run's end does not parse its messages for a caller that never reads them
    (``defer_messages``); the first read makes the list and stores it in the slot, so every
    later read, ``==``, ``repr``, ``dataclasses.asdict``/``replace``, copying and pickling
    see the same list object a plain field would hold."""

    __slots__ = ("_slot",)

    def __init__(self, slot: Any) -> None:
        self._slot = slot

    def __get__(self, obj: RunResult | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = self._slot.__get__(obj, owner)
        if type(value) is _Deferred:
            value = value.make()
            self._slot.__set__(obj, value)
        return value

    def __set__(self, obj: RunResult, value: list[Any]) -> None:
        self._slot.__set__(obj, value)

    def __delete__(self, obj: RunResult) -> None:
        self._slot.__delete__(obj)


setattr(RunResult, "messages", _MessagesSlot(RunResult.__dict__["messages"]))  # noqa: B010


def defer_messages(result: RunResult, make: Callable[[], list[Any]]) -> RunResult:
    """``result`` with its ``messages`` made by ``make()`` when first read (the run's end)."""
    RunResult.__dict__["messages"].__set__(result, _Deferred(make))
    return result
