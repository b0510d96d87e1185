#!/usr/bin/env python3
"""Virtual machines as network functions, against the same NFs in containers.

Runs cnfperf itself, one point at a time (bench/runs.py), and prints:

  1. startup: an NF ready (its engine's `ready`) after its node was created:
     a VM (QEMU start, guest boot, engine) against a container
  2. PVP through testpmd and OVS-DPDK, one l2 NF, 64 B: Mpps unpaced, and
     one-way p50/p99 at 1 kpps, the NF in a VM against in a container (ratio)
  3. a sweep of --points rates through testpmd, the l2 NF in a VM: its wall
     time and how many times the guest booted, with the VM kept between the
     points (vm_keep = yes, with its kept switch) against a fresh one for each
     (vm_keep = no: the switch still kept)

Every row says the accelerator (kvm, or tcg: emulated) and how many pollers
shared how many cores; `--accel kvm` on a host whose KVM boots the guest, `tcg`
to emulate (auto: kvm where it boots). Not a test: run it on a quiet host, as root:

    python3 bench/vms.py [--seconds 5] [--only 1,2,3] [--accel auto|kvm|tcg] [--points 6]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.runs import cnfperf, pollers, stored_run  # noqa: E402  (one way to run a point)

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


def sweep(results: Path, seconds: float, accel: str, points: int) -> None:
    """The same sweep twice, the switch kept: the VM kept with it, then booted per point."""
    rates = ",".join(str(1000 + 500 * k) for k in range(points))
    wall = {}
    for keep in ("yes", "no"):
        start = time.monotonic()
        run = stored_run(results, "--switch", "testpmd", *PVP, *placed("vm", accel), "--rate",
                         rates, "--duration", str(seconds), "--warmup", "0.5",
                         "--vm-keep", keep)
        took = time.monotonic() - start
        boots = 0
        for point in run["points"]:
            served = json.loads((Path(run["run_dir"]) / f"point{point['idx']}" /
                                 "switch.json").read_text())
            boots += sum(not guest["kept"] for guest in served["guests"].values()) \
                if served["guests"] else 1
        wall[keep] = took
        trials = len(run["points"]) * seconds
        print(f"3. {points}-point VM sweep, VM kept {keep:<3}: wall {took:6.1f} s, guest "
              f"booted {boots}x, {took / len(run['points']):5.1f} s a point "
              f"({trials:g} s of traffic)  accel {accel_of(run['points'][0]):<15} "
              f"{pollers(run['points'][0])}")
    print(f"3. kept against fresh: wall {wall['yes'] / wall['no']:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--only", default="1,2,3")
    parser.add_argument("--points", type=int, default=6)
    parser.add_argument("--accel", default="auto", choices=("auto", "kvm", "tcg"))
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/vms.py: run as root (it starts VMs, containers and switches)")
    steps = {"1": startup, "2": pvp,
             "3": lambda *a: sweep(*a, points=args.points)}
    with tempfile.TemporaryDirectory(prefix="cnfperf-bench-") as tmp:
        for key in args.only.split(","):
            steps[key](Path(tmp), args.seconds, args.accel)


if __name__ == "__main__":
    main()
