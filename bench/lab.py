#!/usr/bin/env python3
"""The lab's kernel paths side by side: SR-IOV virtual functions (QEMU's
emulated igb) against veth, netkit and the Linux bridge, on the lab's host
(`cnfperf lab`'s: a QEMU guest under TCG with Debian's 6.12 kernel, reached
over SSH), tester and switch both there.

  throughput: rate 0 (as fast as the single tester sends), 64 B, api raw:
              rx kpps, the median of --repeat trials
  latency:    1 kpps, 64 B: one-way p50 and p99 (µs)

Everything runs inside one emulated machine of --vcpus vCPUs (TCG: each a
thread of this machine's, on its cores): these are the emulator's numbers,
the ratio between the paths its only lesson, and the igb's VF-to-VF
switching is QEMU's code, not a NIC's. Not a test: run it as root, on a host
as quiet as you can get:

    python3 bench/lab.py [--repeat 3] [--switch sriov,veth,netkit,bridge]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]

from cnfperf.remote import lab  # noqa: E402  (the checkout's, run as a script)

ENGINE = REPO / "engine" / "build" / "cnfperf-engine"

WARMUP, DURATION = 0.5, 3.0


def points(results: Path, inventory: Path, *args: str) -> list[dict]:
    """A run on the lab's host (tester and switch there): its points as stored."""
    done = subprocess.run([sys.executable, "-m", "cnfperf", "run", "--hosts", str(inventory),
                           "--tester-host", "dut", "--dut-host", "dut", "--tester", "single",
                           "--api", "raw", "--size", "64", "--warmup", str(WARMUP),
                           "--duration", str(DURATION), *args, "--json",
                           "--results", str(results)],
                          cwd=REPO, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.exit(f"cnfperf run {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    return json.loads(done.stdout)["run"]["points"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--switch", default="sriov,veth,netkit,bridge")
    p.add_argument("--vcpus", type=int, default=lab.VCPUS)
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    lab.VCPUS = args.vcpus
    print(f"machine: {platform.node()}, {os.cpu_count()} cores; the lab's guest: "
          f"{args.vcpus} vCPUs under TCG on them, one busy poller (the single tester) "
          "sharing its vCPUs with the kernel's softirqs")
    switches = args.switch.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        lab.sweep()
        with lab.hosts(tmp / "lab", ["dut"], ENGINE, sriov={"dut": 1}, say=print) as up:
            flags = ["--switch", ",".join(switches), "--repeat", str(args.repeat)]
            fast = points(tmp / "results", up.inventory, *flags, "--rate", "0")
            slow = points(tmp / "results", up.inventory, "--switch", ",".join(switches),
                          "--rate", "1000")
    print(f"\n{'switch':8} {'kpps (rate 0)':>14} {'p50 µs':>8} {'p99 µs':>8}  (1 kpps)")
    for switch in switches:
        kpps = statistics.median(pt["rx_pps"] for pt in fast if pt["switch"] == switch) / 1e3
        [at] = [pt for pt in slow if pt["switch"] == switch]
        [pair] = at["per_pair"]
        print(f"{switch:8} {kpps:14.1f} {pair['lat_p50_ns'] / 1e3:8.0f} "
              f"{pair['lat_p99_ns'] / 1e3:8.0f}")


if __name__ == "__main__":
    main()
