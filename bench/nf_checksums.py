#!/usr/bin/env python3
"""What finishing the ends' UDP checksums costs a network function.

A veth's kernel sends UDP with the checksum left for the device to finish
(tx checksum offload); a network function that reads frames through a packet
socket or AF_XDP must finish it before sending the frame on, or the
receiver's kernel drops the datagram (engine/README.md, *Frames as the wire
carried them*). This compares one engine nf forwarding the same unpaced udp
stream two ways:

  partial:  the sender's veth as created (tx offload on): the nf finishes
            every checksum (a sum over the datagram)
  finished: tx offload off on the sender's veth (`ethtool -K ... tx off`): its
            kernel finishes them, the nf has nothing to do

sender (udp --mmsg, cpu 0) | nf (cpu 1, --poll interrupt) | receiver (udp,
cpu 0), three namespaces and two veth pairs; the nf's forwarded rate is the
median of its per-second records after the first. On a host where the
sender's kernel path, not the nf, sets that rate, the rates alone cannot show
the cost: `perf` (software clock) samples the nf meanwhile, and the share of
its samples in the checksum functions is what finishing costs it per frame
(the nf waits in epoll when idle, so its samples are its work). Also times
frame_csum_finish() alone.
Not a test: run it on a quiet host, as root:

    python3 bench/nf_checksums.py [--seconds 4] [--repeat 2]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engine_dpdk import ENGINE, REPO, machine, median_steady, processes

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cnfperf.host import udp_errors  # noqa: E402  (how a trial reads them)

# the nf's api as the table names it, and its options
APIS = {"raw -m": ["raw", "-m"], "mmap": ["mmap"], "xdp (copy)": ["xdp", "--xdp-mode", "copy"]}
SIZES = (64, 1500)
SENDER_CPU, NF_CPU = 0, 1
S_MAC, FI_MAC, FO_MAC, R_MAC = "02:c7:0e:00:01:01", "02:c7:0e:00:01:02", "02:c7:0e:00:02:02", "02:c7:0e:00:02:01"
S_IP, R_IP = "198.18.1.1", "198.18.2.1"


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True)


@contextlib.contextmanager
def chain():
    """Namespaces s, f, r; veths s - fi and fo - r; the ends route through the nf."""
    tag = os.urandom(2).hex()
    ns = {k: f"cnfpb{tag}{k}" for k in "sfr"}
    made = []
    try:
        for n in ns.values():
            ip("netns", "add", n)
            made.append(n)
            subprocess.run(["ip", "netns", "exec", n, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                            "net.ipv6.conf.default.disable_ipv6=1"], check=True)
        links = {"s": (ns["s"], S_MAC), "fi": (ns["f"], FI_MAC), "fo": (ns["f"], FO_MAC), "r": (ns["r"], R_MAC)}
        for a, b in (("s", "fi"), ("fo", "r")):
            ip("link", "add", f"cnfpb{tag}{a}", "netns", links[a][0], "address", links[a][1], "type", "veth",
               "peer", "name", f"cnfpb{tag}{b}", "netns", links[b][0], "address", links[b][1])
        for name, (n, _) in links.items():
            ip("-n", n, "link", "set", f"cnfpb{tag}{name}", "up")
        for end, addr, net, hop in (("s", S_IP, "198.18.2.0/24", FI_MAC), ("r", R_IP, "198.18.1.0/24", FO_MAC)):
            dev, gw = f"cnfpb{tag}{end}", addr.rsplit(".", 1)[0] + ".2"
            ip("-n", ns[end], "addr", "add", f"{addr}/24", "dev", dev)
            ip("-n", ns[end], "neigh", "add", gw, "lladdr", hop, "dev", dev)
            ip("-n", ns[end], "route", "add", net, "via", gw)
        yield tag, ns
    finally:
        for n in made:
            subprocess.run(["ip", "netns", "del", n], check=False)


def records(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            out.append(json.loads(line))
    return out


def csum_errors(netns: str) -> int:
    """The namespace's UDP InCsumErrors, as a trial reads them."""
    counters = udp_errors.read(netns)
    if counters is None:
        raise RuntimeError(f"cannot read the UDP counters of {netns}")
    return counters["udp_in_csum_errors"]


def csum_share(report: str) -> tuple[float, float]:
    """% of the samples in frame_csum_holds_pseudo (the test of the value,
    xdp; its inline first step, UDP's 0, is in the api's rx) and in
    frame_csum_finish (perf report --stdio --sort symbol)."""
    share = {"frame_csum_holds_pseudo": 0.0, "frame_csum_finish": 0.0}
    for line in report.splitlines():
        words = line.split()   # "5.66%  [.] frame_csum_finish  ..."
        if len(words) > 2 and words[0].endswith("%") and words[1] == "[.]" and words[2] in share:
            share[words[2]] += float(words[0].rstrip("%"))
    return share["frame_csum_holds_pseudo"], share["frame_csum_finish"]


