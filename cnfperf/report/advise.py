"""`cnfperf advise`: which configuration to run NFs with, from what stored runs
measured. Nothing is extrapolated: every number shown is a stored point's.

A need (`Need`) is the NFs (kind, count, chain or pipeline: the stored points'
`shape`), the rate each pair must carry, the frame sizes, a p99 budget, the
loss allowed and the cores the switch and NFs may take. The evidence is every
finished throughput point of the stores read that was measured for it (the
same NFs, shape, pairs, a size asked; none with a neighbour, a fault, a
policer, a shaper or a limit in its path). Points alike in how they were run
(CONFIG: the data plane and its knobs, where NFs run, how they poll…) are one
option. For each option and size:

  capacity  the most a pair carried within the loss allowed: a search's rate
            found (where its loss goal allows no more loss than asked), else a
            fixed-rate point's received rate, which is only a floor ("≥": it
            carried that much, maybe more)
  p99       its one-way p99 at the lowest load at or above the need (a
            fixed-rate point, or a search's latency trial)
  lost at   the lowest rate it was seen to lose more than allowed at

An option meets the need when every size's capacity reaches the rate, its p99
keeps to the budget and its cores fit; misses it when a size fell short
(found below the rate, or lost at it), its p99 exceeded the budget, or it needs
more cores; else it is unproven: what is missing is said. Options are ranked:
those that meet first, by headroom (the smallest capacity over the rate), then
the unproven, then those that miss. Evidence measured on another kind of host
(another CPU model or core count than this one) is marked so.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Sequence

from cnfperf import fields, rate as rates
from cnfperf.report import html, summary
from cnfperf.results import expect

# What makes two points one option: how the NFs were run, and how the tester
# measured them (two points alike but for a quota are two options)
CONFIG = ("switch", "forward", "switch_in", "switch_cores", "switch_rxq", "rxq_affinity",
          "switch_rxd", "switch_txd", "switch_quota", "poll", "pin", "api", "nf_api", "nf_in",
          "nf_cores", "nf_quota", "runtime", "accel", "vm_memory", "tester", "burst", "flows",
          "touch", "mmsg", "endpoint_cores", "endpoint_quota", "endpoint_in")
# A point with one of these in its path measured something else than the need
ASIDE = {"noise": "none", "policer": "none", "shaper": "none", "fault": "none"}
ASIDE_SET = ("limit", "graph", "onoff")
MEETS, UNPROVEN, MISSES = "meets", "unproven", "misses"
# A p99 over budget misses the need when measured at up to this many times its
# rate; measured only at higher loads, it leaves the need unproven
NEAR = 1.5


@dataclass(frozen=True)
class Need:
    rate: float                    # pps per pair
    sizes: tuple[int, ...]
    nfs: int = 0
    nf: str = "l2"
    shape: str = "pair"            # pair (no NFs), chain or pipeline
    pairs: int = 1
    p99_ns: float | None = None
    loss: float = 0.0
    cores: int | None = None       # for the switch and the NFs; None: any
    switches: tuple[str, ...] = ()  # the data planes considered; (): every one

    def reached(self, load: float) -> bool:
        """Whether a load per pair is the need's rate or more (to a pacer's
        rounding: 0.1 %)."""
        return load >= self.rate * 0.999

    def describe(self) -> str:
        path = f"{self.nfs} × {self.nf} ({self.shape})" if self.nfs else "no NF"
        budget = (f", p99 ≤ {expect.show(expect.METRICS['p99'], self.p99_ns)}"
                  if self.p99_ns is not None else "")
        cores = f", {self.cores} cores" if self.cores else ""
        return (f"{path}, {self.pairs} pair{'s' if self.pairs > 1 else ''} at "
                f"{expect.show(expect.METRICS['rx_pps'], self.rate)} pps each, "
                f"{'/'.join(map(str, self.sizes))} B{budget}, loss ≤ {self.loss:g}{cores}")


@dataclass
class Seen:
    """What one option measured at one size."""
    size: int
    capacity: float | None = None      # pps per pair
    floor: bool = False                # capacity is what it carried, at least
    capacity_at: str = ""              # RUN:POINT
    p99_ns: float | None = None
    p99_at: str = ""
    p99_load: float | None = None      # pps per pair the p99 was measured at
    lost_at: float | None = None       # the lowest rate it lost more than allowed at
    lost_where: str = ""
    verdict: str = UNPROVEN
    why: str = ""

    def headroom(self, need: Need) -> float | None:
        return self.capacity / need.rate if self.capacity is not None and need.rate else None


@dataclass
class Option:
    config: dict[str, Any]
    seen: dict[int, Seen]
    cores: int = 0                     # the switch's poll threads and the NFs' cores
    hosts: dict[str, bool] = field(default_factory=dict)   # described -> another kind
    runs: dict[str, str] = field(default_factory=dict)     # Stored.ref -> its store
    verdict: str = UNPROVEN
    why: list[str] = field(default_factory=list)

    @property
    def elsewhere(self) -> bool:
        return any(self.hosts.values())

    def headroom(self, need: Need) -> float | None:
        found = [s.headroom(need) for s in self.seen.values()]
        return min(found) if found and None not in found else None

    def worst_p99(self) -> float | None:
        found = [s.p99_ns for s in self.seen.values() if s.p99_ns is not None]
        return max(found) if found else None


def _aside(s: dict[str, Any]) -> bool:
    return any(s.get(k, v) != v for k, v in ASIDE.items()) or any(s.get(k) for k in ASIDE_SET)


def matches(point: dict[str, Any], need: Need) -> bool:
    s = point.get("scenario") or {}
    return (point.get("status") == "done" and s.get("mode") == "throughput"
            and (not need.switches or s.get("switch") in need.switches)
            and int(s.get("nfs") or 0) == need.nfs
            and (not need.nfs or (s.get("nf") == need.nf and point.get("shape") == need.shape))
            and int(s.get("pairs") or 1) == need.pairs and s.get("size") in need.sizes
            and not s.get("pair") and not _aside(s))


def _cores(point: dict[str, Any]) -> int:
    """The cores its switch polled on and its NFs took."""
    s = point.get("scenario") or {}
    polls = (point.get("switch_facts") or {}).get("kind") == "dpdk"
    return (int(s.get("switch_cores") or 1) if polls else 0) + \
        int(s.get("nfs") or 0) * int(s.get("nf_cores") or 1)


def host_of(h: dict[str, Any]) -> str:
    """`Xeon, 2 cores, 6.1.0`: a host's facts as the advice says them."""
    return f"{h.get('cpu_model') or '?'}, {h.get('cores') or '?'} cores, {h.get('kernel') or '?'}"


