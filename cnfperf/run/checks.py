"""What cnfperf and this host can run: the one place that decides.

A scenario's fields are valid on their own (scenario.py); here its parts are
held against each other and against the host: the data plane serves the api,
the runtime exists, the engine was built with the api, the host has what the
data plane needs. Four questions, asked at four moments:

  check(s)             before anything: parts that never go together (exit 2)
  unusable(host)       while a study is planned: points this host cannot run
                       are left out and listed, naming what concerns them
  preflight(s, host)   before a run creates anything: the host's problems (exit 1)
  matrix(host)         for `cnfperf doctor`: every data plane × api

Data planes and runtimes are imported here, above them, never by scenario.py
(they import the scenario's types themselves). A data plane is named here by
no one: each rule asks the DataPlane class its capabilities and rules
(dataplanes/base.py), resolved once per scenario (dataplane_of).
"""
from __future__ import annotations

import functools
import os
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from cnfperf import SystemFailure, UserError, fields, nfs, polls, testers
from cnfperf.host import buckets, cgroups, tools
from cnfperf.run import fault, noise
from cnfperf.strategies import latency, mlr, soak
from cnfperf.dataplanes import DATAPLANES, DataPlane, dpdk_args
from cnfperf.dataplanes.dpdk_args import endpoint_mb
from cnfperf.dataplanes.dpdk_base import DpdkPlane
from cnfperf.dataplanes.nic import NIC_APIS, NicPlane
from cnfperf.fields import AUTO, APIS, LOCAL, MAX_PORT, NIC_DRIVERS, QUOTAS, TESTERS, TX_PORT
from cnfperf.host.facts import HostFacts
from cnfperf.remote import inventory
from cnfperf.remote.inventory import Inventory
from cnfperf.experiments import reference, sweep
from cnfperf.plan import (Port, TestPoint, first_sport, has_vms, links_per_path, nf_hosts,
                          nf_places, place, usable_cpus)
from cnfperf.runtimes import CONTAINER_RUNTIMES, RUNTIMES, VM, Quota
from cnfperf.runtimes.base import cpu_list
from cnfperf.scenario import (SOCKET_APIS, Keep, Scenario, Sweep, build, parse_cpus, read_file,
                              tester_hosts, validate)


def load_plan(path: Path | None = None, flags: dict[str, Any] | None = None, *,
              quick: bool = False, host: HostFacts | None = None) -> Sweep:
    """The sweep of a scenario or study file and flags; raises UserError. A flag
    wins over the file: its top level, [quick] and every [[part]]. With `host`,
    points whose data plane cannot run here are skipped (and listed)."""
    doc = sweep.override(read_file(path) if path else {}, flags or {})
    return plan(doc, quick=quick, host=host)


def plan(doc: dict[str, Any], *, quick: bool = False, host: HostFacts | None = None,
         cores: tuple[int, ...] | None = None) -> Sweep:
    """The sweep of a document; each point's key is hashed from the scenario as it
    runs (its tester chosen: place_point), so that a tester auto chose and the same
    one set are one point, and an older run's points keep their keys. A point
    without cpus is placed on `cores`, else on the usable ones; the plan keeps
    them (spec's cpus): the tester auto takes, and so the key, depend on them."""
    cores = cores or usable_cpus()
    reference.load(doc)   # a study's paper tables: wrong ones fail before the sweep
    swept = build(doc, quick=quick, check=lambda s: check(s, cores),
                  keep=unusable(host) if host else None,
                  settle=lambda s: place_point(s, cores=cores).scenario)
    swept.spec["cpus"] = list(cores)
    _check_plots(doc)
    return swept


