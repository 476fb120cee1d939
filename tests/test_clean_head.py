"""A session file's clean head (``transcript.clean_head``): a load that takes a proven head
without its checks gives what the full checks give, on clean, damaged, grown, cut and changed
files; and the head it finds is one a later load may take."""

from __future__ import annotations

import json
import random
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime.transcript.clean_head import KnownHead, clean_entries, found_head
from openclaw_runtime.transcript.jsonl import parse_session_bytes
from openclaw_runtime.transcript.load import load_session_file
from openclaw_runtime.transcript.repair import RepairPlan, plan_session_repair
from openclaw_runtime.transcript.tree import SessionTree
from tests.test_repair_plan_fast import BLOCKS, HEADER, _entry


def _clock() -> datetime:
    return datetime(2026, 12, 4, tzinfo=UTC)


def _store_entry(rng: random.Random, index: int, parent: str | None) -> dict[str, Any]:
    """An entry as the store writes it (clean), now and then with a link that dangles."""
    kind = rng.choice(["message", "message", "message", "custom_message", "model_change"])
    if rng.random() < 0.04:
        parent = rng.choice(["gone", f"e{index + 2}", "later"])  # no earlier entry has it
    entry: dict[str, Any] = {"type": kind, "id": f"e{index}", "parentId": parent}
    if kind == "message":
        role = rng.choice(["user", "assistant", "toolResult"])
        content: Any = rng.choice(["text", [BLOCKS[0]], [BLOCKS[0], BLOCKS[1]], []])
        entry["message"] = {"role": role, "content": content}
    elif kind == "custom_message":
        entry["content"] = [BLOCKS[0]]
        entry["customType"] = "note"
    else:
        entry["provider"], entry["modelId"] = "p", "m"
    return entry


def _line(rng: random.Random, entry: dict[str, Any]) -> str:
    return json.dumps(entry, separators=rng.choice([(",", ":"), (", ", ": ")]))


def _lines(rng: random.Random, entries: list[dict[str, Any]]) -> bytes:
    out = []
    for entry in entries:
        if rng.random() < 0.03:
            out.append(rng.choice(["", "   ", "not json", "[1, 2]", '{"type": "x"}']))
        out.append(_line(rng, entry))
    ending = "\r\n" if rng.random() < 0.2 else "\n"
    return (ending.join(out) + ending).encode()


def _random_file(rng: random.Random) -> tuple[bytes, list[str]]:
    """A header, a run of store-written entries, then a random (often damaged) tail."""
    entries: list[dict[str, Any]] = []
    parent = None
    for index in range(rng.randint(0, 40)):
        entry = _store_entry(rng, index, parent)
        entries.append(entry)
        parent = entry["id"]
    data = (json.dumps(HEADER) + "\n").encode() + _lines(rng, entries)
    return data, [e["id"] for e in entries]


def _tail(rng: random.Random, ids: list[str], start: int) -> bytes:
    """More lines: store entries, damaged entries (reused ids, links to later entries, ids a
    dangling parent of the head names), bad lines, maybe a torn last line."""
    entries: list[dict[str, Any]] = []
    parent = ids[-1] if ids else None
    for offset in range(rng.randint(0, 12)):
        index = start + offset
        store = rng.random() < 0.5
        entry = _store_entry(rng, index, parent) if store else _entry(rng, index, ids)
        if rng.random() < 0.15:
            entry["id"] = rng.choice(["gone", "later", *ids[-3:]] if ids else ["gone"])
        entries.append(entry)
        ids = [*ids, entry["id"]]
        parent = entry["id"]
    data = _lines(rng, entries) if entries else b""
    if rng.random() < 0.2:
        data += b'{"type":"message","id":"torn'  # a torn last line
    return data


def _variants(rng: random.Random, data: bytes, ids: list[str]) -> list[bytes]:
    """What the next load may find: the same bytes, more lines, a changed byte, a cut."""
    out = [data, data + _tail(rng, ids, 1000), data + _tail(rng, ids, 2000)]
    if data:
        changed = bytearray(data)
        at = rng.randrange(len(changed))
        changed[at] = ord("x") if changed[at] != ord("x") else ord("y")
        out.append(bytes(changed))
        out.append(data[: rng.randrange(len(data))])
        out.append(data[: rng.randrange(len(data))] + _tail(rng, ids, 3000))
    return out


