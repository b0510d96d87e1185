"""What a run's searches found, as tables (summary.py's Table): the rate of each
goal with its bounds, every trial with its generator truth, and the latency
trials that followed a search, at loads below the rate it found.

Rates are per pair, in kpps; latencies in µs.
"""
from __future__ import annotations

from typing import Any

from cnfperf import rate as rates
from cnfperf.report.summary import (Table, _kpps, _param, _percent, _us, done_points, label,
                                    varying)

LATENCY_KEYS = ("p50", "p90", "p99", "p999", "max")


def searched(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in done_points(run) if p.get("trials")]


def _axes(run: dict[str, Any]) -> list[str]:
    return [f for f in varying(done_points(run)) if f != "rate"] or ["switch"]


def searches(run: dict[str, Any]) -> Table | None:
    """A row per goal of each search: the rate found (MLRsearch: its conditional
    throughput; bisect: the accepted trial's), the bounds, the trials it took."""
    points = searched(run)
    if not points:
        return None
    axes = _axes(run)
    rows = []
    for p in points:
        trials = [t for t in p["trials"] if t["phase"] != "latency"]
        seconds = sum(t.get("duration") or 0 for t in trials)
        invalid = sum(1 for t in trials if t.get("valid") == 0)
        common = [len(trials), seconds or None, invalid]
        method = _param(p, "search") or "bisect"
        for g in p.get("goals") or []:
            rows.append([label(p, axes), method, rates.goal_name(g["loss_ratio"]),
                         _kpps(g["conditional_pps"]), _kpps(g["lower_pps"]),
                         _kpps(g["upper_pps"]), g["exceed_ratio"], 100 * g["width"], *common,
                         "", bool(g["generator_limited"])])
        if not p.get("goals"):   # a binary search: the accepted trial's rate
            rows.append([label(p, axes), method, _param(p, "rate"),
                         _kpps(p.get("search_rate_pps")), _kpps(p.get("search_offered_pps")),
                         None, 0, None, *common, bool(p.get("search_verified")),
                         bool(p.get("generator_limited"))])
    return ("Searches", ["point", "search", "goal", "found kpps per pair", "lower bound kpps",
                         "upper bound kpps", "exceed ratio", "width %", "trials",
                         "trial s", "invalid trials", "verified", "generator-limited"], rows)


def trials(run: dict[str, Any]) -> Table | None:
    """Every trial of every search, with whether its generator offered the load."""
    points = searched(run)
    if not points:
        return None
    axes = varying(done_points(run)) or ["switch"]
    rows = []
    for p in points:
        for t in p["trials"]:
            rows.append([label(p, axes), t["n"], t["phase"],
                         "max" if t["offered_pps"] == 0 else _kpps(t["offered_pps"]),
                         t.get("duration"), _kpps(t["tx_pps"]), _kpps(t["rx_pps"]), t["sent"],
                         t["received"], _percent(t["loss_ratio"]),
                         "" if t["passed"] is None else ("pass" if t["passed"] else "fail"),
                         _truth(t)])
    # Pass or fail counts the sends the ports refused as loss too (the generator
    # column says how many): the loss column is of the frames that left alone.
    return ("Search trials", ["point", "trial", "phase", "offered kpps", "s", "tx kpps",
                              "rx kpps", "sent", "received", "loss % of sent", "", "generator"],
            rows)


def _truth(t: dict[str, Any]) -> str:
    """Short: the store keeps the whole reason (invalid_why)."""
    if t.get("valid") is None:
        return ""
    refused = t.get("refused") or 0
    if t["valid"]:
        return f"ok, {refused} refused" if refused else "ok"
    if (t.get("invalid_why") or "").startswith("the senders took"):
        return f"invalid: took {100 * t['stretch']:.1f}% longer"
    sent = t["sent"] / t["intended"] if t.get("intended") else 0
    return f"invalid: sent {100 * sent:.1f}%"


def load_name(t: dict[str, Any], goal: str) -> str:
    """A latency trial's load as the search's latency_at wrote it: min, 50% of pdr:0.5%."""
    fraction = t.get("fraction") or 0
    return "min" if fraction == 0 else f"{100 * fraction:g}% of {goal}"


def latency_loads(run: dict[str, Any]) -> Table | None:
    """The latency trials after each search, at its lowest load and at fractions
    of the rate found for its last goal."""
    points = [p for p in searched(run) if any(t["phase"] == "latency" for t in p["trials"])]
    if not points:
        return None
    axes = _axes(run)
    rows = []
    for p in points:
        goals = p.get("goals") or []
        goal = rates.goal_name(goals[-1]["loss_ratio"]) if goals else str(_param(p, "rate"))
        for t in (t for t in p["trials"] if t["phase"] == "latency"):
            rows.append([label(p, axes), load_name(t, goal), _kpps(t["offered_pps"]),
                         _kpps(t["rx_pps"]), _percent(t["loss_ratio"]),
                         t.get("latency_samples"),
                         *(_us(t.get(f"lat_{k}_ns")) for k in LATENCY_KEYS)])
    return ("Latency at load", ["point", "load", "offered kpps", "rx kpps", "loss %", "samples",
                                "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "max µs"], rows)


def all_tables(run: dict[str, Any]) -> list[Table]:
    return [t for t in (searches(run), trials(run), latency_loads(run)) if t]