def replan(spec: dict[str, Any], host: HostFacts | None = None) -> Sweep:
    """A stored run's plan rebuilt for --resume, with the defaults it was made
    with (fields.CHANGED_DEFAULTS: a run older than a change kept the old ones)
    and on the cores it was planned on: under another taskset its points would
    take another tester and keys, and be measured again."""
    # None is an optional field's "the computed default": nothing to set
    defaults = {k: v for k, v in {**fields.CHANGED_DEFAULTS, **(spec.get("defaults") or {})}
                .items() if v is not None}
    cores = tuple(spec.get("cpus") or ()) or None
    if cores and (gone := sorted(set(cores) - os.sched_getaffinity(0))):
        raise UserError("--resume", f"the run was planned on CPUs {cpu_list(cores)}; "
                                    f"{cpu_list(gone)} not usable here (taskset?)")
    swept = plan({**defaults, **spec["doc"]}, quick=spec.get("quick", False),
                 host=host if spec.get("skip_unusable") else None, cores=cores)
    swept.spec = spec
    return swept


def _check_search(s: Scenario) -> None:
    """A search's settings go together (strategies/mlr.py reads them so)."""
    if s.search == "bisect" and len(s.rate.losses) > 1:
        raise UserError("rate", f"{s.rate}: search = bisect finds the rate of one loss "
                                "ratio; MLRsearch (search = csit, rfc2544, tst009) finds "
                                "several in one search")
    try:
        if s.search != "bisect":
            mlr.goals(s)
        latency.loads(s.latency_at)
        if s.soak:
            soak.fraction(s.soak_at)
    except ValueError as e:
        raise UserError(*str(e).split(": ", 1)) from None


def dataplane_of(s: Scenario) -> type[DataPlane]:
    """The scenario's data plane (its `switch`): UserError for a name no data
    plane has."""
    dataplane = DATAPLANES.get(s.switch)
    if dataplane is None:
        raise UserError("switch", f"unknown data plane {s.switch!r}; known: "
                                  f"{', '.join(DATAPLANES)}")
    return dataplane


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


def _check_plots(doc: dict[str, Any]) -> None:
    """A study's plots are the report's: names it does not know fail now, not
    after the run (the report draws them; matplotlib loads only for a study)."""
    names = (doc.get("study") or {}).get("plots")
    if not names:
        return
    from cnfperf.report.plots import PLOTS
    unknown = [n for n in names if n not in PLOTS]
    if unknown:
        raise UserError("study.plots", f"unknown {', '.join(unknown)}; known: {', '.join(PLOTS)}")


def check(s: Scenario, cores: tuple[int, ...] | None = None) -> None:
    """Parts of a valid scenario that do not go together: UserError naming the
    field. A point without cpus is placed on `cores`, else on the usable ones."""
    dataplane = dataplane_of(s)
    kind = nfs.find(s.nf) if s.nfs else None    # None for a kind none takes: _check_nfs
    ports = kind.ports if kind is not None else 2
    # a noise stream (noise = traffic) is one more pair, without NFs: see plan.py
    paths = s.pairs + (s.noise == "traffic")
    try:   # the tester's ports are NICs: _check_hosts
        spans = tester_crosses(s)
    except ValueError as e:   # tester_host names more than two hosts
        raise UserError("tester_host", str(e)) from None
    mismatch = _mismatch(dataplane, None if spans else s.api, paths, s.nfs, ports)
    if mismatch:
        noise_pair = " (noise = traffic adds a pair)" if paths > s.pairs else ""
        raise UserError(mismatch[0], mismatch[1] + noise_pair)
    if s.runtime not in CONTAINER_RUNTIMES:
        raise UserError("runtime", f"unknown container runtime {s.runtime!r}; known: "
                                   f"{', '.join(CONTAINER_RUNTIMES)} (nf_in and endpoint_in "
                                   "put nodes in virtual machines)")
    _check_vms(s, dataplane, ports)
    if first_sport(s, paths) - 1 > MAX_PORT:   # each pair's flows: its own (a profile)
        raise UserError("flows", f"pairs × flows must stay ≤ {MAX_PORT - TX_PORT + 1} "
                                 f"(UDP source ports from {TX_PORT})"
                                 + (" (noise = traffic adds a pair)" if paths > s.pairs else ""))
    if s.mmsg and s.api not in SOCKET_APIS:
        raise UserError("mmsg", f"sendmmsg/recvmmsg batching applies to udp and raw, not {s.api}")
    if s.rate.is_search:
        _check_search(s)
    if s.limit.pps:
        why = dataplane.limit_problem(s.api)
        if why:
            raise UserError("limit", f"{s.switch} with api {s.api}: {why}")
    _check_router_fields(s, kind)
    if s.nfs:
        kind = _check_nfs(s, dataplane, kind)
    _check_buckets(s, dataplane, kind)
    if (problem := switch_problem(s, dataplane, ports)) is not None:
        raise UserError(*problem)
    if (problem := fault.problem(s, dataplane.cut_at, dataplane.cut_refusal,
                                 links_per_path(s.nfs, ports), dataplane.joins)) is not None:
        raise UserError(*problem)
    if (refused := testers.problem(s, ports, dataplane.single_tester or spans)) is not None:
        raise UserError(refused.field, refused.why)
    if s.cpus is not None:
        usable = os.sched_getaffinity(0)
        missing = sorted(set(s.cpus) - usable)
        if missing:
            raise UserError("cpus", f"CPU {','.join(map(str, missing))} not usable here; "
                                    f"usable: {','.join(map(str, sorted(usable)))}")
    _check_switch(s, dataplane, point_cpus(s, cores))
    _check_rings(s)
    _check_cpu(s, dataplane, kind, point_cpus(s, cores))
    _check_hosts(s, dataplane, point_cpus(s, cores))
    if s.generator_baseline:
        _check_baseline(s, cores)


