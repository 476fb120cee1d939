"""Build the real runtime a contract suite checks a plugin's component through.

The component contracts never take a bare object on trust: they register the author's plugin
on a ``Runtime`` (no entry points, strict loading, a temporary state dir) and fetch the
component back from the runtime's registries or call its hook through the runtime's hook
caller, so a plugin whose registration is wrong fails the suite the same way it would fail
in production.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from inspect import isawaitable
from pathlib import Path
from typing import Any

from .._runtime import Runtime
from ..events import AssistantMessageEventStream
from ..llm import Context, Model, StreamFn, StreamOptions

__all__ = ["PLUGIN_UNDER_TEST", "contract_runtime", "open_stream", "registered_component"]

#: The name a contract suite registers the author's plugin under.
PLUGIN_UNDER_TEST = "plugin-under-test"


@contextmanager
def contract_runtime(
    plugin: Any,
    state_dir: Path,
    *,
    config: Mapping[str, Any] | None = None,
    extra: Sequence[tuple[str, Any]] = (),
) -> Iterator[Runtime]:
    """A ``Runtime`` with ``plugin`` (``None``: built-ins only) registered as
    ``PLUGIN_UNDER_TEST``, plus the ``extra`` (name, plugin) pairs; closed on exit."""
    plugins = [*extra] if plugin is None else [(PLUGIN_UNDER_TEST, plugin), *extra]
    runtime = Runtime(
        {**(config or {}), "state_dir": str(state_dir)},
        plugins=plugins,
        load_entrypoints=False,
        on_load_failure="raise",
    )
    try:
        yield runtime
    finally:
        runtime.close()


_SLOTS = (
    "providers",
    "context_engines",
    "transcript_sanitizers",
    "stream_repairers",
    "tool_call_formats",
    "prompt_sections",
)


def registered_component(plugin: Any, slot: str, name: str, state_dir: Path) -> Any:
    """The component ``plugin`` registered as ``name`` in ``slot`` (``stream_repairers``,
    ``transcript_sanitizers``, ``tool_call_formats``...), fetched from a real runtime.

    Use it in a contract fixture so the suite checks what the registration hook hands the
    host, not an object built by hand::

        @pytest.fixture
        def stream_repairer(self, tmp_path):
            return registered_component(my_plugin, "stream_repairers", "mine", tmp_path)
    """
    if slot not in _SLOTS:
        raise ValueError(f"unknown component slot {slot!r}; expected one of {', '.join(_SLOTS)}")
    with contract_runtime(plugin, state_dir) as runtime:
        registry = getattr(runtime.components, slot)
        registration = next((r for r in registry.registrations() if r.name == name), None)
        faults = [f"{f.plugin}.{f.hook}: {f.error}" for f in runtime.hooks.faults]
    assert registration is not None, (
        f"no {slot[:-1].replace('_', ' ')} named {name!r} was registered"
        + (f"; registration faults: {faults}" if faults else "")
    )
    return registration.component


async def open_stream(
    stream_fn: StreamFn, model: Model, context: Context, options: StreamOptions
) -> AssistantMessageEventStream:
    """``stream_fn(model, context, options)``, awaited when the provider is async."""
    stream = stream_fn(model, context, options)
    if isawaitable(stream):
        return await stream
    return stream
