"""The tester's ends on several cores (endpoint_cores > 1): what they need.

Each end's engine then polls a queue of its port per core (engine --threads,
roles/queues.c): the sender deals its flows out to its queues, the receiver
takes each flow on one queue. So the ends must be the sender and receiver
(tester = split: testers.refusal; mode = throughput), on an api with queues,
with a flow per queue at least, no on/off clumps (one pacer's), no one-bucket
contract to hold the receiver to, and a data plane that gives their ports the
queues (DataPlane.ends_queues_problem).
"""
from __future__ import annotations

from cnfperf import UserError
from cnfperf.dataplanes import DataPlane
from cnfperf.runtimes import placements
from cnfperf.scenario import Scenario

FIELD = "endpoint_cores"


def check(s: Scenario, dataplane: type[DataPlane], cores: int) -> None:
    """UserError(endpoint_cores) where the point cannot run its ends on endpoint_cores each."""
    n = s.endpoint_cores
    if n == 1:
        return
    if n > cores:
        raise UserError(FIELD, f"{n} cores per tester end; the point has {cores}")
    if (why := problem(s, dataplane)) is not None:
        raise UserError(FIELD, f"{n}: {why}")


def problem(s: Scenario, dataplane: type[DataPlane]) -> str | None:
    n = s.endpoint_cores
    for k in range(s.pairs):
        pair = s.of_pair(k)
        if pair.mode != "throughput":
            return ("a client and a server take one queue each (mode = latency): the ends on "
                    "several cores send and receive (mode = throughput)")
        if pair.onoff:
            return ("an on/off source's clumps are one pacer's, and each queue paces its own "
                    "flows: endpoint_cores = 1 with onoff")
        if pair.flows < n:
            return (f"each queue sends whole flows, so flows must be at least {n}"
                    + (f" (pair {k} has {pair.flows})" if s.pairs > 1 else f" (not {pair.flows})"))
    if s.api == "udp":
        return "the udp api's sockets have one queue: api raw, mmap, xdp or dpdk"
    if s.policer != "none" or s.shaper != "none":
        return ("the receiver holds what it got to the policer's or shaper's profile, one bucket, "
                "one thread's: endpoint_cores = 1 with a policer or shaper")
    runtime = placements().get(s.endpoint_in)
    if s.api == "xdp" and runtime is not None and runtime.takes_ports:
        return ("a pod's interfaces are its CNI plugin's, with one queue, and AF_XDP binds a "
                "thread to one: api raw or mmap spreads a port's frames over threads")
    why = dataplane.ends_queues_problem(s)
    return f"on switch {s.switch} with api {s.api} {why}" if why else None
