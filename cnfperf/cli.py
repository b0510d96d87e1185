"""The command line: the only module that knows about argv, stdout and exit codes.

Exit codes: 0 done, 1 system failure (after teardown), 2 bad input (before
anything is created), 3 another run holds the host, 4 a point regressed (compare
over a series of runs), 5 a point missed an expectation (expect), 128+N stopped
by signal N.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import shutil
import tempfile
import textwrap
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, NoReturn

from cnfperf import SystemFailure, UserError, __version__, fields, rate as rates, reference, testers
from cnfperf import nfs as nf_kinds
from cnfperf.results import expect
from cnfperf.run import checks, live, runner, survey
from cnfperf.run.agent import main as run_agent
from cnfperf.run.cleanup import cleanup, cluster_runs
from cnfperf.runtimes.pod import pods
from cnfperf.runtimes.pod.pods import ClusterError
from cnfperf.run.lab import serve as lab_serve
from cnfperf.run.cluster import serve as cluster_serve
from cnfperf.cluster import node as cluster_node
from cnfperf.remote import lab as remote_lab
from cnfperf.remote.inventory import NAME as INVENTORY_NAME, load as load_inventory
from cnfperf.engine import find_engine
from cnfperf.experiments import reference as paper, studies
from cnfperf.experiments.sweep import check_profiled, format_seconds, parse_values
from cnfperf.host.facts import render as render_host
from cnfperf.run.declared import gather
from cnfperf.host.lock import HostBusy
from cnfperf.report import build, cpu as cpu_tables, hlog, nfs as nf_tables
from cnfperf.report import advise as advising, explain, gates, interference, trend
from cnfperf.dataplanes import DATAPLANES
from cnfperf.run import advice
from cnfperf.report.rows import rows_from_run
from cnfperf.report.compare import HEADERS, compare
from cnfperf.report.export import write_cpu_csv, write_csv, write_nf_ports_csv
from cnfperf.report.searches import latency_loads, searches
from cnfperf.report.soak import table as soak_table
from cnfperf.report.summary import faults, images, noises, points as point_table, repetitions
from cnfperf.report.tables import plan_text, render, run_table, runs_table, summary_table
from cnfperf.results.store import DB_NAME, Store, results_dir

EXIT_FAILURE, EXIT_USAGE, EXIT_BUSY, EXIT_REGRESSION, EXIT_EXPECTATION = 1, 2, 3, 4, 5
LAST = "last"     # --expect-run: the newest earlier run of the same scenario
SHOWN_RUNS = 10   # a series' runs named in its table's title; more: the first and last
# Where a study's points run (the hosts, the NIC whose VFs they take), set
# for all of them from the command line
STUDY_PLACES = ("tester_host", "dut_host", "sriov_pf")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UserError(*_split(message.removeprefix("argument ")))


def _split(message: str) -> tuple[str, str]:
    if message.startswith("unrecognized arguments: "):
        return message.split(": ", 1)[1].split()[0], "unknown option"
    if message.startswith("the following arguments are required: "):
        return message.split(": ", 1)[1].split(",")[0], "required"
    field, sep, why = message.partition(": ")
    return (field, why) if sep else ("command line", message)


def _sweep_flag(name: str) -> Callable[[str], str]:
    """Checks a flag's values (a list `64,128`, a range `64:64:512`) and keeps its
    text: expansion happens once, for file and flags together (checks.load_plan)."""

    def check(text: str) -> str:
        try:
            parse_values(name, text)
        except ValueError as e:
            why = str(e)
            why = why.split(": ", 1)[1] if ": " in why else why
            if fields.kinds().get(name) == "bool" and (text.endswith(".toml") or
                                                       os.path.exists(text)):
                # `--pin FILE`: the flag took the scenario file for its value
                why += f" (the scenario file goes before the flags, or say --{name} yes)"
            raise argparse.ArgumentTypeError(why) from None
        return text
    return check


def _pair_flag(text: str) -> tuple[str, str]:
    """`--pair 1.rate=10k,50k`: (pair.1.rate, its values), checked as a field's."""
    where, sep, values = text.partition("=")
    index, dot, field = where.strip().partition(".")
    if not sep or not dot or not index.isdigit() or not field:
        raise argparse.ArgumentTypeError(f"{text!r}: expected N.FIELD=VALUES, e.g. 1.rate=50k "
                                         "(pair 1, the second, at 50 kpps)")
    name = f"{fields.PROFILE}.{int(index)}.{field.strip()}"
    try:
        check_profiled(name, field.strip())
        parse_values(name, values)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return name, values


def _scenario_flags(p: argparse.ArgumentParser, with_fields: bool = True) -> None:
    """A flag per field of the table (fields.py); every one takes a list or a
    range, and a yes/no field's flag alone means yes (--pin), --no-pin no."""
    if with_fields:
        for f in fields.FIELDS:
            text = (reference.help_text(f) + (f" [{f.unit}]" if f.unit else "")).replace("%", "%%")
            if f.kind == "bool":
                p.add_argument(f.flag, dest=f.name, nargs="?", const="yes",
                               type=_sweep_flag(f.name), metavar="yes|no",
                               help=text + " (alone: yes; yes,no sweeps both)")
                p.add_argument("--no-" + f.flag[2:], dest=f.name, action="store_const",
                               const="no", help=f"the same as {f.flag} no")
            else:
                p.add_argument(f.flag, dest=f.name, type=_sweep_flag(f.name), help=text)
        p.add_argument("--pair", action="append", type=_pair_flag, metavar="N.FIELD=VALUES",
                       help="pair N's own value of a field (a profile: the pairs differ), "
                            "e.g. 1.rate=50k; again for more; per pair: "
                            + ", ".join(fields.PER_PAIR))
    p.add_argument("--repeat", type=_sweep_flag("repeat"), metavar="K",
                   help="run every point K times (mean, stddev, 95%% CI)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (points, cores, data planes) and exit")
    p.add_argument("--expect", action="append", metavar="LINE",
                   help="what every point must measure, e.g. 'rx_pps >= 2M', 'p99 <= 50us', "
                        "'rate >= run - 5%%' (again for more; instead of the file's expect); "
                        f"a point that misses one: exit {EXIT_EXPECTATION}")
    _gate_flags(p)
    p.add_argument("--events", metavar="FILE",
                   help="write the run's events as JSON lines while it goes (points, samples, "
                        "trials, a soak's seconds; - for stdout, the tables then on stderr)")
    p.add_argument("--metrics-port", metavar="[ADDR:]PORT", type=_listen,
                   help="serve the running point's rates, loss, latency and CPU per node as "
                        "Prometheus metrics on this port while the run goes (ADDR: all)")


def _listen(text: str) -> tuple[str, int]:
    """`9464` or `127.0.0.1:9464`: (address, port)."""
    address, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r}: expected PORT or ADDR:PORT, a port 1-65535")
    return address.strip("[]"), int(port)


