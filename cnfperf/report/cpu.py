"""CPU use per node over each point's measured window (the store's cpu_usage
rows, cnfperf/run/cpu.py), as tables of plain values (summary.py's shape)."""
from __future__ import annotations

from typing import Any

from cnfperf.report.summary import Table, done_points, label, short_name, varying

TITLE = "CPU per node"
BRIEF_TITLE = "CPU: the busiest node per point"
# Said under the table: what softirq is, and why kernel data planes have no switch row.
NOTE = ("softirq s is per core, not per node: the kernel's packet work on the node's cores, "
        "whoever's packets it moved, which the kernel does not charge to the container "
        "(nodes that share a core show the same time). Kernel data planes (veth, bridge, "
        "macvlan) have no switch row: they have no process, their forwarding is that softirq. "
        "CPU % is user + sys over the window (above 100 on several cores); cycles/packet "
        "counts them in TSC cycles, and a pinned router NF's its cores' softirq too (its "
        "RPS map puts its forwarding there).")
NOTES = {TITLE: NOTE}


def cpu_percent(row: dict[str, Any]) -> float | None:
    if row.get("user_s") is None or row.get("system_s") is None or not row.get("wall_s"):
        return None
    return 100 * (row["user_s"] + row["system_s"]) / row["wall_s"]


def per_node(run: dict[str, Any]) -> Table | None:
    points = [p for p in done_points(run) if p.get("cpu_usage")]
    if not points:
        return None
    axes = varying(done_points(run)) or ["switch"]
    rows = [[label(p, axes), p.get("rep", 0) + 1, short_name(p, u["node"]), u["kind"],
             u["cores"], u["quota"], u["user_s"], u["system_s"], u["softirq_s"], cpu_percent(u),
             u["cycles_per_packet"]]
            for p in points for u in p["cpu_usage"]]
    return (TITLE, ["point", "rep", "node", "kind", "cores", "quota %", "user s", "sys s",
                    "softirq s", "CPU %", "cycles/packet"], rows)


def busiest(run: dict[str, Any]) -> Table | None:
    """The end of a run: per point, the node that used the most CPU."""
    points = [p for p in done_points(run) if p.get("cpu_usage")]
    if not points:
        return None
    axes = varying(done_points(run)) or ["switch"]
    rows = []
    for p in points:
        # the point's own nodes: a neighbour is busy by design
        top = max((u for u in p["cpu_usage"] if u["kind"] != "noise"),
                  key=lambda u: cpu_percent(u) or 0, default=None)
        if top is None:
            continue
        rows.append([label(p, axes), p.get("rep", 0) + 1, short_name(p, top["node"]),
                     top["kind"], cpu_percent(top), top["cycles_per_packet"]])
    return (BRIEF_TITLE, ["point", "rep", "node", "kind", "CPU %", "cycles/packet"], rows)


COST_TITLE = "The switch's own cost"
COST_NOTE = ("What the switch says a packet cost it, from each point's warm-up to its senders' "
             "end, beside cnfperf's count from the switch's CPU time over its span "
             "(cycles/packet above). OVS-DPDK: its PMD threads' processing cycles per packet received and the "
             "share of their cycles spent processing (pmd-stats-show); VPP: its graph's clocks "
             "per packet taken in, an input node's empty polls included, and its input nodes' "
             "vectors per call (show runtime); testpmd: its forwarding cores' cycles on bursts "
             "that moved packets (--record-core-cycles); BESS: its workers' cycles per packet "
             "taken in, empty polls included, and packets per run as vectors per call "
             "(get_tc_stats). cnfperf's count takes the switch's CPU "
             "time, its empty polls included; a switch's own count takes TSC cycles between two "
             "reads of the clock, which on a shared core include time it did not run.")
NOTES[COST_TITLE] = COST_NOTE


def switch_cost(run: dict[str, Any]) -> Table | None:
    """Per point, the switch's own per-packet cost (DataPlane.cost) beside
    cnfperf's cycles per packet of its switch node."""
    points = [p for p in done_points(run) if p.get("switch_cost")]
    if not points:
        return None
    axes = varying(done_points(run)) or ["switch"]
    rows = []
    for p in points:
        c = p["switch_cost"]
        ours = next((u["cycles_per_packet"] for u in p.get("cpu_usage") or ()
                     if u["kind"] == "switch"), None)
        busy = c.get("busy_share")
        rows.append([label(p, axes), p.get("rep", 0) + 1, c.get("source"),
                     c.get("cycles_per_packet"), None if busy is None else 100 * busy,
                     c.get("vectors_per_call"), ours])
    return (COST_TITLE, ["point", "rep", "said by", "its cycles/packet", "busy %",
                         "vectors/call", "cnfperf's cycles/packet"], rows)


def all_tables(run: dict[str, Any], brief: bool = False) -> list[Table]:
    table = busiest(run) if brief else per_node(run)
    return [t for t in (table, switch_cost(run)) if t]