def other_kind(h: dict[str, Any], here: dict[str, Any]) -> bool:
    """Whether a host is another kind than `here`: its CPU model or core
    count differ."""
    return (h.get("cpu_model"), h.get("cores")) != (here.get("cpu_model"), here.get("cores"))


class Stored(NamedTuple):
    """A run read for evidence, and its store's directory. A point of this
    host's store is RUN:POINT; one of a store read with --from is
    RUN:POINT@DIR (`source`, the DIR as given), so that two stores' runs of
    one id (ids are short) are never taken for each other."""
    run: dict[str, Any]
    store: str
    source: str = ""

    @property
    def ref(self) -> str:
        """The run as the advice names it: RUN, or RUN@DIR."""
        return f"{self.run['id']}@{self.source}" if self.source else self.run["id"]

    def at(self, point: dict[str, Any]) -> str:
        """One of its points as the advice names it: RUN:POINT[@DIR]."""
        where = f"{self.run['id']}:{point['idx']}"
        return f"{where}@{self.source}" if self.source else where


def run_of(at: str) -> tuple[str, str]:
    """RUN:POINT[@DIR] -> (RUN, its ref: RUN or RUN@DIR)."""
    where, _, source = at.partition("@")
    run_id = where.split(":")[0]
    return run_id, f"{run_id}@{source}" if source else run_id


def advise(runs: Sequence[Stored], need: Need, here: dict[str, Any]) -> list[Option]:
    """The options the stored `runs` have evidence for, ranked; `here` this
    host's facts (HostFacts.to_dict)."""
    options: dict[tuple, Option] = {}
    for stored in runs:
        run = stored.run
        for p in run.get("points", []):
            if not matches(p, need):
                continue
            s = p["scenario"]
            key = tuple(str(s.get(k)) for k in CONFIG)
            o = options.setdefault(key, Option({k: s.get(k) for k in CONFIG},
                                               {size: Seen(size) for size in need.sizes}))
            o.cores = max(o.cores, _cores(p))
            host = summary.switch_host(run, p)   # where it ran: a DUT's, in a run across hosts
            o.hosts[host_of(host)] = other_kind(host, here)
            o.runs[stored.ref] = stored.store
            _take(o.seen[s["size"]], p, stored.at(p), need)
    for o in options.values():
        _judge(o, need)
    order = {MEETS: 0, UNPROVEN: 1, MISSES: 2}
    return sorted(options.values(), key=lambda o: (order[o.verdict], -(o.headroom(need) or 0),
                                                   o.worst_p99() or 0))


