"""Where a point runs: its cores, its tester, its hosts, and the point placed
as it will run (place_point: plan.place with what the data plane and the NF
kind say of themselves)."""
from __future__ import annotations

import functools
import os
from collections import Counter

from cnfperf import UserError, nfs
from cnfperf.dataplanes import DATAPLANES, DataPlane, dpdk_args
from cnfperf.dataplanes.nic import NIC_APIS
from cnfperf.fields import LOCAL, NIC_DRIVERS, QUOTAS
from cnfperf.host import buckets
from cnfperf.plan import IFNAMSIZ, Port, TestPoint, nf_hosts, place, usable_cpus
from cnfperf.remote import inventory
from cnfperf.remote.hosts import shared_name
from cnfperf.remote.inventory import End, Inventory
from cnfperf.run import noise
from cnfperf.run.checks.dataplane import RINGS, dataplane_of
from cnfperf.runtimes import CONTAINER, RUNTIMES, Quota, in_guest
from cnfperf.scenario import Scenario, parse_cpus, tester_hosts


def in_machine(place: str) -> bool:
    """Whether a place (endpoint_in, or one of nf_in's) puts a node in a
    virtual machine: a runtime with a kernel of its own holds it
    (runtimes.in_guest), not the scenario's container runtime."""
    return in_guest(place)