def _gate_flags(p: argparse.ArgumentParser) -> None:
    _expect_run_flag(p)
    p.add_argument("--junit", metavar="FILE", type=Path,
                   help="write the expectations' verdicts as JUnit XML, a test case per point "
                        "and expectation")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="cnfperf", description="Measure throughput, loss and latency between "
                "Linux containers over a chosen data plane.")
    p.add_argument("--version", action="version", version=f"cnfperf {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run a scenario (file and/or flags; flags win)",
                         description="Every value flag takes a list (64,128,1500) or a range "
                         "(min:step:max) to sweep it; a run is their cartesian product.")
    run.add_argument("scenario", nargs="?", type=Path, help="scenario TOML file")
    _scenario_flags(run)
    run.add_argument("--resume", metavar="RUN",
                     help="continue an interrupted run (or `latest`), skipping finished points")
    _results_and_json(run)
    run.set_defaults(func=_run)

    study = sub.add_parser("study", help="run a study of studies/ and write its report",
                           description="Runs studies/NAME.toml (data planes this host lacks "
                           "are skipped), then writes its report.")
    study.add_argument("name", nargs="?", metavar="NAME", help="study name (none: list them)")
    study.add_argument("--quick", action="store_true",
                       help="the study's [quick] variant: fewer points, 1 s each")
    study.add_argument("--coverage", action="store_true",
                       help="list every experiment of the five papers: which study reproduces "
                            "it (NOW, HW, PART) or none (NO), its differences from the paper, "
                            "the verdict of that study's last stored run (--results)")
    _scenario_flags(study, with_fields=False)
    study.add_argument("--hosts", metavar="FILE",
                       help="the inventory of other hosts, for a study that places its tester "
                            "or its host under test on them (tester_host, dut_host)")
    study.add_argument("--cluster", metavar="FILE",
                       help="the kubeconfig of the cluster a study's pods go to (nf_in, "
                            "endpoint_in or switch_in = pod; default: the test cluster)")
    for name in STUDY_PLACES:
        study.add_argument(fields.by_name()[name].flag, dest=name,
                           metavar="NIC" if name == "sriov_pf" else "HOST",
                           help=f"{name} of every point, winning over the study's" + (
                               "" if name == "sriov_pf" else ": local or a host of --hosts (the "
                               "lab's dut runs what this host cannot)"))
    _results_and_json(study)
    study.set_defaults(func=_study)

    report = sub.add_parser("report", help="HTML report with plots (PNG) of a run")
    report.add_argument("run", metavar="RUN", help="run id, or latest")
    report.add_argument("--out", metavar="DIR",
                        help="where to write (default: the run's directory, report/)")
    _expect_run_flag(report)
    _results_and_json(report, json_flag=False)
    report.set_defaults(func=_report)

    compare = sub.add_parser(
        "compare", help="two runs side by side, with ratios B/A; over more runs, each "
        "point's trend (regressions, progressions)",
        description="Two runs: their points side by side, with ratios B/A. Three runs or more "
        "(oldest first), --last N or --trend: a series, each point's values over it grouped "
        "by jumpavg (FD.io CSIT's trending), the latest group against the one before: "
        f"regression, progression or normal; exit {EXIT_REGRESSION} when a point regressed.")
    compare.add_argument("runs", nargs="*", metavar="RUN",
                         help="run ids (or latest), oldest first")
    compare.add_argument("--last", type=int, metavar="N",
                         help="the series: the N latest runs made from the same scenario as RUN "
                              "(default latest), RUN the newest")
    compare.add_argument("--trend", action="store_true",
                         help="two runs as a series too (a trend, not side by side)")
    compare.add_argument("--metric", metavar="M,…",
                         help="a series' metrics: rate (a search's rate found, else the "
                              "received rate), p50, p99 (latency); default all")
    compare.add_argument("--min-change", type=float, metavar="PCT",
                         help="a series' step smaller than this %% is none: its groups are "
                              "taken for one (default 0: jumpavg alone decides)")
    compare.add_argument("--out", metavar="DIR",
                         help="where a series' trend plots go (default: the newest run's "
                              "directory, trend/)")
    compare.add_argument("--no-plots", action="store_true",
                         help="a series' verdicts only, no plots (a second or so less per "
                              "point)")
    _results_and_json(compare)
    compare.set_defaults(func=_compare)

    doctor = sub.add_parser("doctor", help="what this host offers and which data planes work")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.add_argument("--hosts", metavar="FILE", type=Path,
                        help="also every host of this inventory (reached over SSH, its agent, "
                             "what it runs) and every wire (a frame sent on one end must "
                             "arrive at the other)")
    doctor.set_defaults(func=_doctor)

    clean = sub.add_parser("cleanup", help="remove what killed runs left behind")
    clean.add_argument("run", nargs="?", metavar="RUN_ID",
                       help="only this run's leftovers, or latest's (default: every run's)")
    clean.add_argument("--force", action="store_true",
                       help="even while a run holds the host lock")
    clean.add_argument("--hosts", metavar="FILE", type=Path,
                       help="also on every host of this inventory (over SSH)")
    clean.add_argument("--cluster", metavar="FILE", type=Path,
                       help="also the namespaces runs left on the Kubernetes cluster of this "
                            "kubeconfig (their pods and attachments)")
    clean.add_argument("--images", action="store_true",
                       help="with --cluster: also cnfperf's images imported into this node's "
                            "containerd (the next pod imports its own again)")
    _results_and_json(clean, json_flag=False)
    clean.set_defaults(func=_cleanup)

    lab = sub.add_parser(
        "lab", help="an emulated host to run on without the hardware (SR-IOV NICs, a 6.12 "
                    "kernel), kept until Ctrl-C",
        description="Boots a host that is a QEMU guest under TCG (the vm runtime's), reached "
                    "over SSH as any host is, with emulated SR-IOV NICs (QEMU's igb) and "
                    "Debian's 6.12 kernel (netkit, kernel OVS, tc police), cabled to this "
                    f"machine; writes its inventory to {remote_lab.INVENTORY} and keeps it "
                    "until Ctrl-C. Then: cnfperf run --hosts that file --tester-host NAME "
                    "--dut-host NAME --switch sriov --sriov-pf pf0 --api raw (docs/hosts.md).")
    lab.add_argument("--name", default="dut", help="the host's name in the inventory "
                                                   "(default dut)")
    lab.add_argument("--wires", type=int, default=2,
                     help=f"wires between this machine (local) and the host: a tap here, an "
                          f"emulated NIC there (igb, or virtio with --pfs 0; "
                          f"0-{remote_lab.MAX_WIRES}; default 2)")
    lab.add_argument("--pfs", type=int, default=1,
                     help=f"the host's emulated SR-IOV NICs, pf0… (7 VFs each; "
                          f"0-{remote_lab.MAX_PFS}; default 1)")
    lab.set_defaults(func=_lab)

    cluster = sub.add_parser(
        "cluster", help="a Kubernetes test cluster on this machine (make cluster's "
                        "builds, Multus), kept until Ctrl-C",
        description="Starts a Kubernetes with this machine as its node: etcd, the API server, "
                    "controller manager, scheduler and kubelet that `make cluster` built, a "
                    "containerd of its own, Multus as the node's CNI plugin, the static CPU "
                    "manager (core 0 reserved); with --hosts, the inventory's hosts join as "
                    "nodes too. Prints its kubeconfig and keeps it until Ctrl-C, then leaves "
                    "nothing of it (docs/kubernetes.md).")
    cluster.add_argument("--hosts", metavar="FILE", type=Path,
                         help="an inventory (hosts.toml, e.g. cnfperf lab's) whose hosts join "
                              "the cluster as nodes named like them, through their agents; "
                              "they leave when it stops")
    cluster.add_argument("--hugepages", metavar="MB", type=int, default=0,
                         help="2 MB hugepages added to each node's pool before its kubelet "
                              "starts, which its pods then ask for as hugepages-2Mi (a DPDK "
                              "pod's memory); given back when it stops (default 0: pods mount "
                              "their data plane's hugepages from the host)")
    cluster.set_defaults(func=_cluster)

    agent = sub.add_parser("agent", help="a host's part of a run, for a controller on another "
                                         "host (it starts this over SSH; JSON lines on stdin "
                                         "and stdout)")
    agent.set_defaults(func=lambda _args: run_agent())

    advise = sub.add_parser(
        "advise", help="which configuration carries a need, from what stored runs measured",
        description="Ranks the configurations the stores have evidence for (data plane, "
        "its knobs, where NFs run, how they poll) against a need: a rate per pair, frame "
        "sizes, a p99 budget, the cores; says each one's headroom and the points that show "
        "it, marks evidence from another kind of host, and with --plan writes the scenario "
        "that would measure what is missing. Nothing is extrapolated.")
    advise.add_argument("--rate", required=True, metavar="PPS",
                        help="what each pair must carry, e.g. 1M")
    advise.add_argument("--size", default="64", metavar="BYTES,…", help="frame sizes (64)")
    advise.add_argument("--nfs", type=int, default=0, metavar="N",
                        help="network functions in each pair's path (0)")
    advise.add_argument("--nf", default=fields.by_name()["nf"].default, metavar="KIND",
                        help="what each does (l2)")
    advise.add_argument("--shape", choices=("chain", "pipeline"),
                        help="NFs through a switch (chain: the default) or link to link")
    advise.add_argument("--pairs", type=int, default=1, metavar="N", help="pairs (1)")
    advise.add_argument("--switch", metavar="NAME,…",
                        help="the data planes to consider (default: every one)")
    advise.add_argument("--p99", metavar="TIME", help="the p99 latency budget, e.g. 50us")
    advise.add_argument("--loss", type=float, default=0.0, metavar="RATIO",
                        help="the loss allowed (0: none, as an NDR)")
    advise.add_argument("--cores", type=int, metavar="N",
                        help="cores the switch and NFs may take (default: any)")
    advise.add_argument("--from", dest="stores", action="append", default=[], metavar="DIR",
                        help="another store to read too (another host's results directory); "
                             "again for more")
    advise.add_argument("--plan", type=Path, metavar="FILE",
                        help="write the scenario that would measure what is missing")
    advise.add_argument("--html", type=Path, metavar="FILE",
                        help="the ranking as an HTML page, its evidence linked to each run's "
                             "report")
    _results_and_json(advise)
    advise.set_defaults(func=_advise)

    results = sub.add_parser("results", help="stored results")
    rsub = results.add_subparsers(dest="action", required=True, metavar="ACTION")
    lst = rsub.add_parser("list", help="all runs")
    _results_and_json(lst)
    lst.set_defaults(func=_results_list)
    show = rsub.add_parser("show", help="one run: its points, pairs and endpoints")
    show.add_argument("run", metavar="RUN", help="run id (as `results list` shows it), or latest")
    _expect_run_flag(show)
    _results_and_json(show)
    show.set_defaults(func=_results_show)
    export = rsub.add_parser("export", help="one run as CSV (a row per pair and per point), or "
                                           "its latency as HdrHistogram logs")
    export.add_argument("run", metavar="RUN", help="run id, or latest")
    export.add_argument("--csv", action="store_true", help="CSV (the format)")
    export.add_argument("--hdrh", action="store_true",
                        help="an HdrHistogram log (.hlog) per point with latency instead: a "
                             "histogram per pair and the total, tagged pair<N> and all")
    export.add_argument("--nf-ports", action="store_true",
                        help="a row per port of every network function instead (its counters "
                             "and drops by reason)")
    export.add_argument("--cpu", action="store_true",
                        help="a row per node of every point instead: its CPU use over the "
                             "measured window, cycles per packet, threads and their cores")
    export.add_argument("--out", "-o", metavar="FILE",
                        help="write here instead of stdout (--hdrh: the directory, default the "
                             "run's hdrh/)")
    _results_and_json(export, json_flag=False)
    export.set_defaults(func=_results_export)
    return p


