"""One attempt: a single pass of the kernel loop against one model with one auth profile.

The attempt reads the active branch of the session, routes the prompt through the pre-prompt
precheck (compacting or truncating in-flight when it would not fit), lets the context engine
assemble the history, and runs the kernel loop with the per-request pipeline
(sanitizers → ``validate_replay_turns`` → tool-result context guard). Every message the loop
finishes is appended to the session as it happens and flushed at each turn end, so a crash
loses at most the turn in flight.

It owns its timers and listeners and releases them whatever happens: the attempt timeout
(aborts the attempt, not the run), the link to the run's abort signal, and the lane heartbeat
that every event refreshes. The result is facts, not decisions — the loop decides.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from ..abort import AbortController, AbortSignal
from ..agent.loop import run_agent_loop, run_agent_loop_continue
from ..agent.tools import AgentTool
from ..agent.types import AgentContext, AgentLoopConfig, TurnContext
from ..backends import Session
from ..context import (
    MidTurnPrecheckOptions,
    estimate_rendered_llm_boundary_token_pressure,
    format_prompt_too_large_message,
    install_tool_result_context_guard,
    resolve_prompt_budget,
    should_preemptively_compact_before_prompt,
    should_refuse_prompt_before_sending,
)
from ..context.engine import AfterTurnParams, AssembleParams
from ..context.lifecycle import finish_turn
from ..events import (
    AgentEnd,
    AgentStart,
    Event,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from ..llm import Model, StreamFn, StreamOptions, ThinkingLevel
from ..messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ..prompt import RunPrompt
from ..prompt.refusal_scrub import resolve_attempt_base_prompt
from ..prompt.skills import skill_env_scope
from ..reply import with_reply_tag_splitting
from ..transcript import TranscriptPolicy
from ..transcript.memory import flush_is_noop
from ..transcript.turn_memo import MemoizedTurns, TurnValidationMemo
from .attempt_input import AttemptInputPlan
from .attempt_timer import arm_attempt_timer, timer_needs_task_group
from .failure_signal import ToolErrorSummary
from .history_tokens import estimate_prompt_tokens
from .projection_memo import (
    release_attempt_caches,
    session_converter,
    session_projection_memo,
    session_turn_memo,
)
from .recovery import PostCompactionLoopGuard
from .reply_payload import ToolMeta
from .session_ops import set_aside_failed_tail, set_aside_orphan_user_message
from .task_group_body import as_task_group_body

__all__ = [
    "RECORDED_KINDS",
    "AttemptFacts",
    "AttemptOutcome",
    "AttemptSpec",
    "AttemptTimeout",
    "collect_attempt_facts",
    "is_idle_timeout_message",
    "run_attempt",
]

IDLE_TIMEOUT_PREFIX = "Stream idle timeout"


class AttemptTimeout(TimeoutError):
    """The attempt ran past its timeout (the reason recorded on the aborted turn)."""

    def __init__(self, seconds: float, *, during_tool_execution: bool = False) -> None:
        # a slow tool is not a slow model: say which one ran out the attempt's time
        what = "Tool execution" if during_tool_execution else "LLM request"
        super().__init__(f"{what} timed out after {seconds:g}s (attempt timeout)")
        self.seconds = seconds
        self.during_tool_execution = during_tool_execution


def is_idle_timeout_message(text: str | None) -> bool:
    """The provider gave up waiting for the next byte of the stream."""
    return bool(text) and (text or "").startswith(IDLE_TIMEOUT_PREFIX)


@dataclass(frozen=True, slots=True)
class AttemptFacts:
    """What the attempt's messages say: the final assistant turn, the visible texts, the
    tools that ran, the last tool error and the usage of every model call."""

    assistant: AssistantMessage | None
    assistant_texts: tuple[str, ...]
    tool_metas: tuple[ToolMeta, ...]
    last_tool_error: ToolErrorSummary | None
    usages: tuple[Usage, ...]
    provider_started: bool


def collect_attempt_facts(messages: Sequence[Any]) -> AttemptFacts:
    """Facts of one attempt from its new messages (pure)."""
    assistant: AssistantMessage | None = None
    texts: list[str] = []
    metas: list[ToolMeta] = []
    last_error: ToolErrorSummary | None = None
    usages: list[Usage] = []
    started = False
    for message in messages:
        if isinstance(message, AssistantMessage):
            assistant = message
            usages.append(message.usage)
            if not started:  # a loop, not ``any`` over a generator (once per message)
                for block in message.content:
                    if not (isinstance(block, TextContent) and not block.text):
                        started = True
                        break
            if message.error_output_started or message.usage.output > 0:
                started = True
            if message.stop_reason not in ("error", "aborted"):
                text = message.text()
                if text.strip():
                    texts.append(text)
        elif isinstance(message, ToolResultMessage):
            metas.append(
                ToolMeta(
                    tool_name=message.tool_name,
                    tool_call_id=message.tool_call_id,
                    is_error=message.is_error,
                )
            )
            if message.is_error:
                text = "\n".join(
                    b.text for b in message.content if isinstance(b, TextContent)
                ).strip()
                last_error = ToolErrorSummary(tool_name=message.tool_name, error=text[:2_000])
    return AttemptFacts(
        assistant=assistant,
        assistant_texts=tuple(texts),
        tool_metas=tuple(metas),
        last_tool_error=last_error,
        usages=tuple(usages),
        provider_started=started,
    )


#: the facts of no messages (frozen: one for every attempt that has none yet)
_NO_FACTS = collect_attempt_facts(())


class AttemptRun(Protocol):
    """What an attempt calls back on its run (``RunState``). The spec keeps the run, not its
    bound methods: each is looked up at the call, so none is held while the attempt waits."""

    async def emit(self, event: Event) -> None: ...

    def heartbeat(self) -> None: ...

    @property
    def needed_kinds(self) -> Container[str]:
        """The kernel's ``EventGate``: the kinds to build (``RECORDED_KINDS`` among them);
        ``heartbeat`` stands for each event left out."""
        ...

    def current_session(self) -> Session: ...

    def session_flush_error(self, exc: Exception, phase: str = "turn-end") -> Exception:
        """The run's error for a failed ``phase`` flush of its session (naming it)."""
        ...

    def turns_abstain(self, policy: TranscriptPolicy) -> bool:
        """Asked before every request: ``validate_turns`` would answer ``None`` with no effect
        now (``Hooks.turn_validation_abstains``), so the pipeline skips it."""
        ...