def _check_baseline(s: Scenario, cores: tuple[int, ...] | None) -> None:
    """generator_baseline: the tester's ends here, in containers, and its
    baseline a point this check passes (for tester = auto, with either tester)."""
    if set(tester_hosts(s)) != {LOCAL}:
        raise UserError("generator_baseline", f"the tester runs on {s.tester_host}: a "
                                              "baseline is measured on this host only")
    if s.endpoint_in == VM:
        raise UserError("generator_baseline", "the tester's ends run in virtual machines "
                                              "(endpoint_in = vm): a baseline's are containers")
    why = []
    for tester in TESTERS if s.tester == AUTO else (s.tester,):
        b = testers.baseline(s.model_copy(update={"tester": tester}))
        if b is None:
            return
        try:
            check(b, cores)
            return
        except UserError as e:
            why.append(f"{b.switch} {b.api} tester={tester}: {e}")
    raise UserError("generator_baseline", f"its baseline cannot run: {'; '.join(why)}")


def _check_buckets(s: Scenario, dataplane: type[DataPlane], kind: nfs.NfKind | None) -> None:
    """policer, shaper and onoff: a rate where a bucket is placed, a place that
    can hold one (an engine NF; a kernel link whose frames pass the hook or the
    qdisc), a host that has it (a tool, a kernel option: tc's police action is
    missing from many kernels), and a pace an on/off source can keep."""
    if s.onoff and (s.rate.is_search or not s.rate.pps):
        raise UserError("onoff", "an on/off source sends at the point's rate on average: a "
                                 f"paced rate (e.g. 10k), not {s.rate}")
    if s.onoff and s.mode != "throughput":
        raise UserError("onoff", "an on/off source is a throughput sender (mode = throughput)")
    for what, placement in (("policer", s.policer), ("shaper", s.shaper)):
        if placement == "none":
            continue
        rate = getattr(s, f"{what}_rate")
        if not rate.pps:
            raise UserError(f"{what}_rate", f"{what} = {placement} needs a rate in frames per "
                                            "second (e.g. 10k)")
        if placement == "engine":
            if kind is None or not kind.buckets:
                raise UserError(what, "engine: acts in the engine's network functions (nfs ≥ 1, "
                                      f"nf one of {', '.join(nfs.bucket_kinds())}), not "
                                      + (f"nf = {s.nf}" if s.nfs else "nfs = 0"))
            continue
        if dataplane.kind != "kernel":
            raise UserError(what, f"{placement}: acts on a kernel link, and {s.switch}'s are "
                                  "DPDK ports (engine polices and shapes in its network functions)")
        if placement in ("nft", "tc") and rate.pps < 1:
            raise UserError(f"{what}_rate", f"{placement} counts whole frames a second, not {rate}")
        if (why := dataplane.bucket_problem(s, what)) is not None:
            raise UserError(what, f"{placement} on {s.switch}: {why}")
        if (why := buckets.refusal(placement)) is not None:
            raise UserError(what, f"{placement}: {why}")
    if s.shaper in ("tbf", "htb") and s.limit.pps:
        raise UserError("shaper", f"{s.shaper} and limit are both the root qdisc of the link into "
                                  "the receiver: one of them")


