"""Plot rows from a stored run, and the shapes the plots read them in.

Throughput rows, one per point and repetition, or one per pair when `pair` is set:
    switch, size, burst, pairs, rate (requested: pps, "ndr", "pdr:X%"), rx_pps,
    tx_pps (what the senders really sent; `offered_pps` is read when tx_pps is absent),
    [pair], [point] (key grouping the pairs of one run of a point), [rep], [mode],
    [api], [mmsg]
A pair's row of a point whose pairs differed carries what the pair was asked
    (`asked`: its stored profile, every per-pair field's value).
Latency rows (mode "latency"): switch, size, burst and either a histogram
    `hist` ([lower_ns, upper_ns, count] buckets) or lat_p50_ns / lat_p99_ns / lat_mean_ns
    (the results store's columns; for client/server points they hold the round trip).

`switch` names a curve: the data plane, then what else tells its path apart
(rows_from_run). Repetitions of a point are averaged (avg).
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Callable, Iterable, Mapping, Sequence

from cnfperf import fields
from cnfperf.experiments import stats
from cnfperf.report import contention

Row = Mapping[str, Any]


def is_latency(row: Row) -> bool:
    # throughput rows carry one-way latency columns too: the mode decides when present
    if row.get("mode") is not None:
        return row["mode"] == "latency"
    return "hist" in row or "lat_p50_ns" in row


def throughput_rows(rows: Iterable[Row]) -> list[dict]:
    """One row per run of a point: per-pair rows summed (rx_pps and sent_pps are totals),
    with `rx_pps_per_pair` = total / pairs and `sent_pps` what the senders sent (tx)."""
    rows = [r for r in rows if not is_latency(r) and r.get("rx_pps") is not None]
    grouped: dict[Any, list[Row]] = defaultdict(list)
    for r in rows:
        grouped[_run_of_point(r)].append(r)
    out = []
    for members in grouped.values():
        first = dict(members[0])
        first.pop("pair", None)
        sent = [_sent(m) for m in members]
        first["sent_pps"] = math.fsum(sent) if None not in sent else None
        if "pair" in members[0]:
            first["rx_pps"] = math.fsum(m["rx_pps"] for m in members)
        pairs = int(first.get("pairs") or len(members) or 1)
        first["pairs"] = pairs
        first["rx_pps_per_pair"] = first["rx_pps"] / pairs
        out.append(first)
    return out


def _sent(r: Row) -> float | None:
    value = r.get("tx_pps") if r.get("tx_pps") is not None else r.get("offered_pps")
    return float(value) if value is not None else None


def _run_of_point(r: Row) -> tuple:
    if "pair" not in r:
        return ("row", id(r))
    if r.get("point") is not None:
        return ("point", r["point"], r.get("rep", 0))
    return tuple((k, str(r.get(k))) for k in
                 ("switch", "api", "mmsg", "size", "burst", "pairs", "rate", "rep"))


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    return stats.mean(values), (stats.stddev(values) or 0.0)


def avg(rows: Iterable[Row], keys: Sequence[str], value: str) -> dict[tuple, tuple[float, float]]:
    """Repetitions averaged: {(values of keys): (mean, stddev)}."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        if r.get(value) is not None:
            groups[tuple(r.get(k) for k in keys)].append(float(r[value]))
    return {k: mean_sd(v) for k, v in groups.items()}


def contended(rows: Iterable[Row], keys: Sequence[str]) -> dict[tuple, bool]:
    """{(values of keys): whether any row of them was measured under contention}."""
    out: dict[tuple, bool] = defaultdict(bool)
    for r in rows:
        key = tuple(r.get(k) for k in keys)
        out[key] = out[key] or bool(r.get("contended"))
    return out


def best(rows: Iterable[Row], keys: Sequence[str], value: str
         ) -> dict[tuple, tuple[float, float, bool]]:
    """The best of the rates tried: {(values of keys but the last): (mean, stddev,
    contended)} of the last key's value whose mean of `value` is highest (keys
    end in "rate": the maximum received rate is the best any rate gave)."""
    rows = list(rows)
    means, flags = avg(rows, keys, value), contended(rows, keys)
    out: dict[tuple, tuple[float, float, bool]] = {}
    for k, (mean, sd) in means.items():
        if k[:-1] not in out or mean > out[k[:-1]][0]:
            out[k[:-1]] = (mean, sd, flags[k])
    return out


