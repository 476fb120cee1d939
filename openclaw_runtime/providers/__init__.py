"""Providers: ``StreamFn`` implementations. The kernel never imports this package."""

import typing as _typing

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from .fake import (  # noqa: I001 (packed: a face has at most 100 lines)
        FakeError, FakeProvider, FakeRequest, FakeResponse,
    )
    # fmt: on

#: module -> the public names it provides, each imported on first use (start-up time)
_LAZY = {
    "fake": "FakeError FakeProvider FakeRequest FakeResponse",
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names.split()}


def __getattr__(name: str) -> _typing.Any:
    """Import the module behind a public name on first use, then keep the name here."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module  # lazy: start-up time

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "FakeError", "FakeProvider", "FakeRequest", "FakeResponse",
]  # fmt: skip