def _take(seen: Seen, p: dict[str, Any], where: str, need: Need) -> None:
    """One point's evidence into its size's."""
    pairs = int(p["scenario"].get("pairs") or 1)
    searched = p.get("search_rate_pps") is not None and p.get("trials")
    if searched and (p.get("search_loss_threshold") or 0) <= need.loss + 1e-12:
        rate = float(p["search_rate_pps"])
        # a floor too where the generator was the limit, or the search's top was
        top = rates.parse(p["scenario"].get("search_max") or 0, search=False).pps
        width = float(p["scenario"].get("precision") or 0.01)
        floor = bool(p.get("generator_limited")) or bool(top and rate >= top * (1 - width))
        _capacity(seen, rate, floor, where)
    elif not searched and p.get("loss_ratio") is not None:
        # unpaced (offered 0): what it was offered is what the sender put out
        offered = float(p.get("offered_pps") or p.get("tx_pps") or 0) / pairs
        carried = float(p.get("rx_pps") or 0) / pairs
        if p["loss_ratio"] <= need.loss:
            _capacity(seen, carried, True, where)
        elif offered and (seen.lost_at is None or offered < seen.lost_at):
            seen.lost_at, seen.lost_where = offered, where
        if p.get("lat_p99_ns") is not None and p["loss_ratio"] <= need.loss:
            _latency(seen, offered or carried, p["lat_p99_ns"], where, need)
    for t in p.get("trials") or ():   # a search's latency trials below the rate it found
        if t.get("phase") == "latency" and t.get("lat_p99_ns") is not None:
            _latency(seen, float(t.get("offered_pps") or 0), t["lat_p99_ns"], where, need)


def _capacity(seen: Seen, rate: float, floor: bool, where: str) -> None:
    """The most it carried; a search's rate found wins over a floor as high."""
    if seen.capacity is None or rate > seen.capacity or (rate == seen.capacity and not floor):
        seen.capacity, seen.floor, seen.capacity_at = rate, floor, where


def _latency(seen: Seen, load: float, p99: float, where: str, need: Need) -> None:
    """The p99 at the lowest load per pair at or above the need; while there
    is none, at the highest below it (shown, and judged unproven)."""
    enough = need.reached
    before = seen.p99_load
    if before is None or (enough(load) and (not enough(before) or load < before)) or \
            (not enough(load) and not enough(before) and load > before):
        seen.p99_ns, seen.p99_at, seen.p99_load = p99, where, load


def _judge(o: Option, need: Need) -> None:
    for seen in o.seen.values():
        _judge_size(seen, need)
    verdicts = [s.verdict for s in o.seen.values()]
    o.why = [f"{s.size} B: {s.why}" for s in o.seen.values() if s.why]
    if need.cores is not None and o.cores > need.cores:
        o.verdict = MISSES
        o.why.insert(0, f"its switch and NFs took {o.cores} cores; {need.cores} available")
    elif MISSES in verdicts:
        o.verdict = MISSES
    elif all(v == MEETS for v in verdicts):
        o.verdict = MEETS
    else:
        o.verdict = UNPROVEN


def _judge_size(seen: Seen, need: Need) -> None:
    rate = expect.METRICS["rx_pps"]
    if seen.lost_at is not None and seen.lost_at <= need.rate and \
            (seen.capacity is None or seen.capacity < need.rate):
        seen.verdict = MISSES
        seen.why = f"lost more than allowed at {expect.show(rate, seen.lost_at)} pps " \
                   f"({seen.lost_where})"
        return
    if seen.capacity is None:
        seen.verdict, seen.why = UNPROVEN, "no point within the loss allowed"
        return
    if seen.capacity < need.rate:
        if seen.floor:
            seen.verdict = UNPROVEN
            seen.why = f"measured up to {expect.show(rate, seen.capacity)} pps only"
        else:
            seen.verdict = MISSES
            seen.why = f"found {expect.show(rate, seen.capacity)} pps"
        return
    if need.p99_ns is None:
        seen.verdict = MEETS
        return
    if seen.p99_ns is None or seen.p99_load is None or not need.reached(seen.p99_load):
        seen.verdict = UNPROVEN
        seen.why = f"no latency measured at {expect.show(rate, need.rate)} pps or more"
        return
    if seen.p99_ns > need.p99_ns:
        # over the budget near the need misses it; far above the need it may
        # be the load's (latency grows with it): not measured where it matters
        near = seen.p99_load <= NEAR * need.rate
        seen.verdict = MISSES if near else UNPROVEN
        seen.why = (f"p99 {expect.show(expect.METRICS['p99'], seen.p99_ns)} at "
                    f"{expect.show(rate, seen.p99_load)} pps"
                    + ("" if near else f", not measured within {NEAR:g}× the need"))
        return
    seen.verdict = MEETS


