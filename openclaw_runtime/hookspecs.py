"""The plugin contract of openclaw-runtime: every hook a plugin can implement.

A plugin is a module (or object) with functions decorated ``@openclaw_runtime.hookimpl``,
published under the entry-point group ``openclaw_runtime``::

    # pyproject.toml:
    #   [project.entry-points.openclaw_runtime]
    #   hello = "openclaw_runtime_hello.plugin"
    from openclaw_runtime import hookimpl

    @hookimpl
    def register_context_engines(register):
        register("sliding_window", SlidingWindowEngine)

Implementations take only the arguments they need, by name. Registration hooks are called one
plugin at a time so every component is attributed to the plugin that registered it; an
exception from a plugin is reported under the plugin's name and never crashes a run. Built-in
implementations are ``trylast``, so a plugin's answer always comes first. Hook wrappers are
not supported on these hooks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pluggy

# Package faces: ``failover.FailoverSignal`` and ``transcript.TranscriptPolicy`` load when first
# read (``typing.get_type_hints``), not when ``Runtime()`` loads the hookspecs (start-up time).
import openclaw_runtime.failover as failover
import openclaw_runtime.transcript as transcript

from ._markers import hookspec
from ._types import (
    RegisterBackend,
    RegisterComponent,
    RegisterModel,
    RegisterOrdered,
    RegisterPromptSection,
    RegisterSettings,
    RunBlock,
    RuntimeView,
)
from .events import Event
from .runner.cron_reply import ReplyClaim
from .runner.finalize import FinalizeDecision

__all__ = [
    "before_agent_finalize",
    "before_agent_reply",
    "before_agent_run",
    "classify_failover",
    "on_agent_event",
    "register_backends",
    "register_context_engines",
    "register_models",
    "register_plugin_settings",
    "register_prompt_sections",
    "register_providers",
    "register_stream_repairers",
    "register_tool_call_formats",
    "register_transcript_sanitizers",
    "runtime_add_hookspecs",
    "runtime_configured",
    "runtime_shutdown",
    "validate_replay_turns",
]


# --------------------------------------------------------------------------- Lifecycle


@hookspec(historic=True)
def runtime_add_hookspecs(pm: pluggy.PluginManager) -> None:
    """Add a plugin's own hookspecs to the plugin manager.

    Called once per plugin manager, before any plugin is checked against the specs; plugins
    registered later still receive it (historic). New hook names must start with the plugin's
    own name, e.g. ``lossless_before_compact``.

    :param pm: the ``pluggy.PluginManager`` of the runtime; call ``pm.add_hookspecs(module)``.
    :returns: nothing.

    .. versionadded:: 0.1
    """


@hookspec(historic=True)
def runtime_configured(runtime: RuntimeView) -> None:
    """The runtime finished loading plugins and its configuration.

    Called once per ``Runtime``; plugins registered later still receive it (historic).

    :param runtime: the ``Runtime``; read ``runtime.config`` for settings.
    :returns: nothing.

    .. versionadded:: 0.1
    """


@hookspec
def runtime_shutdown(runtime: RuntimeView) -> None:
    """The runtime is closing; release connections and background tasks.

    Called once, from ``Runtime.aclose()``. Every implementation is called even if one raises.

    :param runtime: the ``Runtime`` being closed.
    :returns: nothing.

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def before_agent_run(
    session_id: str | None,
    session_key: str | None,
    prompt: str,
    provider: str,
    model: str,
    trigger: str,
) -> RunBlock | None:
    """Decide whether a run may start (policy gates, quotas, maintenance windows).

    Called once per run, before the run takes its lane or calls a model.

    :param session_id: the session the run belongs to, if any.
    :param session_key: the session's routing key, if known.
    :param prompt: the text of the prompt (empty for a continuation).
    :param provider: the provider of the resolved model.
    :param model: the id of the resolved model.
    :param trigger: what started the run: ``user``, ``manual``, ``cron``, ``heartbeat``...
    :returns: a ``RunBlock`` to veto the run, ``None`` for no opinion.

    Stops at first non-None result. A plugin that raises is reported and treated as having
    no opinion.

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def before_agent_reply(
    session_id: str | None,
    session_key: str | None,
    prompt: str,
    provider: str,
    model: str,
    trigger: str,
) -> ReplyClaim | Mapping[str, Any] | str | None:
    """Answer a scheduled (``cron``) turn without the agent (OpenClaw's CLI entry hook).

    Called once per run whose trigger is ``cron``, after ``before_agent_run``, before the run
    takes its lanes. A claim ends the run ``ok`` with the plugin's reply and no model call.

    :param session_id: the session the run belongs to.
    :param session_key: the session's routing key, if known.
    :param prompt: the job's prompt.
    :param provider: the provider of the resolved model.
    :param model: the id of the resolved model.
    :param trigger: always ``cron`` today.
    :returns: ``ReplyClaim(text)`` (``openclaw_runtime.runner.cron_reply``; ``text=None`` for
        silence), a reply string, or ``{"handled": True, "reply": {"text": ...}}`` to claim
        the turn; ``None`` to let the agent run.

    Stops at the first claim. A plugin that raises is reported and does not claim.

    .. versionadded:: 0.2
    """


@hookspec
def before_agent_finalize(
    run_id: str,
    session_id: str,
    session_key: str | None,
    provider: str,
    model: str,
    last_assistant_message: str,
    messages: list[Any],
    revision: int,
) -> FinalizeDecision | Mapping[str, Any] | str | None:
    """Judge a final answer before the run returns it; ask for a revision if it falls short.

    Called when a turn ends with a visible final answer, before the run accepts it, while the
    revision budget (``MAX_BEFORE_AGENT_FINALIZE_REVISIONS``, 3 per model) lasts. A revision
    is one more model pass on the same session: the model gets the request as a user message
    after its draft, and its next final answer is the one returned (and judged again).

    :param run_id: the run's id.
    :param session_id: the session of the run.
    :param session_key: the session's routing key, if any.
    :param provider: the provider of the model that answered.
    :param model: the id of the model that answered.
    :param last_assistant_message: the text of the final answer.
    :param messages: the session's messages, the answer last (do not mutate).
    :param revision: how many revisions this run already made (0 on the first answer).
    :returns: ``FinalizeDecision("revise", reason)`` (or ``{"action": "revise", "reason": ...}``
        or the reason as a string) for one more pass; ``FinalizeDecision("finalize")`` to
        accept even if another plugin asks for a revision; ``None`` or ``continue`` to accept.

    Every implementation is called; ``finalize`` wins, revision reasons are joined. A plugin
    that raises is reported and treated as ``continue``.

    .. versionadded:: 0.2
    """


@hookspec
def on_agent_event(event: Event, session_id: str | None) -> None:
    """Observe every event of every run (metrics, audit logs, UIs).

    Called for each event in order, including one per streamed delta, so keep it cheap. The
    runtime skips the call entirely when no plugin implements this hook.

    :param event: the event (``event.type`` is its wire name; ``event.to_dict()`` renders it).
    :param session_id: the session of the run, if any.
    :returns: nothing; exceptions are reported and swallowed.

    .. versionadded:: 0.1
    """


@hookspec
def register_plugin_settings(register: RegisterSettings) -> None:
    """Declare the settings a plugin reads from ``[plugins.settings.<name>]``.

    Called once per runtime, before ``runtime_configured``. ``register(name, model)`` with a
    pydantic ``BaseModel`` subclass; ``name`` is the table (by convention the plugin's own
    name). The runtime validates the table against the model (a missing table gives the
    model's defaults; a key the model does not know is an error unless the model sets
    ``extra``) and raises ``ConfigurationError`` naming the plugin and the key; the validated
    instance is ``runtime.plugin_settings(name)``. ``doctor`` shows it, credentials masked.

    :param register: the registration callback; a name declared by two plugins is a
        ``ConfigurationError`` naming both.
    :returns: nothing.

    .. versionadded:: 0.2
    """


# --------------------------------------------------------------------------- Context engines


@hookspec
def register_context_engines(register: RegisterComponent) -> None:
    """Contribute context engines (how context is assembled and compacted).

    Called once per runtime. ``register(name, factory)``: ``factory()`` returns an engine.
    The runtime picks the engine named by ``context_engine`` in its config and wraps it in a
    quarantine proxy that falls back to the built-in ``legacy`` engine when it raises.

    :param register: the registration callback; a name registered twice is a
        ``PluginConflictError`` naming both plugins.
    :returns: nothing.

    Ordering: the built-in ``legacy`` engine is registered by a ``trylast`` built-in.

    .. versionadded:: 0.1
    """


# --------------------------------------------------------------------------- Provider failover


@hookspec(firstresult=True)
def classify_failover(
    signal: failover.FailoverSignal,
    provider: str | None,
    model: str | None,
    status: int | None,
    message: str | None,
    code: str | None,
    error_type: str | None,
) -> failover.FailoverClassification | None:
    """Classify a failed model call: why did it fail?

    Called once per failure, before any failover decision. The convenience arguments repeat
    fields of ``signal``; take whichever you need.

    :param signal: all facts of the failure (status, retry-after, code, type, message,
        provider, details).
    :param provider: the provider that failed, e.g. ``anthropic``.
    :param model: the model id, if known.
    :param status: the HTTP status, if any.
    :param message: the error text.
    :param code: the provider's error code, if any.
    :param error_type: the provider's error type, if any.
    :returns: a ``FailoverClassification``, or ``None`` when the plugin has no opinion (for
        example because the failure is not from its provider).

    Stops at first non-None result. Provider plugins answer first; the built-in generic
    classifier is ``trylast``. A plugin that raises is skipped and reported.

    .. versionadded:: 0.1
    """


# --------------------------------------------------------------------------- Transcript


@hookspec
def register_transcript_sanitizers(register: RegisterOrdered) -> None:
    """Contribute transcript sanitizers, run on the history before every model call.

    Called once per runtime. ``register(name, fn, *, order=100)``; the host runs enabled
    sanitizers in ``(order, name)`` order; ``fn(messages, policy)`` returns new messages and
    must be deterministic and idempotent (prompt caches depend on byte-identical output).

    :param register: the registration callback.
    :returns: nothing.

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def validate_replay_turns(
    messages: list[Any], policy: transcript.TranscriptPolicy
) -> list[Any] | None:
    """Make a sanitized history acceptable to one provider (turn order, alternation).

    Called once per model call, after the sanitizers.

    :param messages: the sanitized history (do not mutate; return a new list). Inside a run
        it is a ``list`` subclass that also carries the session's memo
        (``transcript.turn_memo.MemoizedTurns``); use it as any list. A plugin whose rule is
        the strict one (``transcript.validate_strict_replay_turns``) answers with
        ``messages.turn_memo(messages, policy, strict=True)``: the same answer, reading
        only what changed since the session's previous request.
    :param policy: the transcript policy of the target model.
    :returns: the validated history, or ``None`` when the plugin does not handle this
        provider.

    Stops at first non-None result. Provider plugins answer first; the generic validator is
    ``trylast``.

    .. versionadded:: 0.1
    """


# --------------------------------------------------------------------------- Streaming


@hookspec
def register_stream_repairers(register: RegisterOrdered) -> None:
    """Contribute stream repairers: async transformers of assistant-message event streams.

    Called once per runtime. ``register(name, transformer, *, order=100)``; a transformer is
    ``transformer(events, context) -> AsyncIterator[event]`` and the host composes them in
    ``(order, name)`` order around each provider stream.

    :param register: the registration callback.
    :returns: nothing.

    .. versionadded:: 0.1
    """


@hookspec
def register_tool_call_formats(register: RegisterComponent) -> None:
    """Contribute syntaxes for tool calls a model writes as plain text.

    Called once per runtime. ``register(name, fmt)`` with a
    ``openclaw_runtime.repair.ToolCallFormat`` (``parse_at`` and ``scan_at``); the built-in
    plain-text repairer tries every registered format when promoting text to structured tool
    calls. A registration that is not a format is reported and left out.

    :param register: the registration callback.
    :returns: nothing.

    .. versionadded:: 0.1
    """


# --------------------------------------------------------------------------- System prompt


@hookspec
def register_prompt_sections(register: RegisterPromptSection) -> None:
    """Contribute system-prompt sections, or replace built-in ones by name.

    Called once per runtime. ``register(name, render, *, minimal=None)``: ``render(context)``
    takes the run's ``openclaw_runtime.prompt.PromptContext`` and returns the section's text,
    its lines, or ``None`` to leave it out. A built-in name (``safety``, ``tooling``... see
    ``openclaw_runtime.prompt.section_names()``) replaces that section in place; a new name is
    added before the Current Date & Time and Runtime sections. ``minimal=True`` keeps the
    section in ``minimal`` prompt mode (default: the replaced section's modes, else full only).
    A ``render`` that raises is reported as a plugin fault and the built-in text (if any) is
    used instead.

    :param register: the registration callback.
    :returns: nothing.

    .. versionadded:: 0.2
    """


# --------------------------------------------------------------------------- Providers


@hookspec
def register_providers(register: RegisterComponent) -> None:
    """Contribute provider implementations, keyed by API (wire format).

    Called once per runtime. ``register(api, stream_fn)``: ``stream_fn(model, context,
    options)`` returns an assistant-message event stream and never raises (failures are
    ``error`` events). Models name the API they speak (``openai-completions``,
    ``anthropic-messages``...).

    :param register: the registration callback.
    :returns: nothing.

    .. versionadded:: 0.1
    """


@hookspec
def register_models(register: RegisterModel) -> None:
    """Contribute models to the catalog.

    Called once per runtime. ``register(model, aliases=())`` with an
    ``openclaw_runtime.llm.Model``; it is addressable as ``provider/id``, by its id when
    unambiguous, and by each alias.

    :param register: the registration callback.
    :returns: nothing.

    .. versionadded:: 0.1
    """


# --------------------------------------------------------------------------- Backends


@hookspec
def register_backends(register: RegisterBackend) -> None:
    """Contribute storage and coordination backends (lanes, ledger, steering, sessions).

    Called once per runtime. ``register(kind, name, factory)`` where ``kind`` is ``lanes``,
    ``auth_store``, ``steering_store``, ``session_index`` or ``session_store`` and
    ``factory(runtime)`` builds an object meeting that kind's protocol
    (``openclaw_runtime.backends``); ``[backends]`` selects a backend of each kind by name
    (unset: the embedded default, registered as ``embedded``). An unknown name raises
    ``UnknownBackendError`` listing the registered ones. Plugin backends run behind the
    containment guard; prove one with the contract suites in ``openclaw_runtime.testing``.

    :param register: the registration callback.
    :returns: nothing.

    .. versionadded:: 0.1
    """