def _same_plan(fast: RepairPlan, full: RepairPlan) -> None:
    assert fast.entries == full.entries
    assert fast.changed == full.changed
    assert fast.spans == full.spans
    assert fast.invalid == full.invalid
    assert fast.set_aside_blocks == full.set_aside_blocks
    assert fast.clean_run == full.clean_run


def _same_tree(fast: SessionTree, full: SessionTree) -> None:
    assert fast.header == full.header
    assert fast.entries == full.entries
    assert list(fast.by_id) == list(full.by_id)
    assert fast.labels == full.labels
    assert fast.logical_parents == full.logical_parents
    assert (fast.leaf_id, fast.append_parent_id) == (full.leaf_id, full.append_parent_id)


def _load(path: Path, data: bytes, known: KnownHead | None, *, repair: bool) -> Any:
    path.write_bytes(data)
    return load_session_file(path, data, repair=repair, clock=_clock, timeout=5, known=known)


@pytest.mark.parametrize("seed", range(150))
def test_a_proven_head_loads_as_the_full_checks_do(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    data, ids = _random_file(rng)
    data += _tail(rng, ids, 500) if rng.random() < 0.3 else b""
    tree, _, _ = _load(tmp_path / "a.jsonl", data, None, repair=False)
    if tree.clean_head is None:
        return
    size, crc = tree.clean_head.fact()
    assert crc == zlib.crc32(data[:size]) and data[size - 1 : size] == b"\n"
    known = KnownHead((size, crc), (len(data), zlib.crc32(data)))
    for variant in _variants(rng, data, ids):
        # the parse and the plan
        parsed = parse_session_bytes(variant)
        full = plan_session_repair(parsed, as_written=True)
        if variant[:size] == data[:size]:
            fast_parse = parse_session_bytes(variant, size)
            assert fast_parse.entries == parsed.entries
            assert fast_parse.invalid == parsed.invalid
            clean = clean_entries(fast_parse.spans, size)
            _same_plan(plan_session_repair(fast_parse, as_written=True, clean=clean), full)
        # the load, in memory and repaired on disk
        for repair in (False, True):
            fast_dir, full_dir = tmp_path / f"f{repair}", tmp_path / f"s{repair}"
            fast_dir.mkdir(exist_ok=True)
            full_dir.mkdir(exist_ok=True)
            try:
                fast_tree, fast_report, _ = _load(
                    fast_dir / "x.jsonl", variant, known, repair=repair
                )
            except Exception as exc:  # a header that cannot be salvaged: the same error
                with pytest.raises(type(exc)):
                    _load(full_dir / "x.jsonl", variant, None, repair=repair)
                continue
            full_tree, full_report, _ = _load(full_dir / "x.jsonl", variant, None, repair=repair)
            _same_tree(fast_tree, full_tree)
            assert _paths_of(fast_report) == _paths_of(full_report)
            assert (fast_dir / "x.jsonl").read_bytes() == (full_dir / "x.jsonl").read_bytes()
            assert _side(fast_dir) == _side(full_dir)
            # of the bytes the tree was loaded from (a salvaged header: the new file's)
            _same_head(fast_tree, full_tree, (fast_dir / "x.jsonl").read_bytes(), known)
            for folder in (fast_dir, full_dir):
                for file in folder.iterdir():
                    file.unlink()


def _paths_of(report: Any) -> Any:
    """A report without its file paths (the two loads write beside different files)."""
    fields = dict(report.__dict__) if hasattr(report, "__dict__") else {}
    if not fields:
        fields = {name: getattr(report, name) for name in report.__slots__}
    for name in ("backup_path", "invalid_lines_path"):
        fields[name] = fields[name] is not None
    return fields


def _side(folder: Path) -> list[bytes]:
    """The side file of bad lines, if any (same bytes on both sides)."""
    kept = folder / "x.jsonl.invalid.jsonl"
    return [kept.read_bytes()] if kept.exists() else []


def _same_head(fast: SessionTree, full: SessionTree, data: bytes, known: KnownHead) -> None:
    """Both loads find the same clean head of ``data`` (a load with a set-aside line finds
    none, but keeps the one it proved); ``checked`` only when the side file's file head is
    the start of ``data``."""
    if full.clean_head is not None:
        assert fast.clean_head is not None
        assert fast.clean_head.fact() == full.clean_head.fact()
    elif fast.clean_head is not None:
        assert fast.clean_head.fact() == known.clean
    else:
        return
    size, crc = fast.clean_head.fact()
    assert zlib.crc32(data[:size]) == crc
    assert known.file is not None
    length, file_crc = known.file
    holds = length <= len(data) and zlib.crc32(data[:length]) == file_crc
    if fast.clean_head.checked is not None:
        assert fast.clean_head.checked == known.file and holds


def test_a_head_entry_whose_parent_a_later_line_names_is_not_clean(tmp_path: Path) -> None:
    """A parent no earlier entry has: a later line taking that id makes the entry a link to
    a later entry (set aside), so the head ends before it."""
    first = {"type": "message", "id": "a", "parentId": None, "message": {"role": "user"}}
    dangling = {"type": "message", "id": "b", "parentId": "c", "message": {"role": "user"}}
    lines = [json.dumps(HEADER), json.dumps(first), json.dumps(dangling)]
    data = ("\n".join(lines) + "\n").encode()
    tree, _, _ = _load(tmp_path / "a.jsonl", data, None, repair=False)
    assert tree.clean_head is not None
    size, crc = tree.clean_head.fact()
    assert data[:size].endswith(json.dumps(first).encode() + b"\n")
    later = {"type": "message", "id": "c", "parentId": "a", "message": {"role": "user"}}
    grown = data + (json.dumps(later) + "\n").encode()
    fast, _, _ = _load(tmp_path / "b.jsonl", grown, KnownHead((size, crc)), repair=False)
    assert (
        [e["id"] for e in fast.entries]
        == ["a", "c"]
        == [e["id"] for e in _load(tmp_path / "c.jsonl", grown, None, repair=False)[0].entries]
    )


def test_an_unterminated_last_line_is_not_in_the_head(tmp_path: Path) -> None:
    first = {"type": "message", "id": "a", "parentId": None, "message": {"role": "user"}}
    second = {"type": "message", "id": "b", "parentId": "a", "message": {"role": "user"}}
    data = "\n".join([json.dumps(HEADER), json.dumps(first), json.dumps(second)]).encode()
    tree, _, _ = _load(tmp_path / "a.jsonl", data, None, repair=False)
    assert tree.clean_head is not None
    assert tree.clean_head.fact()[0] == data.index(json.dumps(second).encode())


def test_no_head_after_a_set_aside_line_and_a_load_without_one_keeps_its_bytes(
    tmp_path: Path,
) -> None:
    first = {"type": "message", "id": "a", "parentId": None, "message": {"role": "user"}}
    data = "\n".join([json.dumps(HEADER), json.dumps(first), "oops", ""]).encode()
    tree, _, _ = _load(tmp_path / "a.jsonl", data, None, repair=False)
    assert tree.clean_head is None
    clean = data[: data.index(b"oops")]
    tree, _, _ = _load(tmp_path / "b.jsonl", clean, None, repair=False)
    assert tree.clean_head is not None and tree.clean_head.data is clean  # not CRC'd yet
    assert tree.clean_head.fact() == (len(clean), zlib.crc32(clean))
    assert tree.clean_head.data is None


def test_found_head_extends_a_proven_head_over_the_clean_rest() -> None:
    first = {"type": "message", "id": "a", "parentId": None, "message": {"role": "user"}}
    second = {"type": "message", "id": "b", "parentId": "a", "message": {"role": "user"}}
    head = (json.dumps(HEADER) + "\n" + json.dumps(first) + "\n").encode()
    data = head + (json.dumps(second) + "\n").encode()
    parsed = parse_session_bytes(data, len(head))
    plan = plan_session_repair(parsed, as_written=True, clean=1)
    assert plan.clean_run == 2
    proven = (len(head), zlib.crc32(head))
    found = found_head(data, parsed.spans, plan.clean_run, proven, KnownHead(proven, proven))
    assert found is not None
    assert found.fact() == (len(data), zlib.crc32(data)) and found.checked == proven
    other = found_head(data, parsed.spans, 2, proven, KnownHead(proven, (len(data), 1)))
    assert other is not None and other.checked is None
