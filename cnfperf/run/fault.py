"""A fault inside a trial: a port on every measured path taken down at a time in
the measured window and up again (`fault`, `fault_at`, `fault_duration`), and
what it cost, the outage, as the receivers measure it from sequence numbers
(engine/README.md: the longest gap in time and the frames lost in it).

What goes down (`fault`):
    link:K   the path's link K (0: the sender's; nfs: the one into the receiver),
             at its end towards the receiver: the node's own interface where the
             data plane has one (kernel planes: `ip link set down` in the node's
             netns; on veth the link's other end loses its carrier), else the
             switch's port for that end (OVS `ovs-ofctl mod-port … down`, VPP
             `set interface state … down`)
    port:K   the switch's port at that end of link K (the bridge's port for its
             veth stops forwarding: the node keeps its carrier, DataPlane.cut)
    nf:K     every port of network function K (0: next to the sender), as link:K
Each on every measured path, or with `@P` on pair P's alone (`nf:0@1`: a
failover study cuts one of two parallel paths and measures the other's).
In a graph (`graph`) K counts its links and NFs in its order, and names
address them: `nf:top` (the NF's every port), `link:top.a` (that port, at its
node, whichever way frames cross its link), `port:top.a` (the switch's port
for it).
The end towards the receiver, never the sender's own interface: a sender whose
interface is down is refused its frames (ENETDOWN) and gives their numbers back,
so no gap would show. On a data plane that joins a link's two interfaces
directly (veth) the other end loses its carrier, and the kernel refuses what a
packet socket sends on an interface without one (ENOBUFS): a cut next to the
sender (link:0, nf:0) is refused unless the sender is on udp (the kernel's own path drops quietly). A
network function whose egress loses its carrier drops what it cannot send
(raw), or holds up to its ring's worth and sends it when the link is back
(mmap): its outage is then that much shorter. A data plane says where it can
cut (DataPlane.cut_at).

The down and the up are timed by a thread that the trial starts once its
senders have begun (their `start` records' wall clock, after a tester's or a
client's --settle, plus the warm-up, is when the measured window opens); it
takes the ports down at fault_at into the
window, up fault_duration later. Each step is bracketed by CLOCK_MONOTONIC
readings (the engine stamps frames with the same clock): the fault's length is
from the middle of the downs to the middle of the ups, its `spread_ns` how long
those commands took, the uncertainty. stop() joins the thread and brings up
whatever is still down: a point's teardown calls it too, so no port stays down
when a trial fails.

An interface taken down (`ip link set down`, at the node) loses what the kernel
holds through it: its routes and neighbour entries (its addresses stay; a peer
that only loses its carrier keeps both). A router NF's static routes are
installed once, at prepare (nfs/router.py): after the ups, as a routing daemon
holding static routes would, the trial re-installs them (`restore`,
Testbed.restore: the lines of the router's batch for the interfaces that came
up), in the fault's thread at once, and in stop() after an interrupted one. The
path forwards again only then: the outage lasts the fault's length plus that
re-install (`restore_ns`, from the ups' end to the routes' return).
"""
from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from cnfperf import SystemFailure, graph as graphs
from cnfperf.runtimes import in_guest

if TYPE_CHECKING:
    from cnfperf.dataplanes.base import DataPlane
    from cnfperf.plan import Port, TestPoint
    from cnfperf.scenario import Scenario

NONE = "none"
KINDS = ("link", "port", "nf")
# Where a port is taken down: its node's own interface, or the switch's port for it.
NODE, SWITCH = "node", "switch"
FORM = ("none, link:K, port:K or nf:K (K counted from 0 on the sender's side; in a graph "
        "also link:NAME.PORT, port:NAME.PORT, nf:NAME), each with @P for pair P's path alone")


@dataclass(frozen=True)
class Target:
    kind: str      # KINDS
    index: int | str    # a number, or a graph's name (nf: top; link, port: top.a)
    pair: int | None = None    # one pair's path; None: every measured path

    def __str__(self) -> str:
        return f"{self.kind}:{self.index}" + ("" if self.pair is None else f"@{self.pair}")


def parse(value: str) -> Target | None:
    """The target a `fault` value names, None for none; ValueError."""
    if value == NONE:
        return None
    kind, sep, rest = value.partition(":")
    index, at, pair = rest.partition("@")
    named = re.fullmatch(r"[a-z][a-z0-9_]*" + ("" if kind == "nf" else rf"\.[{graphs.PORTS}]"),
                         index)
    if kind not in KINDS or not sep or not (index.isdigit() or named) or \
            (at and not pair.isdigit()):
        raise ValueError(f"{value!r}: expected {FORM}")
    return Target(kind, int(index) if index.isdigit() else index, int(pair) if at else None)


