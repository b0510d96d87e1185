"""`cnfperf study`: a study of studies/ run and reported, or every paper's
experiments and what reproduces them (--coverage)."""
from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import Any

from cnfperf import UserError, fields
from cnfperf.run import checks
from cnfperf.engine import find_engine
from cnfperf.experiments import reference as paper, studies
from cnfperf.run.declared import gather
from cnfperf.report.tables import render
from cnfperf.results.store import DB_NAME, Store, results_dir
from cnfperf.cli.common import results_and_json
from cnfperf.cli.run import dry_run, execute, expect_run, scenario_flags
from cnfperf.cli.shown import has_results, paper_of, write_report

# Where a study's points run (the hosts, the NIC whose VFs they take), set
# for all of them from the command line
STUDY_PLACES = ("tester_host", "dut_host", "sriov_pf")


def add(sub: Any) -> None:
    """Its commands, on the command line's subparsers."""
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
    scenario_flags(study, with_fields=False)
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
    results_and_json(study)
    study.set_defaults(func=_study)


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
    args.expect_run = expect_run(args)
    differs = paper.difference_lines(paper.load(swept.spec["doc"]))
    if differs:   # before the run: what its numbers will not be
        print(f"cnfperf: {path.stem} differs from its paper:\n  " + "\n  ".join(differs),
              file=sys.stderr)
    if args.dry_run:
        return dry_run(swept, host)
    code, run_id, store = execute(args, swept, engine, host)
    run = store.run(run_id)
    if has_results(run):
        print(f"report: {write_report(store, run, expect_run=args.expect_run)}",
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
            compared = paper_of(store.run(run_id))
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
