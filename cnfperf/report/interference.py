"""Interference between tenants: the victim's throughput, loss and p99 alone
and beside its aggressors, per aggressor load, from a run's plot rows (rows.py:
one per pair, each with what its pair was asked, `asked`).

The victim is pair 0; every other pair of a point is an aggressor. A point
with one pair is the victim alone: its baseline. A point with more pairs is the
victim beside them, at their load: the sum of the rates they were asked (max
where one was unpaced), and what they really sent. Points are the same victim's
where the victim was asked the same (its profile, or the point's values) on the
same path and setup: every stored field but `pairs`, the rate and the
per-pair fields, which the victim's `asked` stands for. Repetitions are
averaged; a beside point with no alone point of its victim is left out.
A study that measures it: studies/tenant002_interference.toml.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from cnfperf import fields
from cnfperf.experiments import stats
from cnfperf.report import contention

VICTIM = 0
# What a point's setup is besides its pairs: its stored fields (the series'
# name for `switch`: it names the path) but these.
_STORED = {f.name for f in fields.stored()}
_NOT_SETUP = {"pairs", "rep", *fields.PER_PAIR}


@dataclass
class Measured:
    """The victim's numbers over the repetitions of one point (means)."""

    rx_pps: float
    loss_ratio: float
    p99_ns: float | None
    n: int


@dataclass
class Entry:
    """One aggressor load beside the victim's baseline."""

    setting: str                 # the victim's path and what it was asked
    switch: str                  # the rows' series name (its style in plots)
    aggressors: int
    asked_pps: float | None      # the aggressors' rates summed; None: one was unpaced (max)
    sent_pps: float              # what they sent (tx), mean over repetitions
    alone: Measured
    beside: Measured
    contended: bool = False      # a point was measured with more pollers than cores

    @property
    def rx_change(self) -> float | None:
        """The victim's received rate beside, relative to alone (−0.2: 20% less)."""
        if not self.alone.rx_pps:
            return None
        return self.beside.rx_pps / self.alone.rx_pps - 1

    @property
    def p99_ratio(self) -> float | None:
        if not self.alone.p99_ns or self.beside.p99_ns is None:
            return None
        return self.beside.p99_ns / self.alone.p99_ns


def asked(row: Mapping[str, Any]) -> dict[str, Any]:
    """What a row's pair was asked: its stored profile, else the point's values."""
    own = row.get("asked") or {}
    return {name: own.get(name, row.get(name)) for name in fields.PER_PAIR}


def _setup(row: Mapping[str, Any]) -> tuple:
    """The victim's identity: its path and setup, and what it was asked."""
    shared = tuple(sorted((k, str(v)) for k, v in row.items()
                          if k in _STORED and k not in _NOT_SETUP))
    return (str(row.get("switch")), shared,
            tuple((k, str(_plain(v))) for k, v in asked(row).items()))



def _plain(value: Any) -> Any:
    """1 and 1.0, True and 1 alike (a JSON profile against a column)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _points(rows: Iterable[Mapping[str, Any]]) -> dict[tuple, list[Mapping[str, Any]]]:
    """Rows by their point's run (point, repetition)."""
    out: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        if r.get("pair") is not None and r.get("point") is not None:
            out[(r["point"], r.get("rep", 0))].append(r)
    return out


def _measured(victims: Sequence[Mapping[str, Any]]) -> Measured:
    p99 = [float(v["lat_p99_ns"]) for v in victims if v.get("lat_p99_ns") is not None]
    return Measured(rx_pps=stats.mean([float(v.get("rx_pps") or 0) for v in victims]),
                    loss_ratio=stats.mean([float(v.get("loss_ratio") or 0) for v in victims]),
                    p99_ns=stats.mean(p99) if p99 else None, n=len(victims))


def _load(aggressors: Sequence[Mapping[str, Any]]) -> float | None:
    rates = [asked(a)["rate"] for a in aggressors]
    if any(not isinstance(r, (int, float)) or not r for r in rates):
        return None   # unpaced (0: max), or not a fixed rate
    return float(sum(rates))


