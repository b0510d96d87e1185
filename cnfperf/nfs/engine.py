"""The engine's own NFs: `cnfperf-engine nf --nf KIND` (engine/src/roles/nf.c).

They print the engine's records (`ready` once their ports are up, a `summary`
with per-port counters), hold their ports until their stdin ends, poll in one
thread per core (busy unless poll = interrupt), and finish the udp ends'
checksums on every nf_api.

On nf_cores > 1 each thread polls a queue of each port (the engine's
--threads, a --cpu each), and what spreads a port's frames over the queues is
the api's or the data plane's: raw and mmap join a port's sockets in a
PACKET_FANOUT group (the kernel hashes flows to them), xdp binds a socket to
each queue of a veth made with as many (bridge), and on ovs the NF's
vhost-user ports offer as many queues and OVS hashes flows over them
(tx-steering=hash). A flow stays on one thread, in order; one flow is one
thread's (flows ≥ nf_cores spread). Data planes that cannot spread them say
why (DataPlane.queues_problem), as do the policer and shaper (one bucket,
one thread's). On a kernel api they run the static engine alone in the
minimal image, when it was built with that api; on dpdk the tester's image.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from cnfperf import polls
from cnfperf.engine import nf_argv
from cnfperf.dataplanes import DATAPLANES
from cnfperf.fields import NF_APIS
from cnfperf.host.engine_describe import DescribeError, EngineNf, describe
from cnfperf.nfs.base import Command, NfKind
from cnfperf.plan import has_vms
from cnfperf.runtimes import FULL, MINIMAL, placements

if TYPE_CHECKING:
    from cnfperf.dataplanes.base import Attachment
    from cnfperf.host.facts import HostFacts
    from cnfperf.plan import NF, Pair
    from cnfperf.scenario import Scenario

# The engine's NF kinds as its table has them (engine/src/core/nf.c), in its
# order: named here because `nf`'s values are known before any engine runs;
# tests/unit/test_engine_describe.py holds this equal to `--describe`'s `nfs`,
# properties included, and preflight and doctor to the binary's --version.
ENGINE_NFS = (
    EngineNf("l2", ports=2, next_hop=True, routed=False),
    EngineNf("mirror", ports=1, next_hop=False, routed=False),   # sends frames back
    EngineNf("strip-encap", ports=2, next_hop=True, routed=False),
    EngineNf("l3", ports=2, next_hop=True, routed=True),   # a route to each end of its path
)
_BY_NAME = {k.name: k for k in ENGINE_NFS}


class EngineKind(NfKind):
    names = tuple(_BY_NAME)
    styles = {"l2": 0, "mirror": 1, "strip-encap": 2, "l3": 3}
    records = True
    holds_ports = True
    lazy = True      # the engine handles SIGINT and SIGTERM (engine/src/core/run.c)
    buckets = True   # --policer, --shaper (engine/src/core/bucket.h)

    @property
    def ports(self) -> int:
        return _BY_NAME[self.nf].ports

    def cores_problem(self, s: Scenario) -> str | None:
        if s.nf_cores == 1:
            return None
        bucket = next((f for f in ("policer", "shaper") if getattr(s, f) == "engine"), None)
        if bucket:
            return (f"the engine's {bucket} is one bucket, one thread's: nf_cores = 1 with "
                    f"{bucket} = engine")
        if has_vms(s):
            return ("a virtual machine's NICs have one queue each: the engine's NFs take "
                    "nf_cores > 1 in containers")
        if s.nf_api == "xdp" and _cni_ports(s.nf_in):
            return ("a pod's interfaces are its CNI plugin's, with one queue, and AF_XDP binds "
                    "a thread to one: nf_api raw or mmap spreads a port's frames over threads")
        plane = DATAPLANES.get(s.switch)
        why = plane.queues_problem(s.nf_api) if plane else None
        if why:
            return (f"the engine's {self.nf} NF polls a queue of each port per core, and on "
                    f"switch {s.switch} with nf_api {s.nf_api} {why}")
        return None

    def queues(self, s: Scenario) -> int:
        return s.nf_cores   # a thread per core, a queue of each port each

    def pollers(self, s: Scenario, cores: int) -> int:
        return self.queues(s) if polls.mode(s.poll).spins else 0   # a thread per queue

    def problems(self, s: Scenario, host: HostFacts) -> list[str]:
        """The engine that will run it (the static one on a kernel api it was
        built with: image) lists its NF kinds in --version, and says in
        --describe what each is: one that lacks this kind, or describes it
        otherwise than ENGINE_NFS (a build older or newer than this cnfperf), is
        refused; one that does not say (built before it did) is taken at its
        word when it runs."""
        static = self.image(s.nf_api, lambda: host.static_engine.apis) == MINIMAL
        engine = host.static_engine if static else host.engine
        known = engine.nfs
        which = "static engine" if static else "engine"
        if known is None:
            return []
        if self.nf not in known:
            return [f"nf {self.nf}: the {which} has no such NF (it has "
                    f"{', '.join(known) or 'none'}): make build"]
        said = _described(engine.path, self.nf)
        ours = _BY_NAME[self.nf]
        if said is not None and said != ours:
            return [f"nf {self.nf}: the {which} describes it as {_shown(said)}, cnfperf places it "
                    f"as {_shown(ours)}: make build"]
        return []

    def image(self, api: str, static_apis: Callable[[], Sequence[str]]) -> str:
        return MINIMAL if api != "dpdk" and api in static_apis() else FULL

    def command(self, engine: str, nf: NF, ports: Sequence[Attachment], hops: Sequence[str],
                pair: Pair, s: Scenario, eal: Sequence[str],
                floating: Sequence[int] = ()) -> Command:
        # A router's table: host routes to the two ends, not a cross-connect.
        routes = ["--route", f"{pair.receiver.ip}/32,2", "--route", f"{pair.sender.ip}/32,1"] \
            if _BY_NAME[self.nf].routed else []
        return Command(nf_argv(engine, nf, ports, hops, s, eal, floating, routes),
                       records=True)


def _cni_ports(nf_in: str) -> bool:
    """Whether a placement of nf_in hands its nodes' ports to a runtime that
    makes them anew (a pod's, by its CNI plugin: takes_ports)."""
    return any(rt is not None and rt.takes_ports
               for rt in map(placements().get, nf_in.split("+")))


def _described(engine: str | None, nf: str) -> EngineNf | None:
    """What the engine's --describe says of the kind; None from an engine that
    does not describe itself (built before --describe) or not this kind."""
    if engine is None or not Path(engine).exists():
        return None
    try:
        return next((k for k in describe(Path(engine)).nfs if k.name == nf), None)
    except DescribeError:
        return None


def _shown(k: EngineNf) -> str:
    """`1 port, no next hop, not routed`: a kind's properties, for a refusal."""
    return (f"{k.ports} port{'s' if k.ports > 1 else ''}, {'a' if k.next_hop else 'no'} next hop, "
            f"{'' if k.routed else 'not '}routed")


def forwards_unfinished(nf: str) -> str:
    """Why a kind that sends frames on as it got them cannot stand between udp
    ends: their kernels leave each UDP checksum for the device to finish
    (checksum offload), and the receiver's kernel drops every datagram. The
    engine's NFs finish them (engine/README.md, Frames as the wire carried
    them); a user's command or Click configuration may, and is warned about it."""
    return (f"{nf} would send the udp ends' datagrams on with the checksums their kernels leave "
            "to the device, and the receiver's kernel would drop every one: use api = raw, mmap "
            f"or xdp (no checksum), or the engine's NFs ({', '.join(EngineKind.names)}), which "
            f"finish them on every nf_api ({', '.join(NF_APIS)})")
