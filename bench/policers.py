#!/usr/bin/env python3
"""The policer placements' CPU cycles per frame at one offered load.

One engine l2 NF on a kernel link (a bridge by default) between split raw ends,
an on/off source at --rate, above the policer's --policer-rate so that it drops,
on the same cores for every placement (the plan's: nothing else moves):

  engine  the NF's own token bucket, before it forwards (its user time);
  nft     nftables' netdev ingress of the link into the receiver (softirq of
          the core that receives the frame: the NF's, which sends into it);
  tc      tc's police action there: refused where the kernel lacks
          NET_ACT_POLICE, printed as such with cnfperf's reason.

Per placement, from the point's CPU accounting (cnfperf/run/cpu.py, the
report's CPU per node): the NF's cycles per frame it handled (user + system;
the kernel policers run outside it, so this is what moved from the NF), and
the path's cycles per offered frame: every node's user and system time plus
the softirq time of every core they ran on, each core once, over the frames
the sender offered in the window. The ratio is each placement's path cycles
to the engine placement's. Every engine sleeps between frames (poll =
interrupt), so that CPU time is work, not a poll loop. Not a test: run it on a
quiet host, as root:

    python3 bench/policers.py [--seconds 5] [--switch bridge] [--rate 200k]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.engine_dpdk import machine  # noqa: E402  (the benches' one line of host facts)
from bench.runs import cnfperf, pollers  # noqa: E402  (one way to run a point)

PLACEMENTS = ("engine", "nft", "tc")


def common(args: argparse.Namespace, policer: str) -> list[str]:
    return ["--switch", args.switch, "--api", "raw", "--tester", "split", "--nfs", "1",
            "--nf", "l2", "--poll", "interrupt", "--size", "64", "--rate", args.rate,
            "--onoff", str(args.onoff), "--policer", policer,
            "--policer-rate", args.policer_rate, "--policer-bucket", str(args.bucket),
            "--duration", f"{args.seconds:g}", "--warmup", "0.5"]


def nf_cycles(point: dict) -> float | None:
    rows = [r for r in point.get("cpu_usage") or [] if r["kind"] == "nf"]
    return rows[0].get("cycles_per_packet") if rows else None


def path_cycles(point: dict) -> tuple[float | None, int]:
    """(cycles per offered frame over every node and its cores' softirq, the
    frames offered in the window)."""
    rows = point.get("cpu_usage") or []
    sender = next((r for r in rows if r["kind"] == "send"), None)
    hz = next((r["tsc_hz"] for r in rows if r.get("tsc_hz")), None)
    if sender is None or not sender.get("packets") or hz is None:
        return None, 0
    if any(r.get("user_s") is None or r.get("system_s") is None for r in rows):
        return None, sender["packets"]
    seconds = sum(r["user_s"] + r["system_s"] for r in rows)
    seconds += sum({r["cores"]: r["softirq_s"] for r in rows}.values())   # a core once
    return seconds * hz / sender["packets"], sender["packets"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--switch", default="bridge", help="a kernel data plane (the bridge: its "
                    "port's ingress takes the kernel policers whatever the ends' api)")
    ap.add_argument("--rate", default="200k", help="offered rate, above --policer-rate")
    ap.add_argument("--policer-rate", default="100k")
    ap.add_argument("--bucket", type=int, default=32, help="the policer's bucket, frames")
    ap.add_argument("--onoff", type=int, default=256, help="frames back to back (0: steady)")
    args = ap.parse_args()
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}")
    print(f"{args.switch}, 1 l2 NF, raw split ends, 64 B, {args.rate} pps offered "
          f"(on/off {args.onoff}), policer {args.policer_rate} pps, bucket {args.bucket}, "
          f"{args.seconds:g} s each")
    # lost: what the sender sent and the receiver did not get (the policer's drops,
    # and any other loss, which at these rates there should be none of)
    print(f"{'policer':<8} {'offered':>9} {'rx kpps':>8} {'lost':>9} {'NF cyc/frame':>13} "
          f"{'path cyc/offered':>17} {'ratio':>6}")
    base = None
    with tempfile.TemporaryDirectory(prefix="cnfperf-bench-policers-") as tmp:
        for policer in PLACEMENTS:
            try:
                point = cnfperf(Path(tmp), *common(args, policer))
            except SystemExit as refused:   # cnfperf's own one-line reason (bench/runs.py)
                reason = str(refused.code).split("error: ", 1)[-1]
                print(f"{policer:<8} refused: {reason}")
                continue
            path, offered = path_cycles(point)
            nf = nf_cycles(point)
            base = path if policer == "engine" else base
            ratio = f"{path / base:.2f}" if path is not None and base else "-"
            [pair] = point["per_pair"]
            print(f"{policer:<8} {offered:>9,} {(pair.get('rx_pps') or 0) / 1e3:>8.1f} "
                  f"{pair.get('lost') or 0:>9,} {'-' if nf is None else f'{nf:,.0f}':>13} "
                  f"{'-' if path is None else f'{path:,.0f}':>17} {ratio:>6}   {pollers(point)}")


if __name__ == "__main__":
    main()
