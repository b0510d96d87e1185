"""`cnfperf advise`: the need from its flags, the stores read, the advice
printed (report/advise.py ranks; run/advice.py plans)."""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

from cnfperf import UserError, fields, rate as rates
from cnfperf import nfs as nf_kinds
from cnfperf.results import expect
from cnfperf.engine import find_engine
from cnfperf.experiments.sweep import parse_values
from cnfperf.run.declared import gather
from cnfperf.report import advise as advising
from cnfperf.dataplanes import DATAPLANES
from cnfperf.run import advice
from cnfperf.report.tables import summary_table
from cnfperf.results.store import DB_NAME, Store, results_dir
from cnfperf.cli.common import results_and_json, writable


def add(sub: Any) -> None:
    """Its commands, on the command line's subparsers."""
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
    results_and_json(advise)
    advise.set_defaults(func=_advise)


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
            writable(path, flag)
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
            found += [advising.Stored(store.run(r["id"]), str(directory), given or ".")
                      for r in store.runs() if r["stored"]]
            store.close()
    return found