def _expect_run_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--expect-run", metavar="RUN",
                   help=f"the run `run` means in an expectation: a stored run's id, latest, or "
                        f"{LAST} (default: the newest earlier run of the same scenario)")


def _results_and_json(p: argparse.ArgumentParser, json_flag: bool = True) -> None:
    p.add_argument("--results", metavar="DIR",
                   help="results directory (default $CNFPERF_RESULTS or ./results)")
    if json_flag:
        p.add_argument("--json", action="store_true", help="machine-readable output on stdout")


# -- commands ------------------------------------------------------------------

def _run(args: argparse.Namespace) -> int:
    flags = {f: getattr(args, f, None) for f in fields.names()}
    flags.update(dict(getattr(args, "pair", None) or ()))   # pair.N.FIELD
    flags["repeat"] = args.repeat
    flags[fields.EXPECT] = args.expect
    if args.resume is not None:
        given = [f"--{k.replace('_', '-')}" for k, v in flags.items() if v is not None]
        if args.scenario or given:
            raise UserError("--resume", "continues a run with its own scenario; give no "
                            f"scenario file or fields (got {args.scenario or given[0]})")
        store = _open_store(args)
        run_id = _run_id(store, args.resume, "--resume")
        spec = store.run(run_id).get("spec")
        if not spec:
            raise UserError("--resume", f"run {run_id} was stored without its plan "
                                        "(made by an older cnfperf); run it again instead")
        engine = find_engine()
        host = gather(engine)
        swept = checks.replan(spec, host)
        args.expect_run = _expect_run(args, own=run_id)
        if args.dry_run:
            return _dry_run(swept, host, run_id, store.done_keys(run_id))
        return _execute(args, swept, engine, host, resume=run_id)[0]
    swept = checks.load_plan(args.scenario, flags)   # UserError: nothing created yet
    args.expect_run = _expect_run(args)
    engine = find_engine()
    host = gather(engine)
    if args.dry_run:
        return _dry_run(swept, host)
    return _execute(args, swept, engine, host)[0]


def _dry_run(swept: Any, host: Any, run_id: str = "0000", done: set[str] = frozenset()) -> int:
    """The plan as the run would place it, each point this host cannot run
    flagged with why (checks.host_problems: what a study leaves out, a run's
    preflight refuses), and what keeps it from running any (checks.host_wide);
    the run is not started, whatever it would find."""
    problems = checks.host_problems(host)
    points = runner.test_points(swept, run_id)
    print(plan_text(swept, points, done, problems))
    cannot = [p for p in points if p.key not in done and problems(p.scenario)]
    if blocked := checks.host_wide(host):
        print(f"cnfperf: this host cannot run any point ({'; '.join(blocked)}): the run "
              "would stop before it starts", file=sys.stderr)
    elif cannot:
        print(f"cnfperf: this host cannot run {len(cannot)} of {len(points)} points (cannot run "
              "here, above): the run would stop before it starts", file=sys.stderr)
    return 0


def _study(args: argparse.Namespace) -> int:
    if args.coverage:
        if args.name is not None:
            raise UserError("--coverage", f"lists every study's experiments; give no NAME "
                                          f"(got {args.name!r})")
        return _coverage(args)
    if args.name is None:
        print(render(("study", "title", "reproduces"), studies.describe_all()))
        return 0
    path = studies.find(args.name)
    engine = find_engine()
    host = gather(engine)
    swept = checks.load_plan(path, {"repeat": args.repeat, fields.EXPECT: args.expect,
                                    "hosts": args.hosts,
                                    "cluster": args.cluster,
                                    **{name: getattr(args, name) for name in STUDY_PLACES}},
                             quick=args.quick, host=host)
    swept.spec["study"] = path.stem
    args.expect_run = _expect_run(args)
    differs = paper.difference_lines(paper.load(swept.spec["doc"]))
    if differs:   # before the run: what its numbers will not be
        print(f"cnfperf: {path.stem} differs from its paper:\n  " + "\n  ".join(differs),
              file=sys.stderr)
    if args.dry_run:
        return _dry_run(swept, host)
    code, run_id, store = _execute(args, swept, engine, host)
    run = store.run(run_id)
    if _has_results(run):
        print(f"report: {_write_report(store, run, expect_run=args.expect_run)}",
              file=sys.stderr if args.events == "-" else sys.stdout)
    return code


