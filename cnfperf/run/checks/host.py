"""What this host can run: the one answer for a study's plan (unusable: its
points this host cannot run are left out, and listed), a run's preflight (it
refuses them, exit 1), both dry-runs, and `cnfperf doctor` (matrix)."""
from __future__ import annotations

from typing import Any, Callable

from cnfperf import SystemFailure, UserError, fields, nfs
from cnfperf.cluster import node
from cnfperf.dataplanes import DATAPLANES, DataPlane
from cnfperf.dataplanes.nic import NicPlane
from cnfperf.fields import APIS, LOCAL, QUOTAS
from cnfperf.host import buckets, cgroups, tools
from cnfperf.host.facts import HostFacts
from cnfperf.plan import has_vms, nf_hosts
from cnfperf.run import noise
from cnfperf.run.checks.dataplane import dataplane_of, mismatch, nf_ports, switch_problem
from cnfperf.run.checks.placement import place_point
from cnfperf.runtimes import CONTAINER_RUNTIMES, RUNTIMES, guest
from cnfperf.runtimes.pod.runtime import TEST_KUBECONFIG, PodRuntime
from cnfperf.scenario import Keep, Scenario, tester_hosts, validate

POD = PodRuntime.place     # endpoint_in, nf_in, switch_in = pod


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
        found += [f"{dataplane.name}: {p}" for p in dataplane.scenario_host_problems(s)]
        # a kernel policer or shaper sits on the switch's links: this host's
        # kernel must have it (a study compares placements: one it lacks is
        # left out, said why)
        for what in ("policer", "shaper"):
            if (why := buckets.refusal(getattr(s, what))) is not None:
                found.append(f"{what}={getattr(s, what)}: {why}")
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
                known_vms[s.accel] = guest().host_problems(s.accel)
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


def unusable(host: HostFacts,
             valid: Callable[[dict[str, Any]], Scenario] = validate) -> Keep:
    """keep(params) for sweep.expand: why a point cannot run on this host, or None.
    A study asks for "every data plane"; the ones this host lacks are left out,
    and the plan says why. `valid`: the point's parameters validated (UserError
    otherwise), as the plan validates them (plans.Points.valid: once)."""
    problems = host_problems(host)

    def keep(params: dict[str, Any]) -> str | None:
        default = {name: f.default for name, f in fields.by_name().items()}
        switch, api, runtime, nf = (str(params.get(k, default[k]))
                                    for k in ("switch", "api", "runtime", "nf"))
        dataplane = DATAPLANES.get(switch)
        if dataplane is None or runtime not in CONTAINER_RUNTIMES:
            return None      # check() names the mistake
        refused = mismatch(dataplane, api, int(params.get("pairs", default["pairs"])),
                             int(params.get("nfs", default["nfs"])), nf_ports(nf))
        if refused:
            return f"{switch} {refused[0]}={params.get(refused[0], api)}: {refused[1]}"
        try:
            s = valid(params)
        except UserError:
            return None      # check() names the mistake
        if (problem := switch_problem(s, dataplane)) is not None:
            return f"{switch} {problem[0]}={getattr(s, problem[0])}: {problem[1]}"
        placing = [f"{name}: {why}" for name, rt in RUNTIMES.items()
                   if (why := rt.placement_problem(s)) is not None]
        if not placing and LOCAL in pod_hosts(s) and \
                (why := PodRuntime.node_problem(s)) is not None:
            placing.append(f"{PodRuntime.name}: {why}")
        return "; ".join([*problems(s), *placing]) or None
    return keep


def host_wide(host: HostFacts) -> list[str]:
    """What keeps this host from running any point (the engine), each naming
    what it concerns first: a run's preflight refuses, both dry-runs say so."""
    return [f"engine: {host.engine.problem}"] if host.engine.problem else []


def host_refusals(scenarios: list[Scenario], here: str = LOCAL) -> list[tuple[str, str]]:
    """(field, why) for each knob that names what this host has not, where
    its switch runs (DataPlane.scenario_host_refusal: sriov_pf): bad input."""
    found = []
    for s in scenarios:
        if here == s.dut_host or here in nf_hosts(s):
            refused = dataplane_of(s).scenario_host_refusal(s)
            if refused is not None and refused not in found:
                found.append(refused)
        # a host's pods go to its own node; the controller need be none
        # where all of them are on other hosts
        if here in pod_hosts(s):
            why = PodRuntime.node_problem(s)
            if why is not None and here != LOCAL and not s.cluster and \
                    not TEST_KUBECONFIG.exists():
                why = ("this host is no node of the test cluster (cnfperf cluster --hosts FILE "
                       "joins the hosts of an inventory)")
            if why is not None and ("cluster", why) not in found:
                found.append(("cluster", why))
    return found


def pod_hosts(s: Scenario) -> set[str]:
    """The hosts whose part of a point has a pod: a tester's end, an NF, the switch."""
    hosts: set[str] = set()
    if s.endpoint_in == POD:
        hosts |= set(tester_hosts(s))
    if s.switch_in == POD:
        hosts.add(s.dut_host)
    if s.nfs and POD in s.nf_in.split("+"):
        hosts |= set(nf_hosts(s))
    return hosts


def preflight(scenarios: list[Scenario], host: HostFacts) -> None:
    """A knob naming what this host has not (UserError, exit 2), then host
    problems (SystemFailure), found before anything is created. The host's
    facts, stored with the run, then hold the kernel link types of every data
    plane, as doctor shows them, not only the ones its points use."""
    for field_, why in host_refusals(scenarios):
        raise UserError(field_, why)
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
    return {"runtimes": runtimes, "vms": guest().doctor(), "pods": node.doctor(),
            "nfs": nf_matrix(host), "dataplanes": planes}


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
