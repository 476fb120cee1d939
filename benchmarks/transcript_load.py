"""Load + repair of a 100k-entry session vs. the floor: ``json.loads`` of every line.

Run: ``python benchmarks/transcript_load.py [--entries 100000] [--repeat 5]``

The floor reads the file, splits it into lines and decodes every line with the standard
library's ``json.loads``, keeping the results (a loader has to hold them). The measured side is
``SessionManager.open_sync``: one pass that decodes, checks every entry, plans the repair (a
clean file needs none) and builds the tree indexes. Both sides run in the same process with
the same GC setting; each number is the best of ``--repeat`` runs. Reported: microseconds per
line and the ratio to the floor (target ≤ 2.0).

Also shown, for context: the ``orjson`` floor, opening a file whose last line is torn (the
repair then writes a backup, the side file and a new session file), and materialising the
active branch as pydantic messages (``build_session_context``), which loading defers.

Last, memory (issue 13: "must not regress"): each side once more under ``tracemalloc``
(untimed), what it keeps (the floor's list of dicts; the open session) and its peak while
loading, and the ratio of the peaks.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import orjson

from openclaw_runtime.transcript import SessionManager


def make_session(path: Path, entries: int) -> None:
    """A realistic mix: user prompts, assistant turns with thinking/tool calls, tool results."""
    header = {
        "type": "session",
        "version": 3,
        "id": "bench",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/w",
    }
    lines = [json.dumps(header, separators=(",", ":"))]
    parent = None
    usage = {
        "input": 1200,
        "output": 80,
        "cacheRead": 900,
        "cacheWrite": 0,
        "totalTokens": 2180,
        "cost": {
            "input": 0.0036,
            "output": 0.0012,
            "cacheRead": 0.00027,
            "cacheWrite": 0,
            "total": 0.00507,
        },
    }
    for index in range(entries):
        turn = index % 4
        if turn == 0:
            message = {
                "role": "user",
                "content": f"Please look at src/module_{index}.py and fix the failing test.",
                "timestamp": 1_700_000_000_000 + index,
            }
        elif turn == 1:
            message = {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": "The test fails because the fixture is stale. " * 3,
                        "thinkingSignature": "EqQBCkYIBxgCKkD" + "x" * 120,
                    },
                    {"type": "text", "text": "Let me read the file first."},
                    {
                        "type": "toolCall",
                        "id": f"toolu_{index:08d}",
                        "name": "read",
                        "arguments": {"path": f"src/module_{index}.py"},
                    },
                ],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": usage,
                "stopReason": "toolUse",
                "timestamp": 1_700_000_000_000 + index,
            }
        elif turn == 2:
            message = {
                "role": "toolResult",
                "toolCallId": f"toolu_{index - 1:08d}",
                "toolName": "read",
                "content": [
                    {"type": "text", "text": "def test_x():\n    assert compute(2) == 4\n" * 6}
                ],
                "isError": False,
                "timestamp": 1_700_000_000_000 + index,
            }
        else:
            message = {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": "Fixed: the fixture now rebuilds the cache before each test.",
                    }
                ],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": usage,
                "stopReason": "stop",
                "timestamp": 1_700_000_000_000 + index,
            }
        entry_id = f"{index:08x}"
        record = {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": message,
        }
        lines.append(json.dumps(record, separators=(",", ":"), ensure_ascii=False))
        parent = entry_id
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def floor_stdlib(path: Path) -> object:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line]


def floor_orjson(path: Path) -> object:
    return [orjson.loads(line) for line in path.read_bytes().split(b"\n") if line]


def best_of(fn: Callable[[], object], repeat: int, *, gc_enabled: bool) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        if not gc_enabled:
            gc.disable()
        try:
            start = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
        del result
    return min(times)


def traced(fn: Callable[[], object]) -> tuple[float, float]:
    """What ``fn``'s result keeps and the peak while it ran, in MB (``tracemalloc``, after a
    collection; the result is held until both are read)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = fn()
        gc.collect()
        kept, peak = tracemalloc.get_traced_memory()
        del result
    finally:
        tracemalloc.stop()
    return (kept - before) / 1e6, (peak - before) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        clean = Path(tmp) / "clean.jsonl"
        make_session(clean, args.entries)
        lines = args.entries + 1
        size_mb = clean.stat().st_size / 1e6
        per_line = size_mb * 1e6 / lines
        print(f"session: {args.entries} entries, {size_mb:.1f} MB, {per_line:.0f} bytes/line")

        for gc_enabled in (True, False):
            label = "gc on " if gc_enabled else "gc off"
            floor = best_of(lambda: floor_stdlib(clean), args.repeat, gc_enabled=gc_enabled)
            fast_floor = best_of(lambda: floor_orjson(clean), args.repeat, gc_enabled=gc_enabled)
            ours = best_of(
                lambda: SessionManager.open_sync(clean), args.repeat, gc_enabled=gc_enabled
            )
            print(
                f"[{label}] floor json.loads {floor / lines * 1e6:5.2f} us/line | "
                f"orjson {fast_floor / lines * 1e6:5.2f} | "
                f"open+repair check {ours / lines * 1e6:5.2f} us/line | "
                f"ratio {ours / floor:4.2f}x the floor"
            )

        torn_bytes = clean.read_bytes() + b'{"type":"message","id":"torn'
        torn = Path(tmp) / "torn.jsonl"

        def open_torn() -> object:
            torn.write_bytes(torn_bytes)
            for leftover in Path(tmp).glob("torn.jsonl.*"):
                leftover.unlink()
            start = time.perf_counter()
            SessionManager.open_sync(torn)
            return time.perf_counter() - start

        repaired = min(float(open_torn()) for _ in range(args.repeat))  # type: ignore[arg-type]
        floor = best_of(lambda: floor_stdlib(clean), args.repeat, gc_enabled=True)
        print(
            f"[gc on ] open with a torn last line (backup + side file + atomic rewrite): "
            f"{repaired / lines * 1e6:5.2f} us/line, ratio {repaired / floor:4.2f}x the floor"
        )

        floor_kept, floor_peak = traced(lambda: floor_stdlib(clean))
        ours_kept, ours_peak = traced(lambda: SessionManager.open_sync(clean))
        print(
            f"[memory] json.loads of every line keeps {floor_kept:.1f} MB (peak "
            f"{floor_peak:.1f}); open_sync keeps {ours_kept:.1f} MB (peak {ours_peak:.1f}): "
            f"peak ratio {ours_peak / floor_peak:4.2f}x the floor's"
        )
        manager = SessionManager.open_sync(clean)
        context = best_of(lambda: SessionManager.build_session_context(manager), 1, gc_enabled=True)
        print(
            f"[gc on ] build_session_context (pydantic models for the {len(manager.get_branch())} "
            f"branch entries, deferred by loading): {context / lines * 1e6:5.2f} us/line"
        )


if __name__ == "__main__":
    main()
