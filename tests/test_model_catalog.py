"""The built-in model catalog (issue 14 §5) and forward-compatible resolution (seed 004 stage 2).

Tables for the pure parts (the family of an id, the template a newer id resolves to, the
closest ids of an unknown name, the missing-plugin line), then the catalog through a real
``Runtime`` (which plugin registered what, ``[[models]]`` overriding a row), a forward-compatible
model used by a run over local HTTP (the request carries the requested id, the events name the
template), and the CLI in subprocesses: ``models``, an unknown model's hint, and an Anthropic
or Gemini model on a core-only install (one line, exit 2, no traceback).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime._exceptions import ComponentNotFoundError, ConfigurationError
from openclaw_runtime.llm import Model
from openclaw_runtime.providers.catalog import (
    CATALOG_PROVIDERS,
    catalog_models,
    catalog_provider,
)
from openclaw_runtime.providers.forward_compat import model_family, resolve_forward_compat_model
from openclaw_runtime.providers.model_hints import (
    MissingProviderPluginError,
    UnknownModelError,
    closest_model_names,
    missing_provider_plugin,
)
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply

CATALOG = catalog_models()


# --------------------------------------------------------------------------- the data


def test_catalog_rows_are_complete_and_unique() -> None:
    refs = [m.ref for m in CATALOG]
    assert len(refs) == len(set(refs))
    assert {m.provider for m in CATALOG} == set(CATALOG_PROVIDERS)
    for model in CATALOG:
        spec = CATALOG_PROVIDERS[model.provider]
        assert model.api == spec.api and model.base_url == spec.base_url
        assert 0 < model.max_tokens <= model.context_window
        assert model.cost.output >= model.cost.input > 0
        assert "text" in model.input
    assert {"openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5", "google/gemini-2.5-pro"} <= set(
        refs
    )


@pytest.mark.parametrize(
    ("name", "provider"),
    [
        ("anthropic/claude-sonnet-4", "anthropic"),
        ("claude-sonnet-4", "anthropic"),
        ("gemini-2.5-flash", "google"),
        ("google/anything", "google"),
        ("gpt-4o-mini", "openai"),
        ("srv/m1", None),
        ("m1", None),
    ],
)
def test_catalog_provider_of_a_name(name: str, provider: str | None) -> None:
    found = catalog_provider(name)
    assert (found.name if found else None) == provider


# --------------------------------------------------------------------------- forward compat


@pytest.mark.parametrize(
    ("model_id", "family"),
    [
        ("claude-sonnet-4-5", (("claude", "sonnet"), (4, 5))),
        ("claude-sonnet-4-5-20250929", (("claude", "sonnet"), (4, 5))),
        ("gpt-4.1-mini", (("gpt", "mini"), (4, 1))),
        ("gpt-4o-mini", (("gpt", "4o", "mini"), ())),
        ("gemini-2.5-flash-lite", (("gemini", "flash", "lite"), (2, 5))),
        ("o3", (("o3",), ())),
    ],
)
def test_model_family(model_id: str, family: tuple[Any, ...]) -> None:
    assert model_family(model_id) == family


@pytest.mark.parametrize(
    ("name", "template"),
    [
        ("anthropic/claude-sonnet-4-7", "anthropic/claude-sonnet-4-5"),  # newest below
        ("claude-sonnet-4-7", "anthropic/claude-sonnet-4-5"),  # one provider has the family
        ("anthropic/claude-sonnet-4-2", "anthropic/claude-sonnet-4-0"),
        ("anthropic/claude-sonnet-5", "anthropic/claude-sonnet-4-5"),
        ("anthropic/claude-sonnet-3-9", "anthropic/claude-sonnet-4-0"),  # none below: lowest
        ("anthropic/claude-opus-4-6", "anthropic/claude-opus-4-1"),
        ("anthropic/claude-sonnet-4-5-20991231", "anthropic/claude-sonnet-4-5"),
        ("openai/gpt-4.2-mini", "openai/gpt-4.1-mini"),
        ("openai/gpt-5.1", "openai/gpt-5"),
        ("google/gemini-3.0-pro", "google/gemini-2.5-pro"),
        ("google/gemini-2.7-flash-lite", "google/gemini-2.5-flash-lite"),
        ("openai/gpt-4o-mini-2", None),  # family without a versioned member
        ("openai/o5", None),  # no version
        ("openai/claude-sonnet-4-7", None),  # the family belongs to another provider
        ("acme/claude-sonnet-4-7", None),
        ("totally-new-model-1", None),
        ("anthropic/claude-sonnet-4-5", None),  # known: not ours
    ],
)
def test_resolve_forward_compat_model(name: str, template: str | None) -> None:
    match = resolve_forward_compat_model(name, CATALOG)
    assert (match.template if match else None) == template
    if match is not None:
        requested = name.split("/", 1)[-1]
        source = next(m for m in CATALOG if m.ref == template)
        assert match.model.id == requested and match.model.name == requested
        assert match.model.context_window == source.context_window
        assert match.model.cost == source.cost and match.model.api == source.api
        assert template in match.warning() and match.model.ref in match.warning()


def test_forward_compat_refuses_a_family_two_providers_share_without_a_prefix() -> None:
    models = [
        Model(id="fam-1-0", api="x", provider="p1"),
        Model(id="fam-1-0", api="x", provider="p2"),
    ]
    assert resolve_forward_compat_model("fam-1-5", models) is None
    match = resolve_forward_compat_model("p2/fam-1-5", models)
    assert match is not None and match.template == "p2/fam-1-0"


# --------------------------------------------------------------------------- hints


@pytest.mark.parametrize(
    ("name", "first"),
    [
        ("gpt-4o-mni", "openai/gpt-4o-mini"),
        ("openai/gpt4o-mini", "openai/gpt-4o-mini"),
        ("claude-haiku", "anthropic/claude-haiku-4-5"),
        ("gemini-pro", "google/gemini-2.5-pro"),
        ("xyzzy", None),
    ],
)
def test_closest_model_names(name: str, first: str | None) -> None:
    close = closest_model_names(name, [m.ref for m in CATALOG])
    assert (close[0] if close else None) == first
    assert len(close) <= 3


def test_unknown_model_error_says_how_to_declare_it() -> None:
    error = UnknownModelError("gpt-4o-mni", [m.ref for m in CATALOG])
    text = str(error)
    assert text.startswith("unknown model 'gpt-4o-mni'; closest known: openai/gpt-4o-mini")
    assert "--base-url URL --model gpt-4o-mni" in text and "[[models]]" in text
    assert isinstance(error, ComponentNotFoundError) and isinstance(error, LookupError)


@pytest.mark.parametrize(
    ("name", "apis", "status", "expected"),
    [
        ("anthropic/claude-sonnet-4", [], {}, "pip install openclaw-runtime-anthropic"),
        ("claude-sonnet-4", [], {}, "pip install openclaw-runtime-anthropic"),
        ("gemini-2.5-pro", [], {}, "pip install openclaw-runtime-google"),
        ("google/gemini-9", [], {"google": "blocked"}, "installed but disabled"),
        ("anthropic/claude-sonnet-4", ["anthropic-messages"], {}, None),  # plugin loaded
        ("openai/gpt-4o-mini", [], {}, None),  # the core serves OpenAI
        ("srv/m1", [], {}, None),
    ],
)
def test_missing_provider_plugin(
    name: str, apis: list[str], status: dict[str, str], expected: str | None
) -> None:
    error = missing_provider_plugin(name, apis, status)
    if expected is None:
        assert error is None
        return
    assert isinstance(error, MissingProviderPluginError) and isinstance(error, ConfigurationError)
    assert expected in str(error) and "\n" not in str(error)


# --------------------------------------------------------------------------- through a Runtime


def test_runtime_catalog_sources_and_config_override(tmp_path: Path) -> None:
    runtime = Runtime(
        {
            "state_dir": str(tmp_path),
            "models": [
                {
                    "id": "gpt-4o-mini",
                    "api": "openai-completions",
                    "provider": "openai",
                    "contextWindow": 32_000,
                }
            ],
        }
    )
    try:
        assert runtime.resolve_model("openai/gpt-4.1").context_window == 1_047_576
        assert runtime.models.owner("openai/gpt-4.1") == "builtin.core"
        assert runtime.models.owner("anthropic/claude-sonnet-4-5") == "anthropic"
        assert runtime.models.owner("google/gemini-2.5-pro") == "google"
        # the README's names resolve
        assert runtime.resolve_model("anthropic/claude-sonnet-4").ref == (
            "anthropic/claude-sonnet-4-0"
        )
        # [[models]] replaces the catalog row
        overridden = runtime.resolve_model("openai/gpt-4o-mini")
        assert overridden.context_window == 32_000 and runtime.models.owner(overridden.ref) is None
        with pytest.raises(UnknownModelError, match="closest known"):
            runtime.resolve_model("openai/not-a-model")
    finally:
        runtime.close()


def test_runtime_without_the_anthropic_plugin_names_the_distribution(tmp_path: Path) -> None:
    runtime = Runtime({"state_dir": str(tmp_path)}, load_entrypoints=False)
    try:
        with pytest.raises(MissingProviderPluginError, match="pip install openclaw-runtime-"):
            runtime.resolve_model("anthropic/claude-sonnet-4")
        # a [[models]] entry speaking a plugin's API, the plugin not loaded
        model = Model(id="c", api="google-generative-ai", provider="google")
        with pytest.raises(MissingProviderPluginError, match="openclaw-runtime-google"):
            runtime.stream_fn_for(model)
    finally:
        runtime.close()


@pytest.mark.anyio
async def test_forward_compat_model_runs_over_http_and_says_which_definition(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A newer id of a configured family: the request carries the requested id, the run's
    events name the template, and the warning is logged once however often it resolves."""
    with FaultInjectingOpenAIServer(
        models={"fam-1-0": 64_000, "fam-1-2": 64_000}, keys={"key-a": "ok"}
    ) as server:
        server.enqueue(Reply(text="hello from 1.2", model="fam-1-2"))
        config = {
            "state_dir": str(tmp_path),
            "models": [
                {
                    "id": "fam-1-0",
                    "api": "openai-completions",
                    "provider": "srv",
                    "baseUrl": server.base_url,
                    "contextWindow": 50_000,
                    "maxTokens": 777,
                }
            ],
            "agent": {"model": "srv/fam-1-2", "timeout_seconds": 20},
            "auth": {
                "profiles": [
                    {
                        "id": "srv:a",
                        "provider": "srv",
                        "mode": "api_key",
                        "credential": {"value": "key-a"},
                    }
                ]
            },
        }
        runtime = Runtime(config, load_entrypoints=False)
        events: list[Any] = []
        with caplog.at_level("WARNING", logger="openclaw_runtime"):
            result = await runtime.run("hi", on_event=events.append)
            runtime.resolve_model("srv/fam-1-2")
        await runtime.aclose()
        chat = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert result.ok, result.error
    assert result.text == "hello from 1.2"
    assert [r.model for r in chat] == ["fam-1-2"]
    assert chat[0].body["max_tokens"] == 777  # the template's output cap
    forward = [e for e in events if e.type == "model_forward_compat"]
    assert [(e.provider, e.model, e.template) for e in forward] == [
        ("srv", "fam-1-2", "srv/fam-1-0")
    ]
    warnings = [r for r in caplog.records if "is not in the catalog" in r.getMessage()]
    assert len(warnings) == 1 and "srv/fam-1-0" in warnings[0].getMessage()


