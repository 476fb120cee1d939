"""docs/architecture.md maps every seed section to code that exists (the map cannot rot)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
ROW = re.compile(r"^\| (?P<seed>\d{3}) \| (?P<section>[^|]+?) \| (?P<impl>.+) \|$", re.M)
REFERENCE = re.compile(r"`(openclaw_runtime[\w.]*):([\w.]+)`")
NOT_YET = re.compile(r"not yet \(issue \d+\)")

# Every section of the seeds that the runtime ports (000 §2–§6.7, 001, 003 §1–§9, 004 一–七).
REQUIRED_SECTIONS = {
    "000": [f"§{n}" for n in ("2.1", "2.2", "2.3")]
    + [f"§3.{n}" for n in range(1, 7)]
    + [f"§4.{n}" for n in range(1, 5)]
    + [f"§5.{n}" for n in range(1, 5)]
    + [f"§6.{n}" for n in range(1, 8)],
    "003": [f"§{n}" for n in range(1, 10)],
    "004": [
        "一",
        "二 stage 1",
        "二 stage 2",
        "二 stage 3",
        "二 stage 4",
        "三",
        "四",
        "五",
        "六",
        "七",
    ],
}


def rows() -> list[re.Match[str]]:
    return list(ROW.finditer(DOC.read_text(encoding="utf-8")))


def resolve(module_name: str, dotted: str) -> object:
    target: object = importlib.import_module(module_name)
    for part in dotted.split("."):
        target = getattr(target, part)
    return target


def _heads(section: str, number: str) -> bool:
    return section.startswith(number) and section[len(number) : len(number) + 1] in {" ", ":"}


def test_the_table_parses():
    assert len(rows()) >= 45


@pytest.mark.parametrize("seed", sorted(REQUIRED_SECTIONS))
def test_every_seed_section_has_a_row(seed):
    sections = [row["section"] for row in rows() if row["seed"] == seed]
    missing = [s for s in REQUIRED_SECTIONS[seed] if not any(_heads(x, s) for x in sections)]
    assert missing == []


def test_seed_001_is_mapped():
    assert len([row for row in rows() if row["seed"] == "001"]) >= 5


@pytest.mark.parametrize("row", rows(), ids=lambda r: f"{r['seed']} {r['section'][:40]}")
def test_every_named_function_exists(row):
    references = REFERENCE.findall(row["impl"])
    assert references or NOT_YET.search(row["impl"]), "a row names code or the issue that builds it"
    for module_name, dotted in references:
        assert callable(resolve(module_name, dotted)), f"{module_name}:{dotted} is not callable"
