"""At a glance: per mode and frame size, the run's data planes ranked, first in
the report (as a chart, glance_plot.py, and as tables).

Each entry is a curve of the report's plots (rows.path_series: the data plane,
and what else tells its path apart) at one frame size. Throughput ranks the best
received rate over whatever else the run swept for that curve (rates, bursts,
…), the mean of its repetitions; latency ranks the lowest median (p50), with
its p99, from latency points only (a throughput point's latency is its queue's),
round trips and one-way times (a single tester's) apart: a ranking, a row of
the chart and a table per kind (kinds.py), each saying which.
With repetitions, each value comes with its 95% confidence interval (Student t,
experiments/stats.py).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Sequence

from cnfperf.experiments import stats
from cnfperf.report import contention, emulation, kinds, style
from cnfperf.report.rows import path_series
from cnfperf.report.summary import Table, _param, done_points, label, varying


@dataclass
class Entry:
    mode: str                      # throughput | latency
    size: int
    curve: str                     # `ovs`, `ovs 3×l2 single`
    value: stats.Summary           # rx pps (throughput) or p50 ns (latency)
    p99: stats.Summary | None      # latency: p99 ns
    loss: float | None             # throughput: mean loss ratio at the best
    kind: str | None               # latency: rtt | one_way
    tester: str                    # the tester of the best
    share: contention.Share | None
    config: str                    # what else the best was measured at (`burst=64 rate=max`)
    # what its points stored of their data plane (switch_facts): its style
    switch_facts: dict[str, Any] | None = None
    vms: str = "–"                 # how its VMs ran (emulation.said): `1 tcg (emulated)`

    @property
    def contended(self) -> bool:
        return bool(self.share and self.share.contended)

    @property
    def board(self) -> tuple[str, str]:
        """What the entry is ranked among: throughput, or latency of its kind (a
        round trip is not ranked against one way, a single tester's)."""
        return (self.mode, self.kind or "" if self.mode == "latency" else "")


def _summary(values: Sequence[float | None]) -> stats.Summary | None:
    known = [v for v in values if v is not None]
    return stats.summarize(known) if known else None


def _group(p: dict[str, Any]) -> str:
    """The repetitions of one point share their group."""
    return str(p.get("grp") or p.get("key") or p.get("idx"))


def entries(run: dict[str, Any]) -> list[Entry]:
    """Every curve at every frame size of each mode, ranked: the best first."""
    done = done_points(run)
    name = path_series(done)
    styles = style.learn(done)
    groups: dict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for p in done:
        mode = str(_param(p, "mode") or "throughput")
        if mode == "latency" and p.get("lat_p50_ns") is None or \
                mode != "latency" and p.get("rx_pps") is None:
            continue
        kind = kinds.of(p) if mode == "latency" else None
        groups[(mode, kind, int(_param(p, "size") or 0), name(p))][_group(p)].append(p)
    out = []
    for (mode, kind, size, curve), configs in groups.items():
        # what the curve's points differ in at this size, besides repetitions
        others = varying([p for members in configs.values() for p in members])
        candidates = [_entry(mode, kind, size, curve, members, others)
                      for members in configs.values()]
        pick = min if mode == "latency" else max
        out.append(pick(candidates, key=lambda e: e.value.mean))
    latency_first = {"throughput": 0, "latency": 1}
    kind_first = {k: i for i, k in enumerate(kinds.ORDER)}   # round trips first, as the plots
    out.sort(key=lambda e: (latency_first.get(e.mode, 2), kind_first.get(e.kind or "", 2),
                            e.board, e.size,
                            -e.value.mean if e.mode != "latency" else e.value.mean,
                            styles.rank(e.curve), e.curve))
    return out


def ranked(found: Sequence[Entry]) -> bool:
    """Whether any mode (and latency kind) and frame size has two entries or
    more to rank."""
    counts: dict[tuple, int] = defaultdict(int)
    for e in found:
        counts[(e.board, e.size)] += 1
    return any(n > 1 for n in counts.values())


def _entry(mode: str, kind: str | None, size: int, curve: str, members: list[dict[str, Any]],
           others: Sequence[str]) -> Entry:
    first = members[0]
    crowded = [s for s in map(contention.share, members) if s]
    share = max(crowded, key=lambda s: s.pollers / s.cores, default=None)
    if mode == "latency":
        value = _summary([m.get("lat_p50_ns") for m in members])
        p99, loss = _summary([m.get("lat_p99_ns") for m in members]), None
    else:
        value, p99 = _summary([m.get("rx_pps") for m in members]), None
        losses = [m["loss_ratio"] for m in members if m.get("loss_ratio") is not None]
        loss = stats.mean(losses) if losses else None
    return Entry(mode, size, curve, value, p99, loss, kind,
                 contention.tester(first) or "–", share,
                 label(first, others) if others else "", first.get("switch_facts"),
                 emulation.said(first))


def _ci(s: stats.Summary | None, scale: float) -> str:
    if s is None or s.ci_low is None:
        return "–"
    return f"{_num(s.ci_low / scale)} – {_num(s.ci_high / scale)}"


def _num(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def _vms(found: Sequence[Entry]) -> bool:
    """Whether a table needs a VMs column: a path ran virtual machines."""
    return any(e.vms != "–" for e in found)


def _contended(e: Entry) -> str:
    return f"yes: {e.share}" if e.contended else "no"


def _column(found: Sequence[Entry]) -> str:
    """`data plane` while every curve is one, else `path`."""
    return "data plane" if all(" " not in e.curve for e in found) else "path"


def throughput_table(found: Sequence[Entry]) -> Table | None:
    mine = [e for e in found if e.mode != "latency"]
    if not mine:
        return None
    repeated = any(e.value.n > 1 for e in mine)
    config = any(e.config for e in mine)
    rank = _ranks(mine)
    vms = _vms(mine)
    rows = [[str(e.size), rank[id(e)], e.curve, e.value.mean / 1e6,
             *([_ci(e.value, 1e6), e.value.n] if repeated else []),
             None if e.loss is None else 100 * e.loss, e.tester, _contended(e),
             *([e.vms] if vms else []), *([e.config] if config else [])] for e in mine]
    return ("At a glance: throughput",
            ["size B", "rank", _column(mine), "best rx Mpps",
             *(["95% CI Mpps", "n"] if repeated else []), "loss %", "tester", contention.COLUMN,
             *([emulation.COLUMN] if vms else []), *(["best at"] if config else [])], rows)


def latency_tables(found: Sequence[Entry]) -> list[Table]:
    """A table per latency kind (round trip, one way), each ranked on its own."""
    boards = dict.fromkeys(e.board for e in found if e.mode == "latency")
    return [_latency_table([e for e in found if e.board == b], b[1]) for b in boards]


def _latency_table(mine: Sequence[Entry], kind: str) -> Table:
    repeated = any(e.value.n > 1 for e in mine)
    config = any(e.config for e in mine)
    rank = _ranks(mine)
    vms = _vms(mine)
    rows = [[str(e.size), rank[id(e)], e.curve, e.value.mean / 1e3,
             *([_ci(e.value, 1e3)] if repeated else []),
             None if e.p99 is None else e.p99.mean / 1e3,
             *([_ci(e.p99, 1e3), e.value.n] if repeated else []),
             e.tester, _contended(e), *([e.vms] if vms else []),
             *([e.config] if config else [])] for e in mine]
    return (f"At a glance: latency, {kinds.said(kind)}",
            ["size B", "rank", _column(mine), "p50 µs",
             *(["p50 95% CI µs"] if repeated else []), "p99 µs",
             *(["p99 95% CI µs", "n"] if repeated else []), "tester", contention.COLUMN,
             *([emulation.COLUMN] if vms else []), *(["best at"] if config else [])], rows)


def _ranks(found: Sequence[Entry]) -> dict[int, int]:
    """1 for the best of each frame size (and latency kind; entries come ranked)."""
    out, seen = {}, defaultdict(int)
    for e in found:
        seen[(e.board, e.size)] += 1
        out[id(e)] = seen[(e.board, e.size)]
    return out


NOTE = ("Per frame size, each data plane (or path) at its best: throughput at the highest "
        "received rate any of its points reached (the mean of its repetitions), latency at "
        "the lowest median of its latency points, round trips (a split tester's client) "
        "and one-way times (a single tester's, on its one clock) ranked apart. CPU contended: measured with more "
        "busy pollers than cores; the tester and why it was chosen are in the "
        "Points table.")
