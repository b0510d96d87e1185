#!/usr/bin/env python3
"""Network functions in the path, against the goals of the NF capability.

Runs cnfperf itself (`cnfperf run --json`, results read back with `cnfperf
results show --json`), one point at a time, and prints what this host gives
beside each goal:

  1. single-process tester, 64 B, unpaced: OVS-DPDK >= 2 Mpps, testpmd >= 4 Mpps
  2. one-way p50 added per NF (least-squares slope over C = 0..4 NFs, at 1000 pps),
     on this host's cores shared by every poller: <= 20 us through a 4-NF vhost
     pipeline and a bridge chain (issue 25), memif's beside them; each poll mode,
     spread over the cores as the plan places them (the tester, then each NF on
     the next core in turn) and all on one core (`cpus`), and which meets it
  3. NDR of a 5-NF memif pipeline at 64 B, poll = adaptive: aim >= 1 Mpps
  4. NF startup: one NF ready within 100 ms of its container's creation, a 5-NF
     chain within 1 s

Every row says how many pollers shared how many cores (the plan's own count).
Not a test: run it on a quiet host, as root:

    python3 bench/nf_paths.py [--seconds 5] [--only 1,2,3,4]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.runs import cnfperf, pollers  # noqa: E402  (one way to run a point)
from cnfperf.report.nfs import fit  # noqa: E402  (the report's own per-NF slope)


def row(what: str, value: str, goal: str, ratio: float | None, point: dict) -> None:
    shown = f"{ratio:.2f}" if ratio is not None else "-"
    print(f"{what:<44} {value:>14}   goal {goal:<12} ratio {shown:>6}   {pollers(point)}")


def single_tester(results: Path, seconds: float) -> None:
    for switch, goal in (("ovs", 2e6), ("testpmd", 4e6)):
        p = cnfperf(results, "--switch", switch, "--api", "dpdk", "--tester", "single",
                    "--size", "64", "--duration", str(seconds), "--warmup", "1")
        rx = p["rx_pps"]
        row(f"1. single tester through {switch}, 64 B", f"{rx / 1e6:.2f} Mpps",
            f">= {goal / 1e6:g} Mpps", rx / goal, p)


# Each data plane busy-polling (what a host with a core per poller would show until
# the pollers outnumber the cores), with its engines waiting for Rx interrupts
# where the PMD has them (vhost, kernel sockets; memif has none), and adaptive:
# asleep until shortly before the next frame is due (its pace told by --rate).
# The bridge's NFs use raw sockets: mmap's TPACKET_V3 ring hands a sleeping reader
# whole blocks, on a block's timeout at a low rate (about 1 ms per hop here).
PER_NF_GOAL_US = 20.0
PER_HOP = (("memif", "dpdk", ("busy", "adaptive")),
           ("vhost", "dpdk", ("busy", "interrupt", "adaptive")),
           ("bridge", "raw", ("busy", "interrupt", "adaptive")))


def placements() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Where the point's nodes run: spread as the plan places them, or every
    one on the last usable core. A node that sleeps is woken by the one
    before it; on another core that takes an inter-processor interrupt and
    the idle core's exit (tens of us in a VM), on the same core a context
    switch (`perf bench sched pipe` shows both)."""
    last = max(os.sched_getaffinity(0))
    return (("spread", ()), ("one core", ("--cpus", str(last))))


def per_hop(results: Path, seconds: float) -> None:
    goal = PER_NF_GOAL_US
    for switch, api, polls in PER_HOP:
        slopes = {}
        for poll in polls:
            for where, cpus in placements():
                xs, ys, last = [], [], None
                for nfs in range(0, 5):
                    if nfs == 0 and switch in ("memif", "vhost"):
                        continue   # a single tester cannot close a vhost or memif link on itself
                    last = cnfperf(results, "--switch", switch, "--api", api, "--tester", "single",
                                   "--nfs", str(nfs), "--mode", "latency", "--poll", poll,
                                   "--nf-api", "dpdk" if api == "dpdk" else "raw",
                                   "--duration", str(seconds), "--warmup", "0.5", *cpus)
                    xs.append(nfs)
                    ys.append(last["lat_p50_ns"] / 1e3)
                per_nf, _ = fit(xs, ys)
                slopes[f"{poll} {where}"] = per_nf
                shape = "chain" if switch == "bridge" else "pipeline"
                row(f"2. p50/NF {switch} {shape} {poll}, {where} ({', '.join(f'{y:.0f}' for y in ys)} us)",
                    f"{per_nf:.1f} us/NF", f"<= {goal:g} us",
                    goal / per_nf if per_nf > 0 else None, last)
        meets = [how for how, v in slopes.items() if v <= goal]
        print(f"   {switch} slope: " + ", ".join(f"{how} {v:.1f}" for how, v in slopes.items())
              + f" us/NF; meets <= {goal:g} us: {', '.join(meets) or 'none'}")


def ndr(results: Path, seconds: float) -> None:
    p = cnfperf(results, "--switch", "memif", "--api", "dpdk", "--tester", "single",
                "--nfs", "5", "--poll", "adaptive", "--size", "64", "--rate", "ndr",
                "--search", "bisect", "--latency-at", "none",
                "--trial-duration", str(seconds), "--duration", str(seconds), "--warmup", "0.5")
    found = p.get("search_rate_pps") or 0
    row("3. NDR, 5-NF memif pipeline, adaptive", f"{found / 1e6:.2f} Mpps", ">= 1 Mpps",
        found / 1e6, p)


def startup(results: Path, seconds: float) -> None:
    for nfs, goal in ((1, 0.1), (5, 1.0)):
        p = cnfperf(results, "--switch", "bridge", "--api", "raw", "--nfs", str(nfs),
                    "--rate", "1000", "--duration", "1", "--warmup", "0.2")
        ready = max(nf["ready_s"] for nf in p["nf_results"])
        row(f"4. {nfs} NF{'s' if nfs > 1 else ''} ready (slowest, bridge chain)",
            f"{ready * 1e3:.0f} ms", f"<= {goal * 1e3:g} ms", goal / ready if ready else None, p)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--only", default="1,2,3,4")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (namespaces, containers, hugepages)")
    print(f"host: {os.cpu_count()} cores; ratio = measured / goal (latency, startup: "
          "goal / measured), > 1 meets it")
    steps = {"1": single_tester, "2": per_hop, "3": ndr, "4": startup}
    with tempfile.TemporaryDirectory(prefix="cnfperf-bench-") as results:
        for step in args.only.split(","):
            steps[step.strip()](Path(results), args.seconds)


if __name__ == "__main__":
    main()