def _coverage(args: argparse.Namespace) -> int:
    """Every experiment of the catalogue, its status and study, with the verdict
    of that study's last stored run (when there is a store)."""
    found = paper.all_studies()
    verdicts: dict[str, dict[str, Any]] = {}
    directory = results_dir(args.results)
    if (directory / DB_NAME).exists():
        store = Store(directory, create=False)
        for name, run_id in store.study_runs().items():
            compared = _compared(store.run(run_id))
            if compared is not None and name in found:
                verdicts[name] = {"run": run_id, **compared.verdict()}
    elif args.results:
        raise UserError("--results", f"no results in {directory}")
    covered = paper.coverage(found, verdicts)
    counts = {s: sum(c.status == s for c in covered) for s in paper.STATUSES}
    if args.json:
        print(json.dumps({"experiments": [c.to_dict() for c in covered], "counts": counts},
                         indent=1))
        return 0
    print(_coverage_text(covered))
    print(f"\n{len(covered)} experiments: " +
          ", ".join(f"{n} {s}" for s, n in counts.items()) + "\n" +
          "\n".join(f"  {s}: {why}" for s, why in paper.STATUSES.items()))
    return 0


def _coverage_text(covered: list[Any]) -> str:
    """The coverage table, each experiment's differences under its row."""
    headers = [h for h in paper.COVERAGE_HEADERS if h != "differences"]
    rows = [[cell for h, cell in zip(paper.COVERAGE_HEADERS, row) if h != "differences"]
            for row in paper.coverage_rows(covered)]
    lines = render(headers, rows, set()).splitlines()
    out = lines[:2]
    for line, c in zip(lines[2:], covered):
        out.append(line)
        out += [textwrap.fill(d, 100, initial_indent="    · ", subsequent_indent="      ")
                for d in c.differences]
    return "\n".join(out)


def _compared(run: dict[str, Any] | None) -> Any:
    """A stored run held against the paper tables it stored (None without them,
    or when they no longer read: said on stderr)."""
    if not run:
        return None
    try:
        return paper.of_stored(run)
    except UserError as e:
        print(f"cnfperf: warning: run {run['id']}'s paper tables no longer read: {e}",
              file=sys.stderr)
        return None


def _paper_text(compared: Any) -> list[str]:
    """The paper-vs-here table, each figure's shape, the differences."""
    out = []
    if compared.rows:
        out.append(summary_table(("Paper vs here", paper.TABLE_HEADERS,
                                  paper.table_rows(compared))))
        out += paper.shape_lines(compared)
    if differs := paper.difference_lines(compared.reference):
        out += ["differences from the paper:", *(f"  {d}" for d in differs)]
    return out


def _has_results(run: dict[str, Any] | None) -> bool:
    return bool(run) and any(p["status"] == "done" for p in run["points"])


def _write_report(store: Any, run: dict[str, Any], out: str | None = None,
                  expect_run: str | None = None) -> Path:
    found, earlier = _gates(store, run, expect_run)
    return build.write(run, Path(out) if out else store.directory / "runs" / run["id"] / "report",
                       found, earlier)


def _gates(store: Any, run: dict[str, Any], wanted: str | None
           ) -> tuple[list[gates.Gate], dict[str, Any] | None]:
    """The run's points held to their expectations (none: []) and the run
    `run` means in them: `wanted` (an id, latest), else the newest earlier run
    of the same scenario (None: there is none, or no line asks)."""
    if not gates.expecting(run):
        return [], None
    earlier = None
    if wanted not in (None, LAST) and gates.relative(run):
        earlier = _earlier_named(store, run, wanted)
    elif gates.relative(run):
        earlier = gates.earlier_of(run, store.runs(), store.run)
    return gates.judged(run, earlier), earlier


def _earlier_named(store: Any, run: dict[str, Any], wanted: str) -> dict[str, Any]:
    """The run --expect-run names for `run`: an id, or latest (the newest stored
    before it); never the run itself."""
    if wanted == "latest":
        before = [r for r in store.runs() if r["started"] < run["started"]]
        if not before:
            raise UserError("--expect-run", f"no run was stored before run {run['id']}")
        return store.run(max(before, key=lambda r: r["started"])["id"])
    found = _run_id(store, wanted, "--expect-run")
    if found == run["id"]:
        raise UserError("--expect-run", f"{found} is the run itself: name an earlier one")
    return store.run(found)


def _expect_run(args: argparse.Namespace, own: str | None = None) -> str | None:
    """--expect-run as an id (latest resolved now: before this run is stored),
    or None for `last`; exit 2 for a run the store does not have or the run
    itself (`own`: a resumed run's id), and for a --junit that cannot be
    written, before anything is created."""
    if args.junit is not None:
        _writable(args.junit, "--junit")
    if args.expect_run in (None, LAST):
        return None
    try:
        store = Store(results_dir(args.results), create=False)
    except FileNotFoundError:
        raise UserError("--expect-run", f"no results in {results_dir(args.results)} to hold "
                                        "the run against") from None
    found = _run_id(store, args.expect_run, "--expect-run")
    if found == own:
        raise UserError("--expect-run", f"{found} is the run being resumed: name an earlier one")
    return found


def _writable(path: Path, flag: str) -> None:
    """UserError (exit 2) unless a file can be written at `path`."""
    if path.is_dir():
        raise UserError(flag, f"{path} is a directory; name the file")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise UserError(flag, f"cannot write {path}: {parent} is not a writable directory")


def _execute(args: argparse.Namespace, swept: Any, engine: Any, host: Any,
             resume: str | None = None) -> tuple[int, str, Any]:
    """Runs the sweep and prints its tables; (exit code, run id, store)."""

    for note in swept.plan.skip_notes():
        print(f"cnfperf: {note}", file=sys.stderr)
    results = results_dir(args.results)
    progress = _ProgressLine(sys.stderr)
    watching = _live(args)   # before the run: a port taken is bad input
    try:
        outcome = runner.execute(swept, runner.RunOptions(
            engine=engine, results=results, host=host, command=["cnfperf", *sys.argv[1:]],
            progress=progress, resume=resume, live=watching))
    finally:
        progress.end()
        if watching:
            watching.close()
    # with --events -, stdout carries the events alone
    with contextlib.redirect_stdout(sys.stderr) if args.events == "-" else \
            contextlib.nullcontext():
        return _finish(args, outcome, results, resume, len(swept.scenarios))