# --------------------------------------------------------------------------- the CLI


def _cli(
    *args: str, tmp_path: Path, env: dict[str, str] | None = None, pythonpath: str | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "OPENCLAW_RUNTIME_STATE_DIR": str(tmp_path / "state"),
        "OPENCLAW_RUNTIME_CONFIG": str(tmp_path / "none.toml"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        **(env or {}),
    }
    environment.pop("OPENCLAW_RUNTIME_MODEL", None)
    environment.pop("OPENCLAW_RUNTIME_RAISE_ERRORS", None)
    (tmp_path / "none.toml").touch()
    if pythonpath is not None:
        environment["PYTHONPATH"] = pythonpath
    return subprocess.run(
        [sys.executable, "-m", "openclaw_runtime", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )


def test_cli_models_lists_the_catalog_with_sources(tmp_path: Path) -> None:
    done = _cli("models", "--json", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    rows = {row["ref"]: row for row in data["models"]}
    assert rows["openai/gpt-4o-mini"]["source"] == "builtin.core"
    assert rows["openai/gpt-4o-mini"]["context_window"] == 128_000
    assert rows["anthropic/claude-sonnet-4-0"]["source"] == "anthropic"
    assert "anthropic/claude-sonnet-4" in rows["anthropic/claude-sonnet-4-0"]["aliases"]
    assert data["missing_plugins"] == []
    table = _cli("models", "--provider", "google", tmp_path=tmp_path)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["MODEL", "CONTEXT", "MAX"]
    assert all(line.startswith("google/") for line in lines[1:])
    assert any(line.split()[:2] == ["google/gemini-2.5-pro", "1048576"] for line in lines)


def test_cli_unknown_model_gets_a_hint_and_exit_2(tmp_path: Path) -> None:
    done = _cli("run", "--model", "openai/gpt-4o-mni", "hi", tmp_path=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "unknown model 'openai/gpt-4o-mni'; closest known: openai/gpt-4o-mini" in done.stderr
    assert "--base-url" in done.stderr and "[[models]]" in done.stderr


#: Simulates a core-only install: the two provider distributions are hidden from
#: importlib.metadata, so no entry point of theirs is found (the venv keeps them installed).
_HIDE_PLUGINS = """
import importlib.metadata as md

_HIDDEN = ("openclaw_runtime_anthropic", "openclaw_runtime_google")


def entry_points(**params):
    seen, found = set(), []
    for dist in md.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name in seen:
            continue
        seen.add(name)
        found.extend(ep for ep in dist.entry_points if not ep.value.startswith(_HIDDEN))
    eps = md.EntryPoints(found)
    return eps.select(**params) if params else eps


md.entry_points = entry_points
"""


@pytest.mark.parametrize(
    ("model", "distribution"),
    [
        ("anthropic/claude-sonnet-4", "openclaw-runtime-anthropic"),
        ("google/gemini-2.5-flash", "openclaw-runtime-google"),
    ],
)
def test_cli_core_only_install_names_the_plugin_to_install(
    tmp_path: Path, model: str, distribution: str
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(_HIDE_PLUGINS), encoding="utf-8")
    listing = _cli("plugins", tmp_path=tmp_path, pythonpath=str(site))
    names = {p["name"] for p in json.loads(listing.stdout)}
    assert "anthropic" not in names and "google" not in names  # the simulation holds
    done = _cli("run", "--model", model, "hi", tmp_path=tmp_path, pythonpath=str(site))
    assert done.returncode == 2
    provider = model.split("/")[0]
    expected = f"error: model {model!r} needs the {provider} provider plugin: pip install "
    assert done.stderr == f"{expected}{distribution}\n"
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_cli_disabled_plugin_is_named_as_disabled(tmp_path: Path) -> None:
    done = _cli(
        "run",
        "--model",
        "claude-sonnet-4",
        "hi",
        tmp_path=tmp_path,
        env={"OPENCLAW_RUNTIME_DISABLE_PLUGINS": "anthropic"},
    )
    assert done.returncode == 2
    assert "openclaw-runtime-anthropic, which is installed but disabled" in done.stderr
    assert done.stderr.count("\n") == 1
