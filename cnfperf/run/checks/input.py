"""A scenario's parts that never go together (exit 2, naming the field), on
any host: check(s). Its fields are valid on their own (scenario.py); here they
are held against each other, against the data plane's capabilities
(checks.dataplane), the NF kind's rules (nfs/), the runtimes' (runtimes/) and
the point's placement (checks.placement)."""
from __future__ import annotations

from cnfperf import UserError, fields, nfs, testers
from cnfperf.dataplanes import DATAPLANES, DataPlane
from cnfperf.dataplanes.dpdk_args import endpoint_mb
from cnfperf.fields import AUTO, LOCAL, MAX_PORT, TESTERS, TX_PORT
from cnfperf.plan import first_sport, has_vms, links_per_path, nf_places
from cnfperf.run import fault
from cnfperf.run.checks import ends
from cnfperf.run.checks.dataplane import RINGS, dataplane_of, mismatch, switch_problem
from cnfperf.run.checks.placement import (check_cpu, check_hosts, check_usable, in_machine,
                                          point_cpus, tester_crosses)
from cnfperf.runtimes import CONTAINER_RUNTIMES, RUNTIMES, guest, placed
from cnfperf.scenario import SOCKET_APIS, Scenario, tester_hosts
from cnfperf.strategies import latency, mlr, soak


def check(s: Scenario, cores: tuple[int, ...] | None = None) -> None:
    """Parts of a valid scenario that do not go together: UserError naming the
    field. A point without cpus is placed on `cores`, else on the usable ones."""
    dataplane = dataplane_of(s)
    kind = nfs.find(s.nf) if s.nfs else None    # None for a kind none takes: _check_nfs
    ports = kind.ports if kind is not None else 2
    # a noise stream (noise = traffic) is one more pair, without NFs: see plan.py
    paths = s.pairs + (s.noise == "traffic")
    try:   # the tester's ports are NICs: check_hosts
        spans = tester_crosses(s)
    except ValueError as e:   # tester_host names more than two hosts
        raise UserError("tester_host", str(e)) from None
    refused = mismatch(dataplane, None if spans else s.api, paths, s.nfs, ports)
    if refused:
        noise_pair = " (noise = traffic adds a pair)" if paths > s.pairs else ""
        raise UserError(refused[0], refused[1] + noise_pair)
    if s.runtime not in CONTAINER_RUNTIMES:
        raise UserError("runtime", f"unknown container runtime {s.runtime!r}; known: "
                                   f"{', '.join(CONTAINER_RUNTIMES)} (nf_in and endpoint_in "
                                   "put nodes in virtual machines)")
    if s.forward == "reflect" and s.nfs:
        raise UserError("forward", "reflect makes the switch itself the tester's peer: nfs = 0 "
                                   "(network functions that send frames back: nf = mirror)")
    if s.forward == "reflect" and spans:
        raise UserError("forward", "reflect sends frames back on the tester's own port: the "
                                   "tester on the switch's host (tester_host, dut_host)")
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
    if (problem := nfs.own_fields_problem(s, kind)) is not None:
        raise UserError(*problem)
    if s.nfs:
        kind = _check_nfs(s, dataplane, kind)
    _check_buckets(s, dataplane, kind)
    if (problem := switch_problem(s, dataplane, ports)) is not None:
        raise UserError(*problem)
    if (problem := fault.problem(s, dataplane.cut_at, dataplane.cut_refusal,
                                 links_per_path(s.nfs, ports, s.graph), dataplane.joins)) is not None:
        raise UserError(*problem)
    if (refused := testers.problem(s, ports, dataplane.single_tester or spans)) is not None:
        raise UserError(refused.field, refused.why)
    check_usable(s)
    _check_switch(s, dataplane, point_cpus(s, cores))
    _check_rings(s, dataplane)
    check_cpu(s, dataplane, kind, point_cpus(s, cores))
    ends.check(s, dataplane, len(point_cpus(s, cores)))
    # its own fields (vm_image), and what it asks of a cluster (after every
    # check that needs none)
    for runtime in RUNTIMES.values():
        if (problem := runtime.scenario_problem(s)) is not None:
            raise UserError(*problem)
    check_hosts(s, dataplane, point_cpus(s, cores))
    if s.generator_baseline:
        _check_baseline(s, cores)


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


