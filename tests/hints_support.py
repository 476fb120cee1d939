"""Walk one public face and resolve every annotation on it, as introspecting frameworks do.

Run as ``python -c "from tests.hints_support import main; main()" <module>`` in a fresh
interpreter (``tests/test_public_type_hints.py``): it imports the face and nothing else first,
then calls ``typing.get_type_hints`` on every public class (its own annotations, and every
method, property and ``__init__`` its openclaw_runtime classes define), every public function
(also ``inspect.signature(..., eval_str=True)``) and every public type alias (resolved from a
namespace that holds only the alias, as in a user's module). Prints one JSON object: the
labels checked and the failures (label, exception type, message).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import sys
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

PACKAGE = "openclaw_runtime"


def ours(obj: Any) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] == PACKAGE


def public_names(face: types.ModuleType) -> list[str]:
    names = getattr(face, "__all__", None)
    if names is None:
        names = [n for n in vars(face) if not n.startswith("_")]
    return [n for n in names if n != "__version__"]


def functions_of(member: Any) -> Iterator[tuple[str, Callable[..., Any]]]:
    """The plain functions behind a class attribute (property accessors, wrapped methods)."""
    if isinstance(member, classmethod | staticmethod):
        member = member.__func__
    if isinstance(member, property):
        for part, accessor in (("fget", member.fget), ("fset", member.fset)):
            if accessor is not None:
                yield f".{part}", accessor
        return
    if isinstance(member, functools.cached_property):
        member = member.func
    if inspect.isfunction(member):
        yield "", member


def methods(cls: type) -> Iterator[tuple[str, Callable[..., Any]]]:
    """Every function the openclaw_runtime classes of ``cls``'s MRO define (private included:
    a framework may wrap any of them), dunders other than ``__init__``/``__call__`` aside."""
    seen: set[str] = set()
    for klass in cls.__mro__:
        if not ours(klass):
            continue
        for name, member in vars(klass).items():
            dunder = name.startswith("__") and name.endswith("__")
            if name in seen or (dunder and name not in ("__init__", "__call__")):
                continue
            seen.add(name)
            for suffix, function in functions_of(member):
                yield f"{name}{suffix}", function


def alias_names(value: Any) -> bool:
    """Whether ``value`` is a type alias: a typing form, or a value some module of the
    package annotates ``TypeAlias`` (a string alias included: it is the case that breaks)."""
    if typing.get_origin(value) is not None:
        return True
    for module in list(sys.modules.values()):
        if not (getattr(module, "__name__", "") or "").startswith(PACKAGE):
            continue
        annotations = getattr(module, "__annotations__", {})
        for name, annotation in annotations.items():
            declared = annotation in ("TypeAlias", "typing.TypeAlias", typing.TypeAlias)
            if declared and getattr(module, name, None) is value:
                return True
    return False


def resolve_alias(name: str, value: Any) -> None:
    """Annotate a function with the alias in a namespace that holds only the alias (what a
    user's module does after ``from ... import Alias``) and resolve it."""
    namespace: dict[str, Any] = {name: value}
    function = types.FunctionType((lambda x: None).__code__, namespace)
    function.__annotations__ = {"x": name}
    typing.get_type_hints(function)


def targets(face_name: str) -> Iterator[tuple[str, Callable[[], object]]]:
    face = importlib.import_module(face_name)
    for name in public_names(face):
        value = getattr(face, name)
        label = f"{face_name}.{name}"
        if inspect.isclass(value):
            if not ours(value):
                continue
            yield label, functools.partial(typing.get_type_hints, value)
            for method_name, function in methods(value):
                yield f"{label}.{method_name}", functools.partial(resolve_function, function)
        elif inspect.isfunction(value):
            yield label, functools.partial(resolve_function, value)
        elif not inspect.ismodule(value) and alias_names(value):
            yield label, functools.partial(resolve_alias, name, value)


def resolve_function(function: Callable[..., Any]) -> None:
    typing.get_type_hints(function)
    inspect.signature(function, eval_str=True)


def walk(face_name: str) -> dict[str, Any]:
    checked: list[str] = []
    failures: list[tuple[str, str, str]] = []
    for label, check in targets(face_name):
        checked.append(label)
        try:
            check()
        except Exception as exc:  # every failure is reported, whatever its kind
            failures.append((label, type(exc).__name__, str(exc)))
    return {"checked": checked, "failures": failures}


def main() -> None:
    print(json.dumps(walk(sys.argv[1])))
