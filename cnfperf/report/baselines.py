"""The generator baseline in tables (generator_baseline: run/baseline.py): what
the tester moved through the lightest link before the run's points, and each
throughput point's received rate as a share of it (`% of gen`): near 100 % the
point measured the generator as much as the data plane."""
from __future__ import annotations

from typing import Any

Table = tuple[str, list[str], list[list[Any]]]   # as report/summary.py's

COLUMN = "% of gen"
NOTE = ("Generator baselines: before the points, the tester alone through the lightest "
        "link its api allows (veth; memif, or testpmd for a single tester, with dpdk), "
        "unpaced, at the points' size, burst, tester, pairs and cores. % of gen: a point's "
        "received rate as a share of its baseline's.")


def percent(point: dict[str, Any]) -> float | None:
    """The point's received rate in % of its baseline's (the store keeps the
    share, 0..1, as every share); None without one."""
    value = point.get("baseline_share")
    return None if value is None else 100 * value


def any_share(points: list[dict[str, Any]]) -> bool:
    return any(p.get("baseline_share") is not None for p in points)


def table(run: dict[str, Any]) -> Table | None:
    """Every generator baseline of the run: its link and generator, what it
    moved, or why it failed."""
    found = run.get("baselines") or []
    if not found:
        return None
    rows = [[b["switch"], b["api"], b["size"], b["burst"], b["tester"], b["pairs"],
             None if b["tx_pps"] is None else b["tx_pps"] / 1e3,
             None if b["rx_pps"] is None else b["rx_pps"] / 1e3,
             None if b["loss_ratio"] is None else 100 * b["loss_ratio"],
             b["status"] if b["status"] == "done" else f"{b['status']}: {b['error']}"]
            for b in found]
    return ("Generator baselines", ["link", "api", "size B", "burst", "tester", "pairs",
                                    "tx kpps", "rx kpps", "loss %", "status"], rows)


def notes(run: dict[str, Any]) -> list[str]:
    """A line per baseline under the run's text table."""
    out = []
    for b in run.get("baselines") or []:
        what = (f"generator baseline {b['api']} size={b['size']} burst={b['burst']} "
                f"tester={b['tester']} pairs={b['pairs']} through {b['switch']}")
        out.append(f"{what}: rx {b['rx_pps'] / 1e3:.1f} kpps" if b["status"] == "done"
                   and b["rx_pps"] is not None else f"{what}: {b['status']}: {b['error']}")
    return out