def varying(options: Sequence[Option]) -> list[str]:
    """The CONFIG fields whose value differs between options (the switch always)."""
    return ["switch", *(k for k in CONFIG if k != "switch"
                        and len({str(o.config.get(k)) for o in options}) > 1)]


def label(o: Option, names: Sequence[str]) -> str:
    return " ".join(fields.show(k, o.config.get(k)) if k == "switch"
                    else f"{k}={fields.show(k, o.config.get(k))}" for k in names)


HEADERS = ["rank", "configuration", "verdict", "headroom", "per size: capacity, p99",
           "evidence", "host"]


def evidence(o: Option) -> list[str]:
    """The points an option's numbers come from: RUN:POINT, each once."""
    return sorted({x for s in o.seen.values() for x in (s.capacity_at, s.p99_at, s.lost_where)
                   if x})


def rows(options: Sequence[Option], need: Need) -> list[list[Any]]:
    names = varying(options)
    out = []
    for i, o in enumerate(options, 1):
        room = o.headroom(need)
        floor = any(s.floor for s in o.seen.values())
        out.append([i, label(o, names), o.verdict,
                    "–" if room is None else f"{'≥' if floor else ''}{room:.2f}×",
                    "; ".join(_size(s) for s in o.seen.values()),
                    " ".join(evidence(o)) or "–",
                    "another: " + "; ".join(h for h, other in o.hosts.items() if other)
                    if o.elsewhere else "this one"])
    return out


def write_html(path: Path, need: Need, options: Sequence[Option], here: dict[str, Any]) -> None:
    """The ranking as a page, each point of evidence linked to its run's report
    where one was written (cnfperf report RUN)."""
    base = path.resolve().parent

    def links(o: Option) -> list[html.Link] | str:
        out = []
        for at in evidence(o):
            run_id, ref = run_of(at)
            report = Path(o.runs[ref]) / "runs" / run_id / "report" / "report.html"
            out.append(html.Link(at, os.path.relpath(report.resolve(), base)
                                 if report.exists() else None))
        return out or "–"
    found = [[*row[:5], links(o), row[6]] for row, o in zip(rows(options, need), options)]
    notes = [f"{i}: {why}" for i, o in enumerate(options, 1) for why in o.why]
    html.write(path, "cnfperf advice", summary=need.describe(),
               tables=[html.Table("Options, best first", HEADERS, found,
                                  "Evidence is RUN:POINT (the point's index in its run; "
                                  "@DIR: in the store read with --from DIR), linked to the "
                                  "run's report where one was written (cnfperf report RUN). "
                                  + " ".join(notes))],
               params={"need": need.describe()}, host={"this host": host_of(here)})


def _size(s: Seen) -> str:
    rate = expect.METRICS["rx_pps"]
    cap = "–" if s.capacity is None else f"{'≥' if s.floor else ''}{expect.show(rate, s.capacity)}"
    p99 = "–" if s.p99_ns is None else \
        f"{expect.show(expect.METRICS['p99'], s.p99_ns)} at {expect.show(rate, s.p99_load)} pps"
    return f"{s.size} B {cap} pps, p99 {p99}"


def to_dict(o: Option, need: Need) -> dict[str, Any]:
    return {"config": o.config, "verdict": o.verdict, "why": o.why,
            "headroom": o.headroom(need), "cores": o.cores,
            "hosts": [{"host": h, "another_kind": other} for h, other in o.hosts.items()],
            "runs": o.runs,
            "sizes": [{"size": s.size, "capacity_pps": s.capacity, "floor": s.floor,
                       "capacity_at": s.capacity_at, "p99_ns": s.p99_ns, "p99_at": s.p99_at,
                       "p99_load_pps": s.p99_load, "lost_at_pps": s.lost_at,
                       "lost_where": s.lost_where, "verdict": s.verdict, "why": s.why}
                      for s in o.seen.values()]}