def tester_crosses(s: Scenario) -> bool:
    """Whether a tester's port is a NIC wired to another host's switch: the
    host joining its link (the first or the last NF's, else dut_host's) is not
    its end's (tester_hosts: the sender's, the receiver's)."""
    hosts = nf_hosts(s) or (s.dut_host,)
    sender, receiver = tester_hosts(s)
    return sender != hosts[0] or receiver != hosts[-1]


def _check_hosts(s: Scenario, dataplane: type[DataPlane], cores: tuple[int, ...]) -> None:
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
    # the neighbour's container, a guest's facts, its ends' UDP counters).
    elsewhere = {"noise": s.noise != "none",
                 "endpoint_in": s.endpoint_in == "vm" and set(tester_hosts(s)) != {LOCAL},
                 "nf_in": "vm" in s.nf_in.split("+") and any(h != LOCAL for h in nf_hosts(s)),
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
    # switch_rxq: a NIC port through the af_packet PMD has one queue pair
    refused = {"endpoint_in": s.endpoint_in == "vm", "switch_in": s.switch_in == "container",
               "limit": bool(s.limit.pps), "noise": s.noise != "none",
               "policer": s.policer in buckets.POLICERS, "shaper": s.shaper in buckets.SHAPERS,
               "switch_rxq": s.switch_rxq > 1, "nf_in": "vm" in s.nf_in.split("+")}
    for f, bad in refused.items():
        if bad:
            raise UserError(f, f"{getattr(s, f)} with ports wired between hosts: not supported")
    needed = Counter(frozenset((port.host, at)) for port, at in crossings)
    named_as = {frozenset((port.host, at)): (port.host, at) for port, at in reversed(crossings)}
    for between, n in needed.items():
        x, y = named_as[between]
        wires = inv.wires_between(x, y)
        if len(wires) < n:
            raise UserError("hosts", f"{inv.path}: {len(wires)} wire(s) between {x} and {y}; "
                                     f"the point needs {n}, one for each port crossing there "
                                     f"({s.pairs} pair(s))")
        pci = [str(end) for pair in wires[:n] for end in pair if end.iface is None]
        if pci:
            raise UserError("hosts", f"{inv.path}: wire end {pci[0]} is a PCI address; a "
                                     "port crosses on an interface (host:name)")


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
    if s.nic_driver == "af_xdp" and dpdk_args.jumbo(s.size):
        # A larger frame would take a jumbo mbuf, which spans more than the
        # PMD's umem chunk.
        largest = dpdk_args.STD_BUFFER - dpdk_args.FRAME_SLACK + dpdk_args.FCS
        raise UserError("nic_driver", f"af_xdp takes frames of up to {largest} bytes (one 2 KB "
                                      f"buffer each), not {s.size}: use af_packet")


@functools.cache
def inventory_file(path: str) -> Inventory:
    """The inventory at `path`, read and checked once per process."""
    return inventory.load(path)


def _check_vms(s: Scenario, dataplane: type[DataPlane], ports: int) -> None:
    """Where the nodes run: nf_in's places, and a data plane that gives a
    virtual machine its ports; `ports`: an NF's (its kind's)."""
    try:
        nf_places(s.nf_in, s.nfs)
    except ValueError as e:
        raise UserError("nf_in", str(e)) from None
    kind = nfs.find(s.nf) if s.nfs else None
    if kind is not None and kind.runtime and "vm" in nf_places(s.nf_in, s.nfs):
        raise UserError("nf_in", f"{s.nf.split()[0]} NFs run in {kind.runtime}'s containers, "
                                 "not in virtual machines")
    if s.vm_image != "host":
        try:
            RUNTIMES[VM].image_format(s.vm_image)
        except ValueError as e:
            raise UserError("vm_image", f"{e}; or host (the host's own root)") from None
    if has_vms(s) and dataplane.vm_refusal:
        having = ", ".join(n for n, d in DATAPLANES.items() if not d.vm_refusal)
        raise UserError("endpoint_in" if s.endpoint_in == "vm" else "nf_in",
                        f"{s.switch} gives no virtual machine a port ({dataplane.vm_refusal}); "
                        f"{having} do")
    if has_vms(s):
        why = RUNTIMES[VM].memory_problem(s.vm_memory, _vm_dpdk_mb(s, dataplane, ports))
        if why:
            raise UserError("vm_memory", why)


def _vm_dpdk_mb(s: Scenario, dataplane: type[DataPlane], nf_ports: int) -> int:
    """The DPDK memory of the busiest VM's engine (testbed.eal_args): on a DPDK
    data plane a VM's NICs are its DPDK's; the single tester's end holds two
    ports a path, an NF its kind's."""
    if not issubclass(dataplane, DpdkPlane):
        return 0
    ports = [2 * (s.pairs + (s.noise == "traffic"))] if s.endpoint_in == VM else []
    if s.nfs and VM in nf_places(s.nf_in, s.nfs):
        ports.append(nf_ports)
    return endpoint_mb(s.size) * max(ports)


def _check_switch(s: Scenario, dataplane: type[DataPlane], usable: tuple[int, ...]) -> None:
    """Where the switch runs, its cores, queues and quota."""
    in_container = s.switch_in == "container"
    if in_container and not dataplane.processes:
        having = ", ".join(n for n, dp in DATAPLANES.items() if dp.processes)
        raise UserError("switch_in", f"{s.switch} does not run in a container of its own; "
                                     f"{having} do")
    if in_container and not RUNTIMES[s.runtime].quotas:
        # its container needs a cgroup, an image with the switch, a mount namespace
        having = " or ".join(n for n, rt in CONTAINER_RUNTIMES.items() if rt.quotas)
        raise UserError("switch_in", f"a switch container needs runtime {having}, not {s.runtime}")
    if s.switch_quota is not None and not in_container:
        raise UserError("switch_quota", "a quota holds a container: set switch_in = container")
    if s.switch_cores > len(usable):
        raise UserError("switch_cores", f"{s.switch_cores} poll threads, one core each, but "
                                        f"{len(usable)} usable core(s) ({','.join(map(str, usable))})")


RINGS = ("switch_rxd", "switch_txd")


def _check_rings(s: Scenario) -> None:
    """switch_rxd and switch_txd (on a data plane that sizes its rings:
    switch_problem): a power of two each, one size both ways where a
    vhost-user port's front end sizes its ring, and no virtual machine's."""
    given = [f for f in RINGS if getattr(s, f) is not None]
    for f in given:
        n = getattr(s, f)
        if n & (n - 1):
            raise UserError(f, f"{n} is not a power of two ({fields.MIN_DESC}, "
                               f"{2 * fields.MIN_DESC} … {fields.MAX_DESC})")
    if len(given) == 2 and s.switch_rxd != s.switch_txd and _vhost_ports(s):
        raise UserError("switch_txd", f"{s.switch_txd} ≠ switch_rxd {s.switch_rxd}: a "
                                      "vhost-user port's ring is one size both ways (its front "
                                      "end's queue_size); different sizes only on NICs")
    if given and _vms(s):
        raise UserError(given[0], "a virtual machine's vhost-user ring is QEMU's, not sized by "
                                  "cnfperf: no virtual machine (nf_in, endpoint_in) with it")


def _vhost_ports(s: Scenario) -> bool:
    """Whether the switch joins a port of a node of its own host (a vhost-user
    port on a DPDK switch), not only NICs wired to the tester's ends
    (tester_crosses: both of them, with no NF)."""
    hosts = nf_hosts(s) or (s.dut_host,)
    sender, receiver = tester_hosts(s)
    return bool(s.nfs) or sender == hosts[0] or receiver == hosts[-1]


# How each `forward` value forwards, as a refusal says it.
FORWARD_WORDS = {"mac": "by destination MAC", "port": "port to port"}


def _knob_problem(s: Scenario, dataplane: type[DataPlane]) -> tuple[str, str] | None:
    """(field, why) when forward, rxq_affinity, switch_rxd or switch_txd asks
    what the data plane cannot do (forwards, pins_rxq, rings)."""
    if s.forward != AUTO and s.forward not in dataplane.forwards:
        own = dataplane.forwards[0]
        able = [n for n, dp in DATAPLANES.items() if s.forward in dp.forwards]
        return "forward", (f"{s.switch} forwards {FORWARD_WORDS[own]} only (forward = {own} or "
                           f"auto); {FORWARD_WORDS[s.forward]}: {', '.join(able)}")
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
    links = links_per_path(s.nfs, ports) * (s.pairs + (s.noise == "traffic"))
    return dataplane.scenario_problem(s, links)


def nf_ports(nf: str) -> int:
    """How many ports an NF of this kind has; an unknown kind two (check()
    names it)."""
    kind = nfs.find(nf)
    return kind.ports if kind is not None else 2


def point_cpus(s: Scenario, cores: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """The cores the point is placed on: the scenario's, else the plan's `cores`,
    else every usable one."""
    return tuple(s.cpus or cores or usable_cpus())


def _check_cpu(s: Scenario, dataplane: type[DataPlane], kind: nfs.NfKind | None,
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
    # The most each node's cpuset can give: a tester end has its core; an NF and
    # the switch's container their cores (dpdk_base: its poll cores), unpinned all.
    most = {"endpoint_quota": 1, "nf_quota": s.nf_cores if s.pin else cores,
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


def _check_nfs(s: Scenario, dataplane: type[DataPlane], kind: nfs.NfKind | None) -> nfs.NfKind:
    """The NF kind's own rules (nfs/), after the data plane's for its api and
    the one rule between them: neighbours that may close their ports. The kind
    (`kind`: None where no family takes s.nf, which is refused here)."""
    kind = kind or nfs.kind(s.nf)
    if s.nf_api not in dataplane.apis:
        raise UserError("nf_api", f"{s.switch} supports {', '.join(sorted(dataplane.apis))}; "
                                  f"not {s.nf_api}")
    if not dataplane.neighbours_may_close and s.nfs > 1 and not kind.holds_ports:
        # A command closes its ports when it stops, while its neighbour may still
        # poll the link between them: on some data planes (memif: DPDK 22.11
        # unmaps the shared rings from a control thread) the neighbour crashes.
        # Engine NFs hold their ports until no one polls.
        raise UserError("nfs", f"{s.nf.split()[0]} NFs cannot be neighbours on {s.switch} "
                               "(stopping one crashes the other): nfs = 1, or the engine's NFs")
    kind.check(s)
    return kind


# A router's own fields (nfs/router.py), and their defaults: set otherwise they
# need router NFs to mean something.
ROUTER_FIELDS = {"nf_routes": 1, "nf_interfaces": 2, "nf_unrouted": 0}


def _check_router_fields(s: Scenario, kind: nfs.NfKind | None) -> None:
    """nf_routes, nf_interfaces and nf_unrouted concern router NFs only."""
    if kind is not None and kind.kernel:
        return
    for name, default in ROUTER_FIELDS.items():
        if getattr(s, name) != default:
            raise UserError(name, "it concerns router NFs: nf = router with nfs ≥ 1")


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


def _mismatch(dataplane: type[DataPlane], api: str | None, pairs: int, count: int = 0,
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


def _problems(host: HostFacts, dataplane: type[DataPlane], api: str | None,
              runtime: str) -> list[str]:
    """What keeps this host from running a data plane with an api (None: no
    tester's end here) in a runtime, each naming what it concerns first
    (`<switch>: ...`)."""
    problems = [f"{dataplane.name}: {p}" for p in dataplane.check(host)]
    problems += [f"runtime {runtime}: {p}" for p in RUNTIMES[runtime].check()]
    if api and host.engine.apis and api not in host.engine.apis:
        problems.append(f"api {api}: {tools.engine_without(api)} "
                        f"(it has {', '.join(host.engine.apis)})")
    return problems


def host_problems(host: HostFacts, here: str = LOCAL) -> Callable[[Scenario], list[str]]:
    """problems(s): what keeps this host from running a valid scenario, each
    naming what it concerns first (`<switch>: not built: run make switches`). The one
    answer for a study's plan (unusable: such points are left out), a run's
    preflight (it refuses them) and both dry-runs. Answers are remembered:
    checks run tools. This host is `here` among the scenario's hosts: it is
    asked for its part only (the tester's ends, the switch and the NFs, or
    the tester's NICs: NicPlane)."""
    known: dict[tuple[str, str | None, str], list[str]] = {}

    def problems(s: Scenario) -> list[str]:
        tester = here in tester_hosts(s)
        dut = here == s.dut_host or here in nf_hosts(s)   # the switch runs here
        if not (tester or dut):
            return []
        dataplane = dataplane_of(s) if dut else NicPlane
        api = s.api if tester else None
        if (dataplane.name, api, s.runtime) not in known:
            known[(dataplane.name, api, s.runtime)] = _problems(host, dataplane, api, s.runtime)
        found = list(known[(dataplane.name, api, s.runtime)])
        if not dut:
            return found
        if dataplane.nic_ports and _joins_wires(s, here):
            found += [f"{dataplane.name}: {p}" for p in dataplane.nic_problems(host)]
        if s.nfs and host.engine.apis and s.nf_api not in host.engine.apis:
            found.append(f"nf_api {s.nf_api}: {tools.engine_without(s.nf_api)}")
        # what its NF kind needs: a tool, a build, an engine that has it
        kind = nfs.find(s.nf) if s.nfs else None
        if kind is not None:
            found += kind.problems(s, host)
        if s.noise in noise.STRESSORS:
            found += tools.problems(tools.STRESS_NG)
        if (missing := noise.missing_program(s.noise)) is not None:
            found.append(f"noise {missing}: not found on this host's PATH")
        if any(getattr(s, q) is not None for q in QUOTAS) and cgroups.cfs_quota() is None:
            found.append("quota: no cgroup cpu controller with CFS quota files here "
                         "(see cnfperf doctor)")
        if _vms(s):
            if s.accel not in known_vms:
                known_vms[s.accel] = vm_problems(s.accel)
            found += known_vms[s.accel]
            found += [f"{s.switch}: kernel has no {t} links (virtual machines' ports)"
                      for t, option in dataplane_of(s).vm_links.items()
                      if not host.kernel_has(t, option)]
        return list(dict.fromkeys(found))
    known_vms: dict[str, list[str]] = {}
    return problems


def _joins_wires(s: Scenario, here: str) -> bool:
    """Whether the switch on `here` takes a wire's NIC as a port: a port of
    the point's crosses a wire to it (TestPoint.crossings)."""
    if {s.tester_host, s.dut_host, *nf_hosts(s)} == {here}:
        return False
    try:
        return any(at == here for _, at in place_point(s).crossings())
    except ValueError:
        return False     # check() names the mistake


def _vms(s: Scenario) -> bool:
    try:
        return has_vms(s)
    except ValueError:
        return False     # check() names the mistake


def vm_problems(accel: str) -> list[str]:
    """What keeps this host from running virtual machines with `accel` (auto:
    whichever boots)."""
    runtime = RUNTIMES[VM]
    return [f"vm: {p}" for p in runtime.check()] + [f"accel {accel}: {p}"
                                                     for p in runtime.accel_problems(accel)]


def unusable(host: HostFacts) -> Keep:
    """keep(params) for sweep.expand: why a point cannot run on this host, or None.
    A study asks for "every data plane"; the ones this host lacks are left out,
    and the plan says why."""
    problems = host_problems(host)

    def keep(params: dict[str, Any]) -> str | None:
        default = {name: f.default for name, f in fields.by_name().items()}
        switch, api, runtime, nf = (str(params.get(k, default[k]))
                                    for k in ("switch", "api", "runtime", "nf"))
        dataplane = DATAPLANES.get(switch)
        if dataplane is None or runtime not in CONTAINER_RUNTIMES:
            return None      # check() names the mistake
        mismatch = _mismatch(dataplane, api, int(params.get("pairs", default["pairs"])),
                             int(params.get("nfs", default["nfs"])), nf_ports(nf))
        if mismatch:
            return f"{switch} {mismatch[0]}={params.get(mismatch[0], api)}: {mismatch[1]}"
        try:
            s = validate(params)
        except UserError:
            return None      # check() names the mistake
        if (problem := switch_problem(s, dataplane)) is not None:
            return f"{switch} {problem[0]}={getattr(s, problem[0])}: {problem[1]}"
        # a study compares placements: one this host lacks is left out, said why
        for what in ("policer", "shaper"):
            if (why := buckets.refusal(getattr(s, what))) is not None:
                return f"{what}={getattr(s, what)}: {why}"
        return "; ".join(problems(s)) or None
    return keep


def host_wide(host: HostFacts) -> list[str]:
    """What keeps this host from running any point (the engine), each naming
    what it concerns first: a run's preflight refuses, both dry-runs say so."""
    return [f"engine: {host.engine.problem}"] if host.engine.problem else []


def preflight(scenarios: list[Scenario], host: HostFacts) -> None:
    """Host problems found before anything is created (SystemFailure). The
    host's facts, stored with the run, then hold the kernel link types of
    every data plane, as doctor shows them, not only the ones its points use."""
    for dataplane in DATAPLANES.values():
        for link_type, option in dataplane.kernel_links.items():
            host.kernel_has(link_type, option)
    problems = host_problems(host)
    found = host_wide(host)
    for s in scenarios:
        found += problems(s)
    if found:
        raise SystemFailure("this host cannot run the scenario: " + "; ".join(dict.fromkeys(found)))


def matrix(host: HostFacts) -> dict:
    """`cnfperf doctor`: which runtimes, and which data planes × apis, work here (and why not)."""
    runtimes = {name: rt.check() for name, rt in RUNTIMES.items()}
    planes = {}
    for name, dp in DATAPLANES.items():
        problems = dp.check(host)
        cells = {api: "n/a" if api not in dp.apis else
                 "no engine" if api not in host.engine.apis else
                 "no" if problems else "yes" for api in APIS}
        if host.engine.apis and not any(cells[api] in ("yes", "no") for api in APIS):
            # Usable through none of its apis: say which package the engine lacked.
            problems = problems + [f"api {api}: {tools.engine_without(api)}"
                                   for api in APIS if cells[api] == "no engine"]
        planes[name] = {"apis": cells, "problems": problems, "description": dp.description}
    return {"runtimes": runtimes, "vms": vm_matrix(), "nfs": nf_matrix(host),
            "dataplanes": planes}


def vm_matrix() -> dict[str, str | None]:
    """`cnfperf doctor`: whether a guest boots under each accelerator here
    (None: it does; else why not), from a tiny guest booted with a timeout;
    {} when the host cannot build a guest (the runtime's check says why)."""
    runtime = RUNTIMES[VM]
    return {} if runtime.check() else dict(runtime.probe())


def nf_matrix(host: HostFacts) -> dict[str, list[str]]:
    """`cnfperf doctor`: what keeps each NF kind cnfperf names from running
    here (a tool, a build, an engine without it), per nf_api the engine has
    where they differ; a form with an argument (cmd:TEMPLATE) is the user's to
    check. The row names the kind, so its problems do not."""
    out: dict[str, list[str]] = {}
    for name in nfs.names():
        kind = nfs.kind(name)
        apis = [a for a in kind.apis if not host.engine.apis or a in host.engine.apis]
        per_api = {api: [p.removeprefix(f"nf {name}: ")
                         for p in kind.problems(Scenario(nfs=1, nf=name, nf_api=api), host)]
                   for api in apis}
        if len({tuple(found) for found in per_api.values()}) <= 1:
            out[name] = next(iter(per_api.values()), [])
            continue
        apis_of: dict[str, list[str]] = {}     # a problem -> the nf_apis it keeps
        for api, found in per_api.items():
            for problem in found:
                apis_of.setdefault(problem, []).append(api)
        out[name] = [f"nf_api {', '.join(a)}: {p}" for p, a in apis_of.items()]
    return out
