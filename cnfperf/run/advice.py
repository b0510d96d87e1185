"""What would measure a need the evidence does not settle (`cnfperf advise
--plan FILE`): a scenario, runnable as is on this host, with two parts per
data plane that could carry the NFs and has no verdict here yet: the need's
rate, its expectations stated (expect: the run says whether it met them),
and a search for the rate the plane carries within the loss allowed
(headroom).

A data plane is proposed when this host runs it (its check), its way of
joining NFs gives the need's shape (a chain: through a switch; a pipeline:
link to link), it has an api for the scenario, and no option of it was
judged on this kind of host (report/advise.py). Each part is planned against
this host (checks.plan) before it is written: one this host would leave out
is not proposed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from cnfperf import UserError, fields, rate as rates
from cnfperf.dataplanes import DATAPLANES
from cnfperf.host.facts import HostFacts
from cnfperf.report.advise import MEETS, MISSES, Need, Option
from cnfperf.run.checks.plans import plan as planned

JOINS = {"chain": "switch", "pipeline": "link"}
DURATION = 10   # s: the need's rate, long enough for a p99 of many samples


# A rate measured over a window is within this of the one offered when
# nothing is lost (the window's edges): the expectation allows it
MEASURED = 0.99


def lines(need: Need) -> list[str]:
    """The need as expectations (results/expect.py)."""
    out = [f"rx_pps >= {MEASURED * need.rate * need.pairs * (1 - need.loss):.6g}",
           f"loss_ratio <= {need.loss:g}"]
    if need.p99_ns is not None:
        out.append(f"p99 <= {need.p99_ns / 1e3:g}us")
    return out


def _api(name: str) -> str:
    """A DPDK plane's ports are DPDK's; a kernel plane's ends take the default
    api where it has it."""
    dp, default = DATAPLANES[name], fields.by_name()["api"].default
    if dp.kind == "dpdk" and "dpdk" in dp.apis:
        return "dpdk"
    return default if default in dp.apis else sorted(dp.apis)[0]


def candidates(need: Need, options: Sequence[Option], host: HostFacts) -> list[str]:
    """The data planes to measure: this host runs them, they give the shape,
    and none of their options has a verdict from this kind of host."""
    judged = {o.config.get("switch") for o in options
              if o.verdict in (MEETS, MISSES) and not o.elsewhere}
    return [name for name, dp in DATAPLANES.items()
            if name not in judged and (not need.switches or name in need.switches)
            and not dp.check(host)
            and (need.shape == "pair" or dp.joins == JOINS[need.shape])]


def doc(need: Need, options: Sequence[Option], host: HostFacts) -> tuple[dict[str, Any], list[str]]:
    """(the scenario, what was left out and why); the scenario has no part
    when there is nothing to measure here."""
    search = "ndr" if not need.loss else f"pdr:{100 * need.loss:g}%"
    top: dict[str, Any] = {"pairs": need.pairs, "size": list(need.sizes), "nfs": need.nfs,
                           "duration": DURATION, "warmup": 1}
    if need.nfs:
        top["nf"] = need.nf
    parts, left = [], []
    for name in candidates(need, options, host):
        mine = [{"switch": name, "api": _api(name), "rate": rates.tidy(need.rate),
                 "expect": lines(need)},
                {"switch": name, "api": _api(name), "rate": search}]
        try:
            planned({**top, "part": mine}, host=host)
        except UserError as e:
            left.append(f"{name}: {e}")
            continue
        parts += mine
    return {**top, "part": parts}, left


def write(path: Path, need: Need, doc: dict[str, Any]) -> None:
    """The scenario as TOML (tomli_w), under a comment saying what it is for;
    UserError (exit 2) when it cannot be written."""
    import tomli_w   # only when a plan is written
    text = (f"# What would measure: {need.describe()}.\n"
            "# Written by cnfperf advise; run it as is: cnfperf run FILE (a point that\n"
            "# misses the need ends the run with exit 5), then cnfperf advise again.\n"
            + tomli_w.dumps(doc))
    try:
        path.write_text(text)
    except OSError as e:
        raise UserError("--plan", f"cannot write {path}: {e.strerror}") from None
