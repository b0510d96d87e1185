#!/usr/bin/env python3
"""What PACKET_AUXDATA costs a raw receiver.

The raw api asks the kernel for PACKET_AUXDATA, a control message beside every
frame it receives, to see what the kernel did to the frame (a checksum left
unfinished, a VLAN tag taken out: engine/README.md, *Frames as the wire
carried them*). This measures what that message costs the receiving side.

One veth pair between two namespaces; an unpaced engine `send --api raw -m`
on CPU 0 for the whole run; on CPU 1 the raw api's receive loop as `recv`
runs it (bench/rx_loop.c, built against the engine's static library:
rx_burst, classify, release), with PACKET_AUXDATA on and off in turns, on
the same link, the same cores, the same stream. Per turn: the frames taken
per second, and the ns per frame spent in bursts that brought frames (the
receiving work without the empty polls: on a veth the sender's CPU also
carries the kernel's delivery, so the rate may be the sender's). Best of
--repeat turns each way, and their ratios. Not a test: run it as root on a
quiet host:

    python3 bench/raw_auxdata.py [--seconds 3] [--repeat 3] [--mmsg]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from engine_dpdk import REPO, machine
from engine_kernel import Pair, background, raw_sender, wait_ready

SEND_CPU, RECV_CPU = 0, 1


def build(directory: Path) -> Path:
    """bench/rx_loop.c linked against the engine's static library (and the
    apis it registers: mmap, xdp with libxdp), in `directory`."""
    lib = REPO / "engine" / "build"
    exe = directory / "rx_loop"
    libs = [str(lib / "libengine_static.a"), str(lib / "libapi_mmap.a")]
    if (lib / "libapi_xdp.a").exists():
        libs += [str(lib / "libapi_xdp.a"), *subprocess.run(
            ["pkg-config", "--libs", "libxdp", "libbpf"], capture_output=True, text=True,
            check=True).stdout.split()]
    subprocess.run(["gcc", "-O3", "-msse4.2", "-D_GNU_SOURCE", "-I", str(REPO / "engine" / "src"),
                    "-o", str(exe), str(REPO / "bench" / "rx_loop.c"), *libs, "-lpthread", "-lm"],
                   check=True)
    return exe


def turn(pair: Pair, exe: Path, seconds: float, auxdata: bool, mmsg: bool) -> dict:
    argv = pair.run(1, RECV_CPU, [exe, pair.iface[1], seconds, int(auxdata), int(mmsg)])
    out = subprocess.run(argv, capture_output=True, text=True, check=True,
                         timeout=seconds + 30).stdout
    return json.loads(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=3, help="per turn")
    ap.add_argument("--repeat", type=int, default=3, help="turns each way, the best kept")
    ap.add_argument("--mmsg", action="store_true", help="recvmmsg: one system call per burst")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (namespaces, packet sockets)", file=sys.stderr)
        return 1
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="cnfpbench-") as tmp, Pair() as pair:
        exe = build(Path(tmp))
        length = 2 * args.repeat * (args.seconds + 1) + 5
        sender = raw_sender(pair, SEND_CPU, length)
        with background(sender) as tx:
            wait_ready(tx)
            turns = {True: [], False: []}
            for _ in range(args.repeat):
                for auxdata in (True, False):
                    turns[auxdata].append(turn(pair, exe, args.seconds, auxdata, args.mmsg))
    print(f"raw{' -m' if args.mmsg else ''} receiver, {args.seconds:g} s turns, "
          f"best of {args.repeat}:")
    print(f"{'PACKET_AUXDATA':<15} {'rx Mpps':>8} {'ns/frame':>9} {'dropped':>9}   "
          "every turn (Mpps, ns)")
    best = {}
    for auxdata in (True, False):
        runs = turns[auxdata]
        rate = max(r["frames"] / r["seconds"] for r in runs)
        cost = min(r["busy_ns_per_frame"] for r in runs)
        best[auxdata] = rate, cost
        every = ", ".join(f"{r['frames'] / r['seconds'] / 1e6:.3f} {r['busy_ns_per_frame']:.0f}"
                          for r in runs)
        print(f"{'on' if auxdata else 'off':<15} {rate / 1e6:>8.3f} {cost:>9.1f} "
              f"{max(r['dropped'] for r in runs):>9}   {every}")
        if any(r["ours"] != r["frames"] for r in runs):
            print("  (frames not the sender's were taken too)")
    (on_rate, on_cost), (off_rate, off_cost) = best[True], best[False]
    print(f"off / on: rate {off_rate / on_rate:.3f}, ns per frame {off_cost / on_cost:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