class AttemptRecovery(Protocol):
    """The attempt's compaction and truncation (the attempt loop's, at its window and model);
    kept as the object for the same reason as ``AttemptRun``."""

    async def attempt_compact(self, trigger: str, tokens: int | None) -> bool: ...

    async def attempt_truncate(self) -> int: ...


@dataclass
class AttemptSpec:
    """Everything one attempt needs; the loop builds it."""

    attempt: int
    session: Session
    session_id: str
    session_key: str | None
    model: Model
    stream_fn: StreamFn
    api_key: str | None
    thinking_level: ThinkingLevel
    system_prompt: str
    tools: Sequence[AgentTool]
    plan: AttemptInputPlan
    context_window: int
    reserve_tokens: int
    engine: Any
    policy: TranscriptPolicy
    sanitizers: Sequence[Any]
    validate_turns: Callable[[list[Any], TranscriptPolicy], list[Any] | None]
    on_sanitizer_error: Callable[[str, str | None, BaseException], None]
    #: ``emit``, ``heartbeat`` and ``current_session`` (the run's session now: a compaction
    #: may move the run to the engine's successor)
    run: AttemptRun
    #: ``attempt_compact`` and ``attempt_truncate``
    recovery: AttemptRecovery
    run_signal: AbortSignal | None = None
    timeout_s: float | None = None
    idle_timeout_s: float | None = None
    images: Sequence[ImageContent] = ()
    loop_guard: bool = False
    max_tokens: int | None = None
    #: the run's prompt: renders ``system_prompt`` for this attempt's model, skill env
    prompt: RunPrompt | None = None
    enforce_final_tag: bool = False
    #: text deltas of one network read may arrive merged (off while block replies are cut
    #: from the streaming text: where the chunker cuts depends on the delta boundaries)
    coalesce_deltas: bool = True
    #: the live run's queues (``LiveRunHandle``): drained at turn boundaries / when it would end
    get_steering_messages: Callable[[], Awaitable[list[Any]]] | None = None
    get_follow_up_messages: Callable[[], Awaitable[list[Any]]] | None = None