def _live(args: argparse.Namespace) -> live.Live | None:
    """The run's watchers (--events, --metrics-port), or None; UserError (exit 2)
    when the file cannot be written or the port cannot be listened on."""
    sinks: list[Any] = []
    if args.events == "-" and args.json:
        raise UserError("--events", "- puts the events on stdout, where --json goes: name a "
                                    "file for one of them")
    try:
        if args.events == "-":
            sinks.append(live.EventsFile(sys.stdout, "stdout"))
        elif args.events is not None:
            sinks.append(live.EventsFile(open(args.events, "w", encoding="utf-8"), args.events))
    except OSError as e:
        raise UserError("--events", f"cannot write {args.events}: {e.strerror}") from None
    if args.metrics_port is not None:
        from cnfperf.run.metrics import Metrics   # prometheus_client: only when served
        metrics = Metrics()
        address, port = args.metrics_port
        try:
            metrics.serve(port, address)
        except OSError as e:
            for sink in sinks:
                sink.close()
            raise UserError("--metrics-port", f"cannot listen on {address or '*'}:{port}: "
                                              f"{e.strerror}") from None
        print(f"cnfperf: metrics on http://{address or '0.0.0.0'}:{port}/metrics",
              file=sys.stderr)
        sinks.append(metrics)
    return live.Live(sinks, cpu=args.metrics_port is not None) if sinks else None


def _finish(args: argparse.Namespace, outcome: Any, results: Path, resume: str | None,
            planned: int) -> tuple[int, str, Any]:
    """The run's tables, its expectations, --junit; (exit code, run id, store)."""
    store = Store(results)
    if outcome.resumed_cleanup:
        print(f"cnfperf: removed what run {outcome.run_id} left before resuming: "
              f"{_summarise(outcome.resumed_cleanup)}", file=sys.stderr)
    if resume:
        print(f"cnfperf: run {outcome.run_id}: {outcome.already_done} of "
              f"{planned} points were already done", file=sys.stderr)
    run = store.run(outcome.run_id)
    for w in dict.fromkeys(outcome.warnings):
        print(f"cnfperf: warning: {w}", file=sys.stderr)
    found, earlier = _gates(store, run, args.expect_run)
    if args.json:
        compared = _compared(run)
        print(json.dumps({"outcome": _outcome(outcome), "run": run,
                          **({"paper": compared.to_dict()} if compared else {}),
                          **({"expectations": _expectations(found, earlier)} if found else {})},
                         indent=1, default=str))
    elif run["points"]:
        print(f"run {outcome.run_id}  ({store.directory / 'runs' / outcome.run_id})")
        print(run_table(run, found))
        if used := images(run):
            print(f"images: {used}")
        _print_tables(run, brief=True)
        if any(p.get("nf_results") for p in run["points"]):
            print(f"\n(every path hop by hop, each NF's startup: cnfperf results show "
                  f"{outcome.run_id})")
        _print_gates(found, earlier, brief=True)
    wrote = True
    if found and args.junit is not None:
        try:
            print(f"junit: {gates.write_junit(run, found, args.junit, earlier)}",
                  file=sys.stderr)
        except OSError as e:   # checked before the run; gone since
            print(f"cnfperf: error: --junit: cannot write {args.junit}: {e.strerror}",
                  file=sys.stderr)
            wrote = False
    elif args.junit is not None:
        print("cnfperf: warning: no point states an expectation: --junit wrote nothing",
              file=sys.stderr)
    if outcome.status == "done":
        if not wrote:
            return EXIT_FAILURE, outcome.run_id, store
        if gates.missed(found):
            return EXIT_EXPECTATION, outcome.run_id, store
        return 0, outcome.run_id, store
    print(f"cnfperf: error: run {outcome.run_id} {outcome.status}: {outcome.error}",
          file=sys.stderr)
    print(f"cnfperf: cleaned up: {_summarise(outcome.cleaned) or 'nothing was created'}",
          file=sys.stderr)
    if outcome.left:
        print(f"cnfperf: left behind: {', '.join(outcome.left)}; remove with "
              f"`cnfperf cleanup {outcome.run_id}`", file=sys.stderr)
    else:
        print("cnfperf: nothing was left behind; the same command can be run again, or "
              f"`cnfperf run --resume {outcome.run_id}` to keep the points already done",
              file=sys.stderr)
    if outcome.status == "interrupted":
        return 128 + (outcome.signal or signal.SIGINT), outcome.run_id, store
    return EXIT_FAILURE, outcome.run_id, store


def _expectations(found: list[gates.Gate], earlier: dict[str, Any] | None) -> dict[str, Any]:
    return {"expect_run": earlier["id"] if earlier else None, **gates.counts(found),
            "verdicts": [g.to_dict() for g in found]}


def _print_gates(found: list[gates.Gate], earlier: dict[str, Any] | None,
                 brief: bool = False) -> None:
    """The expectations that missed or were skipped (`brief`: every one
    otherwise), and how many of each."""
    if not found:
        return
    if shown := gates.table(found, every=not brief):
        print("\n" + summary_table(shown))
    print(f"expectations: {gates.summary_line(found, earlier)}")


def _outcome(o: Any) -> dict[str, Any]:
    return {"run_id": o.run_id, "status": o.status, "error": o.error, "signal": o.signal,
            "cleaned": o.cleaned, "left": o.left, "warnings": list(dict.fromkeys(o.warnings))}


def _summarise(items: list[str]) -> str:
    """'netns cnfp…p0s', 'netns cnfp…p0r' → 'netns ×2'."""
    counts: dict[str, int] = {}
    for item in items:
        kind = item.split(" ", 1)[0]
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in counts.items())


class _ProgressLine:
    """`[1/2] veth udp throughput pairs=1 … measuring 1.5/3.0 s`, rewritten in place
    on a terminal, one line per phase otherwise (logs stay readable)."""

    def __init__(self, stream: Any):
        self.stream = stream
        self.tty = stream.isatty()
        self.last = ""
        self.width = 0

    def __call__(self, p: Any) -> None:
        if p.phase == "measured":   # a trial's result: its line came with its detail
            return
        head = f"[{p.point.index + 1}/{p.point.total}] " + \
            " ".join([p.point.scenario.describe(), *fields.undescribed(p.point.label)])
        trial = f"{p.detail} " if p.detail else ""
        if p.phase == "measuring":
            text = f"{head} … {trial}{p.elapsed:.1f}/{p.expected:.1f} s"
            if p.rx_pps is not None:
                text += f"  rx {p.rx_pps / 1e3:.1f} kpps"
            key = f"{head} {trial}measuring"
        elif p.phase == "trial":
            text = key = f"{head} … {p.detail}"
        else:
            text = key = f"{head} … {p.phase}"
            if p.phase == "setup" and p.detail:   # on a terminal only: not a line each
                text += f" {p.detail}"
            elif p.phase == "setup" and p.point.tester_why != testers.SET:
                text += f"  (tester {p.point.tester_why})"
            if p.phase == "setup" and p.eta is not None:
                text += f"  (eta {format_seconds(p.eta)})"
        if self.tty:
            self.stream.write("\r" + text.ljust(self.width))
            self.width = len(text)
            if p.phase in ("done", "failed"):
                self.stream.write("\n")
                self.width = 0
        elif key != self.last:
            self.stream.write((f"{head} … {trial}measuring {p.expected:.1f} s"
                               if p.phase == "measuring" else text) + "\n")
        self.last = key
        self.stream.flush()

    def end(self) -> None:
        if self.tty and self.width:
            self.stream.write("\n")


def _doctor(args: argparse.Namespace) -> int:
    host = gather(find_engine(), compare=True)
    matrix = checks.matrix(host)
    inventory = load_inventory(args.hosts) if args.hosts else None
    found = survey.check_hosts(inventory, host) if inventory else None
    if args.json:
        extra = {} if found is None else {
            "hosts": [asdict(h) for h in found[0]], "wires": [asdict(w) for w in found[1]]}
        print(json.dumps({"host": host.to_dict(), **matrix, **extra}, indent=1))
    else:
        print(render_host(host, matrix))
        if found is not None:
            print(_render_hosts(*found))
    if found is not None and not all(c.ok for c in (*found[0], *found[1])):
        return EXIT_FAILURE
    return 0


