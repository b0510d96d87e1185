#!/usr/bin/env python3
"""BESS, paper 001's switch, beside OVS-DPDK, VPP and testpmd, and BESS alone
reflecting the tester's frames (forward = reflect, its MACSwap: 001's baseline),
with 001's numbers beside them.

Per row and frame size (64, 1500 B): the unpaced throughput of one
single-process tester through the switch (Mpps, and Gbit/s of frames), and the
one-way p50/p99 latency at 1000 pps. The reflector row is the tester's one port
with the switch bouncing its frames; the others the switch between the tester's
two ports. One run per row; each row says how many busy pollers shared how many
cores. 001 ran BESS on its own core against a pktgen server over 40GbE: "BESS
processes 5 Mpps" at 64 B, 38 Gbit/s at the larger sizes, 9.3 µs mean latency
at 0.5 Mpps (pktgen to pktgen, NICs and a switch between). Not a test: run it
on a quiet host, as root, after `make switches`:

    python3 bench/bess.py [--seconds 5]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.runs import cnfperf, pollers  # noqa: E402  (one way to run a point)

# (label, cnfperf's flags): OVS first, the others given as a ratio to it.
ROWS = (("ovs", ["--switch", "ovs"]), ("testpmd", ["--switch", "testpmd"]),
        ("vpp", ["--switch", "vpp"]), ("bess", ["--switch", "bess"]),
        ("bess reflect", ["--switch", "bess", "--forward", "reflect"]))
SIZES = (64, 1500)
# Paper 001's numbers (§3.3, Fig. 4): its BESS MACSwap baseline.
PAPER = {64: "5 Mpps, 9.3 µs mean", 1500: "38 Gbit/s"}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=5.0)
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: it starts containers, switches and hugepages")
    print(f"host: {os.cpu_count()} cores; single tester; {args.seconds:g} s per row; one run each")
    print(f"{'switch':<13} {'size':>5} {'Mpps':>7} {'Gbit/s':>7} {'vs ovs':>7} {'p50 µs':>8} "
          f"{'p99 µs':>8}   {'pollers':<20} paper 001 (BESS, 40GbE)")
    with tempfile.TemporaryDirectory(prefix="cnfperf-bench-") as tmp:
        results = Path(tmp)
        for size in SIZES:
            ovs = None
            for label, flags in ROWS:
                common = [*flags, "--api", "dpdk", "--tester", "single", "--size", str(size),
                          "--duration", f"{args.seconds:g}", "--warmup", "1"]
                tput = cnfperf(results, *common, "--rate", "0")
                lat = cnfperf(results, *common, "--mode", "latency", "--rate", "1000")
                mpps = tput["rx_pps"] / 1e6
                ovs = mpps if label == "ovs" else ovs
                ratio = f"{mpps / ovs:.2f}" if ovs else "-"
                paper = PAPER[size] if label == "bess reflect" else ""
                print(f"{label:<13} {size:>5} {mpps:>7.2f} {mpps * size * 8 / 1e3:>7.1f} "
                      f"{ratio:>7} {(lat['lat_p50_ns'] or 0) / 1e3:>8.1f} "
                      f"{(lat['lat_p99_ns'] or 0) / 1e3:>8.1f}   {pollers(tput):<20} {paper}",
                      flush=True)


if __name__ == "__main__":
    main()
