"""What a data plane can do, held against a scenario: every rule asks the
DataPlane class its capabilities and its own rules (dataplanes/base.py), and
names the data planes that can where it refuses (the registry, DATAPLANES).
A data plane is named here by no one."""
from __future__ import annotations

from cnfperf import UserError, nfs, polls
from cnfperf.dataplanes import DATAPLANES, DataPlane
from cnfperf.fields import AUTO
from cnfperf.plan import links_per_path
from cnfperf.scenario import Scenario


def dataplane_of(s: Scenario) -> type[DataPlane]:
    """The scenario's data plane (its `switch`): UserError for a name no data
    plane has."""
    dataplane = DATAPLANES.get(s.switch)
    if dataplane is None:
        raise UserError("switch", f"unknown data plane {s.switch!r}; known: "
                                  f"{', '.join(DATAPLANES)}")
    return dataplane


def nf_ports(nf: str) -> int:
    """How many ports an NF of this kind has; an unknown kind two (check()
    names it)."""
    kind = nfs.find(nf)
    return kind.ports if kind is not None else 2


def mismatch(dataplane: type[DataPlane], api: str | None, pairs: int, count: int = 0,
             ports: int = 2) -> tuple[str, str] | None:
    """(field, why) when a data plane cannot serve the api (None: the tester is
    not on it) or the links, else None: `count` NFs of `ports` ports each on
    each path."""
    switch = dataplane.name
    if api is not None and api not in dataplane.apis:
        return "api", f"{switch} supports {', '.join(sorted(dataplane.apis))}; not {api}"
    per_path = links_per_path(count, ports)
    links = pairs * per_path
    if dataplane.max_links is not None and links > dataplane.max_links:
        return ("pairs" if not count else "nfs",
                f"{switch} serves at most {dataplane.max_links} links; pairs × {per_path} "
                f"links per path = {links}")
    return None


def switch_problem(s: Scenario, dataplane: type[DataPlane],
                   ports: int | None = None) -> tuple[str, str] | None:
    """(field, why) when the data plane cannot do what a valid scenario asks of
    it: its capabilities (DataPlane's max_cores, max_rxq, max_size, floats,
    rx_interrupts, forwards, pins_rxq, rings) and its own rules (scenario_problem). `cnfperf run` refuses
    such a point (check, exit 2); a study leaves it out and says why (unusable),
    so a sweep over data planes runs the ones that can. `ports`: its NF kind's
    (nf_ports), where the caller has resolved it."""
    for field, most, one, many in (
            ("switch_cores", dataplane.max_cores, "poll core", "poll cores"),
            ("switch_rxq", dataplane.max_rxq, "Rx queue per port", "Rx queues per port")):
        if most is not None and getattr(s, field) > most:
            more = ", ".join(n for n, dp in DATAPLANES.items()
                             if getattr(dp, "max_" + field.removeprefix("switch_")) is None)
            has = f"at most {most} {one if most == 1 else many}" \
                if dataplane.poll_threads else "no poll threads"
            return field, f"{s.switch} has {has} ({more} take more): {field} ≤ {most}"
    if dataplane.max_size is not None and s.size > dataplane.max_size:
        return "size", f"{s.switch} holds frames up to {dataplane.max_size} bytes"
    if not s.pin and not dataplane.floats:
        return "pin", f"{s.switch} pins its poll threads itself: pin = no cannot hold"
    if (problem := _interrupt_problem(s, dataplane)) is not None:
        return problem
    if (problem := _knob_problem(s, dataplane)) is not None:
        return problem
    ports = nf_ports(s.nf) if ports is None else ports
    links = links_per_path(s.nfs, ports, s.graph) * (s.pairs + (s.noise == "traffic"))
    return dataplane.scenario_problem(s, links)


def _interrupt_problem(s: Scenario, dataplane: type[DataPlane]) -> tuple[str, str] | None:
    """(field, why) when poll = interrupt asks a DPDK port for Rx interrupts its PMD lacks."""
    if not polls.mode(s.poll).interrupts or dataplane.rx_interrupts:
        return None
    apis = [("api", s.api)] + ([("nf_api", s.nf_api)] if s.nfs else [])
    for field, api in apis:
        if api == "dpdk":
            return "poll", (f"{s.switch}'s DPDK ports have no Rx interrupts ({field} = dpdk); "
                            "use poll = adaptive")
    return None


# How each `forward` value forwards, as a refusal says it.
FORWARD_WORDS = {"mac": "by destination MAC", "port": "port to port",
                 "reflect": "back out of the port a frame came in on"}


RINGS = ("switch_rxd", "switch_txd")


def _knob_problem(s: Scenario, dataplane: type[DataPlane]) -> tuple[str, str] | None:
    """(field, why) when forward, rxq_affinity, switch_rxd or switch_txd asks
    what the data plane cannot do (forwards, pins_rxq, rings)."""
    if s.forward != AUTO and s.forward not in dataplane.forwards:
        ways = " or ".join(FORWARD_WORDS[f] for f in dataplane.forwards)
        able = [n for n, dp in DATAPLANES.items() if s.forward in dp.forwards]
        return "forward", (f"{s.switch} forwards {ways} only (forward = "
                           f"{', '.join(dataplane.forwards)} or auto); "
                           f"{FORWARD_WORDS[s.forward]}: {', '.join(able)}")
    if s.rxq_affinity != AUTO and not dataplane.pins_rxq:
        able = [n for n, dp in DATAPLANES.items() if dp.pins_rxq]
        return "rxq_affinity", (f"{s.switch} places its Rx queues itself; {s.rxq_affinity} "
                                f"is for {', '.join(able)}")
    given = [f for f in RINGS if getattr(s, f) is not None]
    if given and not dataplane.rings:
        able = [n for n, dp in DATAPLANES.items() if dp.rings]
        return given[0], (f"{s.switch}'s port rings are not sized by cnfperf; "
                          f"{', '.join(able)} are")
    return None
