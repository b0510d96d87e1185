#!/usr/bin/env python3
"""Benchmark (not a test): round trip at a fixed rate over a veth, the engine's
poll modes against sockperf under-load at the same rate.

The setting of bench/engine_kernel.py (one veth pair between two namespaces,
client on CPU 0, server on CPU 1, 64-byte frames, one frame per burst): the
engine's client/server with --poll adaptive (the server told the client's
rate, as the orchestrator tells receivers), interrupt and busy, and sockperf
under-load (--mps, --reply-every 1), each run `--runs` times in turn so that
the host's noise falls on all of them alike. Prints each one's median p50 and
p99 and their ratios to sockperf's, and, with --before ENGINE, the same for
another build's adaptive (the previous behaviour):

    python3 bench/poll_rtt.py [--rate 10000] [--duration 3] [--runs 3] [--before PATH]

Aim (issue 25): adaptive p50 and p99 <= 1.0 x sockperf under-load's. Busy
polling needs a core per poller: on two cores its client's spinning thread
shares CPU 0 with nothing else here, so it shows what a free core gives.
"server CPU" is the server's CPU time over its wall time: the share of its
core a poller sharing it would not get.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.engine_kernel import (ENGINE, PORT, RECV_CPU, SEND_CPU, Pair,  # noqa: E402  (one setting)
                                 host_facts, sockperf_rtt, summary_of, wait_ready)


def engine_rtt(pair: Pair, engine: Path, poll: str, duration: float, rate: int) -> dict:
    """One client/server run; the client's threads (two unless busy) share CPU 0.
    `cpu`: the server's CPU time over its wall time, ready to exit (what a
    poller sharing its core would not get)."""
    told = ["--rate", rate] if poll == "adaptive" else []
    threads = ["--rx-cpu", SEND_CPU] if poll != "busy" else []
    srv = pair.run(1, RECV_CPU, [engine, "server", "--src-ip", pair.ip[1], "--sport", PORT, "--poll", poll,
                                 *told, "--duration", 0, "--interval", 0])
    cli = pair.run(0, SEND_CPU, [engine, "client", "--src-ip", pair.ip[0], "--dst-ip", pair.ip[1],
                                 "--dport", PORT, "--poll", poll, "-b", 1, "--rate", rate,
                                 "--duration", duration, "--warmup", 0.5, "--interval", 0,
                                 "--cpu", SEND_CPU, *threads])
    s = subprocess.Popen(srv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         stdin=subprocess.DEVNULL)
    try:
        wait_ready(s)
        t0 = time.monotonic()
        done = subprocess.run(cli, capture_output=True, text=True, timeout=duration + 30)
        s.send_signal(signal.SIGINT)
        out, err = s.stdout.read(), s.stderr.read()
        # ip netns exec and taskset exec the engine: this pid is the engine's
        _, status, ru = os.wait4(s.pid, 0)
        wall = time.monotonic() - t0
        s.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if s.returncode is None:
            s.kill()
            s.wait()
    served = summary_of(out, err, s.returncode)
    lat = summary_of(done.stdout, done.stderr, done.returncode)["latency"]
    return {"p50": lat["p50_ns"] / 1e3, "p99": lat["p99_ns"] / 1e3, "poll": served.get("poll", {}),
            "cpu": (ru.ru_utime + ru.ru_stime) / wall}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=int, default=10000, help="messages per second (default 10000)")
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per run (default 3)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each (default 3; the median is shown)")
    ap.add_argument("--before", type=Path, help="another engine build: its adaptive, for the ratio to it")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("poll_rtt.py: needs root (namespaces)", file=sys.stderr)
        return 2
    if not ENGINE.exists() or (args.before and not args.before.exists()):
        print(f"poll_rtt.py: no engine at {args.before if ENGINE.exists() else ENGINE}", file=sys.stderr)
        return 2
    if not shutil.which("sockperf") or (os.cpu_count() or 1) < 2:
        print("poll_rtt.py: needs sockperf and two CPUs", file=sys.stderr)
        return 2

    runs = {"engine adaptive": lambda p: engine_rtt(p, ENGINE, "adaptive", args.duration, args.rate),
            "engine interrupt": lambda p: engine_rtt(p, ENGINE, "interrupt", args.duration, args.rate),
            "engine busy": lambda p: engine_rtt(p, ENGINE, "busy", args.duration, args.rate),
            "sockperf under-load": lambda p: sockperf_rtt(p, args.duration, args.rate)}
    if args.before:
        runs["adaptive (--before)"] = lambda p: engine_rtt(p, args.before, "adaptive", args.duration, args.rate)
    got: dict[str, list[dict]] = {name: [] for name in runs}
    with Pair() as pair:
        for _ in range(args.runs):
            for name, run in runs.items():
                got[name].append(run(pair))

    print(f"# {host_facts()}; {args.runs} runs of {args.duration:g} s each, RTT at {args.rate} pps, "
          "2 cores: client threads on CPU 0, server on CPU 1")
    med = {name: {k: statistics.median(r[k] for r in rs) for k in ("p50", "p99")} for name, rs in got.items()}
    ul = med["sockperf under-load"]
    print(f"{'':22} {'p50 us':>8} {'p99 us':>8} {'p50/sockperf':>13} {'p99/sockperf':>13} "
          f"{'server CPU':>11}   p99 of each run")
    for name, m in med.items():
        each = " ".join(f"{r['p99']:.0f}" for r in got[name])
        cpu = [r["cpu"] for r in got[name] if "cpu" in r]
        shown = f"{statistics.median(cpu) * 100:10.0f}%" if cpu else f"{'-':>11}"
        print(f"{name:22} {m['p50']:8.1f} {m['p99']:8.1f} {m['p50'] / ul['p50']:12.2f}x "
              f"{m['p99'] / ul['p99']:12.2f}x {shown}   {each}")
    poll = got["engine adaptive"][-1]["poll"]
    if poll:
        print(f"adaptive server, last run: {poll.get('arrivals')} arrivals, {poll.get('on_time')} on time, "
              f"gap {poll.get('gap_ns')} ns, {poll.get('sleeps')} sleeps, {poll.get('waits')} waits "
              f"({poll.get('woken')} woken), late {poll.get('late_ns_mean')} ns")
    a = med["engine adaptive"]
    print(f"aim: adaptive <= 1.0x sockperf under-load: p50 {a['p50'] / ul['p50']:.2f}x, "
          f"p99 {a['p99'] / ul['p99']:.2f}x")
    if args.before:
        b = med["adaptive (--before)"]
        print(f"adaptive / before: p50 {a['p50'] / b['p50']:.2f}x, p99 {a['p99'] / b['p99']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