def _named_problem(s: Scenario, target: Target) -> str | None:
    """Why a target by name is not one of the point's graph's."""
    if not s.graph:
        return (f"{target}: a name is a graph's NF or port (graph = …); a chain's are "
                "counted from 0")
    graph = graphs.parse(s.graph)
    nf, _, port = str(target.index).partition(".")
    if nf not in graph.nfs:
        return f"{target}: the graph has no NF {nf} ({', '.join(graph.nfs)})"
    if port and graphs.PORTS.index(port) >= graph.ports(nf):
        return f"{target}: {nf} has ports {nf}.a to {nf}.{graphs.PORTS[graph.ports(nf) - 1]}"
    return None


def _next_to_sender(s: Scenario, target: Target) -> bool:
    """Whether the target takes down a port whose link's other end is the
    sender's own interface (which then loses its carrier on a direct link)."""
    if not s.graph:
        return target.index == 0
    graph = graphs.parse(s.graph)
    first = next(e for e in graph.edges if e.a.node == graphs.SENDER).b
    if isinstance(target.index, int):
        if target.kind == "nf":
            return graph.nfs[target.index] == first.node
        return graph.edges[target.index].a.node == graphs.SENDER
    nf, _, port = target.index.partition(".")
    return nf == first.node and port in ("", first.port)


def problem(s: Scenario, cut_at: tuple[str, ...], refusal: str, links: int,
            joins: str = "switch") -> tuple[str, str] | None:
    """(field, why) when the scenario's fault cannot be: a bad value, a time
    outside the measured window, a target the path lacks, a data plane that
    cannot cut there (`cut_at`, else `refusal`), a cut the sender would not
    lose frames to; `links`: per path, `joins`: the data plane's."""
    try:
        target = parse(s.fault)
    except ValueError as e:
        return "fault", str(e)
    if target is None:
        return None
    end = s.fault_at + s.fault_duration
    if end >= s.duration:
        return "fault_at", (f"the fault ends {end:g} s into the {s.duration:g} s measured window: "
                            "fault_at + fault_duration must stay below duration (frames after "
                            "it show where the outage ends)")
    if s.rate.is_search or s.soak:
        return "fault", ("a fault is timed inside one fixed-rate trial: not with a search "
                         "(rate = ndr, pdr…) nor a soak")
    if target.pair is not None and target.pair >= s.pairs:
        return "fault", f"{target}: there is no pair {target.pair} (pairs = {s.pairs})"
    if isinstance(target.index, str):
        if (why := _named_problem(s, target)) is not None:
            return "fault", why
    elif target.kind == "nf" and target.index >= s.nfs:
        return "fault", (f"{target}: the path has no network function (nfs = 0)" if not s.nfs
                         else f"{target}: the path has {s.nfs} network function(s) "
                              f"(nf:0…{s.nfs - 1})")
    elif target.kind != "nf" and target.index >= links:
        return "fault", f"{target}: the path has {links} link(s) ({target.kind}:0…{links - 1})"
    side = where(target, cut_at)
    if side is None:
        wanted = "a switch port" if target.kind == "port" else "a port"
        return "fault", f"{s.switch} cannot take {wanted} down: {refusal}"
    if side == NODE and joins == "link" and s.api != "udp" and _next_to_sender(s, target):
        return "fault", (f"{target} on {s.switch} takes the carrier off the sender's own "
                         f"interface (the other end of its link): the kernel refuses what a "
                         f"sender on {s.api} sends then, and it gives those frames' numbers "
                         "back: no outage would show. Cut a later link, or use api udp, or "
                         "a switch (bridge, macvlan)")
    if side == NODE and (in_guest(s.endpoint_in) or any(map(in_guest, s.nf_in.split("+")))):
        return "fault", ("a virtual machine's interface is its guest's: cnfperf takes no port "
                         "of a point with virtual machines down")
    if s.tester_host != "local" or s.dut_host != "local" or s.nf_host:
        return "fault", "a fault acts on this host's nodes and switch: not with other hosts"
    return None


def where(target: Target, cut_at: tuple[str, ...]) -> str | None:
    """Where the target's ports go down on a data plane that cuts at `cut_at`:
    a port at the switch, a link or an NF at the node's own interface where it
    has one, else at the switch; None where it cannot."""
    if target.kind == "port":
        return SWITCH if SWITCH in cut_at else None
    return NODE if NODE in cut_at else SWITCH if SWITCH in cut_at else None


def ports(point: TestPoint, target: Target) -> list[Port]:
    """The ports the target takes down, on every measured path (not a noise
    stream's)."""
    found: list[Port] = []
    for pair in point.pairs:
        if target.pair is not None and pair.index != target.pair:
            continue
        if isinstance(target.index, str):   # a graph's name
            nf, _, port = target.index.partition(".")
            mine = next(n for n in pair.nfs if n.label == nf)
            found.extend(mine.ports if not port else [mine.ports[graphs.PORTS.index(port)]])
        elif target.kind == "nf":
            found.extend(pair.nfs[target.index].ports)
        else:
            found.append(pair.links[target.index].b)
    return found