def point_cpus(s: Scenario, cores: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """The cores the point is placed on: the scenario's, else the plan's `cores`,
    else every usable one."""
    return tuple(s.cpus or cores or usable_cpus())


def place_point(s: Scenario, run_id: str = "0000", index: int = 0,
                total: int = 1, cores: tuple[int, ...] | None = None) -> TestPoint:
    """A point placed on this host as it will run, on its cpus, else on `cores`,
    else on the usable ones: with its data plane's pollers counted and its way of
    joining links, its NF kind's facts, its tester chosen (plan.place)."""
    dataplane = dataplane_of(s)
    cpus = point_cpus(s, cores)
    return place(s, run_id, index, total, host_cpus=cpus,
                 switch_pollers=dataplane.pollers(s, len(cpus)), joins=dataplane.joins,
                 nf=nfs.kind(s.nf) if s.nfs else None,
                 single_holds_link=dataplane.single_tester)


def tester_crosses(s: Scenario) -> bool:
    """Whether a tester's port is a NIC wired to another host's switch: the
    host joining its link (the first or the last NF's, else dut_host's) is not
    its end's (tester_hosts: the sender's, the receiver's)."""
    hosts = nf_hosts(s) or (s.dut_host,)
    sender, receiver = tester_hosts(s)
    return sender != hosts[0] or receiver != hosts[-1]


def check_usable(s: Scenario) -> None:
    """The scenario's cpus: each one this process may run on (taskset)."""
    if s.cpus is None:
        return
    usable = os.sched_getaffinity(0)
    missing = sorted(set(s.cpus) - usable)
    if missing:
        raise UserError("cpus", f"CPU {','.join(map(str, missing))} not usable here; "
                                f"usable: {','.join(map(str, sorted(usable)))}")


def check_cpu(s: Scenario, dataplane: type[DataPlane], kind: nfs.NfKind | None,
              cpus: tuple[int, ...]) -> None:
    """Quotas, NF cores and noise against the runtime, the path and the `cpus`
    the point is placed on."""
    cores = len(cpus)
    quotas = [name for name in QUOTAS if getattr(s, name) is not None]
    if quotas and not RUNTIMES[s.runtime].quotas:
        raise UserError(quotas[0], f"the {s.runtime} runtime cannot enforce a CPU quota "
                                   "(no cgroup of its own): use runtime = runc")
    if s.nf_quota is not None and not s.nfs:
        raise UserError("nf_quota", "there is no network function to limit (nfs = 0)")
    if s.nf_cores > 1 and not s.nfs:
        raise UserError("nf_cores", "there is no network function to give cores to (nfs = 0)")
    if kind is not None and (why := kind.cores_problem(s)) is not None:
        raise UserError("nf_cores", why)
    if s.nf_cores > cores:
        raise UserError("nf_cores", f"{s.nf_cores} cores per NF; the point has {cores}")
    # The most each node's cpuset can give: a tester end its cores; an NF and
    # the switch's container their cores (dpdk_base: its poll cores), unpinned all.
    most = {"endpoint_quota": s.endpoint_cores, "nf_quota": s.nf_cores if s.pin else cores,
            "switch_quota": s.switch_cores if s.pin else cores}
    for name in quotas:
        try:
            Quota(getattr(s, name), s.quota_period).check(most[name])
        except ValueError as e:
            raise UserError(name, str(e)) from None
    if s.noise == "traffic" and dataplane.joins != "switch":
        raise UserError("noise", f"{s.switch} joins each link directly: a second stream would "
                                 "not share anything with the first; traffic noise needs a switch "
                                 f"({', '.join(n for n, d in DATAPLANES.items() if d.joins == 'switch')})")
    noise.check_kind(s.noise)
    noise.check_place(s.noise_on)
    if s.noise_on not in noise.PLACES:
        usable = set(cpus)
        outside = sorted(set(parse_cpus(s.noise_on) or ()) - usable)
        if outside:
            raise UserError("noise_on", f"CPU {','.join(map(str, outside))} is not one of the "
                                        f"point's cores ({','.join(map(str, sorted(usable)))})")


def check_hosts(s: Scenario, dataplane: type[DataPlane], cores: tuple[int, ...]) -> None:
    """Placement across hosts: hosts the inventory names, and what a point
    whose ports cross wires (plan.TestPoint.crossings) can do."""
    placed = {"tester_host": s.tester_host.split("+"), "dut_host": [s.dut_host],
              "nf_host": s.nf_host.split("+") if s.nf_host else []}
    named = [(f, h) for f, hosts in placed.items() for h in hosts if h != LOCAL]
    if not named:
        return
    if not s.hosts:
        raise UserError(named[0][0], f"{named[0][1]!r} is not this host (local): name the "
                                     "inventory of other hosts (hosts = FILE, or --hosts FILE)")
    inv = inventory_file(s.hosts)
    for f, h in named:
        inv.host(h, field=f)
    # What another host does not run yet (its agent would have to say more:
    # a guest's facts, its ends' UDP counters).
    elsewhere = {"endpoint_in": in_machine(s.endpoint_in) and set(tester_hosts(s)) != {LOCAL},
                 "nf_in": any(map(in_machine, s.nf_in.split("+")))
                 and any(h != LOCAL for h in nf_hosts(s)),
                 "api": s.api == "udp" and set(tester_hosts(s)) != {LOCAL}}
    for f, bad in elsewhere.items():
        if bad:
            raise UserError(f, f"{getattr(s, f)} with a node on another host: not supported")
    point = place_point(s, cores=cores)
    crossings = point.crossings()
    if not crossings:
        return
    capable = [name for name, d in DATAPLANES.items() if d.nic_ports]
    if not dataplane.nic_ports:
        raise UserError("switch", f"{s.switch} takes no NIC as the port of a node on another "
                                  f"host; these do: {', '.join(capable)}")
    if not dataplane.nic_to_nic:
        crossing = {port.name for port, _ in crossings}
        if any({link.a.name, link.b.name} <= crossing for link in point.links):
            raise UserError("nfs", f"{s.switch} joins a node's port to a NIC, not two NICs to "
                                   "each other: put a network function on the switch's host "
                                   "between the wires (nfs ≥ 1)")
    _check_nic_driver(s, dataplane, crossings)
    rings = [f for f in RINGS if getattr(s, f) is not None]
    if rings and not dataplane.nic_rings:
        able = ", ".join(n for n, dp in DATAPLANES.items() if dp.nic_rings)
        raise UserError(rings[0], f"{s.switch} does not size the ring of a port on a wire's NIC; "
                                  f"{able} do")
    if tester_crosses(s) and s.api not in NIC_APIS:
        raise UserError("api", f"a tester wired to another host's switch builds its own frames "
                               f"on its NICs: {', '.join(sorted(NIC_APIS))}, not {s.api}")
    # a switch in a runtime of its own (a pod, on another host's node): not done yet
    refused = {"endpoint_in": in_machine(s.endpoint_in),
               "switch_in": s.switch_in not in ("host", CONTAINER),
               "nf_in": any(map(in_machine, s.nf_in.split("+")))}
    for f, bad in refused.items():
        if bad:
            raise UserError(f, f"{getattr(s, f)} with ports wired between hosts: not supported")
    needed = Counter(frozenset((port.host, at)) for port, at in crossings)
    named_as = {frozenset((port.host, at)): (port.host, at) for port, at in reversed(crossings)}
    for between, n in needed.items():
        x, y = named_as[between]
        wires = inv.wires_between(x, y)
        if s.share_wires and not wires:
            raise UserError("hosts", f"{inv.path}: no wire between {x} and {y}; the point's "
                                     f"{n} port(s) crossing there share one at least")
        if len(wires) < n and not s.share_wires:
            raise UserError("hosts", f"{inv.path}: {len(wires)} wire(s) between {x} and {y}; "
                                     f"the point needs {n}, one for each port crossing there "
                                     f"({len(point.paths)} pair(s)), or share_wires = true")
    if s.share_wires:
        _check_shared_ends(s, inv, crossings)
    else:
        _check_pci_ends(s, inv, crossings)


def _check_shared_ends(s: Scenario, inv: Inventory, crossings: list[tuple[Port, str]]) -> None:
    """A shared wire's ends are NICs the kernel drives (their ports are macvlan
    children of them: run/wires.py), and a port's child is named for it."""
    for port, at in crossings:
        for near, far in inv.wires_between(port.host, at):
            for end in (near, far):
                if end.pci is not None:
                    raise UserError("share_wires", f"wire end {end} is a PCI address, which "
                                                   "DPDK opens whole: a shared wire's ends are "
                                                   "interfaces (host:name)")
        if len(shared_name(port.name)) > IFNAMSIZ:
            raise UserError("share_wires", f"{shared_name(port.name)}: longer than an "
                                           f"interface name may be ({IFNAMSIZ})")


def _check_pci_ends(s: Scenario, inv: Inventory, crossings: list[tuple[Port, str]]) -> None:
    """A wire's end named by its PCI address is a node's NIC its engine's DPDK
    drives (dataplanes/nic.py), each crossing on the wire wiring() gives it."""
    used: Counter[frozenset[str]] = Counter()
    ends: dict[str, list[End]] = {}
    for port, at in crossings:
        between = frozenset((port.host, at))
        near, far = inv.wires_between(port.host, at)[used[between]]
        used[between] += 1
        ends.setdefault(port.node, []).append(near)
        if far.pci is not None:
            raise UserError("hosts", f"{inv.path}: wire end {far} is a PCI address: {s.switch} "
                                     f"on {at} joins interfaces (host:name); a PCI end is a "
                                     "tester's or NF's port, which its engine's DPDK opens")
        if near.pci is None:
            continue
        if port.api != "dpdk":
            raise UserError("api", f"wire end {near} is a PCI address, which DPDK opens: "
                                   f"{port.node}'s port there needs api dpdk, not {port.api}")
        if not RUNTIMES[s.runtime].host_files:
            raise UserError("runtime", f"wire end {near} is a PCI address: its engine opens the "
                                       "device, which only a runtime whose engines see the "
                                       "host's own files does: runtime netns")
    for node, mine in ends.items():
        if len({end.pci is None for end in mine}) > 1:
            raise UserError("hosts", f"{inv.path}: {node}'s wire ends are "
                                     f"{', '.join(map(str, mine))}: all interfaces or all PCI "
                                     "addresses (one EAL opens a node's ports)")


def _check_nic_driver(s: Scenario, dataplane: type[DataPlane],
                      crossings: list[tuple[Port, str]]) -> None:
    """nic_driver: the switch that opens the wires' NICs has it, something
    opens one with DPDK at all, and the frames fit its buffers."""
    if dataplane.nic_drivers and s.nic_driver not in dataplane.nic_drivers:
        raise UserError("nic_driver", f"{s.switch} opens a NIC with "
                                      f"{' or '.join(dataplane.nic_drivers)}, not {s.nic_driver}")
    if s.nic_driver == NIC_DRIVERS[0]:
        return
    if not dataplane.nic_drivers and not any(port.api == "dpdk" for port, _ in crossings):
        raise UserError("nic_driver", f"{s.nic_driver}: nothing opens a NIC with DPDK here "
                                      f"({s.switch} leaves its NICs to the kernel and no node "
                                      "on a NIC has api = dpdk)")
    if (why := dpdk_args.nic_problem(s.nic_driver, s.size)) is not None:
        raise UserError("nic_driver", why)


@functools.cache
def inventory_file(path: str) -> Inventory:
    """The inventory at `path`, read and checked once per process."""
    return inventory.load(path)
