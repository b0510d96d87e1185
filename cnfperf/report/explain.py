"""What else differed where a point moved: the facts two stored runs' points
were measured with, set side by side, and over a series ranked by how well
each goes with the change.

A point's facts (`facts`) are flat "what: value" pairs read from what the
run stored:
  host      its kernel, CPU model, DPDK, hugepages and tuning (host/tuning.py:
            microcode, governor, turbo, SMT, isolated cores, …)
  version   each program's version the point ran (the engine, the switch, QEMU…)
  placement the point's cores, busy pollers and tester, and where each node ran
  field     every scenario field compare does not match points on (pin, cores,
            quotas, the switch's knobs…), how long aside
  switch    what the switch read back of its configuration (applied)

Over a series (`ranked`), a fact scores by how it splits the runs of the
latest group (the change) from the others: the share of changed runs whose
value is not the others' usual one, less the share of other runs that have
the changed runs' usual one. A difference present in every changed run and in
no other scores 1 and comes first.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

from cnfperf import fields
from cnfperf.report import compare, summary

# A point's length is not what it measured (compare matches across them)
LENGTHS = ("duration", "warmup", "trial_duration", "initial_trial_duration", "duration_sum",
           "soak", "repeat")
HOST = ("kernel", "cpu_model", "cores", "dpdk", "runc", "libxdp", "kvm")
SHOWN = 60   # a value longer than this is cut in the text (the JSON keeps it)
# Side by side, a point moved when its rate changed by more than this share,
# or a latency percentile by more than LATENCY_MOVED
RATE_MOVED = 0.05
LATENCY_MOVED = 0.25


def facts(run: dict[str, Any], point: dict[str, Any]) -> dict[str, str]:
    """A point's facts; `host …` are those of the host its switch ran on
    (another host's, in a run across hosts). A fact the run did not store
    (older than it) is left out: no difference."""
    host = summary.switch_host(run, point)
    out = {f"host {k}": _text(host.get(k)) for k in HOST if k in host}
    hp = host.get("hugepages") or {}
    if hp:
        out["host hugepages"] = f"{hp.get('total')} × {hp.get('size_kb')} kB"
    out.update({f"host {k}": _text(v) for k, v in (host.get("tuning") or {}).items()})
    out.update({f"version {k}": _text(v) for k, v in (point.get("versions") or {}).items()
                if k != "kernel"})
    if point.get("pollers") is not None and point.get("point_cores") is not None:
        out["placement pollers/cores"] = f"{point['pollers']}/{point['point_cores']}"
    if point.get("tester_why"):
        out["placement tester"] = str(point["tester_why"])
    if nodes := _nodes(point.get("placement") or []):
        out["placement nodes"] = nodes
    scenario = point.get("scenario") or {}
    for name in fields.names():
        if name not in compare.MATCH and name not in LENGTHS and name in scenario:
            out[f"field {name}"] = _text(fields.show(name, scenario[name]))
    applied = (point.get("switch_facts") or {}).get("applied") or {}
    out.update({f"switch {k}": _text(v) for k, v in applied.items()})
    return out


def _text(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, default=str)
    return "–" if value is None or value == "" else str(value)


def _nodes(placement: list[dict[str, Any]]) -> str:
    """`send0@1 recv0@0 nf0.0@1`: each node's role and core."""
    out = []
    for pair in placement:
        for end in ("sender", "receiver"):
            if isinstance(pair.get(end), dict):
                e = pair[end]
                out.append(f"{e.get('role')}{pair.get('index')}@{e.get('cores') or e.get('cpu')}")
        for nf in pair.get("nfs") or []:
            if isinstance(nf, dict):
                out.append(f"{nf.get('name', 'nf')[-3:]}@{nf.get('cores') or nf.get('cpu')}")
    return " ".join(out)


@dataclass(frozen=True)
class Difference:
    what: str
    before: str                 # A's value, or the others' usual one
    after: str                  # B's value, or the changed runs' usual one
    changed_with: int = 1       # changed runs whose value is not the others' usual one
    changed: int = 1
    others_with: int = 0        # other runs with the changed runs' usual value
    others: int = 1

    @property
    def score(self) -> float:
        return self.changed_with / self.changed - self.others_with / self.others

    def text(self, series: bool = False) -> str:
        said = f"{self.what}: {_cut(self.before)} → {_cut(self.after)}"
        if series:
            said += (f" (in {self.changed_with} of {self.changed} changed runs, "
                     f"{self.others_with} of {self.others} others)")
        return said

    def to_dict(self) -> dict[str, Any]:
        return {"what": self.what, "before": self.before, "after": self.after,
                "changed_with": self.changed_with, "changed": self.changed,
                "others_with": self.others_with, "others": self.others,
                "score": round(self.score, 3)}


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN else text[:SHOWN - 1] + "…"


def between(a: dict[str, str], b: dict[str, str]) -> list[Difference]:
    """What differs between two points' facts, in facts' order; a fact one of
    them did not store (a run older than it) is no difference."""
    return [Difference(k, a[k], b[k]) for k in a if k in b and a[k] != b[k]]


def moved(row: Sequence[Any]) -> bool:
    """Whether a side-by-side row (compare.HEADERS) moved: its rate, or its p50
    or p99, changed by more than the marks."""
    rate, p50, p99 = row[3], row[8], row[11]
    return (rate is not None and abs(rate - 1) > RATE_MOVED) or any(
        r is not None and abs(r - 1) > LATENCY_MOVED for r in (p50, p99))


def side_by_side(run_a: dict[str, Any], run_b: dict[str, Any]
                 ) -> tuple[list[Difference], dict[tuple, list[Difference]]]:
    """(what differs between the runs' hosts, for every point both measured
    what else differs between its two points: by compare.what)."""
    a, b = compare.measured(run_a), compare.measured(run_b)
    hosts = [d for d in between(facts(run_a, {}), facts(run_b, {}))
             if d.what.startswith("host ")]
    each = {}
    for key in (k for k in a if k in b):
        found = between(facts(run_a, a[key]["point"]), facts(run_b, b[key]["point"]))
        each[key] = [d for d in found if not d.what.startswith("host ")]
    return hosts, each


def ranked(runs: Sequence[dict[str, Any]], points: Sequence[dict[str, Any]],
           changed: set[str], limit: int = 5) -> list[Difference]:
    """The facts that go with a change over a series: `runs` and each one's
    `points` (the same point in each), `changed` the ids of the runs of the
    latest group; the best `limit`, each scoring above 0."""
    seen = [facts(r, p) for r, p in zip(runs, points)]
    found = []
    for key in dict.fromkeys(k for f in seen for k in f):
        # the runs that stored the fact (one older than it did not)
        mine = [f[key] for r, f in zip(runs, seen) if r["id"] in changed and key in f]
        others = [f[key] for r, f in zip(runs, seen) if r["id"] not in changed and key in f]
        if not mine or not others:
            continue
        usual_before = Counter(others).most_common(1)[0][0]
        usual_after = Counter(mine).most_common(1)[0][0]
        d = Difference(key, usual_before, usual_after,
                       sum(v != usual_before for v in mine), len(mine),
                       sum(v == usual_after for v in others), len(others))
        if d.score > 0:
            found.append(d)
    found.sort(key=lambda d: (-d.score, -d.changed_with))
    return found[:limit]


def compared(run_a: dict[str, Any], run_b: dict[str, Any], rows: list[list[Any]]
             ) -> tuple[list[str], dict[str, Any]]:
    """What the side-by-side table (compare.compare's `rows`, in its order)
    leaves unsaid: the hosts' differences once, then for each point that
    moved what else differed for it; as lines of text and as JSON."""
    hosts, each = side_by_side(run_a, run_b)
    keys = list(each)   # compare's rows' order: A's points that B measured too
    measured = compare.measured(run_a)
    points = {k: measured[k]["point"] for k in keys}
    names = summary.varying([*summary.done_points(run_a), *summary.done_points(run_b)]) \
        or ["switch"]
    out = ["the hosts differ: " + "; ".join(d.text() for d in hosts)] if hosts else []
    said = []
    for row, key in zip(rows, keys):
        if not moved(row):
            continue
        label = summary.label(points[key], names)
        said.append({"point": label, "differences": [d.to_dict() for d in each[key]]})
        if each[key]:
            out.append(f"{label} moved; it also differed in: "
                       + "; ".join(d.text() for d in each[key]))
        elif not hosts:
            out.append(f"{label} moved; nothing stored about it differed (the host's noise, "
                       "or what cnfperf does not record)")
    return out, {"hosts": [d.to_dict() for d in hosts], "moved": said}