def order(v: Any) -> tuple:
    """A sort key that never compares None, numbers and text with each other."""
    if isinstance(v, tuple):
        return tuple(order(x) for x in v)
    if v is None:
        return (0, 0)
    if isinstance(v, (int, float)):
        return (1, v)
    return (2, str(v))


def sorted_unique(values: Iterable[Any]) -> list:
    return sorted(set(values), key=order)


def fixed_rate(rate: Any) -> float | None:
    return float(rate) if isinstance(rate, (int, float)) and not isinstance(rate, bool) else None


# Scenario fields a plot row carries from its point: those with a column.
POINT_FIELDS = (*(f.name for f in fields.stored()), "rep")
# What the point stored of its data plane and NF kind (results/store.py): a
# plot's styles come from its own rows (style.learn), whatever run each is of.
STORED_FACTS = ("switch_facts", "nf_facts")
# What a point stored of its fault (run/fault.py): the failover plot's marks.
FAULT_FACTS = ("fault_facts",)
PAIR_FIELDS = ("tx_pps", "rx_pps", "loss_ratio", "lat_p50_ns", "lat_p90_ns", "lat_p99_ns",
               "lat_p999_ns", "lat_mean_ns", "lat_max_ns", "latency_kind", "outage_ns")


# What, besides the data plane, makes a path another curve: its network functions
# (`3×l2`: nfs with nf) and how its engines run (each plot draws one series per
# `switch` value).
PATH_FIELDS = ("nfs", "tester", "poll")
# How the path's CPU was set up: another curve too, shown as `name=value`
# (`ovs switch_in=container pin=no`), the defaults left out unless they vary.
CPU_FIELDS = {"switch_in": "host", "switch_cores": 1, "switch_rxq": 1, "nf_cores": 1,
              "endpoint_cores": 1, "pin": True, "noise": "none", "noise_on": "other", "quota_period": 100_000}
# Where the path's nodes ran, how a pod's ports were attached, and how its VMs
# did: each another curve
# (`ovs 1×l2 nf_in=vm`, `… accel=tcg`): KVM and emulated points never average.
PLACE_FIELDS = {name: fields.by_name()[name].default
                for name in ("nf_in", "endpoint_in", "cni", "accel", "vm_memory", "vm_image")}
# What the path's routers, policers and shapers were given, and the flows
# over a router's routes: another curve each when it varies in the run
# (`macvlan 1×router nf_routes=256`, `bridge 1×l2 policer=nft`), so that a sweep
# of them is not averaged into one curve or bar.
SETTING_FIELDS = ("flows", "nf_routes", "nf_interfaces", "nf_unrouted", "policer",
                  "policer_rate", "policer_bucket", "shaper", "shaper_rate", "shaper_bucket",
                  "shaper_queue", "onoff")


def _plain(p: Mapping[str, Any], name: str) -> Any:
    """A path field's value when the scenario leaves it out; poll's follows the
    mode and api (scenario.py's mode defaults), so a latency point on sockets
    sleeping (interrupt) is no more worth naming than a throughput one spinning."""
    if name == "poll":
        from cnfperf.scenario import Scenario
        return Scenario._mode_defaults({"mode": p.get("mode") or "throughput",
                                        "api": p.get("api") or "udp"}).get("poll", "busy")
    return {"nfs": 0, "tester": "split"}.get(name)


def _value(p: Mapping[str, Any], name: str) -> Any:
    """A path field's value; the tester's is the one that measured (what `auto` chose)."""
    return contention.tester(p) if name == "tester" else p.get(name)


