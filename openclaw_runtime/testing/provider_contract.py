"""``ProviderContract``: what a registered provider's ``stream_fn`` promises the runner.

The runner reads a provider's stream without a ``try``: the stream starts with ``start``,
ends with exactly one ``done`` or ``error``, and the final message holds exactly what the
deltas said. Failures (a refused connection, an abort) are ``error`` events, never
exceptions, and an aborted call ends ``aborted``. The context is the runner's, so a provider
must not modify it; the key is a secret, so it appears in no event. The suite fetches the
``stream_fn`` from a real runtime's registry by api.
"""

from __future__ import annotations

import copy
import socket
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from ..abort import AbortController
from ..llm import Context, Model, StreamOptions
from ..messages import TextContent, UserMessage
from ._contract_support import contract_runtime, open_stream

__all__ = ["ProviderContract"]

SECRET_KEY = "sk-contract-secret-4c1d9e"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _context() -> Context:
    return Context("You are terse.", [UserMessage(content="Say hello.", timestamp=1_000)], [])


class ProviderContract:
    """Inherit and provide ``provider_plugin`` (the plugin registering the provider;
    ``None`` for a built-in one) and ``provider_model`` (a ``Model`` of that api whose
    ``baseUrl`` answers one streamed request with some text, e.g. a local server).

    Set ``uses_network = False`` for a provider that makes no HTTP request (the
    refused-connection check is then skipped with a reason).
    """

    uses_network: ClassVar[bool] = True

    async def _collect(
        self, plugin: Any, model: Model, state_dir: Path, options: StreamOptions
    ) -> tuple[list[Any], Any, Context, Context]:
        context = _context()
        before = copy.deepcopy(context)
        with contract_runtime(plugin, state_dir) as runtime:
            stream_fn = runtime.components.providers.get(model.api)
            events: list[Any] = []
            try:
                with anyio.fail_after(30):
                    stream = await open_stream(stream_fn, model, context, options)
                    async for event in stream:
                        events.append(event)
                    final = await stream.result()
            except Exception as exc:
                raise AssertionError(
                    f"the provider raised {type(exc).__name__} instead of ending its stream "
                    "with an error event"
                ) from exc
            await runtime.aclose()
        return events, final, context, before

    @staticmethod
    def _assert_well_formed(events: list[Any]) -> None:
        kinds = [event.type for event in events]
        assert kinds and kinds[0] == "start", f"the stream must open with start: {kinds}"
        terminal = [k for k in kinds if k in ("done", "error")]
        assert terminal == [kinds[-1]], f"exactly one terminal event, last: {kinds}"

    @pytest.mark.anyio
    async def test_streams_an_answer(
        self, provider_plugin: Any, provider_model: Model, tmp_path: Path
    ) -> None:
        options = StreamOptions(api_key=SECRET_KEY)
        events, final, context, before = await self._collect(
            provider_plugin, provider_model, tmp_path, options
        )
        self._assert_well_formed(events)
        assert events[-1].type == "done", f"the answer failed: {final.error_message!r}"
        assert events[-1].message is final or events[-1].message == final
        streamed = "".join(e.delta for e in events if e.type == "text_delta")
        said = "".join(b.text for b in final.content if isinstance(b, TextContent))
        assert streamed and streamed == said, (
            f"the deltas say {streamed!r}, the final message says {said!r}"
        )
        assert (final.api, final.provider, final.model) == (
            provider_model.api,
            provider_model.provider,
            provider_model.id,
        )
        assert context == before, "the provider modified the context it was given"

    @pytest.mark.anyio
    async def test_a_refused_connection_is_an_error_event(
        self, provider_plugin: Any, provider_model: Model, tmp_path: Path
    ) -> None:
        if not self.uses_network:
            pytest.skip("the provider makes no HTTP request (uses_network = False)")
        model = provider_model.model_copy(
            update={"base_url": f"http://127.0.0.1:{_closed_port()}/v1"}
        )
        options = StreamOptions(api_key=SECRET_KEY, connect_timeout=5, read_timeout=5)
        events, final, _, _ = await self._collect(provider_plugin, model, tmp_path, options)
        self._assert_well_formed(events)
        assert events[-1].type == "error", [e.type for e in events]
        assert final.stop_reason == "error" and final.error_message, final
        assert all(SECRET_KEY not in repr(event) for event in events), "the key leaked"
        assert SECRET_KEY not in final.to_json(), "the key leaked into the final message"

    @pytest.mark.anyio
    async def test_an_aborted_call_ends_aborted(
        self, provider_plugin: Any, provider_model: Model, tmp_path: Path
    ) -> None:
        controller = AbortController()
        controller.abort()
        options = StreamOptions(api_key=SECRET_KEY, signal=controller.signal)
        events, final, _, _ = await self._collect(
            provider_plugin, provider_model, tmp_path, options
        )
        self._assert_well_formed(events)
        assert events[-1].type == "error" and final.stop_reason == "aborted", (
            f"an aborted call ended {final.stop_reason!r}"
        )
