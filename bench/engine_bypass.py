#!/usr/bin/env python3
"""Engine `mmap` and `xdp` over a veth pair vs the best peers on the machine.

One veth pair between two namespaces; sender on cpu 0, receiver on cpu 1 (the
veth's receive softirq runs on the sender's core, for every tool alike); 64 B
frames, burst 32, as fast as possible.

  PACKET_MMAP:  engine mmap send -> recv   vs  testpmd with the af_packet PMD (txonly -> rxonly);
                engine mmap send alone vs trafgen alone (TX_RING, qdisc bypass), both counted
                by the receiving veth with no receiver running
  AF_XDP:       engine xdp send -> recv    vs  testpmd with the af_xdp PMD (txonly -> rxonly);
                also the engine's dpdk api over that same af_xdp PMD

Rates are medians of per-second samples, the first partial second left out.
Not a test: run it on a quiet host, as root:

    python3 bench/engine_bypass.py [--seconds 5] [--repeat 3]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from engine_dpdk import (BURST, DST_MAC, ENGINE, RECEIVER_CPU, SENDER_CPU, SIZE, SRC_MAC, Result, busy_share,
                         check_engine, eal, engine_recv, engine_send, hugepages, keep_best, machine,
                         median_steady, print_table, processes, run_pair, testpmd, with_eal)

HUGEPAGES = 160


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


def counted_by_veth(name: str, argv: list[str], a: str, b: str, seconds: float, note: str) -> Result:
    """A sender alone, its rate read from the receiving veth's counter (no receiver app)."""
    with processes() as start:
        p = start(argv, a)
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
    return Result(name, rate, rate, note)


def trafgen(a: str, b: str, seconds: float) -> Result:
    frame = (f"{{ eth(da={DST_MAC}, sa={SRC_MAC}, type=0x0800), "
             "ipv4(saddr=10.99.9.1, daddr=10.99.9.2, proto=17, ttl=64), "
             f"udp(sport=9000, dport=9000), fill(0, {SIZE - 4 - 42}) }}")
    # -P 1: one generator, bound to cpu 0; leave socket sysctls and IRQs alone
    return counted_by_veth("trafgen alone (counted by the veth)",
                           ["trafgen", "-o", a, "-P", "1", "--no-sock-mem", "-Q", frame], a, b, seconds,
                           "sends only")


def engine_alone(engine: Path, api: list[str], a: str, b: str, seconds: float) -> Result:
    tool = engine_send(engine, api, seconds + 2, a)
    return counted_by_veth(f"engine {api[1]} send alone (counted by the veth)", tool.argv, a, b, seconds,
                           "sends only, same count as trafgen")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--repeat", type=int, default=1, help="runs per pair; the best one counts")
    ap.add_argument("--engine", type=Path, default=ENGINE)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (namespaces, AF_XDP, hugepages)")
    apis = check_engine(args.engine, "mmap")
    have_testpmd = shutil.which("dpdk-testpmd") is not None
    have_trafgen = shutil.which("trafgen") is not None

    print(f"host: {machine()}; sender on cpu {SENDER_CPU}, receiver on cpu {RECEIVER_CPU}; "
          f"{SIZE} B frames, burst {BURST}, {args.seconds:g} s per run")
    busy = busy_share()
    if busy > 0.1:
        print(f"warning: {busy:.0%} of the CPU is busy before we start: numbers will be low")

    mmap_rows: dict[str, Result] = {}
    xdp_rows: dict[str, Result] = {}
    s = args.seconds
    with hugepages(HUGEPAGES), veth_pair() as (a, b):
        af_packet = {n: f"net_af_packet0,iface={n},qpairs=1" for n in (a, b)}
        af_xdp = {n: f"net_af_xdp0,iface={n},start_queue=0,queue_count=1" for n in (a, b)}
        for _ in range(args.repeat):
            keep_best(mmap_rows, run_pair("engine mmap send -> recv",
                                          engine_recv(args.engine, ["--api", "mmap", "--iface", b], b),
                                          engine_send(args.engine, ["--api", "mmap", "--iface", a], s, a), s))
            keep_best(mmap_rows, engine_alone(args.engine, ["--api", "mmap", "--iface", a], a, b, s))
            if have_trafgen:
                keep_best(mmap_rows, trafgen(a, b, s))
            if have_testpmd:
                keep_best(mmap_rows, run_pair("testpmd af_packet txonly -> rxonly",
                                              testpmd("rxonly", RECEIVER_CPU, af_packet[b], b),
                                              testpmd("txonly", SENDER_CPU, af_packet[a], a), s))
            if "xdp" in apis:
                for mode in ("copy", "skb"):
                    xdp = ["--api", "xdp", "--xdp-mode", mode]
                    keep_best(xdp_rows, run_pair(f"engine xdp ({mode}) send -> recv",
                                                 engine_recv(args.engine, [*xdp, "--iface", b], b),
                                                 engine_send(args.engine, [*xdp, "--iface", a], s, a), s))
            if have_testpmd:
                keep_best(xdp_rows, run_pair("testpmd af_xdp txonly -> rxonly",
                                             testpmd("rxonly", RECEIVER_CPU, af_xdp[b], b),
                                             testpmd("txonly", SENDER_CPU, af_xdp[a], a), s))
            if "dpdk" in apis:
                tag = os.urandom(2).hex()
                keep_best(xdp_rows, run_pair(
                    "engine dpdk (af_xdp PMD) send -> recv",
                    with_eal(engine_recv(args.engine, ["--api", "dpdk"], b),
                             eal(f"cnfpb{tag}r", RECEIVER_CPU, af_xdp[b])),
                    with_eal(engine_send(args.engine, ["--api", "dpdk"], s, a),
                             eal(f"cnfpb{tag}t", SENDER_CPU, af_xdp[a])), s))
    if mmap_rows:
        base = "testpmd af_packet txonly -> rxonly" if have_testpmd else next(iter(mmap_rows))
        print_table("PACKET_MMAP on veth", list(mmap_rows.values()), base)
    if xdp_rows:
        base = "testpmd af_xdp txonly -> rxonly" if have_testpmd else next(iter(xdp_rows))
        print_table("AF_XDP on veth", list(xdp_rows.values()), base)


if __name__ == "__main__":
    main()