@dataclass
class AttemptOutcome:
    """Facts of one finished attempt."""

    facts: AttemptFacts
    new_messages: list[Any]
    prompt_entry_id: str | None = None
    prompt_message: UserMessage | None = None
    timed_out: bool = False
    timeout_message: str | None = None
    loop_guard_tripped: bool = False
    timed_out_during_tool_execution: bool = False
    idle_timed_out: bool = False
    externally_aborted: bool = False
    compactions: int = 0
    prompt_tokens: int | None = None
    refused: str | None = None
    duration_ms: float = 0.0
    entry_ids: dict[int, str] = field(default_factory=dict)

    @property
    def assistant(self) -> AssistantMessage | None:
        """The attempt's final assistant message."""
        return self.facts.assistant

    @property
    def failed(self) -> bool:
        """The attempt ended on an error or aborted turn."""
        assistant = self.facts.assistant
        return assistant is None or assistant.stop_reason in ("error", "aborted")


async def _prepare_messages(spec: AttemptSpec, outcome: AttemptOutcome) -> list[Any]:
    """The branch's messages after the pre-prompt precheck (compacting/truncating if needed)."""
    session = spec.session
    messages = session.build_session_context().messages
    if spec.plan.mode != "prompt":
        return messages
    prompt_text = spec.plan.prompt or ""
    # the common case, cheaply: the estimate (a running sum per session) fits the budget
    estimate = estimate_prompt_tokens(
        session, messages, system_prompt=spec.system_prompt, prompt=prompt_text
    )
    budget, _reserve = resolve_prompt_budget(spec.context_window, spec.reserve_tokens)
    if estimate <= budget:
        outcome.prompt_tokens = estimate
        return messages
    decision = should_preemptively_compact_before_prompt(
        messages=messages,
        context_token_budget=spec.context_window,
        reserve_tokens=spec.reserve_tokens,
        prompt=prompt_text,
        system_prompt=spec.system_prompt,
    )
    outcome.prompt_tokens = decision.estimated_prompt_tokens
    if decision.route == "fits":
        return messages
    if decision.route in ("compact_only", "compact_then_truncate"):
        compacted = await spec.recovery.attempt_compact(
            "preemptive", decision.estimated_prompt_tokens
        )
        if compacted:
            outcome.compactions += 1
    if decision.route in ("truncate_tool_results_only", "compact_then_truncate"):
        await spec.recovery.attempt_truncate()
    return session.build_session_context().messages


