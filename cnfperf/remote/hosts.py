"""A run's other hosts: the inventory, and the agent each runs for the run.

`Hosts.open` connects to every host the plan places a node on (ssh.py),
starts its agent and asks who it is (hello: cnfperf's version must be this
one's; root); `preflight` asks each what keeps it from running its part, before
anything is created anywhere; `begin` takes each host's lock for the run;
`close` ends every session (each agent undoes what is left of its part).
`wiring` says which wire carries which port of a point that spans hosts.
"""
from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from cnfperf import SystemFailure, UserError, __version__
from cnfperf.fields import LOCAL
from cnfperf.host.facts import checkout_commit
from cnfperf.dataplanes import dpdk_args
from cnfperf.host.links import missing_ends, rx_queues
from cnfperf.plan import nf_hosts
from cnfperf.remote import ssh
from cnfperf.remote.client import Agent, Lost
from cnfperf.remote.inventory import End, Inventory, load
from cnfperf.scenario import tester_hosts

if TYPE_CHECKING:
    from cnfperf.plan import Port, TestPoint
    from cnfperf.remote.inventory import Host
    from cnfperf.scenario import Scenario


# How long a host may take to come back after a lost connection, its old
# agent to undo its part and leave the host's lock.
RECOVER_S = 60.0


def used(scenarios: Iterable[Scenario]) -> list[str]:
    """The other hosts the scenarios place nodes on, in order."""
    return list(dict.fromkeys(h for s in scenarios for h in placed(s) if h != LOCAL))


def placed(s: Scenario) -> list[str]:
    """Every host a scenario names: dut_host, the tester's ends', each NF's."""
    return list(dict.fromkeys((s.dut_host, *tester_hosts(s), *nf_hosts(s))))


def inventory_of(scenarios: Sequence[Scenario]) -> Inventory | None:
    """The scenarios' inventory (one file for a whole plan), None if they need none."""
    paths = {s.hosts for s in scenarios if s.hosts}
    if len(paths) > 1:
        raise UserError("hosts", f"one inventory per run, not {', '.join(sorted(paths))}")
    return load(paths.pop()) if paths else None


def wiring(inventory: Inventory | None, point: TestPoint) -> dict[str, dict[str, str]]:
    """{port: {host: interface or PCI address}} for each port a wire carries
    to the host whose switch joins its link (TestPoint.crossings), in path
    order: between two hosts the first free wire of the inventory's (in its
    order), then the next; with share_wires, each port a macvlan child of its
    wire's NIC on both hosts (named for the port: shared_name), the ports
    spread over the wires in turn (shares() says whose child)."""
    return {port.name: {port.host: _end(near, port, point), at: _end(far, port, point)}
            for port, at, near, far in _assigned(inventory, point)}


def shares(inventory: Inventory | None, point: TestPoint) -> dict[str, dict[str, str]]:
    """{port: {host: the wire's NIC}} for each port whose wire it shares with
    others (share_wires): the NIC its interface (wiring()) is a child of."""
    if not point.scenario.share_wires:
        return {}
    return {port.name: {port.host: str(near.iface), at: str(far.iface)}
            for port, at, near, far in _assigned(inventory, point)}


def shared_name(port: str) -> str:
    """The interface that carries a port over a shared wire, on either host."""
    return port + "w"


def _end(end: End, port: Port, point: TestPoint) -> str:
    """A node's end: its interface, or the PCI address its engine's DPDK opens;
    over a shared wire, the port's own child of the wire's NIC."""
    if point.scenario.share_wires:
        return shared_name(port.name)
    return str(end.iface or end.pci)


def _assigned(inventory: Inventory | None,
              point: TestPoint) -> list[tuple[Port, str, End, End]]:
    """(port, host joining its link, its wire's end on its node's host, on
    that one) for each crossing, in path order."""
    found = []
    used: Counter[frozenset[str]] = Counter()
    share = point.scenario.share_wires
    for port, at in point.crossings():
        between = frozenset((port.host, at))
        wires = inventory.wires_between(port.host, at) if inventory else []
        if not wires or (used[between] >= len(wires) and not share):
            raise UserError("hosts", f"{len(wires)} wire(s) between {port.host} and {at}; the "
                                     f"point needs more (one for each port crossing there, "
                                     "or share_wires)")
        near, far = wires[used[between] % len(wires)]
        used[between] += 1
        if far.pci is not None:      # checks/placement.py said so first, and why
            raise UserError("hosts", f"wire end {far} is a PCI address: a switch joins "
                                     "interfaces (host:name)")
        found.append((port, at, near, far))
    return found


