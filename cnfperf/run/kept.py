"""Engines kept across a point's trials (engine_keep), as a switch is kept
across points (keep.py).

A search runs tens of one-second trials on one testbed; starting every engine
for each (a container's process, DPDK's EAL, a memif or vhost-user handshake)
and stopping it again cost more than the trial. So the first trial starts the
engines with --keep, and where the point allows it (refusal(): none) they stay after
it: held, ports open, polling nothing (the two-phase stop's first phase). The
next trial renews each one's output (its records go to the trial's files) and
sends it a line, RATE DURATION WARMUP, in the order a trial starts them
(receivers, NFs from the receiver's side, senders); each then runs as a fresh
engine would, with its own counters, trackers and timeline (and warm-up), on
ports whose receive queues it has just emptied.

At the point's end release() lets them go in the order a trial does (senders,
NFs from the sender's side, receivers); on the way out of a failure the
point's teardown stops them, as it stops a trial's engines.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from cnfperf import SystemFailure
from cnfperf.fields import LOCAL
from cnfperf.plan import nf_hosts
from cnfperf.runtimes import placements
from cnfperf.scenario import Scenario, tester_hosts

if TYPE_CHECKING:
    from cnfperf import nfs
    from cnfperf.engine import EngineOutput
    from cnfperf.plan import NF, Endpoint

RELEASE_TIMEOUT = 5.0


def refusal(s: Scenario, kind: nfs.NfKind | None) -> str | None:
    """Why the point's engines are started afresh for every trial, or None."""
    if not s.engine_keep:
        return "engine_keep = no"
    if kind is not None and s.nfs and (not kind.records or kind.kernel):
        return f"nf {s.nf} is not the engine's (only an engine takes its next trial on stdin)"
    if s.fault != "none":
        return "a fault's trial starts from fresh engines"
    if {*tester_hosts(s), s.dut_host, *nf_hosts(s)} != {LOCAL}:
        return "engines on another host are started by its agent for each trial"
    places = {s.endpoint_in, *s.nf_in.split("+")} if s.nfs else {s.endpoint_in}
    # a VM's exec relays stdin to its engine as a container's does; a pod's is not asked to
    if any(getattr(placements().get(p), "takes_ports", False) for p in places):
        return "engines in a pod are started for each trial"
    return None


@dataclass
class KeptEngines:
    """The engines of a point's first trial, while they are kept; what a
    trial keeps of each (its process, output reader, node, command, start)."""

    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    outputs: dict[str, EngineOutput] = field(default_factory=dict)
    nodes: dict[str, Endpoint | NF] = field(default_factory=dict)
    commands: dict[str, nfs.Command] = field(default_factory=dict)
    started_ns: dict[str, int] = field(default_factory=dict)
    stderr: dict[str, Path] = field(default_factory=dict)   # each one's, from its first trial
    order: list[list[str]] = field(default_factory=list)    # release(): groups, in turn
    trials: int = 0          # trials run on them
    made_for: dict = field(default_factory=dict)            # their scenario, but what a line says
    # each NF's startup (ready_s, first_tx_s) as its first trial measured it
    startup: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    patience: Callable[[str], float] = lambda name: 1.0      # a node's slowdown

    @property
    def running(self) -> bool:
        return bool(self.procs)

    def fits(self, s: Scenario) -> bool:
        """Whether a trial of `s` may run on them: only its rate, duration and
        warm-up may differ from what they were started for."""
        return not self.running or self.made_for == _made_for(s)

    def keep(self, s: Scenario, order: list[list[str]], trial_state: dict) -> None:
        """A trial of `s` is over and its engines stay: its state (Trial's dicts)
        and the order in which they are to be let go."""
        self.made_for = _made_for(s)
        self.procs, self.outputs = trial_state["procs"], trial_state["outputs"]
        self.nodes, self.commands = trial_state["nodes"], trial_state["commands"]
        self.started_ns, self.stderr = trial_state["started_ns"], trial_state["stderr"]
        self.order = order
        self.trials += 1

    def abandon(self) -> None:
        """A trial failed: its engines are stopped (the point's teardown would
        too) and none is kept."""
        procs, self.procs, self.order = self.procs, {}, []
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                try:
                    proc.wait(timeout=RELEASE_TIMEOUT)
                except subprocess.TimeoutExpired:
                    pass

    def release(self) -> None:
        """End of stdin for every kept engine, group by group: each closes its
        ports and exits 0; one that does not fails the point."""
        order, self.order = self.order, []
        procs, self.procs = self.procs, {}
        for group in order:
            for name in group:
                if procs[name].stdin is not None:
                    try:
                        procs[name].stdin.close()
                    except OSError:
                        pass
            for name in group:
                timeout = RELEASE_TIMEOUT * self.patience(name)
                try:
                    code = procs[name].wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    raise SystemFailure(f"engine in {name} did not exit within {timeout:g} s of "
                                        "being released after its last trial") from None
                self.outputs[name].join(RELEASE_TIMEOUT)
                self.outputs[name].raw.close()
                if procs[name].stdout is not None:
                    procs[name].stdout.close()
                if code != 0:
                    raise SystemFailure(f"engine in {name} exited with code {code} while "
                                        "closing its ports after its last trial")


def _made_for(s: Scenario) -> dict:
    return s.model_dump(mode="json", exclude={"rate", "duration", "warmup"})