def _render_hosts(hosts: list, wires: list) -> str:
    lines = ["hosts"]
    for h in hosts:
        what = (f"unusable: {h.problem}" if h.problem else
                f"ok  {h.facts.get('kernel', '')}; runs {', '.join(h.planes) or 'no data plane'}")
        lines.append(f"  {h.name:<10} {h.address:<28} {what}")
    lines.append("wires")
    for w in wires:
        said = f"ok  {w.note}" if w.ok and w.note else "ok" if w.ok else w.problem
        lines.append(f"  {w.wire:<36} {said}")
    return "\n".join(lines)


def _cleanup(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        raise UserError("cleanup", "needs root (network namespaces, containers)")
    if args.run == "latest":
        args.run = _run_id(_open_store(args), "latest", "RUN_ID")
    if args.run is not None and not re.fullmatch(r"[0-9a-f]{4}", args.run):
        raise UserError("RUN_ID", f"{args.run!r} is not a run id (4 hex digits, as "
                                  "`cnfperf results list` shows)")
    if args.images and args.cluster is None:
        raise UserError("--images", "the images of a cluster's node: name it with --cluster FILE")
    swept: tuple[list[str], list[str]] = ([], [])
    if args.cluster is not None:   # first: a cluster that does not answer is bad input
        try:
            swept = cluster_runs(args.cluster, args.run, args.images)
        except ClusterError as e:
            raise UserError("--cluster", str(e)) from None
    if args.hosts:
        removed, failed = survey.cleanup_hosts(load_inventory(args.hosts), args.run, args.force)
    else:
        removed, failed = cleanup(force=args.force, run_id=args.run)
    removed, failed = swept[0] + removed, swept[1] + failed
    for line in removed:
        print(f"removed {line}")
    for line in failed:
        print(f"cnfperf: could not remove {line}", file=sys.stderr)
    if not removed and not failed:
        print("nothing to clean up")
    return EXIT_FAILURE if failed else 0


def _lab(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        raise UserError("lab", "needs root (a VM, taps, network namespaces)")
    if not INVENTORY_NAME.fullmatch(args.name):
        raise UserError("--name", f"{args.name!r} is no host name: [a-z][a-z0-9_-]{{0,31}}")
    if args.name == fields.LOCAL:
        raise UserError("--name", f"{fields.LOCAL!r} is this machine's name in an inventory")
    for flag, value, most in (("--wires", args.wires, remote_lab.MAX_WIRES),
                              ("--pfs", args.pfs, remote_lab.MAX_PFS)):
        if not 0 <= value <= most:
            raise UserError(flag, f"{value} is not within 0-{most}")
    if (pid := remote_lab.owner()) is not None:
        print(f"cnfperf: error: a lab runs already (pid {pid}); its inventory is "
              f"{remote_lab.INVENTORY}", file=sys.stderr)
        return EXIT_BUSY
    engine = find_engine()
    problems = remote_lab.problems(args.pfs > 0) + ([] if engine else ["engine not built "
                                                                       "(make build)"])
    if problems:
        raise SystemFailure("the lab cannot start here: " + "; ".join(problems))

    def say(line: str) -> None:
        print(f"lab: {line}", file=sys.stderr, flush=True)

    def up(made: Any) -> None:
        host = made.hosts[args.name]
        # its wires' NICs have SR-IOV too: the point names its PF
        switch = f"--switch sriov --sriov-pf {remote_lab.PF}0" if args.pfs else "--switch netkit"
        print(f"the lab is up: host {args.name} at {host.address} (root over SSH), "
              f"{args.pfs} emulated SR-IOV NIC(s), {args.wires} wire(s)")
        for a, b in made.wires:
            print(f"  wire {a} - {b}")
        print(f"inventory: {made.inventory}\n"
              f"  cnfperf doctor --hosts {made.inventory}\n"
              f"  cnfperf run --hosts {made.inventory} --tester-host {args.name} "
              f"--dut-host {args.name} {switch} --api raw\n"
              "Ctrl-C stops it.", flush=True)
    signum = lab_serve(args.name, args.wires, args.pfs, engine, say, up)
    say(f"stopped ({signal.Signals(signum).name}): nothing of it is left")
    return 0


def _cluster(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        raise UserError("cluster", "needs root (containerd, the kubelet, cgroups)")
    if args.hugepages < 0:
        raise UserError("--hugepages", f"{args.hugepages}: MB of hugepages, 0 or more")
    inventory = None if args.hosts is None else load_inventory(args.hosts)
    if (pid := cluster_node.KEEPER.owner()) is not None:
        print(f"cnfperf: error: a test cluster runs already (pid {pid}); its kubeconfig is "
              f"{cluster_node.KUBECONFIG}", file=sys.stderr)
        return EXIT_BUSY
    if problems := cluster_node.problems():
        raise SystemFailure("the test cluster cannot start here: " + "; ".join(problems))

    def say(line: str) -> None:
        print(f"cluster: {line}", file=sys.stderr, flush=True)

    def up(made: Any, joined_at: dict[str, str]) -> None:
        nodes = [f"{made.node} (this host)"] + [f"{n} ({a})" for n, a in joined_at.items()]
        # a kubelet offers its host's whole pool: pages there before the cluster too
        offered = pods.hugepages_by_node(pods.connect(made.kubeconfig))
        pool = ""
        if args.hugepages or any(offered.values()):
            added = f" ({args.hugepages} MB added on each)" if args.hugepages else ""
            pool = ("hugepages-2Mi offered to pods: " +
                    ", ".join(f"{n} {mb} MB" for n, mb in sorted(offered.items())) + added + "\n")
        print(f"the test cluster is up: Kubernetes {made.version}, nodes {', '.join(nodes)}\n"
              f"kubeconfig: {made.kubeconfig}\n{pool}"
              f"registry: {made.registry}\n"
              "Ctrl-C stops it.", flush=True)
    signum = cluster_serve(say, up, inventory, args.hugepages)
    say(f"stopped ({signal.Signals(signum).name}): nothing of it is left")
    return 0


def _open_store(args: argparse.Namespace):
    directory = results_dir(args.results)
    try:
        return Store(directory, create=False)
    except FileNotFoundError:
        raise UserError("--results", f"no results in {directory}") from None


def _results_list(args: argparse.Namespace) -> int:
    runs = _open_store(args).runs()
    print(json.dumps(runs, indent=1) if args.json else runs_table(runs))
    return 0


def _run_id(store: Any, text: str, field: str = "RUN") -> str:
    """A stored run's id from what the user typed: an id, or `latest`."""
    if text == "latest":
        latest = store.latest_run_id()
        if latest is None:
            raise UserError(field, f"no runs yet in {store.directory}")
        return latest
    if text not in store.run_ids():
        raise UserError(field, f"no run {text!r} in {store.directory} "
                               "(see `cnfperf results list`)")
    return text


def _stored_run(args: argparse.Namespace, text: str, field: str = "RUN") -> tuple[Any, dict]:
    store = _open_store(args)
    return store, store.run(_run_id(store, text, field))


def _results_show(args: argparse.Namespace) -> int:
    store, run = _stored_run(args, args.run)
    found, earlier = _gates(store, run, args.expect_run)
    if args.json:
        compared = _compared(run)
        print(json.dumps({**run, **({"paper": compared.to_dict()} if compared else {}),
                          **({"expectations": _expectations(found, earlier)} if found else {})},
                         indent=1, default=str))
    else:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["started"]))
        print(f"run {run['id']}  {run['status']}  started {started}  "
              f"cnfperf {run['cnfperf_version']}  engine {run['engine_version']}")
        print(run_table(run, found))
        if used := images(run):
            print(f"images: {used}")
        _print_tables(run)
        _print_gates(found, earlier)
    return 0


def _print_tables(run: dict[str, Any], brief: bool = False) -> None:
    """What follows a run's table: each point's path and CPU-bound nodes (when
    there is something to say), repetitions, searches and the latency at loads
    below what they found, soaks, a victim's interference, faults and their outages,
    noisy neighbours, the network functions' tables and CPU per node (`brief`, at
    the end of a run: what `results show` has in full)."""
    rows = rows_from_run(run)
    hurt = interference.table(interference.entries(rows)) if interference.tenants(rows) else None
    notes = {**cpu_tables.NOTES, "Interference": interference.NOTE}
    for table in filter(None, (point_table(run, brief=True), repetitions(run), searches(run),
                               latency_loads(run), soak_table(run), hurt, faults(run), noises(run),
                               *nf_tables.all_tables(run, brief),
                               *cpu_tables.all_tables(run, brief))):
        print()
        print(summary_table(table, notes.get(table[0], "")))
    if compared := _compared(run):
        print()
        print("\n".join(_paper_text(compared)))


def _results_export(args: argparse.Namespace) -> int:
    if args.csv and args.hdrh:
        raise UserError("--hdrh", "one format at a time: --csv or --hdrh")
    if not args.csv and not args.hdrh:
        raise UserError("--csv", "required (or --hdrh)")
    if args.hdrh and (args.nf_ports or args.cpu):
        raise UserError("--nf-ports" if args.nf_ports else "--cpu",
                        "a CSV of its own: not with --hdrh")
    store, run = _stored_run(args, args.run)
    if args.hdrh:
        return _export_hdrh(store, run, args.out)
    if args.nf_ports and args.cpu:
        raise UserError("--cpu", "one file at a time: --nf-ports or --cpu")
    write = write_nf_ports_csv if args.nf_ports else write_cpu_csv if args.cpu else write_csv
    if args.out is None:
        write(run, sys.stdout)
        return 0
    with open(args.out, "w", newline="") as f:
        n = write(run, f)
    print(f"{args.out}: {n} rows", file=sys.stderr)
    return 0


def _export_hdrh(store: Any, run: dict[str, Any], out: str | None) -> int:
    """An .hlog per point with latency; each file's path on stdout."""
    if not any(hlog.intervals(p) for p in run["points"]):
        raise UserError("RUN", f"run {run['id']} has no latency histogram to export")
    directory = Path(out) if out else store.directory / "runs" / run["id"] / "hdrh"
    if directory.exists() and not directory.is_dir():
        raise UserError("--out", f"{directory} is not a directory (--hdrh writes a file per point)")
    for path, _ in hlog.write(run, directory):
        print(path)
    return 0


def _report(args: argparse.Namespace) -> int:
    store, run = _stored_run(args, args.run)
    if not _has_results(run):
        raise UserError("RUN", f"run {run['id']} has no finished point to report")
    print(_write_report(store, run, args.out, args.expect_run))
    return 0


def _compare(args: argparse.Namespace) -> int:
    store = _open_store(args)
    if args.last is None and not args.trend and len(args.runs) == 2:
        given = [flag for flag, value in (("--metric", args.metric), ("--min-change",
                                          args.min_change), ("--out", args.out),
                                          ("--no-plots", args.no_plots or None))
                 if value is not None]
        if given:
            raise UserError(given[0], "is for a series: name three runs or more, or give "
                                      "--last N or --trend")
        return _side_by_side(args, store)
    return _trend(args, store, _series(args, store))


def _side_by_side(args: argparse.Namespace, store: Any) -> int:
    run_a = store.run(_run_id(store, args.runs[0], "RUN_A"))
    run_b = store.run(_run_id(store, args.runs[1], "RUN_B"))
    rows, notes = compare(run_a, run_b)
    why, differences = explain.compared(run_a, run_b, rows)
    if args.json:
        print(json.dumps({"a": run_a["id"], "b": run_b["id"], "columns": HEADERS,
                          "rows": rows, "notes": notes, "differences": differences}, indent=1))
        return 0
    if not rows:
        raise UserError("RUN_B", f"runs {run_a['id']} and {run_b['id']} share no point")
    print(summary_table((f"A = run {run_a['id']}, B = run {run_b['id']}", HEADERS, rows)))
    for note in [*notes, *why]:
        print(note)
    return 0


def _need(args: argparse.Namespace) -> advising.Need:
    """advise's flags as a need; UserError (exit 2) naming the flag."""
    def read(flag: str, parse: Callable[[], Any]) -> Any:
        try:
            return parse()
        except ValueError as e:   # `FIELD: why` or `'LINE': why`
            raise UserError(flag, str(e).split(": ", 1)[-1]) from None
    rate = read("--rate", lambda: rates.parse(args.rate, "--rate", search=False).pps)
    sizes = tuple(read("--size", lambda: parse_values("size", args.size)))
    p99 = None if args.p99 is None else read("--p99", lambda: expect.amount(
        args.p99, expect.METRICS["p99"], args.p99))
    if rate <= 0:
        raise UserError("--rate", "a need is a rate above 0")
    for flag, value, least in (("--nfs", args.nfs, 0), ("--pairs", args.pairs, 1),
                               ("--cores", args.cores, 1)):
        if value is not None and value < least:
            raise UserError(flag, f"must be {least} or more (got {value})")
    if args.shape and not args.nfs:
        raise UserError("--shape", "is how NFs are joined: give --nfs")
    if args.nfs:
        try:
            nf_kinds.kind(args.nf)
        except UserError as e:
            raise UserError("--nf", e.why) from None
    if not 0 <= args.loss < 1:
        raise UserError("--loss", f"a ratio from 0 to below 1 (got {args.loss:g})")
    switches = tuple(dict.fromkeys(x.strip() for x in (args.switch or "").split(",")
                                   if x.strip()))
    if unknown := [x for x in switches if x not in DATAPLANES]:
        raise UserError("--switch", f"unknown data plane {unknown[0]!r}; known: "
                                    f"{', '.join(DATAPLANES)}")
    return advising.Need(rate=rate, sizes=sizes, nfs=args.nfs, nf=args.nf,
                         shape=(args.shape or "chain") if args.nfs else "pair",
                         pairs=args.pairs, p99_ns=p99, loss=args.loss, cores=args.cores,
                         switches=switches)


def _advise(args: argparse.Namespace) -> int:
    need = _need(args)
    for flag, path in (("--plan", args.plan), ("--html", args.html)):
        if path is not None:
            _writable(path, flag)
    runs = _evidence(args)
    host = gather(find_engine())
    options = advising.advise(runs, need, host.to_dict())
    plan_doc, left = advice.doc(need, options, host) if args.plan is not None else ({}, [])
    if plan_doc.get("part"):
        advice.write(args.plan, need, plan_doc)
    if args.html is not None:
        try:
            advising.write_html(args.html, need, options, host.to_dict())
        except OSError as e:
            raise UserError("--html", f"cannot write {args.html}: {e.strerror}") from None
    if args.json:
        print(json.dumps({"need": asdict(need), "options": [advising.to_dict(o, need)
                                                           for o in options],
                          "plan": str(args.plan) if plan_doc.get("part") else None,
                          "left_out": left}, indent=1))
        return 0
    print(f"need: {need.describe()}")
    if options:
        used = len({r for o in options for r in o.runs})
        print(summary_table((f"{len(options)} options, best first, from {used} of {len(runs)} "
                             "runs read", advising.HEADERS, advising.rows(options, need))))
        for i, o in enumerate(options, 1):
            for why in o.why:
                print(f"  {i}: {why}")
    else:
        print(f"no stored point of {len(runs)} runs read measured this need (its NFs, shape, "
              "pairs and sizes)")
    if args.plan is not None:
        planes = len(plan_doc["part"]) // 2   # two parts each
        print(f"plan: {args.plan} ({planes} data plane{'s' if planes > 1 else ''} to measure; "
              f"cnfperf run {args.plan})" if plan_doc["part"]
              else "plan: nothing this host could measure is missing; none written")
        for line in left:
            print(f"  left out {line}")
    elif not any(o.verdict == advising.MEETS and not o.elsewhere for o in options):
        print("(no option meets it on this host's own evidence: --plan FILE writes what "
              "would measure it)")
    if args.html is not None:
        print(f"html: {args.html}")
    return 0


def _evidence(args: argparse.Namespace) -> list[advising.Stored]:
    """Every run of the stores advise reads: the results directory's, unless
    it has none and --from names others, and each --from's, read from a copy
    (another host's store is not migrated in place, and may be read-only). A
    store named twice is read once."""
    found = []
    own = results_dir(args.results)
    read = {own.resolve()}
    if (own / DB_NAME).exists():
        store = Store(own, create=False)
        found += [advising.Stored(store.run(r["id"]), str(own))
                  for r in store.runs() if r["stored"]]
    elif not args.stores:
        raise UserError("--results", f"no results in {own}")
    for given in args.stores:
        directory = Path(given)
        if not (directory / DB_NAME).exists():
            raise UserError("--from", f"no results in {directory}")
        if directory.resolve() in read:
            continue
        read.add(directory.resolve())
        with tempfile.TemporaryDirectory(prefix="cnfperf-advise-") as copy:
            shutil.copy(directory / DB_NAME, copy)
            try:
                store = Store(Path(copy), create=False)
            except UserError as e:
                raise UserError("--from", f"{directory}: {e.why}") from None
            found += [advising.Stored(store.run(r["id"]), str(directory), given)
                      for r in store.runs() if r["stored"]]
            store.close()
    return found


def _series(args: argparse.Namespace, store: Any) -> list[dict[str, Any]]:
    """The stored runs of the series, oldest first: those named, or with --last
    the N latest made from RUN's scenario (trend.same_scenario) that finished a
    point, RUN the newest."""
    if args.last is None:
        if len(args.runs) < 2:
            raise UserError("RUN", "a series needs two runs or more, oldest first (or --last N)")
        ids = [_run_id(store, text) for text in args.runs]
        if twice := next((i for i in ids if ids.count(i) > 1), None):
            raise UserError("RUN", f"run {twice} is named twice")
        runs = [store.run(i) for i in ids]
        later = [(a, b) for a, b in zip(runs, runs[1:]) if a["started"] > b["started"]]
        for a, b in later:
            print(f"cnfperf: warning: run {a['id']} started after run {b['id']}, which "
                  "follows it in the series (oldest first)", file=sys.stderr)
        return runs
    if args.last < 2:
        raise UserError("--last", f"a series needs two runs or more (got {args.last})")
    if len(args.runs) > 1:
        raise UserError("RUN", f"--last takes one run, the newest of its series (got "
                               f"{len(args.runs)})")
    newest = store.run(_run_id(store, args.runs[0] if args.runs else "latest"))
    if not (newest.get("spec") or {}).get("doc"):
        raise UserError("RUN", f"run {newest['id']} was stored without its scenario (made by "
                               "an older cnfperf): name the series' runs instead of --last")
    listed = [r for r in store.runs() if r["stored"]]
    before = [r["id"] for r in listed if r["started"] <= newest["started"]
              and r["id"] != newest["id"]]
    runs = [newest]
    for run_id in reversed(before):
        if len(runs) == args.last:
            break
        run = store.run(run_id)
        if trend.same_scenario(run, newest):
            runs.insert(0, run)
    if len(runs) < 2:
        raise UserError("--last", f"no other stored run was made from run {newest['id']}'s "
                                  "scenario (file and flags alike)")
    return runs


def _metrics(text: str | None) -> list[str]:
    if text is None:
        return list(trend.METRICS)
    names = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in names if m not in trend.METRICS]
    if unknown or not names:
        what = f"unknown metric {unknown[0]!r}" if unknown else "names no metric"
        raise UserError("--metric", f"{what}; known: {', '.join(trend.METRICS)}")
    return list(dict.fromkeys(names))