def path_series(points: Sequence[Mapping[str, Any]]) -> Callable[[Mapping[str, Any]], str]:
    """series(point): the data plane, then whichever of the path's fields are not
    their plain default in some point, or (but poll) vary in the run
    (`ovs 3×strip-encap single adaptive`)."""
    shown = [f for f in PATH_FIELDS
             if f != "poll" and len({str(_value(p, f)) for p in points}) > 1 or
             any(_value(p, f) not in (None, _plain(p, f)) for p in points)]
    # Quotas are the x axis of their own plot, and a curve elsewhere.
    plain = {**PLACE_FIELDS, **CPU_FIELDS}
    cpu = [f for f in (*PLACE_FIELDS, *CPU_FIELDS, *fields.QUOTAS)
           if len({str(p.get(f)) for p in points}) > 1 or
           any(p.get(f) not in (None, plain.get(f)) for p in points)]
    cpu += [f for f in SETTING_FIELDS
            if len({str(p[f]) for p in points if p.get(f) is not None}) > 1]

    def series(p: Mapping[str, Any]) -> str:
        parts = [str(p.get("switch"))]
        for f in shown:
            if f == "nfs":
                # without NFs, the switch alone: between the tester's two ports,
                # or reflecting its frames back (forward = reflect)
                parts.append(f"{p.get('nfs')}×{p.get('nf')}" if p.get("nfs") else
                             "reflect" if p.get("forward") == "reflect" else "no NF")
            else:
                parts.append(str(_value(p, f)))
        parts += [f"{f}={fields.show(f, p.get(f))}" for f in cpu]
        return " ".join(parts)
    return series


def rows_from_run(run: Mapping[str, Any]) -> list[dict]:
    """Plot rows from a stored run as the results store returns it (a dict with
    `points`, each with its scenario columns and `per_pair` rows); points that
    did not finish are left out. Booleans stored as 0/1 come back as booleans.
    A point whose path has network functions (or a single tester, or engines
    that sleep) is its own curve: its `switch` names all of it, `dataplane` its
    data plane alone. `contended`: the point had more busy pollers than cores.
    Each row carries its point's stored facts (STORED_FACTS), which its plot's
    styles are read from (style.learn)."""
    rows = []
    done = [p for p in run.get("points", []) if p.get("status", "done") == "done"]
    series = path_series(done)
    for point in run.get("points", []):
        if point.get("status", "done") != "done":
            continue
        base = {k: point[k] for k in (*POINT_FIELDS, *STORED_FACTS, *FAULT_FACTS) if k in point}
        base.update(switch=series(point), dataplane=point.get("switch"),
                    contended=contention.contended(point))
        for f in fields.stored():
            if f.kind == "bool" and base.get(f.name) is not None:
                base[f.name] = bool(base[f.name])
        for pair in point.get("per_pair") or []:
            row = {**base, **{k: pair[k] for k in PAIR_FIELDS if k in pair},
                   "point": point.get("id", point.get("idx")), "pair": pair["pair"]}
            if pair.get("latency_histogram"):
                row["hist"] = pair["latency_histogram"]
            if pair.get("profile"):   # what this pair was asked, where the pairs differed
                row["asked"] = pair["profile"]
            rows.append(row)
    return rows


def curve_label(switch: str, others: Mapping[str, Any]) -> str:
    extra = " ".join(f"{k}={fields.show(k, v)}" for k, v in others.items())
    return f"{switch} {extra}".strip()


def varying(rows: Sequence[Row], keys: Sequence[str]) -> list[str]:
    return [k for k in keys if len({str(r.get(k)) for r in rows}) > 1]


def curve_fields(drawn: Sequence[str]) -> tuple[str, ...]:
    """Fields that may tell one data plane's curves apart: every field that
    tells points apart (fields.labelled: api, switch_cores, nf_cores, pairs,
    burst…) but the data plane itself, the rate and mode a plot selects by, the
    tester (auto's choice follows the others) and those the plot `drawn` along
    an axis or per panel."""
    skip = {"switch", "rate", "mode", "tester", *drawn}
    return tuple(f.name for f in fields.labelled() if f.name not in skip)


def varying_per_switch(rows: Sequence[Row], keys: Sequence[str]) -> list[str]:
    """Fields that tell curves of one data plane apart. One that only follows the
    data plane (api dpdk for vhost, raw for the bridge) would repeat its name."""
    return [k for k in varying(rows, keys)
            if any(len({str(r.get(k)) for r in rows if r.get("switch") == sw}) > 1
                   for sw in {r.get("switch") for r in rows})]
