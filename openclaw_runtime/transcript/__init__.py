"""Transcripts: policy, storage, sanitizing and replay validation."""

from __future__ import annotations

from .policy import TranscriptPolicy

__all__ = ["TranscriptPolicy"]
