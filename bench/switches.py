#!/usr/bin/env python3
"""Every DPDK switch side by side, beside paper 003's ranking (its Figs. 5.2,
5.9): VPP, Snabb (learning bridge and wire), Click, BESS, OVS-DPDK and testpmd.

For each switch and frame size (64, 1500 B): the unpaced throughput of one
single-process tester through the switch (Mpps), and the one-way p50/p99
latency at 1000 pps. One run per row; each row says how many busy pollers
shared how many cores (the tester and the switch's poll thread: 2 on a 2-core
host). 003 found VPP the best software switch and Snabb's delay always above
60 µs. Aim: VPP ≥ OVS-DPDK at 64 B. Not a test: run it on a quiet host, as root,
after `make switches`:

    python3 bench/switches.py [--seconds 5] [--switch vpp --switch ovs ...]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.runs import cnfperf, pollers  # noqa: E402  (one way to run a point)

# OVS-DPDK first: the others are given as a ratio to it.
SWITCHES = ("ovs", "testpmd", "vpp", "vpp-memif", "snabb", "snabb-wire", "click", "bess")
SIZES = (64, 1500)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--switch", action="append", choices=SWITCHES,
                   help="only these (repeatable; default: all)")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: it starts containers, switches and hugepages")
    print(f"host: {os.cpu_count()} cores; single tester; {args.seconds:g} s per row; one run each")
    print(f"{'switch':<11} {'size':>5} {'Mpps':>7} {'vs ovs':>7} {'p50 µs':>8} {'p99 µs':>8}   pollers")
    with tempfile.TemporaryDirectory(prefix="cnfperf-bench-") as tmp:
        results = Path(tmp)
        for size in SIZES:
            ovs = None
            for switch in args.switch or SWITCHES:
                common = ["--switch", switch, "--api", "dpdk", "--tester", "single",
                          "--size", str(size), "--duration", f"{args.seconds:g}", "--warmup", "1"]
                tput = cnfperf(results, *common, "--rate", "0")
                lat = cnfperf(results, *common, "--mode", "latency", "--rate", "1000")
                mpps = tput["rx_pps"] / 1e6
                if switch == "ovs":
                    ovs = mpps
                ratio = f"{mpps / ovs:.2f}" if ovs else "-"
                print(f"{switch:<11} {size:>5} {mpps:>7.2f} {ratio:>7} "
                      f"{(lat['lat_p50_ns'] or 0) / 1e3:>8.1f} {(lat['lat_p99_ns'] or 0) / 1e3:>8.1f}"
                      f"   {pollers(tput)}", flush=True)


if __name__ == "__main__":
    main()
