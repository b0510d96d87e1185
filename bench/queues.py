#!/usr/bin/env python3
"""A sender on one queue against the same sender on N (send --threads N), each
queue's thread on a core of its own: how a pair's traffic grows past one core.

The port is DPDK's net_null (a PMD that frees what it is given), so the rate
is the sender's alone: no link and no receiver to wait for. Frames are 64 B,
burst 32, the engine's whole stamp (sequence number and time) in each. The
flows (--flows, default 2 x N) are dealt out to the queues; each queue's
thread is registered with the EAL (its pool keeps a buffer cache for it).
A receiver on N queues needs a sender on N queues in front of it: 2N busy
pollers, more than a 2-core host has, so its rate is not measured here.

Each run's rate is its summary's tx_pps; a row is the median of --repeat runs,
the rows taken in turns. Not a test: run it as root on a host as quiet as you
can get:

    python3 bench/queues.py [--queues 2] [--seconds 4] [--repeat 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_dpdk import (BURST, DST_MAC, ENGINE, HUGEPAGES, SIZE, SRC_MAC, busy_share, check_engine, eal,  # noqa: E402
                         hugepages, machine)


def send(engine: Path, queues: int, flows: int, seconds: float) -> dict:
    """One run of an unpaced sender on `queues` queues of net_null, on cores 0…queues-1."""
    cpus = ",".join(str(c) for c in range(queues))
    argv = [engine, "send", "--api", "dpdk", "--src-ip", "10.99.9.1", "--dst-ip", "10.99.9.2",
            "--dport", "9000", "--src-mac", SRC_MAC, "--dst-mac", DST_MAC, "--rate", "0",
            "--threads", str(queues), "--cpu", cpus, "--flows", str(flows), "--duration", str(seconds),
            "--size", str(SIZE), "--burst", str(BURST), "--interval", "0",
            "--", *eal(f"cnfpq{os.urandom(2).hex()}", 0, "net_null0")]
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=seconds + 60)
    found = [json.loads(line) for line in done.stdout.splitlines() if '"summary"' in line]
    if done.returncode != 0 or not found:
        raise RuntimeError(f"engine exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return found[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queues", type=int, default=2, help="the many-queue row's queues (default 2)")
    ap.add_argument("--flows", type=int, help="flows of every row (default 2 x --queues)")
    ap.add_argument("--seconds", type=float, default=4, help="seconds per run (default 4)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per row; a row is their median (default 5)")
    ap.add_argument("--engine", type=Path, default=ENGINE)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (hugepages)")
    if args.queues < 2 or args.repeat < 1 or args.seconds < 1:
        sys.exit("--queues must be at least 2, --repeat at least 1 and --seconds at least 1")
    cores = len(os.sched_getaffinity(0))
    if args.queues > cores:
        sys.exit(f"--queues {args.queues}: this host gives us {cores} cores, one per queue is the point")
    check_engine(args.engine, "dpdk")
    flows = args.flows or 2 * args.queues
    print(f"host: {machine()}; net_null, {SIZE} B frames, burst {BURST}, {flows} flows, "
          f"{args.seconds:g} s per run, median of {args.repeat}")
    print(f"pollers: 1 queue = 1 poller on core 0; {args.queues} queues = {args.queues} pollers on cores "
          f"0-{args.queues - 1} (and the main thread, which sleeps between interval records)")
    busy = busy_share()
    if busy > 0.1:
        print(f"warning: {busy:.0%} of the CPU is busy before we start: numbers will be low")
    rows: dict[int, list[dict]] = {1: [], args.queues: []}
    with hugepages(HUGEPAGES):
        for _ in range(args.repeat):
            for q in rows:
                rows[q].append(send(args.engine, q, flows, args.seconds))
    one = statistics.median(r["tx_pps"] for r in rows[1])
    many = statistics.median(r["tx_pps"] for r in rows[args.queues])
    print(f"\n{'queues':>6} {'Mpps':>8}  runs (Mpps)")
    for q, runs in rows.items():
        print(f"{q:>6} {statistics.median(r['tx_pps'] for r in runs) / 1e6:8.2f}  "
              + " ".join(f"{r['tx_pps'] / 1e6:.1f}" for r in runs))
    last = rows[args.queues][-1]
    print("\nthe last run's queues (tx_packets): "
          + ", ".join(f"queue {q['queue']} on cpu {q['cpu']}: {q['tx_packets']}" for q in last["queues"]))
    print(f"ratio {args.queues} queues / 1 queue: {many / one:.2f} (the goal: >= {0.9 * args.queues:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