def _trend(args: argparse.Namespace, store: Any, runs: list[dict[str, Any]]) -> int:
    metrics = _metrics(args.metric)
    min_change = args.min_change or 0.0
    if not min_change >= 0:   # NaN too
        raise UserError("--min-change", f"must be 0 or more (got {min_change:g})")
    if args.no_plots and args.out:
        raise UserError("--out", "where plots go, and --no-plots draws none: one or the other")
    ids = [r["id"] for r in runs]
    out = Path(args.out) if args.out else store.directory / "runs" / ids[-1] / "trend"
    if out.exists() and not out.is_dir():
        raise UserError("--out", f"{out} is not a directory")
    found, notes = trend.trends(runs, metrics, min_change)
    if not found:
        raise UserError("RUN", f"runs {', '.join(ids)} share no point with a value to trend "
                               f"(the newest, {ids[-1]}, and one other at least)")
    from cnfperf.report import trend_plot   # matplotlib: only when plots are drawn
    plots = {} if args.no_plots else trend_plot.draw_all(found, ids, out)
    verdicts = [t.verdict for t in found]
    if args.json:
        print(json.dumps({"runs": ids, "metrics": metrics, "min_change": min_change,
                          "plots": None if args.no_plots else str(out),
                          "rows": [{**t.to_dict(), "plot": plots.get(t.key)} for t in found],
                          "regressions": verdicts.count(trend.REGRESSION),
                          "progressions": verdicts.count(trend.PROGRESSION),
                          "notes": notes}, indent=1))
    else:
        shown = " ".join(ids) if len(ids) <= SHOWN_RUNS else f"{ids[0]} … {ids[-1]}"
        title = f"trend over {len(ids)} runs, oldest first: {shown}"
        print(summary_table((title, trend.HEADERS, [t.row() for t in found])))
        print("verdicts: " + ", ".join(f"{verdicts.count(v)} {v}" for v in
                                       (trend.REGRESSION, trend.PROGRESSION, trend.NORMAL)))
        said = trend.whys(found)
        if said:
            print("what else went with each change, the most telling first:")
            print("\n".join(textwrap.fill(line, 100, subsequent_indent="    ") for line in said))
        for note in notes:
            print(note)
        if plots:
            print(f"plots: {out}")
    return EXIT_REGRESSION if trend.REGRESSION in verdicts else 0


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        return args.func(args)
    except UserError as e:
        print(f"cnfperf: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except HostBusy as e:
        print(f"cnfperf: error: {e}", file=sys.stderr)
        return EXIT_BUSY
    except SystemFailure as e:
        print(f"cnfperf: error: {e}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("cnfperf: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except BrokenPipeError:
        # A reader such as `head` stopped early: that is its choice, not our error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:
        if not isinstance(e, runner.Interrupted):
            raise
        print(f"cnfperf: {e}", file=sys.stderr)
        return 128 + e.signum