def tenants(rows: Iterable[Mapping[str, Any]]) -> bool:
    """Whether a run's pairs differed somewhere (a profile): its report then
    shows the interference table and plot unasked. A run of alike pairs (a
    scalability study's) has no victim to speak of, though its points would
    compute as one; a study may still ask for the plot (`interference`)."""
    return any(r.get("asked") for r in rows)


def entries(rows: Iterable[Mapping[str, Any]]) -> list[Entry]:
    """Every aggressor load measured beside a victim measured alone, by victim
    (in the rows' order) and load (ascending, max last)."""
    alone: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    beside: dict[tuple, list[list[Mapping[str, Any]]]] = defaultdict(list)
    order: list[tuple] = []
    for members in _points(rows).values():
        victim = next((r for r in members if r["pair"] == VICTIM), None)
        if victim is None:
            continue
        key = _setup(victim)
        if key not in order:
            order.append(key)
        others = sorted((r for r in members if r["pair"] != VICTIM), key=lambda r: r["pair"])
        if not others:
            alone[key].append(victim)
        else:
            load = (len(others), _load(others),
                    tuple(tuple(sorted((k, str(_plain(v))) for k, v in asked(a).items()))
                          for a in others))
            beside[(key, load)].append([victim, *others])
    found = []
    for key in order:
        if not alone[key]:
            continue
        loads = sorted((load for k, load in beside if k == key),
                       key=lambda load: (load[0], load[1] is None, load[1] or 0, load[2]))
        for load in loads:
            runs = beside[(key, load)]
            victims = [run[0] for run in runs]
            sent = stats.mean([sum(float(a.get("tx_pps") or 0) for a in run[1:]) for run in runs])
            found.append(Entry(
                setting=_name(victims[0]), switch=str(victims[0].get("switch")),
                aggressors=load[0], asked_pps=load[1], sent_pps=sent,
                alone=_measured(alone[key]), beside=_measured(victims),
                contended=any(r.get("contended") for run in runs for r in run)
                or any(r.get("contended") for r in alone[key])))
    return found


def _name(victim: Mapping[str, Any]) -> str:
    """`bridge udp 20k 64 B throughput`."""
    own = asked(victim)
    return (f"{victim.get('switch')} {victim.get('api')} "
            f"{fields.show('rate', own['rate'])} {own['size']} B {own['mode']}")


def table(found: Sequence[Entry]) -> tuple[str, list[str], list[list[Any]]] | None:
    """The report's table (summary.Table): per victim and aggressor load, the
    victim alone and beside; rates in kpps, p99 in µs."""
    if not found:
        return None
    flag = any(e.contended for e in found)
    rows = [[e.setting, e.aggressors,
             "max" if e.asked_pps is None else e.asked_pps / 1e3, e.sent_pps / 1e3,
             *([e.contended] if flag else []),
             e.alone.rx_pps / 1e3, e.beside.rx_pps / 1e3,
             None if e.rx_change is None else 100 * e.rx_change,
             100 * e.alone.loss_ratio, 100 * e.beside.loss_ratio,
             None if e.alone.p99_ns is None else e.alone.p99_ns / 1e3,
             None if e.beside.p99_ns is None else e.beside.p99_ns / 1e3, e.p99_ratio]
            for e in found]
    # the aggressors' load, then the victim's: alone, beside them (a narrow table)
    return ("Interference", ["victim", "aggressors", "asked kpps", "sent kpps",
                             *([contention.COLUMN] if flag else []),
                             "rx kpps alone", "beside", "rx change %", "loss % alone", "beside",
                             "p99 µs alone", "beside", "p99 ×"], rows)


NOTE = ("The victim is pair 0, every other pair an aggressor; alone is the victim's point "
        "with one pair. Asked: the rates the aggressors were asked (their profiles), "
        "summed; sent: what they sent. Then the victim's received rate, loss and p99 "
        "latency (one way in throughput mode, the round trip in latency mode), alone and "
        "beside them.")
