"""Built-in plugin ``builtin.providers``: the OpenAI-compatible Chat Completions provider."""

from __future__ import annotations
