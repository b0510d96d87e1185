#!/usr/bin/env python3
"""What a container costs to start, and a process to start in it, under runc
and under podman (runtime = runc, podman), on the same host in one run.

For each runtime: `create` (the runtime's create(): a container of the full
image in a fresh netns, pinned to one core, until it returns: ready for exec),
`exec` (exec() of `true` in it until that exits: `runc exec` under both),
`destroy`; and under podman `podman exec` of the same, which cnfperf does not
use (podman 4's passes no signal on). The image is prepared once before
(podman imports it on its first use). Prints the median and spread of each
over --n containers, and podman's over runc's.

Not part of the test suite. As root, after `make build`:

    python3 bench/runtime_start.py [--n 20] [--execs 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cnfperf.host.journal import Journal  # noqa: E402
from cnfperf.runtimes import RUNTIMES, podman  # noqa: E402

ENGINE = REPO / "engine" / "build" / "cnfperf-engine"
STEPS = ("create", "exec", "destroy")


def measure(name: str, n: int, execs: int, state: Path) -> dict[str, list[float]]:
    journal = Journal(state / f"{name}.journal")
    runtime = RUNTIMES[name](journal, state / name)
    runtime.prepare(ENGINE)
    cpu = max(os.sched_getaffinity(0))
    times: dict[str, list[float]] = {step: [] for step in (*STEPS, "podman exec")}
    for i in range(n):
        netns = f"cnfpbe{name[:2]}{i}"
        subprocess.run(["ip", "netns", "add", netns], check=True)
        try:
            t0 = time.perf_counter()
            c = runtime.create(netns, [cpu], netns)
            times["create"].append(time.perf_counter() - t0)
            try:
                for _ in range(execs):
                    t0 = time.perf_counter()
                    proc = c.exec(["true"])
                    proc.communicate(timeout=30)
                    times["exec"].append(time.perf_counter() - t0)
                    assert proc.returncode == 0
                if name == "podman":   # what cnfperf does not use: it passes no signal on
                    t0 = time.perf_counter()
                    podman.podman("exec", c.name, "true")
                    times["podman exec"].append(time.perf_counter() - t0)
            finally:
                t0 = time.perf_counter()
                c.destroy()
                times["destroy"].append(time.perf_counter() - t0)
        finally:
            subprocess.run(["ip", "netns", "del", netns], check=True)
    journal.close(remove=True)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20, help="containers per runtime")
    ap.add_argument("--execs", type=int, default=5, help="execs per container")
    args = ap.parse_args()
    if os.geteuid() != 0:
        return "needs root"
    for name in ("runc", "podman"):
        problems = RUNTIMES[name].check()
        if problems:
            return f"runtime {name}: {'; '.join(problems)}"
    with tempfile.TemporaryDirectory() as state:
        found = {name: measure(name, args.n, args.execs, Path(state))
                 for name in ("runc", "podman")}
    print(f"{os.cpu_count()} cores; {args.n} containers each, {args.execs} execs in each; "
          "median (min-max) ms")
    print(f"{'':8}{'runc':>22}{'podman':>22}{'podman/runc':>13}")
    for step in STEPS:
        cells = []
        for name in ("runc", "podman"):
            t = found[name][step]
            cells.append(f"{statistics.median(t) * 1e3:.0f} ({min(t) * 1e3:.0f}-"
                         f"{max(t) * 1e3:.0f})")
        ratio = statistics.median(found["podman"][step]) / statistics.median(found["runc"][step])
        print(f"{step:8}{cells[0]:>22}{cells[1]:>22}{ratio:>12.1f}x")
    t = found["podman"]["podman exec"]
    ratio = statistics.median(t) / statistics.median(found["runc"]["exec"])
    cell = f"{statistics.median(t) * 1e3:.0f} ({min(t) * 1e3:.0f}-{max(t) * 1e3:.0f})"
    print(f"{'podman exec':12}{'-':>18}{cell:>22}{ratio:>12.1f}x  (over runc's exec)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