def open_hosts(scenarios: Sequence[Scenario]) -> Hosts | None:
    """The plan's other hosts, each with its agent, asked for its preflight;
    None when every point runs here."""
    names = used(scenarios)
    if not names:
        return None
    inventory = inventory_of(scenarios)
    assert inventory is not None, "checks.check: a host needs an inventory"
    hosts = Hosts(inventory)
    try:
        hosts.open(names)
        hosts.preflight(scenarios)
    except BaseException:
        hosts.close()
        raise
    return hosts


# What a point keeps of each other host it ran on (the store's `hosts`).
STORED_FACTS = ("kernel", "cpu_model", "cores", "cnfperf", "clock", "tuning", "hugepages", "dpdk")


class _ChannelStdin:
    """The agent's stdin: the channel itself, each line sent whole. Paramiko's
    file for it flushes its buffer again whenever it is collected, and at exit
    a garbage cycle's collection may have closed that buffer first (a
    traceback after the run's last line)."""

    def __init__(self, channel: Any):
        self.channel = channel

    def write(self, data: bytes) -> None:
        self.channel.sendall(data)       # OSError once the channel is closed

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.channel.shutdown_write()


class Hosts:
    """The run's other hosts, each with its agent once open()."""

    def __init__(self, inventory: Inventory,
                 connect: Callable[[Host], Any] = ssh.connect):
        self.inventory = inventory
        self._connect = connect
        self.agents: dict[str, Agent] = {}
        self.facts: dict[str, dict[str, Any]] = {}

    def agent(self, name: str) -> Agent:
        return self.agents[name]

    def wiring(self, point: TestPoint) -> dict[str, dict[str, str]]:
        return wiring(self.inventory, point)

    def shares(self, point: TestPoint) -> dict[str, dict[str, str]]:
        return shares(self.inventory, point)

    def open(self, names: Iterable[str]) -> None:
        """An agent on each host, its version this one's, root."""
        for name in dict.fromkeys(names):
            if name in self.agents:
                continue
            host = self.inventory.host(name)
            client = self._connect(host)
            try:
                channel = client.get_transport().open_session()
                channel.exec_command(ssh.agent_command(host))
                agent = Agent(name, _ChannelStdin(channel), channel.makefile("rb"),
                              channel.makefile_stderr("rb"), close=client.close)
            except Exception as e:
                client.close()
                raise SystemFailure(f"host {name}: could not start its agent: {e}") from None
            self.agents[name] = agent
            try:
                hello = agent.call("hello", name=name)
            except Lost:
                said = " | ".join(agent.stderr)[-300:]
                if "No such file" in said or "not found" in said:
                    raise UserError("hosts", f"host {name}: no cnfperf at {host.cnfperf} "
                                             f"(its .venv/bin/cnfperf: make build there): {said}") \
                        from None
                raise
            mine = (__version__, checkout_commit())
            if (hello["version"], hello["commit"]) != mine:
                raise SystemFailure(f"host {name} runs cnfperf {hello['version']} at "
                                    f"{hello['commit'][:12] or 'no commit'}, this is {mine[0]} at "
                                    f"{mine[1][:12] or 'no commit'}: bring its checkout "
                                    f"({host.cnfperf}) to this one's")
            if not hello["root"]:
                raise SystemFailure(f"host {name}: its agent is not root (user {host.user}): "
                                    "cnfperf needs root there")
            self.facts[name] = {**host.stored(), **hello["facts"]}

    def preflight(self, scenarios: Sequence[Scenario]) -> None:
        """What keeps any host from running its part (SystemFailure), and wires
        whose ends a host lacks or knobs naming what it has not (UserError):
        before anything is created."""
        problems = []
        for name, agent in self.agents.items():
            mine = [s.model_dump(mode="json") for s in scenarios if name in placed(s)]
            said = agent.call("preflight", scenarios=mine)
            for field_, why in said["refused"]:
                raise UserError(field_, f"host {name}: {why}")
            problems += [f"host {name}: {p}" for p in said["problems"]]
            missing = agent.call("interfaces", names=self._ends(name))
            if missing:
                raise UserError("hosts", f"{self.inventory.path}: host {name} has no "
                                         f"interface or PCI device {', '.join(missing)} (a "
                                         "wire to nowhere)")
            self._xdp_queues(name, scenarios,
                             lambda ends, agent=agent: agent.call("rx_queues", names=ends))
        missing = missing_ends(self._ends(LOCAL))
        if missing:
            raise UserError("hosts", f"{self.inventory.path}: this host (local) has no "
                                     f"interface or PCI device {', '.join(missing)} (a wire "
                                     "to nowhere)")
        self._xdp_queues(LOCAL, scenarios, lambda ends: {e: rx_queues(e) for e in ends})
        if problems:
            raise SystemFailure("the hosts cannot run the scenario: " + "; ".join(problems))

    def _xdp_queues(self, name: str, scenarios: Sequence[Scenario],
                    queues_of: Callable[[list[str]], dict[str, int]]) -> None:
        """A switch there that opens its wires' NICs with af_xdp takes one
        socket per Rx queue (switch_rxq): each interface there of a wire
        between two of a scenario's hosts must have them (UserError naming the
        first that has too few)."""
        need: dict[str, int] = {}
        for s in scenarios:
            if s.nic_driver != "af_xdp" or s.switch_rxq <= 1 or \
                    name not in (s.dut_host, *nf_hosts(s)):
                continue
            hosts = set(placed(s))
            for w in self.inventory.wires:
                if {w.a.host, w.b.host} <= hosts:
                    for end in (w.a, w.b):
                        if end.host == name and end.iface:
                            need[end.iface] = max(need.get(end.iface, 1), s.switch_rxq)
        if not need:
            return
        for iface, has in queues_of(list(need)).items():
            if (problem := dpdk_args.xdp_queue_problem(f"{name}:{iface}", has, need[iface])):
                raise UserError("switch_rxq", problem)

    def _ends(self, name: str) -> list[str]:
        """The host's wire ends: interface names and PCI addresses."""
        return [end.iface or end.pci or "" for w in self.inventory.wires
                for end in (w.a, w.b) if end.host == name]

    def switch_versions(self, point: TestPoint) -> dict[str, str]:
        """The point's switch's versions (which VPP, …) as dut_host has them."""
        facts = self.facts.get(point.scenario.dut_host, {})
        return dict((facts.get("versions") or {}).get(point.scenario.switch, {}))

    def stored(self, point: TestPoint) -> dict[str, Any] | None:
        """The other hosts the point ran on, and what each was."""
        names = [h for h in point.hosts if h != LOCAL]
        found = {}
        for name in names:
            facts = self.facts.get(name, {})
            found[name] = {**self.inventory.host(name).stored(),
                           **{k: facts[k] for k in STORED_FACTS if k in facts},
                           "engine": (facts.get("engine") or {}).get("version")}
        return found or None

    def recover(self, name: str, run_id: str) -> list[str]:
        """After a lost connection: a new session to the host, which waits for
        the old agent to undo its part (it does when its session ends), removes
        whatever of the run is still there, and takes the run up again."""
        old = self.agents.pop(name, None)
        if old is not None:
            with contextlib.suppress(Exception):
                old.close(timeout=1)
        deadline = time.monotonic() + RECOVER_S
        while True:
            try:
                self.open([name])
                answer = self.agents[name].call("cleanup", run_id=run_id)
            except (UserError, SystemFailure):
                failed = self.agents.pop(name, None)
                if failed is not None:
                    with contextlib.suppress(Exception):
                        failed.close(timeout=1)
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
                continue
            if not answer.get("busy"):
                break
            if time.monotonic() > deadline:
                raise SystemFailure(f"host {name}: {answer['busy']}")
            time.sleep(1)
        if answer["failed"]:
            raise SystemFailure(f"host {name} left: " + "; ".join(answer["failed"]))
        self.agents[name].call("begin", run_id=run_id)
        return answer["removed"]

    def begin(self, run_id: str) -> None:
        for agent in self.agents.values():
            agent.call("begin", run_id=run_id)

    def close(self) -> list[str]:
        """End every session; what a host said it left."""
        left = []
        for name, agent in self.agents.items():
            with contextlib.suppress(Exception):
                agent.close()
            left += [f"host {name}: {line}" for line in agent.stderr if "left behind" in line]
        self.agents.clear()
        return left
