#!/usr/bin/env python3
"""Failover times of routing daemons: how long a path is out after a cut.

Four kernel routers in a diamond on a bridge (in, then top or bottom, then
out; bottom dearer), their routes FRR's; mid-trial the bridge stops
forwarding on top's port a (port:top.a), every interface keeping its
carrier, so only the protocol can tell. For each protocol and timers, --cuts cuts (one trial each, a
`repeat` of one run): the outage the receiver measured (its longest gap,
sequence numbers at 5 kpps: a frame every 0.2 ms) and when the daemons said a
session went down, median and max:

  - static routes watched by BFD (FRR 10.3, built: `make switches`) and eBGP
    with BFD, each at 100 ms × 2 (paper 002's timers) and 50 ms × 3;
  - OSPF at 1 s / 4 s (hello / dead), and with fast hello (0.25 s / 1 s).

Paper 002: OSPF fast hello "takes one second just to detect a failure"; BFD
with static routes "below 200 milliseconds" at 100 ms × 2. The routers, the
bridge and the tester's two ends share the host's cores (the row says how
many pollers on how many). Not a test: run it on a quiet host, as root:

    python3 bench/failover.py [--cuts 10]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.runs import pollers, stored_run  # noqa: E402  (one way to run a point)

DIAMOND = ("sender - in.a; in.b - top.a; in.c - bottom.a cost 2; top.b - out.a; "
           "bottom.b - out.b; out.c - receiver")
# (what, nf, its timers, how long the cut lasts: past the detection, s)
CASES = [
    ("static + BFD 100 ms × 2", "frr:static", ("--bfd-interval", "100", "--bfd-multiplier", "2"),
     1.0),
    ("static + BFD 50 ms × 3", "frr:static", ("--bfd-interval", "50", "--bfd-multiplier", "3"),
     1.0),
    ("BGP + BFD 100 ms × 2", "frr:bgp", ("--bfd-interval", "100", "--bfd-multiplier", "2"), 1.0),
    ("BGP + BFD 50 ms × 3", "frr:bgp", ("--bfd-interval", "50", "--bfd-multiplier", "3"), 1.0),
    ("OSPF 1 s / 4 s", "frr:ospf", ("--ospf-hello", "1", "--ospf-dead", "4"), 6.0),
    ("OSPF fast hello 0.25 s / 1 s", "frr:ospf", ("--ospf-hello", "0.25", "--ospf-dead", "1"),
     2.0),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cuts", type=int, default=10, help="cuts per protocol and timers")
    args = ap.parse_args()
    print(f"{'protocol, timers':<30} {'outage ms':>19} {'noticed ms':>19}")
    print(f"{'':<30} {'median':>9} {'max':>9} {'median':>9} {'max':>9}")
    with tempfile.TemporaryDirectory(prefix="cnfperf-bench-failover-") as tmp:
        for what, nf, timers, down_for in CASES:
            run = stored_run(Path(tmp), "--switch", "bridge", "--api", "raw", "--tester", "split",
                             "--poll", "interrupt", "--burst", "1", "--rate", "5000",
                             "--nf", nf, *timers, "--graph", DIAMOND, "--fault", "port:top.a",
                             "--fault-at", "1", "--fault-duration", f"{down_for:g}",
                             "--duration", f"{down_for + 2:g}", "--warmup", "0.5",
                             "--repeat", str(args.cuts))
            points = [p for p in run["points"] if p.get("status") == "done"]
            outages = [p["outage_ns"] / 1e6 for p in points if p.get("outage_ns") is not None]
            noticed = [p["fault_facts"]["noticed_ms"] for p in points
                       if (p.get("fault_facts") or {}).get("noticed_ms") is not None]
            cells = [f"{f(v):>9,.1f}" if v else f"{'-':>9}"
                     for v in (outages, noticed) for f in (statistics.median, max)]
            print(f"{what:<30} {' '.join(cells)}   {len(points)} cuts, "
                  f"{pollers(points[0]) if points else '-'}")


if __name__ == "__main__":
    main()
