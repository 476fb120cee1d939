"""``[agent.reply]``: the config of the streamed reply (block replies, tags, verbose).

Kept with the policy it configures; ``config.AgentDefaults`` holds one field of this type.

``block_streaming`` turns block replies on for every run (a run's ``block_streaming`` /
``on_block_reply`` overrides it); ``block_min_chars``/``block_max_chars``/``block_break``/
``block_flush_on_paragraph`` are the chunker's ``BlockChunking``; ``enforce_final_tag`` keeps
only ``<final>…</final>`` text as the reply; ``verbose`` (``off``/``on``/``full``) inlines
tool summaries (``on``) and their results (``full``) in the payloads.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .chunker import DEFAULT_BLOCK_MAX_CHARS, DEFAULT_BLOCK_MIN_CHARS, BlockChunking

__all__ = ["ReplySettings", "VerboseMode"]

VerboseMode = Literal["off", "on", "full"]


class ReplySettings(BaseModel):
    """``[agent.reply]`` (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    block_streaming: bool = False
    block_min_chars: int = Field(default=DEFAULT_BLOCK_MIN_CHARS, ge=1, strict=True)
    block_max_chars: int = Field(default=DEFAULT_BLOCK_MAX_CHARS, ge=1, strict=True)
    block_break: Literal["paragraph", "newline", "sentence"] = "paragraph"
    block_flush_on_paragraph: bool = True
    enforce_final_tag: bool = False
    verbose: VerboseMode = "off"

    def chunking(self) -> BlockChunking:
        """The chunker settings these stand for."""
        return BlockChunking(
            min_chars=self.block_min_chars,
            max_chars=self.block_max_chars,
            break_preference=self.block_break,
            flush_on_paragraph=self.block_flush_on_paragraph,
        )
