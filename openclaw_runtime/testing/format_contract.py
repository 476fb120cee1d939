"""``ToolCallFormatContract``: what a registered tool-call format promises the repairer.

The plain-text repairer tries every registered format at every offset of a streamed answer,
holding text back while some format says ``prefix``. A format that raises, claims text it
cannot parse, ignores the allow-list or payload cap, or reverses an ``invalid`` verdict
either leaks half a call to the user or swallows text; the suite checks each promise of
``openclaw_runtime.repair.ToolCallFormat`` on the format fetched from a real runtime, then
streams each sample through that runtime's repairers to see it become a structured call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from ..llm import Context, StreamOptions, Tool
from ..messages import TextContent, ToolCall, UserMessage
from ..providers.fake import FakeProvider, text
from ..repair.blocks import PlainTextToolCallParseOptions
from ..repair.formats import FormatScan, FormatScanOptions, ToolCallFormat
from ._contract_support import contract_runtime, open_stream, registered_component
from .fake_runtime import FakeProviderPlugin
from .fakes import fake_model

__all__ = ["ToolCallFormatContract"]

#: Text no tool-call syntax should claim, with the odd characters parsers trip on.
JUNK: tuple[str, ...] = (
    "",
    "plain prose, nothing to see",
    "{",
    "}{][<>",
    '{"name": ',
    "[/]\n",
    "<function=>",
    "\x00\ufffd\U0001f600",
    "[" * 200,
    "{" * 200,
)


class ToolCallFormatContract:
    """Inherit and provide a ``tool_call_format_plugin`` fixture returning the plugin that
    registers the format (``None`` for a built-in one).

    Set ``format_name`` to the registered name and ``samples`` to
    ``(text, tool_name, arguments)`` triples: complete calls written in the format, each
    exactly one call spanning the whole text.
    """

    format_name: ClassVar[str] = ""
    samples: ClassVar[tuple[tuple[str, str, dict[str, Any]], ...]] = ()

    def _format(self, plugin: Any, state_dir: Path) -> Any:
        assert self.format_name, "set `format_name` to the name your plugin registers"
        assert self.samples, "set `samples` to calls written in your format"
        return registered_component(plugin, "tool_call_formats", self.format_name, state_dir)

    def test_is_a_tool_call_format(self, tool_call_format_plugin: Any, tmp_path: Path) -> None:
        fmt = self._format(tool_call_format_plugin, tmp_path)
        assert isinstance(fmt, ToolCallFormat), f"{fmt!r} has no parse_at/scan_at"

    def test_parses_its_samples(self, tool_call_format_plugin: Any, tmp_path: Path) -> None:
        fmt = self._format(tool_call_format_plugin, tmp_path)
        for sample, name, arguments in self.samples:
            for lead in ("", "Sure. "):
                blocks = fmt.parse_at(
                    lead + sample, len(lead), PlainTextToolCallParseOptions(), None
                )
                assert blocks, f"parse_at found no call in {lead + sample!r}"
                assert [(b.name, b.arguments) for b in blocks] == [(name, arguments)]
                (block,) = blocks
                assert (block.start, block.end) == (len(lead), len(lead + sample)), block
                assert block.raw == sample, block

    def test_honours_the_allow_list_and_the_cap(
        self, tool_call_format_plugin: Any, tmp_path: Path
    ) -> None:
        fmt = self._format(tool_call_format_plugin, tmp_path)
        for sample, name, _arguments in self.samples:
            others = PlainTextToolCallParseOptions(allowed_tool_names=frozenset({name + "_x"}))
            assert not fmt.parse_at(sample, 0, others, None), (
                f"{sample!r} parsed although {name!r} is not an allowed tool"
            )
            tiny = PlainTextToolCallParseOptions(max_payload_bytes=0)
            assert not fmt.parse_at(sample, 0, tiny, None), (
                f"{sample!r} parsed although its payload is over the cap"
            )

    def test_never_raises_on_junk(self, tool_call_format_plugin: Any, tmp_path: Path) -> None:
        fmt = self._format(tool_call_format_plugin, tmp_path)
        texts = list(JUNK) + [s[: len(s) // 2] for s, _, _ in self.samples]
        for junk in texts:
            for start in range(len(junk) + 1):
                fmt.parse_at(junk, start, PlainTextToolCallParseOptions(), None)
                scan = fmt.scan_at(junk, start, FormatScanOptions())
                assert isinstance(scan, FormatScan), f"scan_at returned {scan!r}"

    def test_scan_agrees_with_parse(self, tool_call_format_plugin: Any, tmp_path: Path) -> None:
        fmt = self._format(tool_call_format_plugin, tmp_path)
        for sample, _name, _arguments in self.samples:
            scan = fmt.scan_at(sample, 0, FormatScanOptions())
            assert (scan.kind, scan.end) == ("complete", len(sample)), (
                f"scan_at says {scan!r} for the complete call {sample!r}"
            )
            for cut in range(1, len(sample)):
                partial = fmt.scan_at(sample[:cut], 0, FormatScanOptions())
                assert partial.kind != "invalid", (
                    f"scan_at says invalid for {sample[:cut]!r}, a prefix of a valid call"
                )

    def test_invalid_is_final(self, tool_call_format_plugin: Any, tmp_path: Path) -> None:
        fmt = self._format(tool_call_format_plugin, tmp_path)
        for sample, _name, _arguments in self.samples:
            for junk in ("nope " + sample, "}" + sample):
                verdicts = [
                    fmt.scan_at(junk[:cut], 0, FormatScanOptions()).kind
                    for cut in range(1, len(junk) + 1)
                ]
                if "invalid" in verdicts:
                    first = verdicts.index("invalid")
                    assert set(verdicts[first:]) == {"invalid"}, (
                        f"scan_at of {junk!r} went from invalid back to {verdicts[first:]!r}"
                    )

    @pytest.mark.anyio
    async def test_the_runtime_promotes_its_samples(
        self, tool_call_format_plugin: Any, tmp_path: Path
    ) -> None:
        for index, (sample, name, arguments) in enumerate(self.samples):
            provider = FakeProvider()
            provider.reply(text(sample, chunk=5))
            extra = [("fake-provider", FakeProviderPlugin(provider))]
            state_dir = tmp_path / str(index)
            with contract_runtime(tool_call_format_plugin, state_dir, extra=extra) as runtime:
                model = fake_model()
                tool = Tool(name=name, description="contract tool", parameters={"type": "object"})
                context = Context("", [UserMessage(content="go")], [tool])
                stream_fn = runtime.stream_fn_for(model)
                stream = await open_stream(stream_fn, model, context, StreamOptions())
                with anyio.fail_after(10):
                    message = await stream.result()
            calls = [(b.name, b.arguments) for b in message.content if isinstance(b, ToolCall)]
            assert calls == [(name, arguments)], (
                f"the runtime's repairers did not turn {sample!r} into a tool call "
                f"(final content: {message.content!r})"
            )
            assert not [b for b in message.content if isinstance(b, TextContent) and b.text]
