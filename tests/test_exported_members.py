"""``openclaw_runtime.__all__`` is sorted and names exactly the public API (httpx's test)."""

from __future__ import annotations

import inspect

import openclaw_runtime


def test_all_is_sorted():
    names = [n for n in openclaw_runtime.__all__ if n != "__version__"]
    assert names == sorted(names, key=str)


def test_all_is_complete():
    for name in openclaw_runtime.__all__:  # the face loads names on first use: load them all
        getattr(openclaw_runtime, name)
    exported = {
        name
        for name, value in vars(openclaw_runtime).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert exported == set(openclaw_runtime.__all__) - {"__version__"}


def test_errors_report_the_package_as_their_home():
    assert openclaw_runtime.PluginLoadError.__module__ == "openclaw_runtime"
    assert issubclass(openclaw_runtime.UnknownContextEngineError, LookupError)
