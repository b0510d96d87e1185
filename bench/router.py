#!/usr/bin/env python3
"""The kernel as the NF (nf = router) against the engine's l3 NF on the same path.

One NF on a bridge between the single tester's two ports, raw ends (the tester's
one engine holds both: one poller, one clock), for each NF kind:

  1. 64-byte frames, unpaced: the received rate in Mpps, and the NF's cycles per
     frame (a router's: its cores' softirq, with its RPS map on its core; the
     engine's: its process's user and system time);
  2. 1000 pps: one-way latency p50 and p99 in microseconds;

and, for the router, the same unpaced point with its flows spread over --routes
prefixes (one flow each), to see what a larger table costs. Each row says how
many pollers shared how many cores (the plan's count): the router is none, the
l3 NF one. Not a test: run it on a quiet host, as root:

    python3 bench/router.py [--seconds 5] [--switch bridge] [--routes 1,64,1024]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.runs import cnfperf, pollers  # noqa: E402  (one way to run a point)


def common(switch: str, nf: str, seconds: float) -> list[str]:
    return ["--switch", switch, "--api", "raw", "--tester", "single", "--nfs", "1", "--nf", nf,
            "--size", "64", "--duration", f"{seconds:g}", "--warmup", "0.5"]


def cycles(point: dict) -> str:
    rows = [r for r in point.get("cpu_usage") or [] if r["kind"] == "nf"]
    values = [r["cycles_per_packet"] for r in rows if r.get("cycles_per_packet")]
    return f"{values[0]:,.0f}" if values else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--switch", default="bridge", help="a kernel data plane: veth, bridge, macvlan")
    ap.add_argument("--routes", default="1,64,1024",
                    help="the router's routes for the spread rows, comma-separated")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cnfperf-bench-router-") as tmp:
        results = Path(tmp)
        print(f"{'NF':<22} {'Mpps 64 B':>10} {'cycles/frame':>13} {'p50 µs':>8} {'p99 µs':>8}")
        for nf in ("router", "l3"):
            peak = cnfperf(results, *common(args.switch, nf, args.seconds), "--rate", "0")
            slow = cnfperf(results, *common(args.switch, nf, args.seconds), "--rate", "1000")
            p50, p99 = (slow.get(k) for k in ("lat_p50_ns", "lat_p99_ns"))
            print(f"{nf:<22} {(peak.get('rx_pps') or 0) / 1e6:>10.3f} {cycles(peak):>13} "
                  f"{(p50 or 0) / 1e3:>8.1f} {(p99 or 0) / 1e3:>8.1f}   {pollers(peak)}")
        for routes in (int(r) for r in args.routes.split(",") if r.strip()):
            if routes == 1:
                continue
            peak = cnfperf(results, *common(args.switch, "router", args.seconds), "--rate", "0",
                           "--nf-routes", str(routes), "--flows", str(routes))
            print(f"{f'router, {routes} routes':<22} {(peak.get('rx_pps') or 0) / 1e6:>10.3f} "
                  f"{cycles(peak):>13} {'':>8} {'':>8}   {pollers(peak)}")


if __name__ == "__main__":
    main()
