"""MLRsearch against the binary search: the same data plane, link and cores,
each method run --reps times, 64-byte frames, the single tester.

For each data plane (memif: the tester's DPDK ends and one NF between them, as a
single tester cannot hold both ends of one memif link; ovs: OVS-DPDK between
the tester's ends) and method, every repetition is a search for NDR and PDR (0.5 %) at a
goal width of 0.5 %: MLRsearch (search = csit) finds both in one search,
bisect runs one search per goal (it finds one). Printed per data plane and
method: the trials and the trial seconds a repetition took, its wall time, the
median NDR and PDR, and their spread over the repetitions ((max − min) /
median), then MLRsearch's against bisect's as ratios.

    .venv/bin/python bench/search.py [--switch memif,ovs] [--reps 5]
        [--mlr-trial-duration 1] [--duration-sum 21] [--bisect-trial-duration 10]

Each method with its defaults: MLRsearch's final trials of 1 s and 21 trial
seconds to decide a load (CSIT's), bisect's trials as long as a point's
duration (10 s); set both trial durations alike to compare the searches alone.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from runs import pollers, stored_run

GOALS = (("ndr", "ndr"), ("pdr", "pdr:0.5%"))


# A single tester holds both ends of a memif link only with an NF between them.
EXTRA = {"memif": ["--nfs", "1"]}


def common(switch: str, trial_duration: float) -> list[str]:
    return ["--switch", switch, *EXTRA.get(switch, []), "--api", "dpdk", "--tester", "single",
            "--size", "64", "--precision", "0.005", "--trial-duration", f"{trial_duration:g}",
            "--warmup", "0.3", "--latency-at", "none"]


def mlr(results: Path, switch: str, args: argparse.Namespace) -> dict:
    start = time.monotonic()
    run = stored_run(results, *common(switch, args.mlr_trial_duration), "--rate", "ndr+pdr",
                     "--search", "csit",
                     "--duration-sum", str(args.duration_sum))
    [point] = run["points"]
    trials = [t for t in point["trials"] if t["phase"] != "latency"]
    ndr, pdr = point["goals"]
    return {"ndr": ndr["conditional_pps"], "pdr": pdr["conditional_pps"],
            "trials": len(trials), "trial_s": sum(t["duration"] for t in trials),
            "wall_s": time.monotonic() - start, "pollers": pollers(point)}


def bisect(results: Path, switch: str, args: argparse.Namespace) -> dict:
    out: dict = {"trials": 0, "trial_s": 0.0}
    start = time.monotonic()
    for name, rate in GOALS:
        run = stored_run(results, *common(switch, args.bisect_trial_duration), "--rate", rate,
                         "--search", "bisect")
        [point] = run["points"]
        trials = [t for t in point["trials"] if t["phase"] != "latency"]
        out[name] = point["search_rate_pps"]
        out["trials"] += len(trials)
        out["trial_s"] += sum(t["duration"] for t in trials)
        out["pollers"] = pollers(point)
    out["wall_s"] = time.monotonic() - start
    return out


def spread(values: list[float]) -> float:
    return (max(values) - min(values)) / statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--switch", default="memif,ovs")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--mlr-trial-duration", type=float, default=1.0)
    parser.add_argument("--duration-sum", type=float, default=21.0)
    parser.add_argument("--bisect-trial-duration", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cnfperf-bench-") as tmp:
        for switch in args.switch.split(","):
            rows = {}
            for method, measure in (("csit", mlr), ("bisect", bisect)):
                reps = []
                for rep in range(args.reps):   # the methods in turns would mix warm states
                    r = measure(Path(tmp) / f"{switch}-{method}", switch, args)
                    reps.append(r)
                    print(f"{switch} {method} rep {rep + 1}: NDR {r['ndr'] / 1e6:.4f} "
                          f"PDR {r['pdr'] / 1e6:.4f} Mpps, {r['trials']} trials, "
                          f"{r['trial_s']:.0f} trial s, {r['wall_s']:.0f} s wall "
                          f"({r['pollers']})", flush=True)
                rows[method] = reps
            print(f"\n{switch}, 64 B, single tester, {args.reps} repetitions each, width "
                  f"0.5%, trials of {args.mlr_trial_duration:g} s (csit, {args.duration_sum:g} s "
                  f"at a load) and {args.bisect_trial_duration:g} s (bisect)")
            print(f"{'method':8} {'trials':>7} {'trial s':>8} {'wall s':>7} "
                  f"{'NDR Mpps':>9} {'spread':>7} {'PDR Mpps':>9} {'spread':>7}")
            summary = {}
            for method, reps in rows.items():
                m = {k: statistics.median(r[k] for r in reps)
                     for k in ("trials", "trial_s", "wall_s", "ndr", "pdr")}
                m["ndr_spread"] = spread([r["ndr"] for r in reps])
                m["pdr_spread"] = spread([r["pdr"] for r in reps])
                summary[method] = m
                print(f"{method:8} {m['trials']:7.0f} {m['trial_s']:8.0f} {m['wall_s']:7.0f} "
                      f"{m['ndr'] / 1e6:9.4f} {100 * m['ndr_spread']:6.2f}% "
                      f"{m['pdr'] / 1e6:9.4f} {100 * m['pdr_spread']:6.2f}%")
            a, b = summary["csit"], summary["bisect"]
            print(f"csit / bisect: trial s {a['trial_s'] / b['trial_s']:.2f}, wall "
                  f"{a['wall_s'] / b['wall_s']:.2f}, NDR {a['ndr'] / b['ndr']:.3f}, "
                  f"PDR {a['pdr'] / b['pdr']:.3f}, NDR spread "
                  f"{a['ndr_spread'] / b['ndr_spread'] if b['ndr_spread'] else float('nan'):.2f}, "
                  f"PDR spread "
                  f"{a['pdr_spread'] / b['pdr_spread'] if b['pdr_spread'] else float('nan'):.2f}\n",
                  flush=True)


if __name__ == "__main__":
    main()