async def _refuse_oversized_prompt(spec: AttemptSpec, outcome: AttemptOutcome) -> bool:
    """A prompt far above the window is not sent (``should_refuse_prompt_before_sending``).
    What the user typed is kept: the prompt and the refusal are written to the transcript,
    then set aside (the leaf moves back before them), so the next run does not replay it."""
    if spec.plan.mode != "prompt":
        return False
    prompt_text = spec.plan.prompt or ""
    tokens = estimate_rendered_llm_boundary_token_pressure(
        system_prompt=spec.system_prompt, prompt=prompt_text
    )
    if not should_refuse_prompt_before_sending(tokens, spec.context_window):
        return False
    model = spec.model
    message = format_prompt_too_large_message(
        prompt_tokens=tokens,
        prompt_chars=len(prompt_text),
        context_window=spec.context_window,
        model_ref=model.ref,
    )
    session = spec.session
    content: Any = prompt_text
    if spec.images:
        content = [TextContent(text=prompt_text), *spec.images]
    prompt = UserMessage(content=content)
    outcome.prompt_message = prompt
    outcome.prompt_entry_id = await session.append_message(prompt)
    refusal = AssistantMessage(
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason="error",
        error_message=message,
    )
    await session.append_message(refusal)
    try:
        await session.flush()
    except Exception as exc:
        raise spec.run.session_flush_error(exc, "prompt refusal") from exc
    await set_aside_failed_tail(session)
    await set_aside_orphan_user_message(session)
    outcome.prompt_tokens = tokens
    outcome.refused = message
    return True


def run_attempt(spec: AttemptSpec) -> Awaitable[AttemptOutcome]:
    """Run one attempt (await the result); never raises for provider failures (they are in
    the facts).

    With a ``RunPrompt``, the system prompt names this attempt's model and the skills'
    environment overrides hold for the attempt only (restored however it ends). Not a
    coroutine of its own: the preparation is synchronous, and without skill variables (an
    empty scope sets nothing) the attempt's coroutine is handed out as it is — one frame and
    one scope object fewer held while the attempt waits. Await it at once: a bad spec raises
    at the call."""
    if spec.plan.prompt:  # Anthropic's refusal trigger never reaches it nor the transcript
        scrubbed = resolve_attempt_base_prompt(spec.model.provider, spec.plan.prompt)
        if scrubbed is not spec.plan.prompt:
            spec = dataclasses.replace(spec, plan=dataclasses.replace(spec.plan, prompt=scrubbed))
    prompt = spec.prompt
    if prompt is None:
        return _run_attempt(spec)
    system_prompt = prompt.render(spec.model.ref, spec.tools)
    if system_prompt != spec.system_prompt:  # the run's model and tools: already in the spec
        spec = dataclasses.replace(spec, system_prompt=system_prompt)
    if not prompt.env:
        return _run_attempt(spec)
    return _run_attempt_in_env(spec, prompt.env)


async def _run_attempt_in_env(spec: AttemptSpec, env: Mapping[str, str]) -> AttemptOutcome:
    with skill_env_scope(env):
        return await _run_attempt(spec)


