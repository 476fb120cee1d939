"""The one ``__getattr__`` of every package face that re-exports lazily (start-up time).

A face lists ``module -> its public names`` in ``_LAZY``, imports this function under a
private name and sets ``__getattr__ = _lazy_getattr(__name__, _LAZY)``: a name is imported
from its module on first use and then kept in the face's namespace, so later look-ups are
plain attribute reads. Type checkers see the same names through the face's
``TYPE_CHECKING`` imports.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of face ``package`` for ``table`` (module -> names, space
    separated); an unlisted name is an ``AttributeError`` naming it, as for any module."""
    where = {name: module for module, names in table.items() for name in names.split()}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{module}", package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
