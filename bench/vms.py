#!/usr/bin/env python3
"""Virtual machines as network functions, against the same NFs in containers.

Runs cnfperf itself, one point at a time (bench/runs.py), and prints:

  1. startup: an NF ready (its engine's `ready`) after its node was created:
     a VM (QEMU start, guest boot, engine) against a container
  2. PVP through testpmd and OVS-DPDK, one l2 NF, 64 B: Mpps unpaced, and
     one-way p50/p99 at 1 kpps, the NF in a VM against in a container (ratio)

Every row says the accelerator (kvm, or tcg: emulated) and how many pollers
shared how many cores; `--accel kvm` on a host whose KVM boots the guest, `tcg`
to emulate (auto: kvm where it boots). Not a test: run it on a quiet host, as root:

    python3 bench/vms.py [--seconds 5] [--only 1,2] [--accel auto|kvm|tcg]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.runs import cnfperf, pollers  # noqa: E402  (one way to run a point)

PVP = ("--api", "dpdk", "--tester", "single", "--nfs", "1", "--nf", "l2", "--size", "64")


def accel_of(point: dict) -> str:
    facts = point.get("vm_facts") or {}
    return facts.get("accel", "-") + (" (emulated)" if facts.get("accel") == "tcg" else "")


def row(what: str, value: str, other: str, ratio: float | None, point: dict) -> None:
    shown = f"{ratio:.2f}" if ratio is not None else "-"
    print(f"{what:<40} {value:>16}  container {other:>14}  ratio {shown:>6}  "
          f"accel {accel_of(point):<15} {pollers(point)}")


def placed(place: str, accel: str) -> tuple[str, ...]:
    return ("--nf-in", place) + (("--accel", accel) if place == "vm" else ())


def startup(results: Path, seconds: float, accel: str) -> None:
    ready = {}
    for place in ("container", "vm"):
        p = cnfperf(results, "--switch", "testpmd", *PVP, *placed(place, accel), "--rate", "10k",
                    "--duration", str(seconds), "--warmup", "0.5")
        ready[place] = (p["nf_results"][0]["ready_s"], p)
    vm, p = ready["vm"]
    row("1. NF ready after its node's creation", f"{vm:.2f} s", f"{ready['container'][0]:.3f} s",
        vm / ready["container"][0], p)


def pvp(results: Path, seconds: float, accel: str) -> None:
    for switch in ("testpmd", "ovs"):
        got = {}
        for place in ("container", "vm"):
            rx = cnfperf(results, "--switch", switch, *PVP, *placed(place, accel),
                         "--duration", str(seconds), "--warmup", "1")
            lat = cnfperf(results, "--switch", switch, *PVP, *placed(place, accel),
                          "--mode", "latency", "--rate", "1000", "--duration", str(seconds),
                          "--warmup", "0.5")
            got[place] = (rx, lat)
        (rx_c, lat_c), (rx_v, lat_v) = got["container"], got["vm"]
        row(f"2. PVP {switch}: Mpps", f"{rx_v['rx_pps'] / 1e6:.3f}",
            f"{rx_c['rx_pps'] / 1e6:.3f}", rx_v["rx_pps"] / rx_c["rx_pps"], rx_v)
        for key in ("p50", "p99"):
            v, c = lat_v[f"lat_{key}_ns"] / 1e3, lat_c[f"lat_{key}_ns"] / 1e3
            row(f"2. PVP {switch}: one-way {key} at 1 kpps", f"{v:.0f} us", f"{c:.0f} us",
                v / c, lat_v)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--only", default="1,2")
    parser.add_argument("--accel", default="auto", choices=("auto", "kvm", "tcg"))
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/vms.py: run as root (it starts VMs, containers and switches)")
    steps = {"1": startup, "2": pvp}
    with tempfile.TemporaryDirectory(prefix="cnfperf-bench-") as tmp:
        for key in args.only.split(","):
            steps[key](Path(tmp), args.seconds, args.accel)


if __name__ == "__main__":
    main()
