"""``Hooks``: the typed, guarded facade that is the host's only caller of plugin hooks.

Hooks are called one implementation at a time so every answer, registration and failure is
attributed to the plugin by name. Every call goes through the runtime's ``PluginGuard``
(``openclaw_runtime.containment``): a plugin that raises is recorded (``runtime.hooks.faults``,
the run's ``plugin_fault`` events and ``RunResult.faults``, the persisted fault record) and
skipped; repeated faults quarantine it (a circuit breaker). It never takes the run down.
Registration hooks fill a ``Components`` (``collect_components``).
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any

# Package faces: ``failover.FailoverSignal`` and ``transcript.TranscriptPolicy`` load when first
# read (``typing.get_type_hints``), not with ``Runtime()`` (start-up time).
import openclaw_runtime.failover as failover
import openclaw_runtime.transcript as transcript

from ._components import Components, component_clashes, registries
from ._exceptions import ConfigurationError, HookError, OpenClawRuntimeError, OpenClawRuntimeWarning
from ._plugins import HookCall, OpenClawPluginManager
from ._registry import ComponentRegistry
from ._types import RunBlock, RuntimeView
from .backends import BACKEND_KINDS
from .config import RuntimeConfig
from .containment import PluginFault, PluginGuard
from .events import Event
from .redaction import package_logger
from .runner.cron_reply import ReplyClaim, normalize_reply_claim
from .runner.finalize import FinalizeDecision, merge_finalize_decisions, normalize_finalize_decision

__all__ = ["Hooks"]

logger = package_logger(logging.getLogger("openclaw_runtime"))


class _Registrar:
    """The ``register`` callback handed to one plugin for one registration hook."""

    def __init__(self, plugin: str | None, hook_name: str) -> None:
        self.plugin = plugin
        self.hook_name = hook_name
        self.pending: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.closed = False

    def __call__(self, *args: Any, **options: Any) -> None:
        if self.closed:
            raise ConfigurationError(
                f"plugin {self.plugin!r} called register() of {self.hook_name} after the hook "
                "returned; register components while the hook runs"
            )
        self.pending.append((args, options))

    def close(self) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
        self.closed = True
        return self.pending


class Hooks:
    """Typed, guarded calls of every hook; nothing else in the host calls ``pm.hook``."""

    def __init__(
        self,
        pm: OpenClawPluginManager,
        *,
        strict: bool = False,
        trace: bool = False,
        guard: PluginGuard | None = None,
    ):
        self._pm = pm
        self.strict = strict
        self.trace = trace
        self.guard = guard or PluginGuard()
        self.observes_events = bool(self._impls("on_agent_event"))
        #: some plugin judges final answers (else a run need not gather the session's
        #: messages for ``before_agent_finalize``)
        self.finalizes = bool(self._impls("before_agent_finalize"))
        for plugin, exc in pm.hookspec_faults:
            self.record_fault(plugin, "runtime_add_hookspecs", exc)

    @property
    def faults(self) -> list[PluginFault]:
        """Every plugin fault this runtime saw, oldest first."""
        return self.guard.faults

    # plumbing ---------------------------------------------------------------------------------

    def _impls(self, hook_name: str) -> list[Any]:
        caller = getattr(self._pm.hook, hook_name)
        # pluggy calls the last registered (and tryfirst) implementations first
        return [i for i in reversed(caller.get_hookimpls()) if not (i.wrapper or i.hookwrapper)]

    def _call(self, impl: Any, hook_name: str, kwargs: Mapping[str, Any]) -> Any:
        monitors = self._pm.call_monitors
        try:
            result = impl.function(*(kwargs[name] for name in impl.argnames))
        except Exception as exc:
            for monitor in monitors:
                monitor(HookCall(hook_name, impl.plugin_name, kwargs, error=exc))
            raise
        for monitor in monitors:
            monitor(HookCall(hook_name, impl.plugin_name, kwargs, result))
        if self.trace:
            sys.stderr.write(f"[openclaw_runtime] {hook_name} <- {impl.plugin_name}: {result!r}\n")
        return result

    def _fault(self, impl: Any, hook_name: str, exc: Exception) -> None:
        exc.add_note(f"raised by plugin {impl.plugin_name!r} in hook {hook_name!r}")
        self.record_fault(impl.plugin_name, hook_name, exc)

    def record_fault(
        self,
        plugin: str | None,
        hook_name: str,
        exc: BaseException | str,
        *,
        unit: str | None = None,
        quarantine: bool = False,
    ) -> PluginFault:
        """Remember that ``plugin`` failed in ``hook_name`` (``unit``: the breaker unit,
        default the hook); shown by ``plugins``, on the run's events and result."""
        return self.guard.fault(plugin, hook_name, exc, unit=unit, quarantine=quarantine)

    def _first(self, hook_name: str, kwargs: Mapping[str, Any]) -> tuple[Any, str | None]:
        guard = self.guard
        for impl in self._impls(hook_name):
            plugin = impl.plugin_name
            if not guard.admits(plugin, hook_name):
                continue
            try:
                result = self._call(impl, hook_name, kwargs)
            except Exception as exc:
                self._fault(impl, hook_name, exc)
                continue
            guard.succeeded(plugin, hook_name)
            if result is not None:
                return result, plugin
        return None, None

    def _each(self, hook_name: str, kwargs: Mapping[str, Any]) -> None:
        guard = self.guard
        for impl in self._impls(hook_name):
            plugin = impl.plugin_name
            if not guard.admits(plugin, hook_name):
                continue
            try:
                self._call(impl, hook_name, kwargs)
            except Exception as exc:
                self._fault(impl, hook_name, exc)
                continue
            guard.succeeded(plugin, hook_name)

    def collect(
        self, hook_name: str, commit: Callable[[str | None, tuple[Any, ...], dict[str, Any]], None]
    ) -> None:
        """Call a registration hook plugin by plugin; commit what each plugin registered.

        A plugin's registrations are committed only if its hook returned normally, so a
        plugin that raises halfway leaves nothing half-registered.
        """
        for impl in self._impls(hook_name):
            registrar = _Registrar(impl.plugin_name, hook_name)
            try:
                self._call(impl, hook_name, {"register": registrar})
            except OpenClawRuntimeError:
                raise
            except Exception as exc:
                if self.strict:
                    raise HookError(
                        f"plugin {impl.plugin_name!r} raised in {hook_name}: {exc}",
                        hook_name=hook_name,
                        plugin_name=impl.plugin_name,
                    ) from exc
                self._fault(impl, hook_name, exc)
                continue
            for args, options in registrar.close():
                try:
                    commit(impl.plugin_name, args, options)
                except (TypeError, ValueError) as exc:
                    raise ConfigurationError(
                        f"plugin {impl.plugin_name!r} called register() of {hook_name} "
                        f"with bad arguments: {exc}"
                    ) from exc

    # typed hooks -------------------------------------------------------------------------------

    def runtime_configured(self, runtime: RuntimeView) -> None:
        """Tell every plugin the runtime is ready."""
        self._each("runtime_configured", {"runtime": runtime})

    def runtime_shutdown(self, runtime: RuntimeView) -> None:
        """Tell every plugin the runtime is closing."""
        self._each("runtime_shutdown", {"runtime": runtime})

    def before_agent_run(
        self,
        *,
        session_id: str | None,
        session_key: str | None,
        prompt: str,
        provider: str,
        model: str,
        trigger: str,
    ) -> tuple[RunBlock | None, str | None]:
        """The first veto and the plugin that issued it, or ``(None, None)``."""
        kwargs = {
            "session_id": session_id,
            "session_key": session_key,
            "prompt": prompt,
            "provider": provider,
            "model": model,
            "trigger": trigger,
        }
        result, plugin = self._first("before_agent_run", kwargs)
        if result is None:
            return None, None
        if isinstance(result, str):
            result = RunBlock(result)
        return result, plugin

    def before_agent_reply(self, **kwargs: Any) -> tuple[ReplyClaim | None, str | None]:
        """The first plugin that claims a cron turn, with its claim; ``(None, None)``."""
        guard = self.guard
        for impl in self._impls("before_agent_reply"):
            plugin = impl.plugin_name
            if not guard.admits(plugin, "before_agent_reply"):
                continue
            try:
                claim = normalize_reply_claim(self._call(impl, "before_agent_reply", kwargs))
            except Exception as exc:
                self._fault(impl, "before_agent_reply", exc)
                continue
            guard.succeeded(plugin, "before_agent_reply")
            if claim is not None:
                return claim, plugin
        return None, None

    def before_agent_finalize(self, **kwargs: Any) -> FinalizeDecision:
        """Every plugin's verdict on a final answer, merged (``finalize`` wins, revision
        reasons joined); a plugin that raises or answers nonsense counts as ``continue``."""
        decisions: list[FinalizeDecision] = []
        guard = self.guard
        for impl in self._impls("before_agent_finalize"):
            plugin = impl.plugin_name
            if not guard.admits(plugin, "before_agent_finalize"):
                continue
            try:
                decisions.append(
                    normalize_finalize_decision(self._call(impl, "before_agent_finalize", kwargs))
                )
            except Exception as exc:
                self._fault(impl, "before_agent_finalize", exc)
                continue
            guard.succeeded(plugin, "before_agent_finalize")
        return merge_finalize_decisions(decisions)

    def on_agent_event(self, event: Event, session_id: str | None) -> None:
        """Hand an event to every observer."""
        if self.observes_events:
            self._each("on_agent_event", {"event": event, "session_id": session_id})

    def classify_failover(
        self, signal: failover.FailoverSignal
    ) -> tuple[failover.FailoverClassification | None, str | None]:
        """The first classification and the plugin that gave it."""
        kwargs = {
            "signal": signal,
            "provider": signal.provider,
            "model": signal.model,
            "status": signal.status,
            "message": signal.message,
            "code": signal.code,
            "error_type": signal.error_type,
        }
        return self._first("classify_failover", kwargs)

    def validate_replay_turns(
        self, messages: list[Any], policy: transcript.TranscriptPolicy
    ) -> tuple[list[Any] | None, str | None]:
        """The first validator's answer and its plugin."""
        return self._first("validate_replay_turns", {"messages": messages, "policy": policy})

    def turn_validation_abstains(self, policy: transcript.TranscriptPolicy) -> bool:
        """Whether ``validate_replay_turns`` would answer ``None`` now without any effect,
        for any history: the policy asks for no turn validation and the built-in validator
        (which then abstains untouched) is the only implementation, with no call monitor,
        no trace and no breaker to consult. Read before every request, so a plugin, monitor
        or fault that arrives later is seen; the caller may then skip the call."""
        if policy.validate_gemini_turns or policy.validate_anthropic_turns:
            return False
        if self.trace or self._pm.call_monitors:
            return False
        impls = self._impls("validate_replay_turns")
        if len(impls) != 1:
            return False
        impl = impls[0]
        return impl.function is _builtin_validator(impl.plugin) and self.guard.untouched(
            impl.plugin_name, "validate_replay_turns"
        )

    def collect_components(self, config: RuntimeConfig) -> Components:
        """Run every registration hook and return the filled registries.

        A component-name clash is settled by the registry (``[plugins] prefer``, built-ins
        first, else the first registration) and reported with a warning; it never raises.
        """
        components = Components()
        prefer = dict(config.plugins.prefer)
        load_order = {name: index for index, name in enumerate(self._pm.records)}
        components.models.prefer, components.models.load_order = prefer, load_order
        for registry in registries(components):
            registry.prefer, registry.load_order = prefer, load_order

        def named(
            registry: ComponentRegistry[Any],
        ) -> Callable[[str | None, tuple[Any, ...], dict[str, Any]], None]:
            def commit(plugin: str | None, args: tuple[Any, ...], options: dict[str, Any]) -> None:
                name, component = args
                registry.add(name, component, plugin=plugin, **options)

            return commit

        def model(plugin: str | None, args: tuple[Any, ...], options: dict[str, Any]) -> None:
            (value,) = args
            components.models.add(value, aliases=tuple(options.get("aliases", ())), plugin=plugin)

        def backend(plugin: str | None, args: tuple[Any, ...], options: dict[str, Any]) -> None:
            kind, name, factory = args
            if kind not in components.backends:
                raise ConfigurationError(
                    f"plugin {plugin!r} registered a backend of unknown kind {kind!r}; "
                    f"kinds: {', '.join(BACKEND_KINDS)}"
                )
            components.backends[kind].add(name, factory, plugin=plugin)

        self.collect("register_providers", named(components.providers))
        self.collect("register_models", model)
        for configured in config.models:
            components.models.add(configured, plugin=None)
        self.collect("register_context_engines", named(components.context_engines))
        self.collect("register_transcript_sanitizers", named(components.transcript_sanitizers))
        self.collect("register_stream_repairers", named(components.stream_repairers))
        self.collect("register_tool_call_formats", named(components.tool_call_formats))
        self.collect("register_prompt_sections", named(components.prompt_sections))
        self.collect("register_backends", backend)
        for clash in component_clashes(components):
            logger.warning("%s", clash.message())
            warnings.warn(clash.message(), OpenClawRuntimeWarning, stacklevel=2)
        return components


#: the module of the built-in ``validate_replay_turns`` (``builtins.transcript``)
_BUILTIN_TRANSCRIPT = "openclaw_runtime.builtins.transcript"


def _builtin_validator(plugin: Any) -> Any:
    """The built-in turn validator when ``plugin`` is its module (else ``None``): the module
    as imported (``sys.modules``), so nothing is imported for it and no lookalike passes."""
    if plugin is not sys.modules.get(_BUILTIN_TRANSCRIPT):
        return None
    return getattr(plugin, "validate_replay_turns", None)
