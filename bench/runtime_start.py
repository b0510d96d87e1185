#!/usr/bin/env python3
"""What a container costs to start, and a process to start in it, under runc
and under podman (runtime = runc, podman), on the same host in one run; and
how soon an engine NF is ready in a runc container made eagerly or lazily.

runtimes: for each runtime, `create` (the runtime's create(): a container of
the full image in a fresh netns, pinned to one core, until it returns: ready
for exec), `exec` (exec() of `true` in it until that exits: `runc exec` under
both), `destroy`; and under podman `podman exec` of the same, which cnfperf
does not use (podman 4's passes no signal on). The image is prepared once
before (podman imports it on its first use). Prints the median and spread of
each over --n containers, and podman's over runc's.

nf: an l2 NF of the static engine in the minimal image (what a kernel api's NF
runs in), on a veth pair in its netns, from create() until its engine's
`ready` record is read (its ports are open: what a trial waits for), as a
run makes it: eager (a container with a placeholder init, then `runc exec` of
the engine) and lazy (create(lazy=True): the engine is the container's init,
one `runc run`), alternating, --n of each; lazy's median over eager's.
--previous-engine adds eager with another static engine (one that calibrates
its clock for 50 ms before opening its ports: the behaviour before).

Not part of the test suite. As root, after `make build`:

    python3 bench/runtime_start.py [--n 20] [--execs 5] [--only runtimes|nf]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cnfperf.host.journal import Journal  # noqa: E402
from cnfperf.runtimes import MINIMAL, RUNTIMES, podman  # noqa: E402

ENGINE = REPO / "engine" / "build" / "cnfperf-engine"
STATIC = REPO / "engine" / "build" / "cnfperf-engine-static"
STEPS = ("create", "exec", "destroy")
NF_STEPS = ("create", "ready", "destroy")


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


def nf_ready(n: int, state: Path, previous: Path | None) -> dict[str, dict[str, list[float]]]:
    """Per way of starting: seconds to create the container, from create() to the
    engine's `ready`, and to destroy it."""
    journal = Journal(state / "nf.journal")
    ways = {"eager": (False, STATIC), "lazy": (True, STATIC)}
    if previous is not None:
        ways["previous"] = (False, previous)
    runtimes = {}
    for way, (_, engine) in ways.items():
        runtimes[way] = RUNTIMES["runc"](journal, state / f"nf-{way}")
        runtimes[way].prepare(engine, MINIMAL)
    cpu = max(os.sched_getaffinity(0))
    times = {way: {step: [] for step in NF_STEPS} for way in ways}
    for i in range(n):
        for way, (lazy, _) in ways.items():
            name = f"cnfpbn{way[:2]}{i}"
            subprocess.run(["ip", "netns", "add", name], check=True)
            try:
                subprocess.run(["ip", "-n", name, "link", "add", "nfa", "type", "veth", "peer",
                                "name", "nfb"], check=True)
                for iface in ("nfa", "nfb"):
                    subprocess.run(["ip", "-n", name, "link", "set", iface, "up"], check=True)
                t0 = time.perf_counter()
                c = runtimes[way].create(name, [cpu], name, image=MINIMAL, lazy=lazy)
                t1 = time.perf_counter()
                try:
                    proc = c.exec([c.engine, "nf", "--nf", "l2", "--api", "raw", "--iface", "nfa",
                                   "--iface2", "nfb", "--dst-mac", "02:00:00:00:00:01",
                                   "--dst-mac2", "02:00:00:00:00:02", "--cpu", str(cpu),
                                   "--poll", "interrupt", "--duration", "0", "--interval", "0"])
                    first = json.loads(proc.stdout.readline() or b"{}")
                    t2 = time.perf_counter()
                    assert first.get("type") == "ready", (way, first, proc.stderr.read())
                    proc.send_signal(signal.SIGINT)
                    proc.communicate(timeout=30)
                    assert proc.returncode == 0, (way, proc.returncode)
                finally:
                    t3 = time.perf_counter()
                    c.destroy()
                    times[way]["destroy"].append(time.perf_counter() - t3)
                times[way]["create"].append(t1 - t0)
                times[way]["ready"].append(t2 - t0)
            finally:
                subprocess.run(["ip", "netns", "del", name], check=True)
    journal.close(remove=True)
    return times


def cell(t: list[float]) -> str:
    return f"{statistics.median(t) * 1e3:.0f} ({min(t) * 1e3:.0f}-{max(t) * 1e3:.0f})"


def print_runtimes(found: dict[str, dict[str, list[float]]], n: int, execs: int) -> None:
    print(f"{os.cpu_count()} cores; {n} containers each, {execs} execs in each; "
          "median (min-max) ms")
    print(f"{'':8}{'runc':>22}{'podman':>22}{'podman/runc':>13}")
    for step in STEPS:
        cells = [cell(found[name][step]) for name in ("runc", "podman")]
        ratio = statistics.median(found["podman"][step]) / statistics.median(found["runc"][step])
        print(f"{step:8}{cells[0]:>22}{cells[1]:>22}{ratio:>12.1f}x")
    t = found["podman"]["podman exec"]
    ratio = statistics.median(t) / statistics.median(found["runc"]["exec"])
    print(f"{'podman exec':12}{'-':>18}{cell(t):>22}{ratio:>12.1f}x  (over runc's exec)")


def print_nf(found: dict[str, dict[str, list[float]]], n: int) -> None:
    ways = list(found)
    print(f"\nan l2 NF (static engine, minimal image, raw api) under runc, {n} of each; "
          "median (min-max) ms from create()")
    print(f"{'':8}" + "".join(f"{way:>22}" for way in ways) + f"{'lazy/eager':>12}")
    for step in NF_STEPS:
        ratio = statistics.median(found["lazy"][step]) / statistics.median(found["eager"][step])
        print(f"{step:8}" + "".join(f"{cell(found[way][step]):>22}" for way in ways)
              + f"{ratio:>11.2f}x")
    if "previous" in found:
        ratio = statistics.median(found["lazy"]["ready"]) / \
            statistics.median(found["previous"]["ready"])
        print(f"ready: lazy/previous {ratio:.2f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--n", type=int, default=20, help="containers per runtime or way")
    ap.add_argument("--execs", type=int, default=5, help="execs per container")
    ap.add_argument("--only", choices=("runtimes", "nf"), help="one of the two comparisons")
    ap.add_argument("--previous-engine", type=Path,
                    help="a static engine to start eagerly beside (the behaviour before)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        return "needs root"
    names = ("runc",) if args.only == "nf" else ("runc", "podman")
    for name in names:
        problems = RUNTIMES[name].check()
        if problems:
            return f"runtime {name}: {'; '.join(problems)}"
    with tempfile.TemporaryDirectory() as state:
        if args.only != "nf":
            found = {name: measure(name, args.n, args.execs, Path(state))
                     for name in ("runc", "podman")}
            print_runtimes(found, args.n, args.execs)
        if args.only != "runtimes":
            print_nf(nf_ready(args.n, Path(state), args.previous_engine), args.n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