def perf_share(pid: int, seconds: float, out: str) -> tuple[float, float]:
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4999", "-p", str(pid), "-o", out,
                    "--", "sleep", str(seconds)], check=True, capture_output=True)
    report = subprocess.run(["perf", "report", "-i", out, "--stdio", "--sort", "symbol"], check=True,
                            capture_output=True, text=True).stdout
    os.unlink(out)
    return csum_share(report)


def forward(api: list[str], size: int, partial: bool, seconds: float) -> tuple[float, int, tuple]:
    """The nf's forwarded rate (pps), the receiver's checksum errors and the %
    of the nf's samples spent finishing checksums."""
    with chain() as (tag, ns), processes() as start:
        if not partial:
            subprocess.run(["ip", "netns", "exec", ns["s"], "ethtool", "-K", f"cnfpb{tag}s", "tx", "off"],
                           check=True, capture_output=True)
        before = csum_errors(ns["r"])
        rx = start([ENGINE, "recv", "--api", "udp", "-m", "--src-ip", R_IP, "--sport", "9000", "--cpu",
                    SENDER_CPU, "--duration", "0", "--interval", "0"], ns["r"])
        rx.wait_for('"ready"')
        nf = start([ENGINE, "nf", "--api", *api, "--iface", f"cnfpb{tag}fi", "--iface2", f"cnfpb{tag}fo",
                    "--dst-mac", S_MAC, "--dst-mac2", R_MAC, "--cpu", NF_CPU, "--duration", "0",
                    "--interval", "1", "--size", size, "--poll", "interrupt"], ns["f"])
        nf.wait_for('"ready"')
        tx = start([ENGINE, "send", "--api", "udp", "-m", "--src-ip", S_IP, "--dst-ip", R_IP, "--dport", "9000",
                    "--size", size, "--rate", "0", "--cpu", SENDER_CPU, "--duration", seconds, "--interval", "0"],
                   ns["s"])
        time.sleep(1)
        share = perf_share(nf.proc.pid, seconds - 1.5, f"/tmp/cnfpbench-{tag}.perf")
        tx.wait_for('"summary"', timeout=seconds + 20)
        time.sleep(0.3)
        forwarded = nf.stop()
        rx.stop()
        rates = [r["tx_pps"] for r in records(forwarded) if r.get("type") == "interval"]
        return median_steady(rates), csum_errors(ns["r"]) - before, share


def finish_ns() -> dict[int, float]:
    """frame_csum_finish() alone, ns per frame, from a small C program
    linked against the engine's library (built in a directory of its own)."""
    with tempfile.TemporaryDirectory(prefix="cnfpbench-") as tmp:
        return _finish_ns(Path(tmp))


def _finish_ns(directory: Path) -> dict[int, float]:
    src = directory / "bench_csum.c"
    exe = directory / "bench_csum"
    src.write_text(r'''
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "core/packet.h"
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        unsigned len = (unsigned)atoi(argv[i]) - 4, n = 2000000;
        uint8_t *f = calloc(1, len);
        struct frame_addr a = { .src_ip = 0x010112c6, .dst_ip = 0x010212c6, .sport = 1, .dport = 2 };
        frame_build(f, len, &a);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (unsigned k = 0; k < n; k++) {
            f[60] = (uint8_t)k;
            frame_csum_finish(f, len);
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n;
        printf("%u %.1f %u\n", len + 4, ns, f[40]);
    }
    return 0;
}
''')
    lib = REPO / "engine" / "build" / "libengine_static.a"
    subprocess.run(["gcc", "-O3", "-msse4.2", "-D_GNU_SOURCE", "-I", str(REPO / "engine" / "src"), "-o",
                    str(exe), str(src), str(lib)], check=True)
    out = subprocess.run(["taskset", "-c", str(NF_CPU), str(exe), *map(str, (64, 512, 1500, 9000))],
                         capture_output=True, text=True, check=True).stdout
    return {int(line.split()[0]): float(line.split()[1]) for line in out.splitlines()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--repeat", type=int, default=2, help="runs per row, the best kept")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (namespaces, packet sockets)", file=sys.stderr)
        return 1
    print(f"machine: {machine()}")
    for size, ns in finish_ns().items():
        print(f"frame_csum_finish, {size:>4} B: {ns:7.1f} ns per frame")
    print(f"\n{'nf api':<10} {'size':>5} {'finished by':<12} {'forwarded kpps':>15} {'/ finished':>11} "
          f"{'csum errors':>12} {'nf samples: testing':>20} {'finishing':>10}")
    for name, api in APIS.items():
        for size in SIZES:
            best = {}
            for partial in (False, True):
                runs = [forward(api, size, partial, args.seconds) for _ in range(args.repeat)]
                best[partial] = max(runs)
            for partial in (False, True):
                pps, errors, share = best[partial]
                ratio = pps / best[False][0] if best[False][0] else 0
                print(f"{name:<10} {size:>5} {'the nf' if partial else 'the sender':<12} {pps / 1e3:>15.1f} "
                      f"{ratio:>11.2f} {errors:>12} {share[0]:>19.1f}% {share[1]:>9.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
