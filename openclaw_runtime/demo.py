"""``openclaw-runtime demo``: the kernel end to end, offline, on a scripted model.

Until the orchestrator lands this is the honest "main job": a real ``Runtime`` with a plugin
that registers a scripted provider, a real ``Agent`` with an async tool, parallel tool
execution, a steering message injected while the tools run, and a streamed final answer that
is computed from the tool results the model was actually sent.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from rich.console import Console

from ._markers import hookimpl
from ._runtime import Runtime
from .agent import tool
from .events import Event
from .llm import Model
from .messages import TextContent, ToolResultMessage, UserMessage
from .providers.fake import FakeProvider, FakeRequest, FakeResponse, text, thinking, tool_call

__all__ = ["run_demo"]

_WEATHER = {"Lisbon": (21, "sunny"), "Paris": (14, "overcast"), "Oslo": (3, "snowing")}
DEMO_MODEL = Model(id="weather-bot", api="scripted", provider="scripted", context_window=32_000)
STEER_TEXT = "Keep it to one sentence per city, please."


@tool
async def get_weather(city: str) -> dict[str, Any]:
    """Current weather for a city."""
    await anyio.sleep(0.05)  # a little I/O, so the steering message arrives mid-batch
    temperature, sky = _WEATHER.get(city, (18, "unknown"))
    return {"city": city, "temp_c": temperature, "sky": sky}


def _answer(request: FakeRequest) -> FakeResponse:
    """The scripted model's second turn: read the tool results it was sent and answer."""
    results = [m for m in request.context.messages if isinstance(m, ToolResultMessage)]
    steered = any(
        isinstance(m, UserMessage) and STEER_TEXT in m.text() for m in request.context.messages
    )
    lines = []
    for result in results:
        data = json.loads("".join(b.text for b in result.content if isinstance(b, TextContent)))
        lines.append(f"{data['city']} is {data['sky']} at {data['temp_c']}°C.")
    answer = " ".join(lines) if steered else "Here is what I found: " + " ".join(lines)
    return FakeResponse([text(answer)])


class _DemoPlugin:
    """Registers the scripted provider and model the way any provider plugin would."""

    def __init__(self, provider: FakeProvider) -> None:
        self.provider = provider

    @hookimpl
    def register_providers(self, register: Any) -> None:
        register("scripted", self.provider.stream_fn)

    @hookimpl
    def register_models(self, register: Any) -> None:
        register(DEMO_MODEL, aliases=("demo",))


async def run_demo(as_json: bool = False, console: Console | None = None) -> list[Any]:
    """Run the demo; returns the transcript. Prints a timeline (or JSON lines)."""
    console = console or Console(highlight=False)
    provider = FakeProvider(api="scripted", provider="scripted")
    provider.enqueue(
        FakeResponse(
            [
                thinking("Two cities: call get_weather for both at once."),
                text("Checking Lisbon and Paris."),
                tool_call("get_weather", {"city": "Lisbon"}),
                tool_call("get_weather", {"city": "Paris"}),
            ]
        ),
        _answer,
    )
    runtime = Runtime(plugins=[("demo", _DemoPlugin(provider))], load_entrypoints=False)
    agent = runtime.create_agent(
        model="demo", tools=[get_weather], system_prompt="You are a weather assistant."
    )
    steered = False
    async with agent.stream("What's the weather in Lisbon and Paris?") as events:
        async for event in events:
            if event.type == "tool_execution_start" and not steered:
                agent.steer(STEER_TEXT)  # lands before the next model call
                steered = True
            if as_json:
                console.print_json(json.dumps(event.to_dict(), ensure_ascii=False))
            else:
                _render(console, event)
    await runtime.aclose()
    if not as_json:
        console.print(
            f"\n[bold]done[/bold]: {len(provider.history)} model calls, "
            f"{len(agent.state.messages)} transcript messages"
        )
    return agent.state.messages


def _render(console: Console, event: Event) -> None:
    kind = event.type
    if kind == "message_update":
        inner = event.assistant_message_event  # type: ignore[attr-defined]
        if inner.type == "text_delta":
            console.print(inner.delta, end="")
        elif inner.type == "thinking_delta":
            console.print(f"[dim italic]{inner.delta}[/]", end="")
        elif inner.type == "thinking_end":
            console.print()
        return
    if kind == "message_start":
        message = event.message  # type: ignore[attr-defined]
        role = message.role
        if role == "user":
            console.print(f"[bold cyan]user ▸[/] {message.text()}")
        elif role == "assistant":
            console.print("[bold green]assistant ▸[/] ", end="")
        return
    if kind == "message_end":
        message = event.message  # type: ignore[attr-defined]
        if message.role == "assistant":
            console.print(f"  [dim]({message.stop_reason})[/]")
        return
    if kind == "tool_execution_start":
        args = json.dumps(event.args)  # type: ignore[attr-defined]
        console.print(f"[yellow]tool ▸[/] {event.tool_name} {args}")  # type: ignore[attr-defined]
        return
    if kind == "tool_execution_end":
        result = event.result.text()  # type: ignore[attr-defined]
        console.print(f"[yellow]tool ◂[/] {event.tool_name} → {result}")  # type: ignore[attr-defined]
        return
    console.print(f"[dim]· {kind}[/]")
