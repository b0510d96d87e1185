"""Another host's part of a point, as the controller's testbed holds it.

The host's agent builds its nodes (run/agent.py) and says what the
controller needs of them: each node's container there (RemoteContainer: its
engine's path, its cores as placed there, its EAL arguments), how each of its
ports is reached (Attachment), and the switch if it runs there
(RemoteSwitch: its counters, queues and configuration, read through the agent),
and the noisy neighbour if it runs there (RemoteNoise). The
testbed puts them beside its own nodes, and a trial runs them as it runs its
own.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence, TypeVar

from cnfperf.dataplanes.base import Attachment, PortCounters
from cnfperf.plan import NF, Endpoint, TestPoint
from cnfperf.remote.client import Agent, RemoteProcess

__all__ = ["Agent", "Part", "RemoteContainer", "RemoteNoise", "RemoteSwitch", "build", "nics_on",
           "other_hosts"]
from cnfperf.runtimes.base import Mount, Nic

N = TypeVar("N", Endpoint, NF)


@dataclass
class RemoteContainer:
    """A node's container on another host: exec() runs a process in it there."""

    agent: Agent
    name: str
    engine: str
    own_kernel: bool = False     # a VM there (Container.own_kernel)
    slowdown: float = 1.0
    netns: str = ""
    cpus: tuple[int, ...] = ()
    cpu: int = 0
    cores: tuple[int, ...] = ()
    floating: tuple[int, ...] = ()
    eal: tuple[str, ...] = ()
    init_pid: None = None        # its CPU time is its host's to read, not this one's
    pids: list[int] = field(default_factory=list)
    said: dict[str, Any] = field(default_factory=dict)   # its facts, as its host said them

    @property
    def host(self) -> str:
        return self.agent.name

    def facts(self) -> dict[str, Any]:
        """What its host said of it (Container.facts: a pod's, on that host's node)."""
        return self.said

    def exec(self, argv: list[str], stdout: Any = subprocess.PIPE, stderr: Any = subprocess.PIPE,
             stdin: Any = subprocess.DEVNULL, env: Mapping[str, str] | None = None) -> RemoteProcess:
        if env:
            raise ValueError("a process on another host takes no environment of this one's")
        if stdout is not subprocess.PIPE:
            raise ValueError("a process on another host speaks through a pipe")
        return self.agent.exec(self.name, argv, stderr if hasattr(stderr, "fileno") else None)

    def placed(self, node: N) -> N:
        """The node as its host placed it: on that host's cores."""
        return replace(node, cpu=self.cpu, cores=self.cores or node.cores)

    def destroy(self) -> None:
        """Nothing here: the agent removes its host's part (Part's teardown)."""


class RemoteSwitch:
    """The point's switch on another host, read through its agent."""

    container = None
    cpus: tuple[int, ...] = ()
    keeps = False    # its host's agent stops it with the point (run/keep.py: keepable)

    def __init__(self, agent: Agent, name: str):
        self.agent = agent
        self.name = name

    def counters(self) -> dict[str, PortCounters]:
        return {port: PortCounters(**c) for port, c in self.agent.call("counters").items()}

    def queues(self) -> list[dict[str, Any]]:
        return self.agent.call("queues")

    def applied(self) -> dict[str, Any]:
        return self.agent.call("applied")

    def cost_begin(self) -> None:
        self.agent.call("cost_begin")

    def cost(self) -> dict[str, Any] | None:
        return self.agent.call("cost")

    def pids(self) -> list[int]:
        return []     # its processes are its host's

    def window(self, open: bool) -> None:
        """The trial's window opens or closes: its host's switch is told there
        (DataPlane.window: what it does on its own stays out of the window)."""
        self.agent.call("window", open=open)

    def eal_args(self, node: str, attachments: Sequence[Attachment]) -> tuple[str, ...]:
        raise AssertionError("a node on another host has its EAL arguments from there")

    def stop(self) -> None:
        """Nothing here: the agent stops it with its host's part."""


class RemoteNoise:
    """The point's noisy neighbour on another host (run/noise.py's there),
    started and stopped through its agent; its output comes back with its
    record, into the trial's directory here."""

    def __init__(self, agent: Agent, what: str):
        self.agent = agent
        self.what = f"{what} on host {agent.name}"
        self._out: Path | None = None

    def start(self, out: Path) -> None:
        self._out = out / "noise.out"
        self.agent.call("noise_start")

    def stop(self) -> dict | None:
        """Its record (Noise.stop's); None when it never started here."""
        out, self._out = self._out, None
        if out is None:
            return None
        answer = self.agent.call("noise_stop")
        out.write_text(answer["output"])
        return answer["record"]


@dataclass
class Part:
    """What a host built of a point."""

    host: str
    containers: dict[str, RemoteContainer]
    attachments: dict[str, Attachment]
    switch: RemoteSwitch | None      # its data planes, read through its agent
    noise: RemoteNoise | None = None   # the noisy neighbour, when it runs there


def other_hosts(point: TestPoint) -> list[str]:
    """The hosts other than this copy's that run a part of the point."""
    return [h for h in point.hosts if h != point.host]


def nics_on(point: TestPoint, host: str, wiring: Mapping[str, Mapping[str, str]]) -> list[list[str]]:
    """[port, interface] for each wired port, as `host` sees it (wiring;
    hosts.shares: [port, the shared wire's NIC])."""
    return [[port, ends[host]] for port, ends in wiring.items() if host in ends]


def build(agent: Agent, point: TestPoint, wiring: Mapping[str, Mapping[str, str]],
          shares: Mapping[str, Mapping[str, str]]) -> Part:
    """The host's part of the point, built there by its agent."""
    s = point.scenario
    answer = agent.call("build", scenario=s.model_dump(mode="json"), run_id=point.run_id,
                        index=point.index, total=point.total,
                        nics=nics_on(point, agent.name, wiring),
                        shared=nics_on(point, agent.name, shares))
    containers = {name: RemoteContainer(
        agent, name, engine=n["engine"], own_kernel=n["own_kernel"], slowdown=n["slowdown"],
        netns=n["netns"], cpus=tuple(n["cpus"]), cpu=n["cpu"], cores=tuple(n["cores"]),
        floating=tuple(n["floating"]), eal=tuple(n["eal"]), said=n.get("facts") or {})
        for name, n in answer["nodes"].items()}
    attachments = {port: attachment(a) for port, a in answer["attachments"].items()}
    # read as one: the agent merges its planes' counters
    planes = answer["planes"]
    switch = None if not planes else RemoteSwitch(
        agent, f"{s.switch if s.switch in planes else planes[0]}@{agent.name}")
    noise = RemoteNoise(agent, answer["noise"]) if answer.get("noise") else None
    return Part(agent.name, containers, attachments, switch, noise)


def attachment(d: dict[str, Any]) -> Attachment:
    """An Attachment from its JSON form (dataclasses.asdict's)."""
    mounts = tuple(Mount(**m) for m in d.get("mounts") or ())
    nic = Nic(**d["nic"]) if d.get("nic") else None
    return Attachment(**{**d, "mounts": mounts, "nic": nic})