async def _run_attempt(spec: AttemptSpec) -> AttemptOutcome:
    started = time.perf_counter()
    outcome = AttemptOutcome(facts=_NO_FACTS, new_messages=[])
    session = spec.session
    if await _refuse_oversized_prompt(spec, outcome):
        outcome.duration_ms = (time.perf_counter() - started) * 1000
        return outcome
    messages = await _prepare_messages(spec, outcome)
    if spec.run.current_session() is not session:
        # the pre-prompt compaction continued the conversation in a successor session
        session = spec.run.current_session()
        spec = dataclasses.replace(spec, session=session, session_id=session.session_id)
        messages = session.build_session_context().messages

    assembled = await spec.engine.assemble(
        AssembleParams(
            session_id=spec.session_id,
            messages=messages,
            session_key=spec.session_key,
            token_budget=spec.context_window,
            available_tools=frozenset(tool.name for tool in spec.tools),
            model=spec.model.id,
            prompt=spec.plan.prompt,
            abort_signal=spec.run_signal,
        )
    )
    history = list(assembled.messages)
    system_prompt = spec.system_prompt
    if assembled.system_prompt_addition:
        system_prompt = f"{system_prompt}\n\n{assembled.system_prompt_addition}".strip()
    pre_prompt_count = len(history)

    controller = AbortController()
    run_signal = spec.run_signal
    # the attempt's callbacks are bound methods of one small object (``_AttemptTurn``), not
    # closures: one cell per captured name was ~20 objects each in-flight run held
    this = _AttemptTurn(spec, outcome, session, controller)
    unlink = run_signal.add_callback(this.abort_from_run) if run_signal is not None else None
    if run_signal is not None and run_signal.aborted:
        controller.abort(run_signal.reason)
    state = this.state
    this.guard = PostCompactionLoopGuard() if spec.loop_guard or outcome.compactions else None
    this.system_prompt = system_prompt
    this.pre_prompt_count = pre_prompt_count

    config = AgentLoopConfig(
        model=spec.model,
        should_stop_after_turn=this.stop_after_turn,
        transform_context=_Pipeline(spec),
        # kept with the session: a turn's first request converts only what is new
        convert_to_llm=session_converter(session),
        get_steering_messages=spec.get_steering_messages,
        get_follow_up_messages=spec.get_follow_up_messages,
        get_api_key=this.api_key if spec.api_key else None,
        thinking_level=spec.thinking_level,
        stream_options=StreamOptions(
            idle_timeout=spec.idle_timeout_s,
            session_id=spec.session_id,
            max_tokens=spec.max_tokens,
            coalesce_deltas=spec.coalesce_deltas,
        ),
    )
    context_guard = install_tool_result_context_guard(
        config,
        memo=session_projection_memo(session),
        context_window_tokens=spec.context_window,
        mid_turn_precheck=MidTurnPrecheckOptions(
            context_token_budget=spec.context_window,
            reserve_tokens=spec.reserve_tokens,
            get_system_prompt=this.get_system_prompt,
            get_pre_prompt_message_count=this.get_pre_prompt_message_count,
        ),
    )
    # the loop copies the context's lists before it starts (``run_agent_loop``): no copy here
    tools = spec.tools
    context = AgentContext(system_prompt, history, tools if type(tools) is list else list(tools))
    # inline <think>/<final> tags become thinking blocks before anything sees the text
    stream_fn = with_reply_tag_splitting(spec.stream_fn, enforce_final_tag=spec.enforce_final_tag)
    disarm: Callable[[], None] | None = None

    seconds = spec.timeout_s
    fire = this.time_out if seconds else None  # a bound method: no partial per attempt
    try:
        if not timer_needs_task_group():  # asyncio: the timer is a loop callback (attempt_timer)
            disarm = arm_attempt_timer(None, seconds, fire) if seconds and fire else None
            new = await as_task_group_body(this.turn(context, config, stream_fn))
        else:
            async with anyio.create_task_group() as timers:
                disarm = arm_attempt_timer(timers, seconds, fire) if seconds and fire else None
                new = await this.turn(context, config, stream_fn)
                timers.cancel_scope.cancel()
    finally:
        if disarm is not None:
            disarm()
        if unlink is not None:
            unlink()
        # the guard and the config point at each other: a cycle that would keep this run
        # (its callbacks, its session) alive until the next cyclic GC
        context_guard.uninstall()
        release_attempt_caches(session, history)  # the kernel's messages, of no later use
        if not flush_is_noop(session):  # a memory session's: no shielded scope for nothing
            with anyio.CancelScope(shield=True):
                try:
                    await session.flush()
                except Exception as exc:
                    raise this.flush_failed(exc) from exc
    if this.flush_error is not None:  # a turn end failed to write (``flush_failed``)
        raise this.flush_error

    outcome.new_messages = new
    outcome.facts = collect_attempt_facts(new)
    outcome.timed_out = state.timed_out
    if state.timed_out and spec.timeout_s:
        outcome.timeout_message = str(
            AttemptTimeout(spec.timeout_s, during_tool_execution=state.timed_out_during_tools)
        )
    outcome.timed_out_during_tool_execution = state.timed_out_during_tools
    outcome.externally_aborted = run_signal is not None and run_signal.aborted
    assistant = outcome.facts.assistant
    if assistant is not None and is_idle_timeout_message(assistant.error_message):
        outcome.idle_timed_out = True
        outcome.timed_out = True
    if outcome.prompt_tokens is None:
        outcome.prompt_tokens = _prompt_tokens_of(outcome.facts)
    if not outcome.failed:
        await finish_turn(
            spec.engine,
            AfterTurnParams(
                session_id=spec.session_id,
                session_file=str(session.path),
                messages=[*history, *new],
                pre_prompt_message_count=pre_prompt_count,
                session_key=spec.session_key,
                token_budget=spec.context_window,
                abort_signal=run_signal,
            ),
        )
    outcome.duration_ms = (time.perf_counter() - started) * 1000
    return outcome


