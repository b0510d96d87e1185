"""MLRsearch against the binary search: the same data plane, link and cores,
each method run --reps times, 64-byte frames.

For each data plane (memif: the single tester's DPDK ends and one NF between
them, as a single tester cannot hold both ends of one memif link; ovs: OVS-DPDK
between the single tester's ends; veth: a udp sender and receiver on a veth
shaped to 20 kpps by tbf) and method, every repetition is a search for NDR and PDR (0.5 %) at a
goal width of 0.5 %: MLRsearch (search = csit) finds both in one search,
bisect runs one search per goal (it finds one). Printed per data plane and
method: the trials and the trial seconds a repetition took, its wall time, the
median NDR and PDR, and their spread over the repetitions ((max − min) /
median), then MLRsearch's against bisect's as ratios. --engine-keep yes,no runs
each method with the engines kept across a point's trials and with fresh ones
for every trial (engine_keep): wall / trial s says what the trials cost beside
their traffic, and each repetition's line the median time a trial took beyond
its warm-up and duration (from one trial's start to the next one's).

    .venv/bin/python bench/search.py [--switch memif,ovs,veth] [--reps 5] [--engine-keep yes,no]
        [--mlr-trial-duration 1] [--duration-sum 21] [--bisect-trial-duration 10]
        [--generator-tolerance 0.01] [--results DIR] [--methods csit,bisect] [--warmup 0.3]

Each method with its defaults: MLRsearch's final trials of 1 s and 21 trial
seconds to decide a load (CSIT's), bisect's trials as long as a point's
duration (10 s); set both trial durations alike to compare the searches alone.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from runs import pollers, stored_run

GOALS = (("ndr", "ndr"), ("pdr", "pdr:0.5%"))


# Each data plane's path. A single tester holds both ends of a memif link only
# with an NF between them; veth: the udp ends on a veth shaped to 20 kpps (tbf),
# a sender and a receiver of their own (what the single tester cannot be on udp).
SETUPS = {
    "memif": ["--switch", "memif", "--nfs", "1", "--api", "dpdk", "--tester", "single"],
    "ovs": ["--switch", "ovs", "--api", "dpdk", "--tester", "single"],
    "veth": ["--switch", "veth", "--api", "udp", "--tester", "split", "--limit", "20k",
             "--search-max", "40k"],
}


def common(switch: str, trial_duration: float, args: argparse.Namespace) -> list[str]:
    return [*SETUPS[switch], "--engine-keep", args.keep_now,
            "--size", "64", "--precision", "0.005", "--trial-duration", f"{trial_duration:g}",
            "--warmup", f"{args.warmup:g}", "--latency-at", "none",
            "--generator-tolerance", f"{args.generator_tolerance:g}"]


def between(results: Path, run: dict, trials: list[dict], warmup: float) -> float | None:
    """The median time a trial took beyond its traffic (its warm-up and
    duration), the first trial's start left out: from one trial's `start`
    record (its sender's warm-up began) to the next one's."""
    point_dir = results / "runs" / run["id"] / "point0"
    starts = {}
    for t in trials:
        for f in (point_dir / f"trial{t['n']}").glob("*.jsonl"):
            for line in f.read_text().splitlines():
                if '"type": "start"' in line:
                    starts[t["n"]] = json.loads(line)["wall_ns"] / 1e9
    gaps = [starts[b["n"]] - starts[a["n"]] - warmup - a["duration"]
            for a, b in zip(trials, trials[1:]) if a["n"] in starts and b["n"] in starts]
    return statistics.median(gaps) if gaps else None


def mlr(results: Path, switch: str, args: argparse.Namespace) -> dict:
    start = time.monotonic()
    run = stored_run(results, *common(switch, args.mlr_trial_duration, args),
                     "--rate", "ndr+pdr", "--search", "csit",
                     "--duration-sum", str(args.duration_sum))
    [point] = run["points"]
    trials = [t for t in point["trials"] if t["phase"] != "latency"]
    ndr, pdr = point["goals"]
    return {"ndr": ndr["conditional_pps"], "pdr": pdr["conditional_pps"],
            "trials": len(trials), "trial_s": sum(t["duration"] for t in trials),
            "invalid": sum(not t["valid"] for t in trials),
            "wall_s": time.monotonic() - start, "pollers": pollers(point),
            "between_s": between(results, run, point["trials"], args.warmup)}


def bisect(results: Path, switch: str, args: argparse.Namespace) -> dict:
    out: dict = {"trials": 0, "trial_s": 0.0, "invalid": 0, "between_s": None}
    start = time.monotonic()
    for name, rate in GOALS:
        run = stored_run(results, *common(switch, args.bisect_trial_duration, args),
                         "--rate", rate, "--search", "bisect")
        [point] = run["points"]
        trials = [t for t in point["trials"] if t["phase"] != "latency"]
        out[name] = point["search_rate_pps"]
        out["trials"] += len(trials)
        out["trial_s"] += sum(t["duration"] for t in trials)
        out["invalid"] += sum(not t["valid"] for t in trials)
        out["pollers"] = pollers(point)
    out["wall_s"] = time.monotonic() - start
    return out


METHODS = {"csit": mlr, "bisect": bisect}


def spread(values: list[float]) -> float:
    return (max(values) - min(values)) / statistics.median(values)


def mpps(pps: float | None) -> str:
    """A goal's rate, or why there is none: the search found no load that kept
    the loss within the goal (its trials' invalid count says whether the
    generator was to blame)."""
    return f"{pps / 1e6:.4f}" if pps is not None else "none"


def median(values: list[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return statistics.median(found) if found else None


def spread_of(values: list[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return spread(found) if len(found) > 1 else None


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.3f}" if a is not None and b else "n/a"


def percent(x: float | None) -> str:
    return f"{100 * x:6.2f}%" if x is not None else f"{'n/a':>7}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--switch", default="memif,ovs", help=f"of {', '.join(SETUPS)}")
    parser.add_argument("--engine-keep", default="yes",
                        help="yes, no or yes,no: engines kept across a point's trials, or "
                             "fresh for each (both: each method's rows twice)")
    parser.add_argument("--methods", default="csit,bisect",
                        help="which searches to run, of csit and bisect")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--mlr-trial-duration", type=float, default=1.0)
    parser.add_argument("--duration-sum", type=float, default=21.0)
    parser.add_argument("--bisect-trial-duration", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=0.3,
                        help="every trial's warm-up, s (default 0.3)")
    parser.add_argument("--generator-tolerance", type=float, default=0.01,
                        help="both methods' (default 0.01, cnfperf's; where the tester's "
                             "pollers fill every core, a 1 s trial's sender loses 1-3 %% to "
                             "the other tasks' slices)")
    parser.add_argument("--results", type=Path,
                        help="where the runs are stored (default: a new temporary directory, "
                             "kept and named at the start)")
    args = parser.parse_args()
    unknown = set(args.methods.split(",")) - set(METHODS)
    if unknown:
        parser.error(f"--methods: {', '.join(sorted(unknown))}: not one of csit, bisect")
    if set(args.switch.split(",")) - set(SETUPS):
        parser.error(f"--switch: one or more of {', '.join(SETUPS)}")
    keeps = args.engine_keep.split(",")
    if set(keeps) - {"yes", "no"}:
        parser.error("--engine-keep: yes, no or yes,no")
    tmp = args.results or Path(tempfile.mkdtemp(prefix="cnfperf-bench-"))
    print(f"runs stored in {tmp}", flush=True)
    for switch in args.switch.split(","):
        rows = {}
        for method, keep in ((m, k) for m in args.methods.split(",") for k in keeps):
            measure = METHODS[method]
            args.keep_now = keep
            name = method if len(keeps) == 1 else f"{method}/{'kept' if keep == 'yes' else 'fresh'}"
            reps = []
            for rep in range(args.reps):   # the methods in turns would mix warm states
                r = measure(tmp / f"{switch}-{method}-{keep}", switch, args)
                reps.append(r)
                beyond = (f", {r['between_s']:.3f} s a trial beyond its traffic"
                          if r["between_s"] is not None else "")
                print(f"{switch} {name} rep {rep + 1}: NDR {mpps(r['ndr'])} "
                      f"PDR {mpps(r['pdr'])} Mpps, {r['trials']} trials "
                      f"({r['invalid']} invalid), {r['trial_s']:.0f} trial s, "
                      f"{r['wall_s']:.0f} s wall{beyond} ({r['pollers']})", flush=True)
            rows[name] = reps
        print(f"\n{' '.join(SETUPS[switch])}, 64 B, {args.reps} repetitions each, width "
              f"0.5%, generator tolerance {100 * args.generator_tolerance:g}%, trials of "
              f"{args.mlr_trial_duration:g} s (csit, {args.duration_sum:g} s at a load) and "
              f"{args.bisect_trial_duration:g} s (bisect)")
        print("(medians over the repetitions; NDR and PDR over those that found one, "
              "found: how many did)")
        print(f"{'method':13} {'trials':>7} {'invalid':>7} {'trial s':>8} {'wall s':>7} "
              f"{'wall/trial':>10} {'NDR Mpps':>9} {'spread':>7} {'PDR Mpps':>9} {'spread':>7} "
              f"{'found':>5}")
        summary = {}
        for method, reps in rows.items():
            m = {k: statistics.median(r[k] for r in reps)
                 for k in ("trials", "invalid", "trial_s", "wall_s")}
            for goal in ("ndr", "pdr"):
                m[goal] = median([r[goal] for r in reps])
                m[f"{goal}_spread"] = spread_of([r[goal] for r in reps])
            found = sum(r["ndr"] is not None and r["pdr"] is not None for r in reps)
            summary[method] = m
            print(f"{method:13} {m['trials']:7.0f} {m['invalid']:7.0f} {m['trial_s']:8.0f} "
                  f"{m['wall_s']:7.0f} {m['wall_s'] / m['trial_s']:10.2f} "
                  f"{mpps(m['ndr']):>9} {percent(m['ndr_spread'])} "
                  f"{mpps(m['pdr']):>9} {percent(m['pdr_spread'])} {found:>3}/{len(reps)}")
        if set(summary) != {"csit", "bisect"}:
            continue
        a, b = summary["csit"], summary["bisect"]
        print(f"csit / bisect: trial s {a['trial_s'] / b['trial_s']:.2f}, wall "
              f"{a['wall_s'] / b['wall_s']:.2f}, NDR {ratio(a['ndr'], b['ndr'])}, "
              f"PDR {ratio(a['pdr'], b['pdr'])}, NDR spread "
              f"{ratio(a['ndr_spread'], b['ndr_spread'])}, PDR spread "
              f"{ratio(a['pdr_spread'], b['pdr_spread'])}\n", flush=True)


if __name__ == "__main__":
    main()

