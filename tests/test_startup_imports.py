"""Start-up stays cheap: what ``import openclaw_runtime``, ``--version`` and ``--help`` load.

Checked in a fresh interpreter (``sys.modules`` after the step), never by timing: the heavy
dependencies (httpx and its CLI's rich/pygments/click, jsonschema, stevedore, pydantic) and the
runtime's own subpackages must not be imported by steps that do not use them.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

import openclaw_runtime
from openclaw_runtime import cli as cli_module

HEAVY = ("httpx", "rich", "pygments", "jsonschema", "stevedore", "pydantic", "pluggy", "anyio")


def modules_after(code: str) -> tuple[str, set[str]]:
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    *output, last = done.stdout.strip().splitlines()
    return "\n".join(output), set(json.loads(last))


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_import_openclaw_runtime_loads_nothing_heavy():
    _, modules = modules_after("import openclaw_runtime")
    assert heavy_in(modules) == []
    assert sorted(m for m in modules if m.startswith("openclaw_runtime")) == [
        "openclaw_runtime",
        "openclaw_runtime._lazy_face",  # the faces' one loader (stdlib only)
        "openclaw_runtime._version",
    ]


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_load_no_command_and_nothing_heavy(flag):
    output, modules = modules_after(
        "from openclaw_runtime.cli import main\n"
        f"sys.argv = ['openclaw-runtime', '{flag}']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    assert heavy_in(modules) == []
    assert not any(m.startswith("openclaw_runtime.commands") for m in modules)
    assert "openclaw_runtime._runtime" not in modules
    if flag == "--version":
        assert output == f"openclaw-runtime, version {openclaw_runtime.__version__}"
    else:
        assert all(f"  {name} " in output for name in cli_module.COMMANDS)


def test_a_public_name_loads_its_module_on_first_use():
    _, modules = modules_after("from openclaw_runtime import AbortController")
    assert "openclaw_runtime.abort" in modules
    assert "openclaw_runtime._runtime" not in modules
    assert "httpx" not in modules


def test_every_public_name_resolves_to_its_module_object():
    from openclaw_runtime import _runtime, abort, messages

    for name in openclaw_runtime.__all__:
        assert getattr(openclaw_runtime, name) is not None, name
    assert openclaw_runtime.Runtime is _runtime.Runtime
    assert openclaw_runtime.AbortController is abort.AbortController
    assert openclaw_runtime.UserMessage is messages.UserMessage
    lazy = {n for names in openclaw_runtime._LAZY.values() for n in names.split()}
    assert lazy == set(openclaw_runtime.__all__) - {"__version__"}


def test_an_unknown_name_is_a_clear_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchThing'"):
        _ = openclaw_runtime.NoSuchThing


def test_the_lazy_command_list_matches_the_commands_own_help():
    """``--help`` lists COMMANDS' one-liners; they must equal what click shows for the
    loaded commands (at the 78 columns click uses on an 80-column or wider terminal), or the help would drift from the code."""
    group = cli_module.cli
    ctx = click.Context(group, info_name="openclaw-runtime")
    loaded = {name: group.get_command(ctx, name) for name in cli_module.COMMANDS}
    assert all(isinstance(command, click.Command) for command in loaded.values())
    plain = click.Group("openclaw-runtime", commands=loaded)
    expected = click.HelpFormatter(width=78)
    click.Group.format_commands(plain, click.Context(plain), expected)
    ours = click.HelpFormatter(width=78)
    group.format_commands(ctx, ours)
    assert ours.getvalue() == expected.getvalue()


def test_each_command_still_runs_through_the_group():
    result = CliRunner().invoke(cli_module.cli, ["sessions", "--help"])
    assert result.exit_code == 0
    assert "sessions [OPTIONS] COMMAND" in result.output
    result = CliRunner().invoke(cli_module.cli, ["nope"])
    assert result.exit_code == 2
    assert "No such command 'nope'" in result.output


def test_a_command_added_at_run_time_is_listed_too():
    group = cli_module.LazyGroup("x")
    group.add_command(click.Command("extra", help="An extra command.", callback=lambda: None))
    result = CliRunner().invoke(group, ["--help"])
    assert re.search(r"^  extra +An extra command\.$", result.output, re.M)
    assert re.search(r"^  run +Run one turn", result.output, re.M)