@dataclass
class _AttemptState:
    active_tools: int = 0
    timed_out: bool = False
    timed_out_during_tools: bool = False


class _AttemptTurn:
    """What the kernel loop calls back during one attempt (the turn itself, its event sink,
    the loop guard, the getters the context guard reads), as bound methods of one object.

    ``_run_attempt`` fills the slots it sets after construction before the turn starts. The
    loop's config holds bound methods of this object, so this object never holds the config
    (nor the context): a cycle would keep the finished attempt alive until a full collection."""

    __slots__ = (
        "controller",
        "flush_error",
        "guard",
        "outcome",
        "pre_prompt_count",
        "session",
        "spec",
        "state",
        "system_prompt",
    )

    guard: PostCompactionLoopGuard | None
    system_prompt: str
    pre_prompt_count: int

    def __init__(
        self,
        spec: AttemptSpec,
        outcome: AttemptOutcome,
        session: Session,
        controller: AbortController,
    ) -> None:
        self.spec = spec
        self.outcome = outcome
        self.session = session
        self.controller = controller
        self.state = _AttemptState()
        #: the first turn-end flush that failed (``flush``), as the run's error
        self.flush_error: Exception | None = None

    def time_out(self) -> None:
        """The attempt ran out of its time (``attempt_timer``): ``_time_out``."""
        _time_out(self.spec.timeout_s or 0.0, self.controller, self.state)

    def abort_from_run(self) -> None:
        """The run was aborted: so is the attempt, with the run's reason."""
        run_signal = self.spec.run_signal
        assert run_signal is not None
        self.controller.abort(run_signal.reason)

    def stop_after_turn(self, turn: TurnContext) -> bool:
        guard = self.guard
        if guard is None:
            return False
        calls = [(call.name, call.arguments) for call in turn.message.tool_calls()]
        if guard.observe(calls):
            self.outcome.loop_guard_tripped = True
            return True
        return False

    def api_key(self, _provider: str) -> str | None:
        return self.spec.api_key

    def get_system_prompt(self) -> str:
        return self.system_prompt

    def get_pre_prompt_message_count(self) -> int:
        return self.pre_prompt_count

    async def emit(self, event: Event) -> None:
        spec, outcome = self.spec, self.outcome
        spec.run.heartbeat()
        if type(event) in _NOTHING_TO_RECORD:  # by exact type: a subclass is still checked
            pass
        elif isinstance(event, MessageEnd):
            entry_id = await self.session.append_message(event.message)
            outcome.entry_ids[id(event.message)] = entry_id
            if outcome.prompt_message is not None and event.message is outcome.prompt_message:
                outcome.prompt_entry_id = entry_id
        elif isinstance(event, TurnEnd):
            try:
                await self.session.flush()
            except Exception as exc:
                raise self.flush_failed(exc) from exc
        elif isinstance(event, ToolExecutionStart):
            self.state.active_tools += 1
        elif isinstance(event, ToolExecutionEnd):
            self.state.active_tools = max(0, self.state.active_tools - 1)
        await spec.run.emit(event)

    def flush_failed(self, exc: Exception) -> Exception:
        """The error for a failed flush of the session (its lines stay buffered for the
        next flush): the run's error naming the session, the first one kept in
        ``flush_error``. The loop closes the turn with a failed reply (whose flush may then
        succeed) and ``_run_attempt`` raises it again after the loop, so the run does not
        report the failure as the model's."""
        error = self.spec.run.session_flush_error(exc)
        if self.flush_error is None:
            self.flush_error = error
        return error

    async def turn(
        self, context: AgentContext, config: AgentLoopConfig, stream_fn: StreamFn
    ) -> list[Any]:
        spec, outcome = self.spec, self.outcome
        if spec.plan.mode == "prompt":
            content: Any = spec.plan.prompt or ""
            if spec.images:
                content = [TextContent(text=spec.plan.prompt or ""), *spec.images]
            prompt = UserMessage(content=content)
            outcome.prompt_message = prompt
            return await run_agent_loop(
                [prompt],
                context,
                config,
                self.emit,
                stream_fn=stream_fn,
                signal=self.controller.signal,
                on_failure="close",  # a failure must become a message to classify
                gate=spec.run,
            )
        return await run_agent_loop_continue(
            context,
            config,
            self.emit,
            stream_fn=stream_fn,
            signal=self.controller.signal,
            on_failure="close",
            gate=spec.run,
        )


