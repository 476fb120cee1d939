"""Skills: the front-matter parser (table), discovery over real folders, the prompt block,
and the attempt-scoped environment overlay."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime.prompt.skills import (
    FrontmatterError,
    Skill,
    current_skill_env,
    format_skills_for_prompt,
    load_skills,
    parse_frontmatter,
    skill_env_scope,
    skill_roots,
    subprocess_env,
    validate_env_overrides,
)
from openclaw_runtime.prompt.skills.discovery import MAX_SKILL_FILE_BYTES

# --------------------------------------------------------------------------- front matter


@pytest.mark.parametrize(
    ("text", "fields", "body"),
    [
        ("no front matter\n", {}, "no front matter\n"),
        ("---\n---\nbody", {}, "body"),
        ("---\nname: x\n---\n\nbody", {"name": "x"}, "body"),
        ("\ufeff---\nname: x\n---\nb", {"name": "x"}, "b"),
        ('---\ndescription: "a: b # c"\n---\n', {"description": "a: b # c"}, ""),
        ("---\ndescription: 'it''s'\n---\n", {"description": "it's"}, ""),
        ("---\nd: plain text # comment\n---\n", {"d": "plain text"}, ""),
        ("---\nflag: true\nn: 42\nz: ~\n---\n", {"flag": True, "n": 42, "z": None}, ""),
        (
            '---\nmetadata: {"openclaw": {"emoji": "x"}}\n---\n',
            {"metadata": {"openclaw": {"emoji": "x"}}},
            "",
        ),
        ('---\ntags: ["a", "b"]\n---\n', {"tags": ["a", "b"]}, ""),
        (
            "---\nenv:\n  A: 1\n  B: two\nname: n\n---\n",
            {"env": {"A": 1, "B": "two"}, "name": "n"},
            "",
        ),
        ("---\n# comment\n\nname: x\n---\n", {"name": "x"}, ""),
    ],
)
def test_frontmatter_parses(text: str, fields: dict[str, Any], body: str) -> None:
    assert parse_frontmatter(text) == (fields, body)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("---\nname: x\n", "no closing '---' line"),
        ("---\n- item\n---\n", "line 2: expected 'key: value'"),
        ("---\nname: x\nname: y\n---\n", "line 3: duplicate key 'name'"),
        ("---\n  A: 1\n---\n", "line 2: indented line outside a mapping"),
        ("---\nenv:\n\tA: 1\n---\n", "line 3: tab indentation"),
        ('---\nd: "open\n---\n', "line 2: unterminated quoted string"),
        ("---\nm: {not json}\n---\n", "line 2: invalid inline JSON"),
        ("---\nenv:\n  A: 1\n  A: 2\n---\n", "line 4: duplicate key env.A"),
    ],
)
def test_frontmatter_errors_name_the_line(text: str, message: str) -> None:
    with pytest.raises(FrontmatterError, match=message):
        parse_frontmatter(text)


# --------------------------------------------------------------------------- discovery


def skill(root: Path, folder: str, front: str) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}\n---\nbody\n", encoding="utf-8")
    return path


def test_precedence_extra_then_agents_then_workspace(tmp_path: Path) -> None:
    extra, ws = tmp_path / "extra", tmp_path / "ws"
    skill(extra, "a", "name: a\ndescription: from extra")
    skill(extra, "b", "name: b\ndescription: from extra")
    skill(ws / ".agents" / "skills", "b", "name: b\ndescription: from agents")
    skill(ws / ".agents" / "skills", "c", "name: c\ndescription: from agents")
    skill(ws / "skills", "c", "name: c\ndescription: from workspace")
    loaded = load_skills(skill_roots(ws, extra))
    assert [(s.name, s.description, s.source) for s in loaded.skills] == [
        ("a", "from extra", "extra"),
        ("b", "from agents", "agents-skills-project"),
        ("c", "from workspace", "workspace"),
    ]
    assert loaded.problems == []


def test_root_layouts(tmp_path: Path) -> None:
    single = tmp_path / "single"
    skill(tmp_path, "single", "name: solo\ndescription: d")
    nested = tmp_path / "nested"
    skill(nested / "skills", "inner", "description: named after its folder")
    skill(nested, "ignored", "name: ignored\ndescription: d")  # <root>/skills wins
    hidden = tmp_path / "hidden"
    skill(hidden, ".secret", "name: secret\ndescription: d")
    skill(hidden, "node_modules", "name: nm\ndescription: d")
    skill(hidden, "ok", "name: ok\ndescription: d")
    roots = [(single, "s"), (nested, "n"), (hidden, "h")]
    assert [s.name for s in load_skills(roots).skills] == ["solo", "inner", "ok"]


def test_bad_skills_are_skipped_and_named(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    good = skill(root, "good", "name: good\ndescription: fine")
    broken = skill(root, "broken", "name: broken\ndescription: [oops")
    nodesc = skill(root, "nodesc", "name: nodesc")
    badenv = skill(root, "badenv", "name: badenv\ndescription: d\nenv:\n  LD_PRELOAD: /x.so")
    big = root / "big" / "SKILL.md"
    big.parent.mkdir()
    big.write_text("---\nname: big\ndescription: d\n---\n" + "x" * MAX_SKILL_FILE_BYTES)
    outside = tmp_path / "elsewhere"
    skill(outside, "escape", "name: escape\ndescription: d")
    (root / "escape").symlink_to(outside / "escape")
    loaded = load_skills([(root, "workspace")])
    assert [s.path for s in loaded.skills] == [good]
    problems = {p.path.parent.name: p.message for p in loaded.problems}
    assert problems.keys() == {"broken", "nodesc", "badenv", "big", "escape"}
    assert "invalid inline JSON" in problems["broken"]
    assert "no 'description'" in problems["nodesc"]
    assert "LD_PRELOAD may not be overridden" in problems["badenv"]
    assert "over the 256000 limit" in problems["big"]
    assert "outside its skills root" in problems["escape"]
    assert str(broken) in str(loaded.problems[[p.path for p in loaded.problems].index(broken)])
    assert nodesc.exists() and badenv.exists()


# --------------------------------------------------------------------------- prompt block


def test_skills_prompt_block(tmp_path: Path) -> None:
    home = tmp_path / "home"
    skills = [
        Skill("a", "Does <a> & b", home / "s" / "a" / "SKILL.md", "x"),
        Skill("b", "hidden", home / "s" / "b" / "SKILL.md", "x", disable_model_invocation=True),
        Skill("c", "elsewhere", Path("/opt/c/SKILL.md"), "x"),
    ]
    text = format_skills_for_prompt(skills, home=home)
    assert text.splitlines()[3:] == [
        "",
        "<available_skills>",
        "  <skill>",
        "    <name>a</name>",
        "    <description>Does &lt;a&gt; &amp; b</description>",
        "    <location>~/s/a/SKILL.md</location>",
        "  </skill>",
        "  <skill>",
        "    <name>c</name>",
        "    <description>elsewhere</description>",
        "    <location>/opt/c/SKILL.md</location>",
        "  </skill>",
        "</available_skills>",
    ]
    assert format_skills_for_prompt(skills[1:2]) == ""


def test_skills_prompt_is_bounded() -> None:
    skills = [Skill(f"s{i}", "d" * 50, Path(f"/s/{i}/SKILL.md"), "x") for i in range(10)]
    text = format_skills_for_prompt(skills, max_skills=4)
    assert text.count("<skill>") == 4 and text.endswith("(Skills truncated: included 4 of 10.)")
    limited = format_skills_for_prompt(skills, max_chars=600)
    assert len(limited.split("\n(Skills truncated")[0]) <= 600
    assert "<name>s0</name>" in limited and "<name>s9</name>" not in limited


# --------------------------------------------------------------------------- env overlay


@pytest.mark.parametrize(
    ("env", "result"),
    [
        ({"API_TOKEN": "x", "N": 3}, {"API_TOKEN": "x", "N": "3"}),
        ({"PATH": "/x"}, "PATH may not be overridden"),
        ({"path": "/x"}, "path may not be overridden"),
        ({"DYLD_INSERT_LIBRARIES": "/x"}, "DYLD_INSERT_LIBRARIES may not be overridden"),
        ({"A-B": "x"}, "'A-B' is not a valid environment variable name"),
        ({"A": True}, "A must be a string, got bool"),
        ({"A": {"x": 1}}, "A must be a string, got dict"),
    ],
)
def test_validate_env_overrides(env: dict[str, Any], result: dict[str, str] | str) -> None:
    if isinstance(result, dict):
        assert validate_env_overrides(env) == result
    else:
        with pytest.raises(ValueError, match=result):
            validate_env_overrides(env)


def _attempt_that_fails(seen: list[dict[str, str]]) -> None:
    with skill_env_scope({"A": "1", "B": "1"}):
        with skill_env_scope({"B": "2"}):
            seen.append(dict(current_skill_env()))
            seen.append(subprocess_env({"B": "0", "C": "0"}))
        seen.append(dict(current_skill_env()))
        raise RuntimeError("attempt failed")


def test_env_scope_nests_and_restores_on_failure() -> None:
    assert dict(current_skill_env()) == {}
    seen: list[dict[str, str]] = []
    with pytest.raises(RuntimeError, match="attempt failed"):
        _attempt_that_fails(seen)
    assert seen == [{"A": "1", "B": "2"}, {"A": "1", "B": "2", "C": "0"}, {"A": "1", "B": "1"}]
    assert dict(current_skill_env()) == {}
    assert "A" not in os.environ
