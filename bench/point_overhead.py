#!/usr/bin/env python3
"""What a sweep's point costs beyond what it measures: a 20-point rate sweep
through OVS-DPDK with the single tester and 1 s points, the switch kept
between points (switch_keep = yes) against a fresh switch per point (no, as
before), in one run; and the same sweep over veth (a kernel data plane: nothing
to keep), for the floor.

Per point: its wall time (from its start to the next point's, the last one's to
the run's end) minus its warm-up and duration, the median over the sweep's
points after the first (the first starts the switch either way, and prepares
the run's images); and the whole run's wall time over its points. Prints
kept / fresh. Each row says how many pollers shared how many cores. Not a test:
as root, after `make build`, on a quiet host:

    python3 bench/point_overhead.py [--points 20] [--runs 1] [--warmup 0.2]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.runs import pollers, stored_run  # noqa: E402

DURATION = 1.0
RATE_STEP = 1000   # paced and low: every point the same little work, the overhead apart


def sweep(results: Path, points: int, warmup: float, *args: str) -> dict:
    """One run of the sweep, as stored."""
    rates = ",".join(str(RATE_STEP * (i + 1)) for i in range(points))
    return stored_run(results, "--tester", "single", "--rate", rates, "--duration", f"{DURATION:g}",
                      "--warmup", f"{warmup:g}", *args)


def overheads(run: dict, warmup: float) -> tuple[float, float, str]:
    """(median overhead of a point after the first, the run's wall time per
    point minus the measured time, its pollers) in seconds."""
    points = sorted(run["points"], key=lambda p: p["idx"])
    bad = [p for p in points if p["status"] != "done"]
    if bad:
        sys.exit(f"point {bad[0]['idx'] + 1}: {bad[0]['status']}: {bad[0].get('error')}")
    ends = [p["started"] for p in points[1:]] + [run["finished"]]
    walls = [end - p["started"] for p, end in zip(points, ends)]
    measured = warmup + DURATION
    per_point = statistics.median(w - measured for w in walls[1:]) if len(walls) > 1 else \
        walls[0] - measured
    whole = (run["finished"] - run["started"]) / len(points) - measured
    return per_point, whole, pollers(points[0])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--points", type=int, default=20)
    p.add_argument("--runs", type=int, default=1, help="sweeps of each kind, alternating")
    p.add_argument("--warmup", type=float, default=0.2)
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: it starts OVS, containers and hugepages")
    print(f"host: {os.cpu_count()} cores; single tester; {args.points} points of "
          f"{DURATION:g} s (+{args.warmup:g} s warm-up); overhead = wall - warm-up - duration; "
          f"{args.runs} run(s) each")
    cases = {"ovs kept": ("--switch", "ovs", "--api", "dpdk", "--switch-keep", "yes"),
             "ovs fresh": ("--switch", "ovs", "--api", "dpdk", "--switch-keep", "no"),
             "veth": ("--switch", "veth", "--api", "raw")}
    found: dict[str, list[tuple[float, float]]] = {case: [] for case in cases}
    shared = {}
    with tempfile.TemporaryDirectory(prefix="cnfperf-bench-") as tmp:
        for _ in range(args.runs):
            for case, flags in cases.items():
                per_point, whole, shared[case] = overheads(
                    sweep(Path(tmp), args.points, args.warmup, *flags), args.warmup)
                found[case].append((per_point, whole))
    print(f"{'':<10} {'s/point':>8} {'run/points':>10}   pollers")
    for case, values in found.items():
        per_point = statistics.median(v[0] for v in values)
        whole = statistics.median(v[1] for v in values)
        print(f"{case:<10} {per_point:>8.2f} {whole:>10.2f}   {shared[case]}")
    kept = statistics.median(v[0] for v in found["ovs kept"])
    fresh = statistics.median(v[0] for v in found["ovs fresh"])
    print(f"ovs overhead per point, kept / fresh: {kept / fresh:.2f} "
          f"({kept:.2f} s against {fresh:.2f} s)")


if __name__ == "__main__":
    main()
