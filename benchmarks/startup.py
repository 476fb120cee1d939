"""Start-up time: ``import openclaw_runtime``, ``openclaw-runtime --version`` / ``--help``.

Each step runs in a fresh interpreter (a subprocess), the steps interleaved round by round;
we report the median wall time of ``--rounds`` and its ratio to the floor, ``python -c pass``
(the interpreter's own start-up, which no step can beat). ``from openclaw_runtime import
Runtime`` is shown for context: what a program that builds a runtime pays once.

Run:  .venv/bin/python benchmarks/startup.py [--rounds 21]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PYTHON = sys.executable
CLI = str(Path(PYTHON).with_name("openclaw-runtime"))

STEPS: dict[str, list[str]] = {
    "python -c pass (floor)": [PYTHON, "-c", "pass"],
    "import openclaw_runtime": [PYTHON, "-c", "import openclaw_runtime"],
    "openclaw-runtime --version": [CLI, "--version"],
    "openclaw-runtime --help": [CLI, "--help"],
    "from openclaw_runtime import Runtime": [PYTHON, "-c", "from openclaw_runtime import Runtime"],
}


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    for command in STEPS.values():  # warm the OS caches and the .pyc files once
        timed(command)
    times: dict[str, list[float]] = {name: [] for name in STEPS}
    load_before = os.getloadavg()
    for _ in range(args.rounds):
        for name, command in STEPS.items():
            times[name].append(timed(command))
    load_after = os.getloadavg()
    print(
        f"median of {args.rounds} interleaved rounds; load average "
        f"{load_before[0]:.2f} -> {load_after[0]:.2f} (1 min), {os.cpu_count()} CPUs"
    )
    floor = statistics.median(times["python -c pass (floor)"])
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"  {name:38s} {median * 1000:8.1f} ms   {median / floor:6.2f}x the floor")


if __name__ == "__main__":
    main()
