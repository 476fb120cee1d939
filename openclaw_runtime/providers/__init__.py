"""Providers: ``StreamFn`` implementations. The kernel never imports this package."""

from __future__ import annotations

from .fake import FakeError, FakeProvider, FakeRequest, FakeResponse

__all__ = ["FakeError", "FakeProvider", "FakeRequest", "FakeResponse"]
