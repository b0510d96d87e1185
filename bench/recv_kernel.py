#!/usr/bin/env python3
"""The engine's kernel apis' receivers against plain ones.

One veth pair between two namespaces; an unpaced engine `send --api raw -m`
on CPU 0 for the whole run; on CPU 1, in turns, for each api (raw, mmap,
xdp): a plain receiver that only counts what it takes (bench/rx_plain.c:
recvmmsg on a packet socket, a TPACKET_V3 ring walked, an AF_XDP socket in
copy mode), and the engine's `recv` on the same api, which checks every
frame (its headers, sequence number, timestamp) and takes its latency. Both
busy poll on one core. Per turn the frames taken per second (the plain
receiver's over its whole turn, the engine's over its first to last frame,
from its summary); a row is the median of --repeat turns, the rows taken in
turns so that they share whatever else the host does; then the engine /
plain ratio.

On a veth the kernel's delivery runs on the sender's CPU: by default a
receiver's rate may be the sender's (both rows equal). --rps moves the
socket apis' delivery onto the receiver's CPU (rps_cpus on the receiving
veth; XDP runs before RPS, in the veth's NAPI on the sender's CPU), so that
the receiving core is what limits them. Not a test: run it as root from the
repository on a quiet host:

    python3 bench/recv_kernel.py [--seconds 3] [--repeat 5] [--rps] [--apis raw,mmap,xdp]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engine_dpdk import ENGINE, REPO, machine
from engine_kernel import Pair, background, raw_sender, stop_summary, wait_ready

SEND_CPU, RECV_CPU = 0, 1
APIS = ("raw", "mmap", "xdp")


def build(directory: Path) -> tuple[Path, bool]:
    """bench/rx_plain.c, with its AF_XDP receiver where libxdp is installed."""
    exe = directory / "rx_plain"
    xdp = subprocess.run(["pkg-config", "--libs", "libxdp", "libbpf"], capture_output=True, text=True)
    extra = ["-DHAVE_XDP", *xdp.stdout.split()] if xdp.returncode == 0 else []
    subprocess.run(["gcc", "-O2", "-D_GNU_SOURCE", "-o", str(exe), str(REPO / "bench" / "rx_plain.c"), *extra],
                   check=True)
    return exe, bool(extra)


def plain(pair: Pair, exe: Path, api: str, seconds: float) -> float:
    out = subprocess.run(pair.run(1, RECV_CPU, [exe, api, pair.iface[1], seconds]), capture_output=True,
                         text=True, check=True, timeout=seconds + 30).stdout
    r = json.loads(out)
    return r["frames"] / r["seconds"]


def engine(pair: Pair, api: str, seconds: float) -> dict:
    """The engine's recv for `seconds`: its summary (rx_pps over its first to last frame)."""
    extra = {"raw": ["-m"], "mmap": [], "xdp": ["--xdp-mode", "copy"]}[api]
    with background(pair.run(1, RECV_CPU, [
            ENGINE, "recv", "--api", api, *extra, "--iface", pair.iface[1], "--src-ip", pair.ip[1],
            "--sport", 9000, "--cpu", RECV_CPU, "--duration", 0, "--interval", 0])) as p:
        wait_ready(p)
        time.sleep(seconds)
        return stop_summary(p)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=3, help="per turn (default 3)")
    ap.add_argument("--repeat", type=int, default=5, help="turns per row, their median kept (default 5)")
    ap.add_argument("--rps", action="store_true", help="the socket apis' delivery on the receiver's CPU")
    ap.add_argument("--apis", default=",".join(APIS), help="which apis (default raw,mmap,xdp)")
    args = ap.parse_args()
    apis = [a for a in args.apis.split(",") if a]
    if os.geteuid() != 0:
        print("needs root (namespaces, packet and AF_XDP sockets)", file=sys.stderr)
        return 1
    if unknown := [a for a in apis if a not in APIS]:
        print(f"--apis: no api {', '.join(unknown)} (raw, mmap, xdp)", file=sys.stderr)
        return 2
    if args.repeat < 1 or args.seconds < 2:
        print("--repeat must be at least 1 and --seconds at least 2", file=sys.stderr)
        return 2
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}; sender on cpu {SEND_CPU}, "
          f"receiver on cpu {RECV_CPU}" + ("; RPS to the receiver's CPU" if args.rps else ""))
    rows: dict[str, dict[str, list[float]]] = {a: {"plain": [], "engine": []} for a in apis}
    bad: dict[str, int] = {a: 0 for a in apis}
    with tempfile.TemporaryDirectory(prefix="cnfpbench-") as tmp, Pair(args.rps) as pair:
        exe, has_xdp = build(Path(tmp))
        if "xdp" in apis and not has_xdp:
            print("xdp left out: libxdp is not installed (pkg-config libxdp)")
            apis.remove("xdp")
        length = len(apis) * 2 * args.repeat * (args.seconds + 3) + 10
        sender = raw_sender(pair, SEND_CPU, length)
        with background(sender) as tx:
            wait_ready(tx)
            for _ in range(args.repeat):
                for api in apis:
                    rows[api]["plain"].append(plain(pair, exe, api, args.seconds))
                    summary = engine(pair, api, args.seconds)
                    rows[api]["engine"].append(summary["rx_pps"])
                    # a receiver started mid-stream refuses a flow's first frames
                    # until they re-anchor it (engine/src/core/seq.h)
                    bad[api] = max(bad[api], summary["bad"])
    print(f"\n{'api':<6} {'plain Mpps':>10} {'engine Mpps':>11} {'engine / plain':>15}   every turn (plain, engine)")
    for api in apis:
        p, e = (statistics.median(rows[api][k]) for k in ("plain", "engine"))
        turns = ", ".join(f"{a / 1e6:.3f} {b / 1e6:.3f}" for a, b in zip(rows[api]["plain"], rows[api]["engine"]))
        print(f"{api:<6} {p / 1e6:>10.3f} {e / 1e6:>11.3f} {e / p if p else 0:>15.2f}   {turns}"
              + (f"  (bad frames, at most {bad[api]} a turn)" if bad[api] > 16 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
