#!/usr/bin/env python3
"""A point on two hosts against the same point on one.

The host under test is the tests' kind (tests/sshhosts.py): an sshd in
namespaces of its own on this machine, two veth wires to it. So the two
"hosts" share this machine's cores: what this measures is cnfperf's own cost
of a second host (SSH, the agent, building a part there, the NICs lent and
given back) and the path's, not two machines' worth of CPU.

  overhead:    the same fixed-rate points (bridge, raw, single tester, 1 s) run
               on this host alone and with the switch on the other host: the
               seconds a point takes beyond its warm-up and measurement (set-up
               to first packet, and teardown), and what a run adds once
               (connecting, the agent's start and preflight), medians of --repeat
  throughput:  the switch on the host under test, the tester on this host
               (frames cross the wires: TG–DUT) against the tester on the host
               under test beside it (its usual ports: veth or vhost-user),
               rate 0 (as fast as the tester sends), rx Mpps and the ratio;
               for DPDK switches once per --nic-driver (how DPDK, the
               switch's and the tester's, opens the wires' NICs)
  sharing:     two pairs, rate 0, TG–DUT: each port on a wire of its own (4
               wires) against all four sharing one (share_wires: macvlan
               children of the NICs, told apart by MAC), rx Mpps and the ratio

Not a test: run it on a quiet host, as root:

    python3 bench/two_hosts.py [--repeat 3] [--switch bridge,ovs] [--nic-driver af_packet,af_xdp]
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
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests")]

import sshhosts  # noqa: E402  (the tests' hosts; needs tests/ on the path)

WARMUP, DURATION = 0.5, 1.0
POINTS, RATES = 4, "10k,11k,12k,13k"   # the same point, four times over
APIS = {"bridge": "raw", "ovs": "dpdk", "testpmd": "dpdk"}


def cnfperf(results: Path, *args: str) -> tuple[dict, float]:
    """A run's --json outcome and its wall-clock seconds."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "cnfperf", "run", *args, "--tester", "single",
                           "--warmup", str(WARMUP), "--json", "--results", str(results)],
                          cwd=REPO, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    took = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"cnfperf {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    return json.loads(done.stdout), took


def rx_mpps(results: Path, outcome: dict) -> float:
    run = json.loads(subprocess.run(
        [sys.executable, "-m", "cnfperf", "results", "show", outcome["outcome"]["run_id"],
         "--json", "--results", str(results)], cwd=REPO, capture_output=True, text=True,
        check=True).stdout)
    return run["points"][0]["rx_pps"] / 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--switch", default="bridge,ovs")
    p.add_argument("--nic-driver", default="af_packet,af_xdp")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    print(f"machine: {platform.node()}, {os.cpu_count()} cores; the two hosts share them")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        results = tmp / "results"
        with sshhosts.hosts(tmp / "lab", ["dut"], wires=[("local", "dut")] * 4) as lab:
            inv = ["--hosts", str(lab.inventory)]
            point = ["--switch", "bridge", "--api", "raw", "--duration", str(DURATION)]
            print(f"\noverhead: seconds beyond warm-up and measurement (median of {args.repeat}): "
                  f"per point, from a run of {POINTS} points against a run of 1; per run, what "
                  "is left (connecting, the agent's start)")
            for label, where in (("one host", []), ("two hosts", [*inv, "--dut-host", "dut"])):
                per_point, per_run = [], []
                for _ in range(args.repeat):
                    one = cnfperf(results, *point, "--rate", "10k", *where)[1]
                    many = cnfperf(results, *point, "--rate", RATES, *where)[1]
                    extra = (many - one) / (POINTS - 1) - WARMUP - DURATION
                    per_point.append(extra)
                    per_run.append(one - WARMUP - DURATION - extra)
                print(f"  {label:10} per point {statistics.median(per_point):5.2f} s   "
                      f"per run {statistics.median(per_run):5.2f} s")

            print("\nthroughput: rate 0 (as fast as the single tester sends), 64 B; "
                  "one poller for the tester, and the switch's own")
            print(f"  {'switch':8} {'nic_driver':10} {'TG–DUT Mpps':>12} {'tester on DUT':>14} "
                  f"{'ratio':>7}")
            for switch in args.switch.split(","):
                flags = ["--switch", switch, "--api", APIS[switch], "--rate", "0",
                         "--duration", "3", *inv]
                beside = rx_mpps(results, cnfperf(results, *flags, "--dut-host", "dut",
                                                  "--tester-host", "dut")[0])
                # the bridge takes its NICs whole: no driver to choose
                drivers = args.nic_driver.split(",") if APIS[switch] == "dpdk" else ["-"]
                for driver in drivers:
                    chosen = ["--nic-driver", driver] if driver != "-" else []
                    across = rx_mpps(results, cnfperf(results, *flags, "--dut-host", "dut",
                                                      *chosen)[0])
                    print(f"  {switch:8} {driver:10} {across:12.3f} {beside:14.3f} "
                          f"{across / beside:7.2f}")

            print("\nsharing: two pairs, rate 0, 64 B, TG–DUT; a wire per port against one "
                  "shared by all four ports")
            one = tmp / "one-wire.toml"
            head, _, wires = lab.inventory.read_text().partition("[[wire]]")
            one.write_text(head + "[[wire]]" + wires.split("[[wire]]")[0])
            print(f"  {'switch':8} {'own wires Mpps':>15} {'one shared Mpps':>16} {'ratio':>7}")
            for switch in args.switch.split(","):
                flags = ["--switch", switch, "--api", APIS[switch], "--rate", "0",
                         "--duration", "3", "--pairs", "2", "--dut-host", "dut"]
                own = rx_mpps(results, cnfperf(results, *flags, *inv)[0])
                shared = rx_mpps(results, cnfperf(results, *flags, "--hosts", str(one),
                                                  "--share-wires")[0])
                print(f"  {switch:8} {own:15.3f} {shared:16.3f} {shared / own:7.2f}")


if __name__ == "__main__":
    main()
