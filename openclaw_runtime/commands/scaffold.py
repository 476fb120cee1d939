"""``openclaw-runtime plugins new``: a working plugin distribution, written from templates.

A third-party author's first hour is mostly packaging: the entry point, the tests that prove
it, a tox matrix. This renders all of it (pure: name and kind in, file texts out) from
``_scaffold_templates`` and writes it, refusing to overwrite anything.
"""

from __future__ import annotations

import re
from pathlib import Path

from .._exceptions import ConfigurationError
from .._version import __version__
from ._scaffold_templates import COMMON_FILES, KINDS, RUNTIME_FIXTURE

__all__ = [
    "PLUGIN_KINDS",
    "PluginNames",
    "core_requirement",
    "plugin_names",
    "render_plugin",
    "write_plugin",
]

#: ``--kind`` values, in the order ``--help`` lists them.
PLUGIN_KINDS = tuple(KINDS)
_NAME = re.compile(r"[a-z][a-z0-9]*(?:[_-][a-z0-9]+)*")


class PluginNames:
    """Every spelling of one plugin name: entry point, package, distribution, class stem."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.fn = name.replace("-", "_")
        self.package = f"openclaw_runtime_{self.fn}"
        self.distribution = f"openclaw-runtime-{name.replace('_', '-')}"
        parts = re.split(r"[-_]", name)
        self.class_stem = "".join(part.capitalize() for part in parts)
        self.title = " ".join(part.capitalize() for part in parts)


def plugin_names(name: str) -> PluginNames:
    """The spellings of ``name``; a name that is not lower-case letters, digits and single
    ``-``/``_`` separators (starting with a letter) is a ``ConfigurationError`` saying so."""
    if _NAME.fullmatch(name) is None:
        raise ConfigurationError(
            f"plugin name {name!r} is not valid: use lower-case letters and digits, "
            "separated by single '-' or '_', starting with a letter (e.g. 'acme' or 'my_engine')"
        )
    if name in {"openclaw_runtime", "openclaw-runtime", "builtin", "core"}:
        raise ConfigurationError(f"plugin name {name!r} is reserved; pick another")
    return PluginNames(name)


def core_requirement(version: str = __version__) -> str:
    """The core versions a new plugin supports: this minor series onwards (``>=0.1``)."""
    major, minor = [*version.split("."), "0"][:2]
    return f"openclaw-runtime>={major}.{minor}"


def _fill(text: str, values: dict[str, str]) -> str:
    for token, value in values.items():
        text = text.replace(token, value)
    return text


def render_plugin(name: str, kind: str) -> dict[str, str]:
    """Relative path → text of every file of a new ``kind`` plugin called ``name``."""
    if kind not in KINDS:
        raise ConfigurationError(f"unknown plugin kind {kind!r}; kinds: {', '.join(KINDS)}")
    names = plugin_names(name)
    template = KINDS[kind]
    # the structural tokens first (they contain name tokens), then the names, longest first
    structure = {
        "__RUNTIME_FIXTURE__": RUNTIME_FIXTURE,
        "__HOOKS__": template.hooks,
        "__IMPORTS__": template.imports,
        "__SUMMARY__": template.summary,
        "__CONFIG__": template.config,
    }
    values = {
        "__CORE_SPEC__": core_requirement(),
        "__UPPER__": names.fn.upper(),
        "__CLASS__": names.class_stem,
        "__TITLE__": names.title,
        "__DIST__": names.distribution,
        "__KIND__": kind,
        "__PKG__": names.package,
        "__NAME__": names.name,
        "__FN__": names.fn,
    }
    files = {
        **COMMON_FILES,
        "__PKG__/_component.py": template.component,
        f"tests/test_{names.fn}_installed.py": template.tests,
    }
    return {
        _fill(path, values): _fill(_fill(text, structure), values) for path, text in files.items()
    }


def write_plugin(target: Path, files: dict[str, str]) -> list[Path]:
    """Write ``files`` under ``target`` (created); an existing non-empty ``target`` is a
    ``ConfigurationError`` (nothing is overwritten). Returns the paths written."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ConfigurationError(f"{target} already exists and is not empty; pick another --dir")
    written = []
    for relative, text in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
