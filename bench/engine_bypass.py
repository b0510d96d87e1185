#!/usr/bin/env python3
"""Engine `mmap` and `xdp` over a veth pair vs the best peers on the machine.

One veth pair between two namespaces; sender on cpu 0, receiver on cpu 1 (the
veth's receive softirq runs on the sender's core, for every tool alike); 64 B
frames, burst 32, as fast as possible.

  PACKET_MMAP:  engine mmap send -> recv   vs  trafgen (TX_RING, qdisc bypass; counted
                by the receiving veth) and testpmd with the af_packet PMD (txonly -> rxonly)
  AF_XDP:       engine xdp send -> recv    vs  testpmd with the af_xdp PMD (txonly -> rxonly)

Rates are medians of per-second samples, the first partial second left out.
Not a test: run it on a quiet host, as root:

    python3 bench/engine_bypass.py [--seconds 5] [--repeat 3]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engine_dpdk import (BURST, ENGINE, RECEIVER_CPU, SENDER_CPU, SIZE, Result, busy_share, eal,
                         engine_pair, hugepages, machine, median_steady, print_table, processes,
                         testpmd_pair)

HUGEPAGES = 160
SRC_MAC, DST_MAC = "02:00:5e:09:00:01", "02:00:5e:09:00:02"


@contextlib.contextmanager
def veth_pair():
    tag = os.urandom(2).hex()
    a, b = f"cnfpb{tag}a", f"cnfpb{tag}b"
    made = []
    try:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "add", ns], check=True)
            made.append(ns)
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
                           check=True)
        subprocess.run(["ip", "link", "add", a, "netns", a, "address", SRC_MAC, "type", "veth",
                        "peer", "name", b, "netns", b, "address", DST_MAC], check=True)
        for ns in (a, b):
            subprocess.run(["ip", "-n", ns, "link", "set", ns, "up"], check=True)
        yield a, b
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], check=False)


def rx_counter(ns: str) -> int:
    out = subprocess.run(["ip", "netns", "exec", ns, "cat", f"/sys/class/net/{ns}/statistics/rx_packets"],
                         capture_output=True, text=True, check=True).stdout
    return int(out)


def trafgen(a: str, b: str, seconds: float) -> Result:
    frame = (f"{{ eth(da={DST_MAC}, sa={SRC_MAC}, type=0x0800), "
             "ipv4(saddr=10.99.9.1, daddr=10.99.9.2, proto=17, ttl=64), "
             f"udp(sport=9000, dport=9000), fill(0, {SIZE - 4 - 42}) }}")
    with processes() as start:
        # -P 1: one generator, bound to cpu 0; leave socket sysctls and IRQs alone
        p = start(["trafgen", "-o", a, "-P", "1", "--no-sock-mem", "-Q", frame], a)
        time.sleep(1)
        samples = []
        last = rx_counter(b)
        for _ in range(int(seconds)):
            time.sleep(1)
            now = rx_counter(b)
            samples.append(float(now - last))
            last = now
        p.stop()
    rate = median_steady([0.0, *samples])
    return Result("trafgen (counted by the veth)", rate, rate, "sends only; nothing checked")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool; the best one counts")
    ap.add_argument("--engine", type=Path, default=ENGINE)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (namespaces, AF_XDP, hugepages)")
    apis = json.loads(subprocess.run([args.engine, "--version"], capture_output=True, text=True).stdout)["apis"]
    have_testpmd = shutil.which("dpdk-testpmd") is not None
    have_trafgen = shutil.which("trafgen") is not None

    print(f"host: {machine()}; sender on cpu {SENDER_CPU}, receiver on cpu {RECEIVER_CPU}; "
          f"{SIZE} B frames, burst {BURST}, {args.seconds:g} s per run")
    busy = busy_share()
    if busy > 0.1:
        print(f"warning: {busy:.0%} of the CPU is busy before we start: numbers will be low")

    mmap_rows: dict[str, Result] = {}
    xdp_rows: dict[str, Result] = {}

    def keep(rows: dict[str, Result], r: Result) -> None:
        if r.name not in rows or r.rx_pps > rows[r.name].rx_pps:
            rows[r.name] = r

    with hugepages(HUGEPAGES), veth_pair() as (a, b), tempfile.TemporaryDirectory(prefix="cnfpbench-"):
        tag = os.urandom(2).hex()
        for _ in range(args.repeat):
            if "mmap" in apis:
                keep(mmap_rows, engine_pair("engine mmap send -> recv", args.engine,
                                            ["--api", "mmap", "--iface", b], ["--api", "mmap", "--iface", a],
                                            args.seconds, rx_ns=b, tx_ns=a))
            if have_trafgen:
                keep(mmap_rows, trafgen(a, b, args.seconds))
            if have_testpmd:
                keep(mmap_rows, testpmd_pair("testpmd af_packet txonly -> rxonly",
                                             f"net_af_packet0,iface={b},qpairs=1",
                                             f"net_af_packet0,iface={a},qpairs=1",
                                             args.seconds, rx_ns=b, tx_ns=a))
            for mode in ("copy", "skb"):
                if "xdp" in apis:
                    keep(xdp_rows, engine_pair(f"engine xdp ({mode}) send -> recv", args.engine,
                                               ["--api", "xdp", "--xdp-mode", mode, "--iface", b],
                                               ["--api", "xdp", "--xdp-mode", mode, "--iface", a],
                                               args.seconds, rx_ns=b, tx_ns=a))
            if have_testpmd:
                keep(xdp_rows, testpmd_pair("testpmd af_xdp txonly -> rxonly",
                                            f"net_af_xdp0,iface={b},start_queue=0,queue_count=1",
                                            f"net_af_xdp0,iface={a},start_queue=0,queue_count=1",
                                            args.seconds, rx_ns=b, tx_ns=a))
            if "dpdk" in apis:
                keep(xdp_rows, engine_pair("engine dpdk (af_xdp PMD)", args.engine, ["--api", "dpdk"],
                                           ["--api", "dpdk"], args.seconds, rx_ns=b, tx_ns=a,
                                           rx_eal=eal(f"cnfpb{tag}r", RECEIVER_CPU,
                                                      f"net_af_xdp0,iface={b},start_queue=0,queue_count=1"),
                                           tx_eal=eal(f"cnfpb{tag}t", SENDER_CPU,
                                                      f"net_af_xdp0,iface={a},start_queue=0,queue_count=1")))
    if mmap_rows:
        base = "testpmd af_packet txonly -> rxonly" if have_testpmd else next(iter(mmap_rows))
        print_table("PACKET_MMAP on veth", list(mmap_rows.values()), base)
    if xdp_rows:
        base = "testpmd af_xdp txonly -> rxonly" if have_testpmd else next(iter(xdp_rows))
        print_table("AF_XDP on veth", list(xdp_rows.values()), base)


if __name__ == "__main__":
    main()