def _check_baseline(s: Scenario, cores: tuple[int, ...] | None) -> None:
    """generator_baseline: the tester's ends here, in containers, and its
    baseline a point this check passes (for tester = auto, with either tester)."""
    if set(tester_hosts(s)) != {LOCAL}:
        raise UserError("generator_baseline", f"the tester runs on {s.tester_host}: a "
                                              "baseline is measured on this host only")
    if in_machine(s.endpoint_in):
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
        # what the host under test's kernel has is its own question (host.py)
    if s.shaper in ("tbf", "htb") and s.limit.pps:
        raise UserError("shaper", f"{s.shaper} and limit are both the root qdisc of the link into "
                                  "the receiver: one of them")


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


def _check_vms(s: Scenario, dataplane: type[DataPlane], ports: int) -> None:
    """Where the nodes run: nf_in's places, and a data plane that gives a
    virtual machine its ports; `ports`: an NF's (its kind's)."""
    try:
        nf_places(s.nf_in, s.nfs)
    except ValueError as e:
        raise UserError("nf_in", str(e)) from None
    kind = nfs.find(s.nf) if s.nfs else None
    if kind is not None and kind.runtime and any(map(placed, nf_places(s.nf_in, s.nfs))):
        raise UserError("nf_in", f"{s.nf.split()[0]} NFs run in {kind.runtime}'s containers, "
                                 "not in virtual machines nor pods")
    if has_vms(s) and dataplane.vm_refusal:
        having = ", ".join(n for n, d in DATAPLANES.items() if not d.vm_refusal)
        raise UserError("endpoint_in" if in_machine(s.endpoint_in) else "nf_in",
                        f"{s.switch} gives no virtual machine a port ({dataplane.vm_refusal}); "
                        f"{having} do")
    if has_vms(s):
        why = guest().memory_problem(s.vm_memory, _vm_dpdk_mb(s, dataplane, ports))
        if why:
            raise UserError("vm_memory", why)


def _vm_dpdk_mb(s: Scenario, dataplane: type[DataPlane], nf_ports: int) -> int:
    """The DPDK memory of the busiest VM's engine (testbed.eal_args): on a DPDK
    data plane a VM's NICs are its DPDK's; the single tester's end holds two
    ports a path, an NF its kind's."""
    if not dataplane.vm_dpdk:
        return 0
    ports = [2 * (s.pairs + (s.noise == "traffic"))] if in_machine(s.endpoint_in) else []
    if s.nfs and any(map(in_machine, nf_places(s.nf_in, s.nfs))):
        ports.append(nf_ports)
    return endpoint_mb(s.size) * max(ports)


def _check_switch(s: Scenario, dataplane: type[DataPlane], usable: tuple[int, ...]) -> None:
    """Where the switch runs, its cores, queues and quota."""
    housed = s.switch_in != "host"     # in a container or a pod of its own
    if housed and not dataplane.processes:
        having = ", ".join(n for n, dp in DATAPLANES.items() if dp.processes)
        raise UserError("switch_in", f"{s.switch} does not run in a {s.switch_in} of its own; "
                                     f"{having} do")
    if s.switch_in == "container" and not RUNTIMES[s.runtime].quotas:
        # its container needs a cgroup, an image with the switch, a mount namespace
        having = " or ".join(n for n, rt in CONTAINER_RUNTIMES.items() if rt.quotas)
        raise UserError("switch_in", f"a switch container needs runtime {having}, not {s.runtime}")
    if s.switch_quota is not None and not housed:
        raise UserError("switch_quota", "a quota holds a container: set switch_in = container "
                                        "or pod")
    if s.switch_cores > len(usable):
        raise UserError("switch_cores", f"{s.switch_cores} poll threads, one core each, but "
                                        f"{len(usable)} usable core(s) ({','.join(map(str, usable))})")


def _check_rings(s: Scenario, dataplane: type[DataPlane]) -> None:
    """switch_rxd and switch_txd (on a data plane that sizes its rings:
    switch_problem): a power of two each, then what the data plane takes of
    them (DataPlane.input_problem: a vhost-user port's ring one size both ways,
    no virtual machine's)."""
    for f in RINGS:
        n = getattr(s, f)
        if n is not None and n & (n - 1):
            raise UserError(f, f"{n} is not a power of two ({fields.MIN_DESC}, "
                               f"{2 * fields.MIN_DESC} … {fields.MAX_DESC})")
    if (problem := dataplane.input_problem(s)) is not None:
        raise UserError(*problem)
