#!/usr/bin/env python3
"""The engine's l3 NF on 1 and 2 cores (paper 004 Fig. 7's l3fwd, 002 C1's cores).

One l3 NF between the single tester's two ports (its one engine holds both:
one poller), 64-byte frames unpaced, 16 flows, for each data plane and nf_api:

  - bridge, nf_api raw: a port's frames spread over the NF's threads by the
    kernel (PACKET_FANOUT, by flow hash);
  - bridge, nf_api xdp: an AF_XDP socket per queue of veths made with 2;
  - ovs (OVS-DPDK), nf_api dpdk: the NF's vhost-user ports offer 2 queues and
    OVS hashes flows over them (tx-steering=hash).

Each row: the received rate in Mpps at 1 and 2 cores, their ratio (paper 004:
"l3fwd-2cores processes around 30% more packets than l3fwd-1core"), the
share of frames each of the 2-core NF's threads took, and how many pollers
shared how many cores (the plan's count). On a host with fewer cores than
pollers the second core is time-sliced, and the ratio says what that is
worth there, not what a core of its own would be. Not a test: run it on a
quiet host, as root:

    python3 bench/nf_cores.py [--seconds 5]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.runs import cnfperf, pollers  # noqa: E402  (one way to run a point)

# (what, its data plane's flags)
CASES = [
    ("bridge, nf_api raw", ("--switch", "bridge", "--api", "raw", "--nf-api", "raw")),
    ("bridge, nf_api xdp", ("--switch", "bridge", "--api", "raw", "--nf-api", "xdp")),
    ("ovs, nf_api dpdk", ("--switch", "ovs", "--api", "dpdk")),
]


def shares(point: dict) -> str:
    """`48 · 52`: the share of the NF's frames each thread took."""
    queues = next((nf.get("queues") for nf in point.get("nf_results") or []), None)
    total = sum(queues or ())
    return " · ".join(f"{100 * n / total:.0f}" for n in queues) if total else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5, help="measured seconds per point")
    args = ap.parse_args()
    print(f"{'data plane':<22} {'1 core Mpps':>12} {'2 cores Mpps':>13} {'2 / 1':>6} "
          f"{'frames per core %':>18}  pollers")
    with tempfile.TemporaryDirectory(prefix="cnfperf-bench-nf-cores-") as tmp:
        for what, flags in CASES:
            rates, last = [], {}
            for cores in (1, 2):
                last = cnfperf(Path(tmp), *flags, "--tester", "single", "--nfs", "1",
                               "--nf", "l3", "--nf-cores", str(cores), "--flows", "16",
                               "--size", "64", "--duration", f"{args.seconds:g}",
                               "--warmup", "0.5")
                rates.append((last.get("rx_pps") or 0) / 1e6)
            ratio = f"{rates[1] / rates[0]:.2f}" if rates[0] else "-"
            print(f"{what:<22} {rates[0]:>12.3f} {rates[1]:>13.3f} {ratio:>6} "
                  f"{shares(last):>18}  {pollers(last)}")


if __name__ == "__main__":
    main()
