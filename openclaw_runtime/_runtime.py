"""``Runtime``: one configured host, and the door to runs, compaction and plugin introspection.

It owns a plugin manager, the ``Components`` collected from plugins (``_components``), and
``Hooks`` (``_hooks``), the typed facade that is the only caller of hooks, every call guarded
by the runtime's ``PluginGuard``. It builds the backends its runs share (``_backend_selection``)
and hands itself to the runner as the ``RunHost`` the runner asks for; the runner never
imports it. The rows of ``openclaw-runtime plugins`` are joined in ``_plugin_report``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Literal, TypeVar, Unpack, overload

from pydantic import BaseModel

# Package faces, not their modules: the annotations below name the run path's types through
# them, so ``typing.get_type_hints`` resolves those names (a face loads a name when it is first
# read) while ``from openclaw_runtime import Runtime`` and ``Runtime()`` stay cheap.
import openclaw_runtime.agent as agent
import openclaw_runtime.backends as backends
import openclaw_runtime.context as context
import openclaw_runtime.runner as runner

from ._components import Components, component_clashes
from ._exceptions import ConfigurationError, OpenClawRuntimeError, RunBlockedError
from ._hooks import Hooks
from ._memory_mode import open_fault_record, with_memory_default
from ._plugin_settings import (
    collect_declared_settings,
    describe_settings,
    unclaimed_settings,
    validate_plugin_settings,
)
from ._plugins import PluginRecord, get_plugin_manager, resolve_plugin_policy
from ._registry import BUILTIN_PLUGIN_PREFIX, ComponentClash, Registration
from ._runtime_live import LiveRunVerbs
from .config import PluginSettings, RuntimeConfig
from .containment import BreakerPolicy, PluginGuard, component_unit
from .events import Event
from .failover.events import redact_secret_text
from .llm import Model, StreamFn
from .messages import UserMessage
from .providers.forward_compat import resolve_forward_compat_model
from .providers.model_hints import UnknownModelError, missing_provider_plugin
from .providers.registry import ModelRegistry
from .redaction import package_logger, redact_event
from .runner.services import RunServices

__all__ = ["Runtime"]

logger = package_logger(logging.getLogger("openclaw_runtime"))
_SettingsT = TypeVar("_SettingsT", bound=BaseModel)


def breaker_policy(settings: PluginSettings) -> BreakerPolicy:
    """The circuit-breaker policy of ``[plugins]``."""
    return BreakerPolicy(
        threshold=settings.fault_threshold,
        window_s=settings.fault_window_seconds,
        cooloff_s=settings.quarantine_seconds,
    )


class Runtime(LiveRunVerbs):
    """A configured openclaw-runtime host.

    ``Runtime()`` reads no files; pass a ``RuntimeConfig`` (or a dict, or
    ``RuntimeConfig.load()``). Entry-point plugins load unless ``load_entrypoints=False``.
    ``memory=True`` is ``[backends] default = "memory"``: every backend kind the config leaves
    unset, and the plugin fault record, live in this process only; nothing is written under
    ``state_dir`` and everything is lost at exit (docs/backends.md).
    The live-run verbs (``steer``, ``follow_up``, ``abort_run``, ``is_run_active``,
    ``is_run_streaming``, ``wait_for_run_end``) come from ``LiveRunVerbs``.
    """

    def __init__(
        self,
        config: RuntimeConfig | Mapping[str, Any] | None = None,
        *,
        plugins: Sequence[Any] = (),
        load_entrypoints: bool = True,
        allow: Sequence[str] | None = None,
        blocked: Sequence[str] | None = None,
        on_load_failure: Literal["raise", "warn"] | None = None,
        env: Mapping[str, str] | None = None,
        memory: bool = False,
    ) -> None:
        self.config = with_memory_default(RuntimeConfig.coerce(config), memory)
        settings = self.config.plugins
        self.plugin_policy = resolve_plugin_policy(
            env=os.environ if env is None else env,
            config_allow=settings.allow,
            config_disable=settings.disable,
            config_strict=settings.strict,
            config_trace=settings.trace,
            allow=allow,
            blocked=blocked,
            strict=None if on_load_failure is None else on_load_failure == "raise",
        )
        self.plugin_manager = get_plugin_manager(
            plugins=plugins, load_entrypoints=load_entrypoints, policy=self.plugin_policy
        )
        #: Faults and quarantines persisted for later processes (``<state_dir>/plugins``;
        #: in memory mode counted in this process only).
        self.fault_record = open_fault_record(self.config)
        self.guard = PluginGuard(
            breaker_policy(settings), redact=redact_secret_text, sink=self.fault_record
        )
        self.hooks = Hooks(
            self.plugin_manager,
            strict=self.plugin_policy.strict,
            trace=self.plugin_policy.trace,
            guard=self.guard,
        )
        self.env: Mapping[str, str] | None = env
        self._components: Components | None = None
        self._context_slot: context.ContextEngineSlot | None = None
        #: The five backends and the sessions kept open between turns, handed to every run.
        self.services = RunServices(self._backend, check=self._check_backend_names)
        #: Context limits providers stated in overflow errors (``provider/model`` → tokens),
        #: so later runs plan with them instead of paying one failed request each.
        self.learned_context_windows: dict[str, int] = {}
        #: Multiplies the same-model rate-limit backoff (tests and demos shorten it).
        self.retry_backoff_scale = 1.0
        self._repaired: dict[str, tuple[StreamFn, StreamFn]] = {}
        self._sanitizers: tuple[tuple[Any, int, int], list[Registration[Any]]] | None = None
        #: Unknown models resolved from a known family: requested ref → template ref.
        self.forward_compat: dict[str, str] = {}
        self.closed = False
        #: Settings models plugins declared (``register_plugin_settings``), by table name.
        self.declared_plugin_settings = collect_declared_settings(self.hooks)
        self._plugin_settings = validate_plugin_settings(
            self.declared_plugin_settings, self.config.plugins.settings
        )
        for name in unclaimed_settings(self.declared_plugin_settings, self.config.plugins.settings):
            logger.warning("[plugins.settings.%s] is set but no loaded plugin declares it", name)
        self.hooks.runtime_configured(self)

    # components --------------------------------------------------------------------------------

    @property
    def components(self) -> Components:
        """Registries filled from every plugin's registration hooks (collected once)."""
        if self._components is None:
            self._components = self.hooks.collect_components(self.config)
        return self._components

    @property
    def models(self) -> ModelRegistry:
        """The model catalog."""
        return self.components.models

    def resolve_model(self, name: str | Model | None = None) -> Model:
        """A model by name (``provider/id``, alias or id); None means the configured default."""
        if isinstance(name, Model):
            return name
        name = name or self.config.agent.model
        if not name:
            raise ConfigurationError(
                "no model given and no default model configured ([agent] model)"
            )
        try:
            return self.models.resolve(name)
        except UnknownModelError:
            return self._resolve_unknown_model(name)

    def _resolve_unknown_model(self, name: str) -> Model:
        """A model the registry lacks: its provider's plugin is missing (one line naming the
        distribution), or a newer member of a known family (warned once), or re-raise."""
        missing = missing_provider_plugin(
            name, self.components.providers.names(), self._plugin_status()
        )
        if missing is not None:
            raise missing
        match = resolve_forward_compat_model(name, self.models)
        if match is None:
            raise UnknownModelError(name, [*(m.ref for m in self.models), *self.models.aliases()])
        if match.model.ref not in self.forward_compat:
            self.forward_compat[match.model.ref] = match.template
            logger.warning("%s", match.warning())
        return match.model

    def _plugin_status(self) -> dict[str, str]:
        return {name: record.status for name, record in self.plugin_manager.records.items()}

    def forward_compat_template(self, ref: str) -> str | None:
        """The catalog model whose definition stands in for ``ref`` (forward-compatible
        resolution), or ``None`` when ``ref`` is in the catalog itself."""
        return self.forward_compat.get(ref)

    @property
    def context_engines(self) -> context.ContextEngineSlot:
        """The context-engine slot: resolution and quarantines (list, clear)."""
        if self._context_slot is None:
            # lazy: start-up time (the context engines load with the first run)
            from .context.registry import ContextEngineFactoryContext, ContextEngineSlot
            from .context.selection import plugin_owner_enabled  # lazy: start-up time

            self._context_slot = ContextEngineSlot(
                self.components.context_engines,
                factory_context=ContextEngineFactoryContext(
                    config=self.config, state_dir=str(self.config.state_dir)
                ),
                on_quarantine=self._engine_quarantined,
                owner_enabled=partial(
                    plugin_owner_enabled,
                    records=self.plugin_manager.records,
                    policy=self.plugin_policy,
                ),
            )
        return self._context_slot

    def _engine_quarantined(self, quarantine: Any) -> None:
        if quarantine.owner is None:
            return  # a configured name nothing registered: a config problem (doctor: fail)
        self.hooks.record_fault(
            quarantine.owner,
            "register_context_engines",
            f"{quarantine.operation}: {quarantine.reason}",
            unit=component_unit("context_engine", quarantine.engine_id),
            quarantine=True,
        )

    async def resolve_context_engine(self, name: str | None = None) -> Any:
        """The configured engine (``context_engine``), wrapped in the quarantine proxy."""
        return await self.context_engines.resolve(
            name if name is not None else self.config.context_engine
        )

    def stream_fn_for(self, model: Model, *, repair: bool = True) -> StreamFn:
        """The provider that speaks ``model.api``, behind the registered stream repairers."""
        if model.api not in self.components.providers:  # not ``names()``: no sort per run
            missing = missing_provider_plugin(model.ref, (), self._plugin_status(), api=model.api)
            if missing is not None:
                raise missing
        stream_fn = self.components.providers.get(model.api)
        if not repair:
            return stream_fn
        cached = self._repaired.get(model.api)
        if cached is None or cached[0] is not stream_fn:
            from .repair.compose import apply_stream_repairers  # lazy: start-up time

            cached = (stream_fn, apply_stream_repairers(stream_fn, self._stream_repairers()))
            self._repaired[model.api] = cached
        return cached[1]

    def _stream_repairers(self) -> list[Any]:
        from .repair.compose import guard_stream_repairers  # lazy: start-up time

        components = self.components
        formats = {r.name: r.component for r in components.tool_call_formats.ordered()}
        owners = {r.name: r.plugin for r in components.tool_call_formats.ordered()}
        registrations = components.stream_repairers.ordered()

        def invalid(name: str, exc: TypeError) -> None:
            self.hooks.record_fault(
                owners.get(name),
                "register_tool_call_formats",
                exc,
                unit=component_unit("tool_call_format", name),
            )

        return guard_stream_repairers(
            [(r.name, r.plugin, r.component) for r in registrations],
            formats,
            owners=owners,
            guard=self.guard,
            on_invalid=invalid,
        )

    def prompt_sections(self) -> list[Registration[Any]]:
        """Plugin system-prompt sections (``register_prompt_sections``), by name."""
        return self.components.prompt_sections.registrations()

    def transcript_sanitizers(self) -> list[Registration[Any]]:
        """Registered sanitizers in pipeline order, plugins' ones behind the guard (the
        built-ins stay bare, which keeps the incremental sanitizer's fast path).

        Worked out once and handed out again (a fresh list of the same registrations) until
        the registry changes: every run asks, and the same objects let a session's
        incremental sanitizer keep its stages from one run to the next."""
        registry = self.components.transcript_sanitizers
        key = (registry, len(registry), len(registry.clashes))  # every ``add`` moves one
        cached = self._sanitizers
        if cached is None or cached[0] != key:
            cached = self._sanitizers = (key, self._guarded_sanitizers(registry.ordered()))
        return list(cached[1])

    def _guarded_sanitizers(
        self, registrations: list[Registration[Any]]
    ) -> list[Registration[Any]]:
        from .transcript.sanitize import guard_transcript_sanitizer  # lazy: start-up time

        out: list[Registration[Any]] = []
        for registration in registrations:
            plugin = registration.plugin
            if plugin is None or plugin.startswith(BUILTIN_PLUGIN_PREFIX):
                out.append(registration)
                continue
            guarded = guard_transcript_sanitizer(
                registration.component, guard=self.guard, plugin=plugin, name=registration.name
            )
            out.append(dataclasses.replace(registration, component=guarded))
        return out

    # agents -------------------------------------------------------------------------------------

    def create_agent(
        self,
        *,
        model: str | Model | None = None,
        tools: Sequence[agent.AgentTool] = (),
        system_prompt: str | None = None,
        session_id: str | None = None,
        session_key: str | None = None,
        trigger: str = "user",
        **agent_options: Unpack[agent.AgentOptions],
    ) -> agent.Agent:
        """An ``Agent`` wired to this runtime: its model's provider, ``before_agent_run``
        vetoes and ``on_agent_event`` observers. ``agent_options`` are ``Agent`` keywords
        (``AgentOptions``); an unknown one is a ``TypeError`` naming it."""
        from .agent import Agent  # lazy: start-up time (the kernel loads with the first agent)
        from .agent.options import AGENT_OPTION_NAMES  # lazy: start-up time
        from .runner.run_options import reject_unknown_options  # lazy: start-up time

        reject_unknown_options("create_agent()", agent_options, AGENT_OPTION_NAMES)
        resolved = self.resolve_model(model)
        options: dict[str, Any] = dict(agent_options)
        stream_fn = options.pop("stream_fn", None) or self.stream_fn_for(resolved)
        hooks = self.hooks

        def gate(prompts: list[Any]) -> None:
            text = "\n".join(m.text() for m in prompts if isinstance(m, UserMessage))
            block, plugin = hooks.before_agent_run(
                session_id=session_id,
                session_key=session_key,
                prompt=text,
                provider=resolved.provider,
                model=resolved.id,
                trigger=trigger,
            )
            if block is not None:
                raise RunBlockedError(block.reason, plugin_name=plugin)

        agent = Agent(
            model=resolved,
            stream_fn=stream_fn,
            system_prompt=self.config.agent.system_prompt
            if system_prompt is None
            else system_prompt,
            thinking_level=options.pop("thinking_level", self.config.agent.thinking_level),
            tools=tools,
            before_run=gate,
            **options,
        )
        if hooks.observes_events:
            agent.subscribe(
                lambda event, _signal: hooks.on_agent_event(redact_event(event), session_id)
            )
        return agent

    # runs ---------------------------------------------------------------------------------------

    def _check_backend_names(self) -> None:
        """``UnknownBackendError`` for the first ``[backends]`` name nothing registered."""
        from ._backend_selection import check_backend_names  # lazy: start-up time

        check_backend_names(self.config, self.components)

    def _backend(self, kind: str) -> Any:
        """Build the ``[backends]`` backend of ``kind`` (see ``_backend_selection``)."""
        from ._backend_selection import build_backend  # lazy: start-up time

        return build_backend(
            kind, self, config=self.config, components=self.components, guard=self.guard
        )

    @property
    def lanes(self) -> backends.LaneBackend:
        """The lane backend (``[backends] lanes``; default ``FileLanes``: session lanes hold
        across the processes on one state dir, the global cap per ``[agent] global_cap_scope``)."""
        return self.services.lanes

    @property
    def auth_store(self) -> backends.AuthStore:
        """The auth-profile ledger (``[backends] auth_store``; default the locked JSON file)."""
        return self.services.auth_store

    @property
    def session_store(self) -> backends.SessionStore:
        """Where transcripts live (``[backends] session_store``; default ``<state_dir>/sessions``,
        one JSONL file per session, appends buffered and flushed at every turn end)."""
        return self.services.session_store

    @property
    def steering_store(self) -> backends.SteeringStore:
        """Sub-agent results waiting for their requester's next turn (``[backends]
        steering_store``; default ``<state_dir>/subagents/runs.json``)."""
        return self.services.steering_store

    @property
    def session_index(self) -> backends.SessionIndex:
        """Session key → session id (``[backends] session_index``; default
        ``<state_dir>/sessions/index.json``)."""
        return self.services.session_index

    @property
    def sessions_dir(self) -> Any:
        """``<state_dir>/sessions``."""
        return self.config.state_dir.expanduser() / "sessions"

    @property
    def max_open_sessions(self) -> int:
        """How many sessions stay open between turns (least recently used closed first)."""
        return self.services.max_open_sessions

    @max_open_sessions.setter
    def max_open_sessions(self, value: int) -> None:
        self.services.max_open_sessions = value

    async def checkout_session(self, session_id: str, *, cwd: str) -> backends.Session:
        """``services.checkout_session``: an open session for a run."""
        return await self.services.checkout_session(session_id, cwd=cwd)

    async def checkin_session(self, session: backends.Session) -> None:
        """``services.checkin_session``: keep a session open for its next turn."""
        await self.services.checkin_session(session)

    async def wait_for_session_maintenance(self, session_id: str) -> None:
        """``services.wait_for_session_maintenance``."""
        await self.services.wait_for_session_maintenance(session_id)

    def defer_session_maintenance(self, session_id: str) -> Callable[[], None]:
        """``services.defer_session_maintenance``: runs of the session wait until the
        returned function is called."""
        return self.services.defer_session_maintenance(session_id)

    async def run(
        self,
        prompt: str | None = None,
        *,
        request: runner.RunRequest | None = None,
        on_event: Callable[[Event], Any] | None = None,
        **options: Unpack[runner.RunOptions],
    ) -> runner.RunResult:
        """Run one agent turn: ``await runtime.run("hi", session_id="s1")``.

        Keyword options are ``RunRequest`` fields (``RunOptions``: ``session_id``,
        ``session_key``, ``model``, ``tools``, ``trigger``, ``timeout_s`` ...), or pass a
        ``request``; an unknown option is a ``TypeError`` naming it. ``on_event`` receives
        every run, fallback and agent event (only the kinds named in its ``event_kinds``
        attribute, when it has one: docs/runs.md, "Events").
        """
        # lazy: start-up time (the run path loads with the first run)
        from .runner.request import RunRequest
        from .runner.run import run_embedded_agent  # lazy: start-up time
        from .runner.run_options import RUN_OPTION_NAMES, reject_unknown_options  # lazy: ditto

        reject_unknown_options("runtime.run()", options, RUN_OPTION_NAMES)
        if request is None:
            if prompt is None:
                raise TypeError("runtime.run() needs a prompt or a request")
            request = RunRequest(prompt=prompt, **options)
        elif prompt is not None or options:
            raise TypeError("pass either a RunRequest or a prompt with options, not both")
        return await run_embedded_agent(self, request, on_event=on_event)

    async def compact_session(
        self,
        session_id: str | None = None,
        *,
        session_key: str | None = None,
        model: str | None = None,
        force: bool = True,
        custom_instructions: str | None = None,
    ) -> context.CompactResult:
        """Compact a stored session now, queued behind its running turn (``CompactResult``).

        Not for use inside a run of the same session (``LaneReentryError``): the run loop
        compacts directly.
        """
        from .runner.compact import compact_session_queued  # lazy: start-up time

        return await compact_session_queued(
            self,
            session_id=session_id,
            session_key=session_key,
            model=model,
            force=force,
            custom_instructions=custom_instructions,
        )

    # plugin settings ----------------------------------------------------------------------------

    @overload
    def plugin_settings(self, name: str) -> BaseModel: ...
    @overload
    def plugin_settings(self, name: str, model: type[_SettingsT]) -> _SettingsT: ...
    def plugin_settings(self, name: str, model: type[BaseModel] | None = None) -> BaseModel:
        """The validated ``[plugins.settings.<name>]`` (the model's defaults when the table is
        absent); pass the ``model`` to get it typed. An undeclared name is a
        ``ConfigurationError`` listing the declared ones."""
        try:
            settings = self._plugin_settings[name]
        except KeyError:
            declared = ", ".join(sorted(self._plugin_settings)) or "none"
            raise ConfigurationError(
                f"no plugin declares settings {name!r} (declared: {declared})"
            ) from None
        if model is not None and not isinstance(settings, model):
            raise ConfigurationError(
                f"settings {name!r} are a {type(settings).__name__}, not a {model.__name__}"
            )
        return settings

    def describe_plugin_settings(self) -> dict[str, dict[str, Any]]:
        """Each declared table: its plugin and its values (credentials masked), JSON-ready;
        tables set in the config that no loaded plugin declares have ``plugin: None``."""
        out: dict[str, dict[str, Any]] = {
            name: {
                "plugin": self.declared_plugin_settings[name].plugin,
                "values": describe_settings(instance),
            }
            for name, instance in sorted(self._plugin_settings.items())
        }
        for name in unclaimed_settings(self.declared_plugin_settings, self.config.plugins.settings):
            out[name] = {"plugin": None, "values": {}}
        return out

    # introspection ------------------------------------------------------------------------------

    def plugin_records(self) -> list[PluginRecord]:
        """Every plugin with its status, distribution, version and hooks."""
        return self.plugin_manager.plugin_records()

    def describe_plugins(self) -> list[dict[str, Any]]:
        """JSON-ready description of every plugin (``openclaw-runtime plugins``).

        Besides what loaded, each plugin lists its ``hook_errors`` of this process, its
        persisted ``faults`` (every process, until ``clear_plugin_faults``: hook, unit, error,
        count, first/last time, quarantines), its current ``quarantines`` and the component
        ``clashes`` it took part in. Plugins that only appear in the fault record (not loaded
        now) get a row with status ``not loaded``.
        """
        from ._plugin_report import plugin_report  # lazy: start-up time

        return plugin_report(
            self.plugin_records(),
            faults=self.hooks.faults,
            engine_quarantines=(
                self._context_slot.list_quarantines() if self._context_slot is not None else ()
            ),
            guard_quarantines=self.guard.quarantines(),
            recorded_faults=self.recorded_plugin_faults(),
            clashes=self.component_clashes(),
        )

    def recorded_plugin_faults(self) -> list[dict[str, Any]]:
        """The persisted fault record (every process), oldest first; never raises."""
        try:
            return self.fault_record.entries()
        except Exception as exc:  # unreadable dir, lock timeout: report, don't crash
            logger.warning("cannot read the plugin fault record: %s", exc)
            return []

    def clear_plugin_faults(self, plugin: str | None = None) -> int:
        """Forget recorded faults (of ``plugin`` or all), here and in the persisted record,
        and put quarantined plugins back into service; how many record entries went."""
        self.guard.reset(plugin)
        if self._context_slot is not None:
            for quarantine in self._context_slot.list_quarantines():
                if plugin is None or quarantine.owner == plugin:
                    self._context_slot.clear_quarantine(quarantine.engine_id)
        return self.fault_record.clear(plugin)

    def component_clashes(self) -> list[ComponentClash]:
        """Component names two plugins registered, with the one that is used."""
        try:
            components = self.components
        except OpenClawRuntimeError:
            return []
        return component_clashes(components)

    def registrations(self) -> dict[str, list[Registration[Any]]]:
        """Every registered component by slot, with the plugin that registered it."""
        components = self.components
        slots: dict[str, list[Registration[Any]]] = {
            "providers": components.providers.registrations(),
            "context_engines": components.context_engines.registrations(),
            "transcript_sanitizers": components.transcript_sanitizers.registrations(),
            "stream_repairers": components.stream_repairers.registrations(),
            "tool_call_formats": components.tool_call_formats.registrations(),
        }
        for kind, registry in components.backends.items():
            slots[f"backends.{kind}"] = registry.registrations()
        return slots

    # lifecycle ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Shut down: ``runtime_shutdown`` is delivered once."""
        if self.closed:
            return
        self.closed = True
        self.hooks.runtime_shutdown(self)

    async def aclose(self) -> None:
        """``close()``, and close the HTTP clients of providers that hold them, the
        sessions kept open between turns and the backends that hold connections (after any
        background context-engine maintenance has finished)."""
        await self.services.wait_for_all_maintenance()
        await self.services.close_sessions()
        await self.services.close_backends()
        if self._components is not None:
            for registration in self._components.providers.registrations():
                owner = getattr(registration.component, "__self__", None)
                aclose = getattr(owner, "aclose", None)
                if aclose is not None:
                    await aclose()
        self.close()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
