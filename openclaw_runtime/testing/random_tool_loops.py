"""Random conversations that grow request by request: for testing a provider's request memo
(``providers.request_memo``) against converting everything.

``RandomToolLoop(seed, model)`` starts with a prompt; each ``step()`` does what a session's
requests do to the history, mostly adding tool groups, sometimes the odd thing:

* tool groups of one or two calls whose ids are the provider's own (``native`` + a
  counter), an earlier one again (maybe taken), ``call_N|fc_N`` (an OpenAI Responses id
  every id rule rewrites), what the rules make of it (``callNfcN``, ``call_N_fc_N``: valid,
  and maybe taken), or one with a stray space; with ``per_turn``, mostly ids numbered
  afresh in every answer, as some servers send them (``call_0``, Kimi's
  ``functions.read:0``);
* thinking (signed, unsigned), text beside the calls, another model's turn, a failed turn,
  a missing, stray or late result, an error result, an image in a result;
* a final answer and a prompt (sometimes blank);
* the same request again (a retry);
* the last few messages handed back as copies (what a sanitizer does to a group, what a
  session does to the previous turn at the next turn's start), or the history cut.

A memo must give, at every request, what converting ``messages`` from scratch gives;
``count_conversions(monkeypatch, module)`` records how many messages each call of the
module's conversion got (what a memo saves shows there).
"""

from __future__ import annotations

import random
from typing import Any, Protocol

from ..llm import Model
from ..messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = ["PNG", "RandomToolLoop", "count_conversions"]

#: A tiny image payload (images are carried as base64 text)
PNG = "iVBORw0KGgo="


class _Patcher(Protocol):
    def setattr(self, target: Any, name: str, value: Any) -> None: ...


def count_conversions(monkeypatch: _Patcher, module: Any, name: str = "_converted") -> list[int]:
    """Patch ``module.name`` (a conversion taking the messages first) to record the number of
    messages of each call, appended as they run; the list it returns."""
    sizes: list[int] = []
    real = getattr(module, name)

    def counting(messages: Any, *args: Any, **kwargs: Any) -> Any:
        sizes.append(len(messages))
        return real(messages, *args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return sizes


class RandomToolLoop:
    """A random conversation with ``model``, grown a step at a time (module docstring)."""

    def __init__(
        self, seed: int, model: Model, *, native: str = "toolu_", per_turn: bool = False
    ) -> None:
        self.rng = random.Random(seed)
        self.model = model
        self.native = native
        self.per_turn = per_turn
        self.messages: list[Any] = [UserMessage(content="start", timestamp=1)]
        self.calls = 0

    def call(self, position: int = 0) -> ToolCall:
        """A call with an id of one of the styles above (``position``: its place in the
        answer, for ids numbered per answer)."""
        self.calls += 1
        if self.per_turn:
            numbered = self.rng.random()
            if numbered < 0.45:
                return ToolCall(id=f"call_{position}", name="read", arguments={"n": self.calls})
            if numbered < 0.9:
                call_id = f"functions.read:{position}"
                return ToolCall(id=call_id, name="read", arguments={"n": self.calls})
        style = self.rng.random()
        near = self.rng.randint(1, 4)
        if style < 0.6:
            call_id = f"{self.native}{self.calls:04d}"
        elif style < 0.7:
            call_id = f"{self.native}{self.rng.randint(1, max(1, self.calls)):04d}"
        elif style < 0.8:
            call_id = f"call_{near}|fc_{near}"
        elif style < 0.85:
            call_id = f"call{near}fc{near}"
        elif style < 0.9:
            call_id = f"call_{near}_fc_{near}"
        else:
            call_id = f" {self.native}{self.calls:04d}"
        return ToolCall(id=call_id, name="read", arguments={"path": f"{self.calls}.txt"})

    def assistant(self, blocks: list[Any], stop: str = "toolUse") -> AssistantMessage:
        """A turn of the model, or now and then of another one."""
        if self.rng.random() < 0.1:
            api, provider, model_id = "other-api", "other", "other-model"
        else:
            api, provider, model_id = self.model.api, self.model.provider, self.model.id
        return AssistantMessage(
            content=blocks,
            api=api,
            provider=provider,
            model=model_id,
            stop_reason=stop,  # type: ignore[arg-type]
        )

    def group(self) -> None:
        """An assistant turn with calls, then (most of) its results."""
        rng = self.rng
        calls = [self.call(position) for position in range(rng.choice([1, 1, 1, 2]))]
        blocks: list[Any] = []
        if rng.random() < 0.5:
            signature = rng.choice(["c2ln", "c2ln", None])
            blocks.append(ThinkingContent(thinking="plan", thinking_signature=signature))
        if rng.random() < 0.2:
            blocks.append(TextContent(text="reading"))
        stop = "error" if rng.random() < 0.03 else "toolUse"
        self.messages.append(self.assistant([*blocks, *calls], stop))
        for call in calls:
            if rng.random() < 0.04:
                continue  # a result that never came
            content: list[Any] = [TextContent(text=f"out {call.id}")]
            if rng.random() < 0.05:
                content.append(ImageContent(data=PNG, mime_type="image/png"))
            result_id = call.id if rng.random() > 0.03 else f"{self.native}stray"
            self.messages.append(
                ToolResultMessage(
                    tool_call_id=result_id,
                    tool_name="read",
                    content=content,
                    is_error=rng.random() < 0.1,
                )
            )

    def late_result(self) -> None:
        """A result for a call of the last assistant turn arriving after the others (late,
        or twice)."""
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage):
                calls = [b for b in message.content if isinstance(b, ToolCall)]
                if calls:
                    call = self.rng.choice(calls)
                    late = ToolResultMessage(
                        tool_call_id=call.id, tool_name="read", content=[TextContent(text="late")]
                    )
                    self.messages.append(late)
                return

    def step(self) -> None:
        """What one more request does to the history."""
        roll = self.rng.random()
        if roll < 0.05:
            self.late_result()
        elif roll < 0.75:
            for _ in range(self.rng.choice([1, 1, 2])):
                self.group()
        elif roll < 0.84:
            self.messages.append(self.assistant([TextContent(text="so")], "stop"))
            prompt = f"next {len(self.messages)}" if self.rng.random() < 0.8 else "  "
            self.messages.append(UserMessage(content=prompt))
        elif roll < 0.88:
            pass  # the same request again (a retry)
        elif roll < 0.95 and len(self.messages) > 1:
            back = self.rng.randint(1, min(self.rng.choice([3, 12]), len(self.messages) - 1))
            copies = [m.model_copy() for m in self.messages[-back:]]
            self.messages[-back:] = copies
        else:
            self.messages = self.messages[: self.rng.randint(1, len(self.messages))]