class Fault:
    """One trial's fault: start() times it, stop() ends it and says what was done."""

    def __init__(self, dataplane: DataPlane, target: Target, ports: list[Port], side: str,
                 at: float, duration: float,
                 restore: Callable[[list[Port]], bool] | None = None):
        self.dataplane = dataplane
        self.target = target
        self.ports = ports
        self.side = side
        self.at = at
        self.duration = duration
        # what the kernel dropped with the node's interfaces, put back after the
        # ups (Testbed.restore); only where they went down at the node
        self.restore = restore if side == NODE else None
        self._restored = False            # whether restore put anything back
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._down: list[Port] = []       # what is down now
        self._marks: list[int] = []       # monotonic ns: before and after the downs, the
                                          # ups, and after the re-install
        self._opens = 0.0                 # wall clock when the measured window opens
        self._clocks = 0.0
        self.error: str | None = None

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self, window_opens: float) -> None:
        """The thread that takes the ports down at fault_at after `window_opens`
        (wall clock, seconds), and up fault_duration later."""
        self._opens = window_opens
        self._clocks = time.time() - time.monotonic()   # wall minus monotonic, for record()
        self._thread = threading.Thread(target=self._run, name="fault", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            if self._cancel.wait(max(0.0, self._opens + self.at - time.time())):
                return
            self._marks.append(time.monotonic_ns())
            for port in self.ports:
                self._down.append(port)
                self.dataplane.cut(port, self.side, up=False)
            self._marks.append(time.monotonic_ns())
            # up fault_duration after the downs' middle, or at once when cancelled
            up_at = (self._marks[0] + self._marks[1]) / 2e9 + self.duration
            self._cancel.wait(max(0.0, up_at - time.monotonic()))
            self._marks.append(time.monotonic_ns())
            came_up = self._up()
            self._marks.append(time.monotonic_ns())
            self._restore(came_up)
            self._marks.append(time.monotonic_ns())
        except Exception as e:   # said by stop(), after every port is up again
            self.error = str(e)

    def _up(self) -> list[Port]:
        """Every port still down up again: those it brought up."""
        came_up: list[Port] = []
        while self._down:
            self.dataplane.cut(self._down[-1], self.side, up=True)
            came_up.append(self._down.pop())
        return came_up

    def _restore(self, ports: list[Port]) -> None:
        if ports and self.restore is not None and self.restore(ports):
            self._restored = True

    def stop(self) -> dict[str, Any] | None:
        """Ends the fault (at once if it is still under way), every port up
        again; what was done (record()), None if nothing went down. A port that
        would not go down or up fails the point."""
        self._cancel.set()
        if self._thread is not None:
            self._thread.join()
        try:
            came_up = self._up()    # what an error or a cancelled thread left down
        except Exception as e:
            raise SystemFailure(f"fault {self.target}: a port stays down: {e}") from None
        try:
            self._restore(came_up)
        except Exception as e:
            raise SystemFailure(f"fault {self.target}: its routes are not back: {e}") from None
        if self.error:
            raise SystemFailure(f"fault {self.target}: {self.error}")
        return self.record()

    def record(self) -> dict[str, Any] | None:
        """What the fault did, as stored with the point (fault_facts): its target,
        the ports and where they went down, when (seconds into the measured
        window), for how long and with what spread (ns), and the monotonic
        clock's reading at the middle of the downs (the engine's senders stamp
        frames with that clock), and how long re-installing what the kernel
        dropped with the interfaces took after the ups (restore_ns; 0: nothing
        to re-install); None if nothing went down."""
        if len(self._marks) < 5:
            return None
        d0, d1, u0, u1, r1 = self._marks[:5]
        down = (d0 + d1) // 2
        return {"target": str(self.target), "at": self.side,
                "ports": [p.name for p in self.ports],
                "down_at_s": round(down / 1e9 + self._clocks - self._opens, 6),
                "down_ns": (u0 + u1) // 2 - down, "spread_ns": ((d1 - d0) + (u1 - u0)) // 2,
                "down_from_ns": down, "down_wall": round(down / 1e9 + self._clocks, 6),
                "restore_ns": r1 - u1 if self._restored else 0}


def create(point: TestPoint, dataplane: DataPlane,
           restore: Callable[[list[Port]], bool] | None = None) -> Fault | None:
    """The point's fault, None without one (run/checks/ refused what cannot be);
    `restore`: what puts back the kernel's routes and neighbours through ports
    that came up at their node, true if it put any back (Testbed.restore)."""
    s = point.scenario
    target = parse(s.fault)
    if target is None:
        return None
    side = where(target, dataplane.cut_at)
    assert side is not None, "run/checks/ refuses a fault the data plane cannot cut"
    return Fault(dataplane, target, ports(point, target), side, s.fault_at, s.fault_duration,
                 restore)