#: Event classes that are none of ``MessageEnd``, ``TurnEnd``, ``ToolExecutionStart``,
#: ``ToolExecutionEnd``: the attempt records nothing for them (half of a tool call's events).
_NOTHING_TO_RECORD: frozenset[type] = frozenset(
    {AgentStart, AgentEnd, TurnStart, MessageStart, MessageUpdate, ToolExecutionUpdate}
)


#: The kinds ``_AttemptTurn.emit`` records something for (the classes it dispatches on, the
#: complement of ``_NOTHING_TO_RECORD``): the run's ``needed_kinds`` always holds them.
RECORDED_KINDS: frozenset[str] = frozenset(
    event.type for event in (MessageEnd, TurnEnd, ToolExecutionStart, ToolExecutionEnd)
)


def _time_out(seconds: float, controller: AbortController, state: _AttemptState) -> None:
    """The attempt ran out of its time (``attempt_timer``)."""
    state.timed_out = True
    state.timed_out_during_tools = state.active_tools > 0
    controller.abort(AttemptTimeout(seconds, during_tool_execution=state.timed_out_during_tools))


def _prompt_tokens_of(facts: AttemptFacts) -> int | None:
    for usage in reversed(facts.usages):
        if usage.input > 0:
            return usage.input + usage.cache_read + usage.cache_write
    return None


class _Pipeline:
    """The per-request history pipeline: sanitizers, then provider turn validation.

    The session's incremental sanitizer only re-reads what was appended since the last
    stable boundary, so a long history is not sanitized from scratch before every request.
    A small object rather than a closure: what it reads is kept in slots, not in cells.
    """

    __slots__ = (
        "incremental",
        "on_error",
        "policy",
        "run",
        "sanitizers",
        "session",
        "turns",
        "validate",
    )

    def __init__(self, spec: AttemptSpec) -> None:
        self.policy = spec.policy
        self.sanitizers = list(spec.sanitizers)
        self.validate = spec.validate_turns
        self.run = spec.run  # the object, not a bound method held per attempt (``AttemptRun``)
        self.on_error = spec.on_sanitizer_error
        self.incremental = spec.session.replay_sanitizer
        self.session = spec.session
        # the validator's previous answer, for the session's next request (``turn_memo``):
        # looked up at the first request that validates (a policy may validate nothing)
        self.turns: TurnValidationMemo | None = None

    def __call__(self, messages: list[Any], _signal: AbortSignal | None) -> list[Any]:
        policy = self.policy
        sanitized = self.incremental.run(messages, policy, self.sanitizers, on_error=self.on_error)
        if self.run.turns_abstain(policy):
            return sanitized  # what a ``None`` answer gives, without the hook call
        turns = self.turns
        if turns is None:
            turns = self.turns = session_turn_memo(self.session)
        validated = self.validate(MemoizedTurns(sanitized, turns), policy)
        return sanitized if validated is None else validated
