#!/usr/bin/env python3
"""Back-to-back runs that start and stop engines, counting every way one ended.

Each run is a separate `cnfperf run` (fresh namespaces, data plane, containers
and engines); a run whose engine exits with anything but 0 (a crash while
stopping, say) fails its point and is counted with the engine's error. The
default is the case that used to crash: two memif pairs, latency and
throughput, 100 runs of each.

Not part of the test suite (it takes ~15 minutes). As root, after `make build`:

    python3 bench/teardown_loop.py [--runs 100] [--switch memif] [--pairs 2]
        [--mode latency,throughput] [--rate RATE]
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHORT = ["--duration", "1", "--warmup", "0.3"]


def one_run(switch: str, mode: str, pairs: int, rate: str | None, results: Path) -> str | None:
    """None when the run was done; otherwise why it was not."""
    argv = [sys.executable, "-m", "cnfperf", "run", "--switch", switch, "--api", "dpdk",
            "--mode", mode, "--pairs", str(pairs), *SHORT, "--json"]
    if rate:
        argv += ["--rate", rate]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=300,
                          stdin=subprocess.DEVNULL, env=dict(os.environ, CNFPERF_RESULTS=str(results)))
    try:
        outcome = json.loads(done.stdout)["outcome"]
    except (json.JSONDecodeError, KeyError):
        return f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
    if done.returncode == 0 and outcome["status"] == "done" and not outcome["left"]:
        return None
    return outcome.get("error") or f"exit {done.returncode}, left {outcome['left']}"


def reason(error: str) -> str:
    """The kind of failure, without run-specific names: 'exited with code 139 ...'."""
    m = re.search(r"exited with code -?\d+[^:;]*", error)
    return m[0] if m else error[:120]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--switch", default="memif")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--mode", default="latency,throughput")
    ap.add_argument("--rate", help="throughput runs' offered rate per pair (default: max)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root")
    failed_any = False
    with tempfile.TemporaryDirectory(prefix="cnfperf-loop-") as tmp:
        for mode in args.mode.split(","):
            rate = args.rate if mode == "throughput" else None
            tally: collections.Counter[str] = collections.Counter()
            started = time.monotonic()
            for i in range(args.runs):
                error = one_run(args.switch, mode, args.pairs, rate, Path(tmp))
                tally[reason(error) if error else "done"] += 1
                if error:
                    print(f"  run {i + 1}: {error}", file=sys.stderr)
                print(f"\r{args.switch} {mode} pairs={args.pairs}: {i + 1}/{args.runs}"
                      f" ({tally['done']} done)", end="", file=sys.stderr, flush=True)
            print(file=sys.stderr)
            bad = args.runs - tally["done"]
            failed_any |= bad > 0
            print(f"{args.switch} {mode} pairs={args.pairs}: {args.runs} runs in "
                  f"{time.monotonic() - started:.0f} s, {tally['done']} done, {bad} failed"
                  + "".join(f"\n  {n} × {why}" for why, n in tally.items() if why != "done"))
    return 1 if failed_any else 0


if __name__ == "__main__":
    sys.exit(main())
