"""Start-up time: importing the package and ``Runtime``, building one, a one-turn CLI run.

Each step runs in a fresh interpreter (a subprocess), the steps interleaved round by round;
we report the median wall time of ``--rounds`` and its ratio to the floor, ``python -c pass``
(the interpreter's own start-up, which no step can beat), beside a named peer: ``python -c
"import pydantic, httpx"``, the two libraries a program that talks to a model API imports
anyway. The steps:

* ``import openclaw_runtime``, ``openclaw-runtime --version`` / ``--help``;
* ``from openclaw_runtime import Runtime`` (what a program writes);
* ``Runtime()`` construction, with the installed entry-point plugins (the default) and
  without (``load_entrypoints=False``: the core alone);
* ``openclaw-runtime run --model echo/echo "..."``: one turn of the offline ``echo`` model to
  completion (answer on stdout), in a fresh state dir, with the installed plugins and without
  (``OPENCLAW_RUNTIME_PLUGINS=""``).

``--base DIR`` measures a second source tree in the same run (e.g. ``main`` checked out in
another worktree): every step runs once with ``PYTHONPATH`` pointing at ``DIR`` and at its
``plugins/*`` and ``contrib/*`` packages (so ``openclaw_runtime`` and the repository's own
plugins come from there; the installed entry points and the console script are shared) and
once as is, interleaved, and the table shows both and their ratio.

Run:  .venv/bin/python benchmarks/startup.py [--rounds 21] [--base ../main-worktree]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
CLI = str(Path(PYTHON).with_name("openclaw-runtime"))
FLOOR = "python -c pass (floor)"
PEER = 'python -c "import pydantic, httpx" (peer)'
NO_PLUGINS = {"OPENCLAW_RUNTIME_PLUGINS": ""}
RUN_PROMPT = [CLI, "run", "--model", "echo/echo", "Hello from the start-up benchmark"]

#: name -> (command, extra environment); the floor and the peer first.
STEPS: dict[str, tuple[list[str], dict[str, str]]] = {
    FLOOR: ([PYTHON, "-c", "pass"], {}),
    PEER: ([PYTHON, "-c", "import pydantic, httpx"], {}),
    "import openclaw_runtime": ([PYTHON, "-c", "import openclaw_runtime"], {}),
    "openclaw-runtime --version": ([CLI, "--version"], {}),
    "openclaw-runtime --help": ([CLI, "--help"], {}),
    "from openclaw_runtime import Runtime": (
        [PYTHON, "-c", "from openclaw_runtime import Runtime"],
        {},
    ),
    "Runtime() (entry-point plugins)": (
        [PYTHON, "-c", "from openclaw_runtime import Runtime; Runtime()"],
        {},
    ),
    "Runtime(load_entrypoints=False)": (
        [PYTHON, "-c", "from openclaw_runtime import Runtime; Runtime(load_entrypoints=False)"],
        {},
    ),
    "openclaw-runtime run (echo, plugins)": (RUN_PROMPT, {}),
    "openclaw-runtime run (echo, core only)": (RUN_PROMPT, NO_PLUGINS),
}


def timed(command: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """Wall time and the child's CPU time (user + system) of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{command} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def environment(extra: dict[str, str], state_dir: str, base: str | None) -> dict[str, str]:
    env = {**os.environ, **extra, "OPENCLAW_RUNTIME_STATE_DIR": state_dir}
    for name in ("OPENCLAW_RUNTIME_CONFIG", "OPENCLAW_RUNTIME_MODEL", "FORCE_COLOR"):
        env.pop(name, None)
    if base is not None:  # the core and the repository's own plugins from that tree
        plugins = sorted(str(p) for p in Path(base).glob("*/*") if (p / "pyproject.toml").is_file())
        paths = [base, *plugins, env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument(
        "--base", default=None, help="another source tree to measure in the same run (before)"
    )
    args = parser.parse_args()
    sides: dict[str, str | None] = {"after": None}
    if args.base:
        sides = {"before": str(Path(args.base).resolve()), "after": None}
    with tempfile.TemporaryDirectory() as work:  # state dir and cwd: no config file found
        state = str(Path(work) / "state")
        plan = [
            (name, side, command, environment(extra, state, base))
            for name, (command, extra) in STEPS.items()
            for side, base in sides.items()
            if side == "after" or name not in (FLOOR, PEER)  # the peers do not depend on us
        ]
        for _name, _side, command, env in plan:  # warm the OS caches and the .pyc files once
            timed(command, env, work)
        times: dict[tuple[str, str], list[float]] = {(n, s): [] for n, s, _c, _e in plan}
        cpu: dict[tuple[str, str], list[float]] = {(n, s): [] for n, s, _c, _e in plan}
        load_before = os.getloadavg()
        for _ in range(args.rounds):
            for name, side, command, env in plan:
                wall, used = timed(command, env, work)
                times[(name, side)].append(wall)
                cpu[(name, side)].append(used)
        load_after = os.getloadavg()
    print(
        f"median of {args.rounds} interleaved rounds; load average "
        f"{load_before[0]:.2f} -> {load_after[0]:.2f} (1 min), {os.cpu_count()} CPUs"
        + (f"; before = PYTHONPATH={sides['before']}" if args.base else "")
    )
    for title, table in (("wall time", times), ("CPU time of the process (user + system)", cpu)):
        report(title, table, sides, compare=bool(args.base))


def report(
    title: str,
    table: dict[tuple[str, str], list[float]],
    sides: dict[str, str | None],
    *,
    compare: bool,
) -> None:
    """One table: each step's median per side, times the floor (x) and the peer (p)."""
    floor = statistics.median(table[(FLOOR, "after")])
    peer = statistics.median(table[(PEER, "after")])
    print(f"{title}: floor {floor * 1000:.1f} ms, peer {peer * 1000:.1f} ms")
    header = f"  {'step':42s}" + "".join(f"{side:>26s}" for side in sides)
    print(header + ("   after/before" if compare else ""))
    for name in STEPS:
        cells = []
        medians = {}
        for side in sides:
            samples = table.get((name, side)) or table[(name, "after")]
            medians[side] = median = statistics.median(samples)
            cells.append(f"{median * 1000:8.1f} ms {median / floor:5.1f}x {median / peer:4.2f}p")
        line = f"  {name:42s}" + "".join(f"{cell:>26s}" for cell in cells)
        if compare:
            line += f"   {medians['after'] / medians['before']:6.2f}"
        print(line)
    print("  (x: times the floor; p: times the peer)")


if __name__ == "__main__":
    main()
