#!/usr/bin/env python3
"""A CPU quota sweep on a DPDK forwarder, beside paper 000's TC2 (Table 5).

The forwarder is OVS-DPDK in a container of its own (`--target switch`, the
paper's case) or a testpmd NF in a vhost-user pipeline (`--target nf`); a
single-process tester holds both ends. For each quota (100, 75, 50, 25, 12.5 %
of one core): the unpaced 64 B throughput, p50/p99 one-way latency at 1000 pps,
and each node's CPU seconds and cycles per packet over the measured window.

Aim: throughput falls in proportion to the quota (within 15 %), as TC2 shows
for OVS-DPDK: 14.84, 10.85, 5.65, 2.55, 1.15 Mpps. Where it does not, the CPU
rows say why (the forwarder did not use its whole share, or its core was
shared with the tester). Not a test: run it on a quiet host, as root:

    python3 bench/quota_sweep.py [--target switch|nf] [--seconds 5]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.runs import cnfperf, pollers  # noqa: E402  (one way to run a point)

QUOTAS = (100, 75, 50, 25, 12.5)
PAPER_MPPS = {100: 14.84, 75: 10.85, 50: 5.65, 25: 2.55, 12.5: 1.15}   # 000, Table 5, 64 B
TARGETS = {
    "switch": ("switch_quota", ["--switch", "ovs", "--switch-in", "container"]),
    "nf": ("nf_quota", ["--switch", "vhost", "--nfs", "1", "--nf", "testpmd"]),
}


def cpu_rows(point: dict) -> str:
    """`nf 0.25 s 1234 c/p; tester 0.98 s 85 c/p`: each node's CPU and cycles per packet."""
    parts = []
    for r in point.get("cpu_usage") or []:
        used = (r.get("user_s") or 0) + (r.get("system_s") or 0)
        cpp = r.get("cycles_per_packet")
        parts.append(f"{r['kind']} {used:.2f} s" + (f" {cpp:,.0f} c/p" if cpp else ""))
    return "; ".join(parts) or "(no CPU rows)"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", choices=TARGETS, default="switch")
    p.add_argument("--seconds", type=float, default=5.0)
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: it starts containers, OVS-DPDK and hugepages")
    field, flags = TARGETS[args.target]
    common = [*flags, "--api", "dpdk", "--tester", "single", "--size", "64",
              "--duration", f"{args.seconds:g}", "--warmup", "1"]
    print(f"host: {os.cpu_count()} cores; {args.target} under {field}; 64 B; one run per row")
    print(f"{'quota %':>8} {'Mpps':>7} {'of 100%':>8} {'aim':>6} {'paper':>6} "
          f"{'p50 µs':>7} {'p99 µs':>7}   CPU per node over the window; pollers")
    with tempfile.TemporaryDirectory(prefix="cnfperf-bench-") as tmp:
        results = Path(tmp)
        top = None
        for quota in QUOTAS:
            flag = "--" + field.replace("_", "-")
            tput = cnfperf(results, *common, flag, f"{quota:g}", "--rate", "0")
            lat = cnfperf(results, *common, flag, f"{quota:g}", "--mode", "latency",
                          "--rate", "1000")
            mpps = tput["rx_pps"] / 1e6
            top = top or mpps
            share = mpps / top
            aim = quota / 100
            ok = "ok" if abs(share - aim) <= 0.15 * aim else "off"
            print(f"{quota:>8g} {mpps:>7.2f} {share:>8.2f} {ok:>6} {PAPER_MPPS[quota]:>6.2f} "
                  f"{(lat['lat_p50_ns'] or 0) / 1e3:>7.1f} {(lat['lat_p99_ns'] or 0) / 1e3:>7.1f}"
                  f"   {cpu_rows(tput)}; {pollers(tput)}")


if __name__ == "__main__":
    main()
