"""Providers: ``StreamFn`` implementations. The kernel never imports this package."""

import typing as _typing

from .._lazy_face import lazy_getattr as _lazy_getattr

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
__getattr__ = _lazy_getattr(__name__, _LAZY)


__all__ = [
    "FakeError", "FakeProvider", "FakeRequest", "FakeResponse",
]  # fmt: skip
