"""Which tester a point uses, split or single, and why.

The split tester runs a pair's sender and receiver in containers of their own:
two engines, each a busy poller unless poll = interrupt. The single tester is
one engine holding both ends of a path: one poller. Where the split tester's
pollers, with the data plane's and the network functions', outnumber the
point's cores, they take turns on them, and what is measured is the
scheduler's time slice (tens of kpps and milliseconds), not the data plane.

tester = auto (the default) takes split where its pollers fit on the cores and
single where they would not; and either where the other cannot run (refusal).
plan.place makes the choice, where the pollers are counted; a tester that is
set is used as set (and the plan warns when its pollers outnumber the cores).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from cnfperf.fields import AUTO, TESTERS
from cnfperf.runtimes import in_guest
from cnfperf.scenario import Scenario, tester_hosts

SET = "set"   # the why of a tester that was asked for, not chosen


@dataclass(frozen=True)
class Refusal:
    """Why a tester cannot run a scenario."""

    field: str     # the field to change
    why: str       # the sentence a set tester is refused with (exit 2)
    short: str     # what auto says when it takes the other tester for it


def refusal(s: Scenario, tester: str, nf_ports: int = 2,
            single_holds_link: bool = True) -> Refusal | None:
    """Why `tester` cannot run this scenario, or None: the one place of these rules.
    `nf_ports`: how many ports its NF kind has (nfs.NfKind.ports; 1 sends
    frames back where they came from); `single_holds_link`: whether one engine
    can hold both ends of one of the data plane's links (DataPlane.single_tester)."""
    if tester == "single" and s.api == "udp":
        # Both ends' addresses would be local to its one netns: the kernel would
        # hand the frames over inside, never through the path.
        return Refusal("tester", "a single tester builds its own frames: use an L2 api "
                                 "(raw, mmap, xdp, dpdk), not udp", "api udp needs split")
    if tester == "single" and not s.nfs and not single_holds_link:
        return Refusal("tester", f"a single tester cannot hold both ends of one {s.switch} "
                                 "link: put a network function between them (nfs ≥ 1)",
                       f"{s.switch} without a network function needs split")
    if tester == "single" and len(set(tester_hosts(s))) > 1:
        return Refusal("tester", f"one engine holds a single tester's two ends, on one host: "
                                 f"tester_host {s.tester_host} puts them on two (use tester = "
                                 "split)", "ends on two hosts need split")
    if tester == "single" and s.endpoint_cores > 1:
        return Refusal("endpoint_cores", "a single tester holds both ends, a thread each "
                                         "(endpoint_cores > 1 takes tester = split)",
                       "endpoint_cores > 1 needs split")
    if tester == "split" and in_guest(s.endpoint_in):
        # Each end in a VM of its own has a clock of its own: the receiver would
        # find the sender's timestamps off (a frame from its future is no frame
        # of ours), and one-way latency would span two clocks.
        return Refusal("endpoint_in", "split tester ends in two virtual machines have two "
                                      "clocks: use tester = single (one VM holds both ends, "
                                      "an L2 api)", "ends in VMs need single")
    if tester == "split" and s.forward == "reflect":
        # the switch sends frames back out of the sender's own port
        return Refusal("forward", "reflect sends frames back to their sender: it takes "
                                  "tester = single", "forward reflect needs single")
    if tester == "split" and s.nfs and nf_ports == 1:
        # It sends frames back unchanged but for the MACs: only the engine that sent
        # them knows them for its own.
        return Refusal("nf", f"{s.nf} sends frames back to their sender: it takes "
                             "tester = single", f"nf {s.nf} needs single")
    return None


def problem(s: Scenario, nf_ports: int = 2, single_holds_link: bool = True) -> Refusal | None:
    """Why no tester can run the scenario as asked (checks.check: exit 2): a set
    tester's refusal, or with auto, when both are refused, both reasons (each
    tester's refusal alone would send the user to the other)."""
    if s.tester != AUTO:
        return refusal(s, s.tester, nf_ports, single_holds_link)
    refused = [r for tester in TESTERS
               if (r := refusal(s, tester, nf_ports, single_holds_link)) is not None]
    if len(refused) < len(TESTERS):
        return None
    why = f"{' and '.join(r.short for r in refused)}: neither tester can run it"
    return Refusal(refused[0].field, why, why)


def choose(s: Scenario, pollers: Callable[[str], int], cores: int,
           nf_ports: int = 2, single_holds_link: bool = True) -> tuple[str, str]:
    """(tester, why) for a scenario placed on `cores` cores; `pollers(tester)`
    counts the busy pollers of the point laid out with that tester."""
    if s.tester != AUTO:
        return s.tester, SET
    for tester, other in (("split", "single"), ("single", "split")):
        if (refused := refusal(s, other, nf_ports, single_holds_link)) is not None:
            return tester, f"{AUTO}: {refused.short}"
    split = pollers("split")
    if split > cores:
        return "single", f"{AUTO}: split would put {_many(split, 'busy poller')} on " \
                         f"{_many(cores, 'core')}"
    if not split:
        return "split", f"{AUTO}: nothing polls busily (poll = {s.poll})"
    return "split", f"{AUTO}: split's {_many(split, 'busy poller')} " \
                    f"{'fits' if split == 1 else 'fit'} on {_many(cores, 'core')}"


def _many(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# The lightest link a tester's ends can be joined by, per api: a veth pair for
# the kernel apis; with dpdk a memif link between two engines, or testpmd's io
# forwarding for a single tester (memif and vhost join two engines, not one
# engine's two ports).
BASELINE_LINKS = {"kernel": "veth", "dpdk": {"split": "memif", "single": "testpmd"}}
# What a generator's rate depends on, taken from the point it is a baseline of.
GENERATOR = ("api", "size", "burst", "tester", "pairs", "duration", "warmup", "runtime",
             "mmsg", "poll", "touch", "flows", "cpus", "endpoint_quota", "quota_period")


def baseline(s: Scenario) -> Scenario | None:
    """The generator baseline of a point (generator_baseline): an unpaced
    throughput trial of its tester (as chosen: run it placed) through the lightest
    link its api allows, with the point's size, burst, pairs and cores; None for a
    point that asks none, or is not a throughput point (a latency point's rate
    is its pace, not what it could)."""
    if not s.generator_baseline or s.mode != "throughput":
        return None
    if s.tester == AUTO:   # a programming error: the point is placed first
        raise ValueError("testers.baseline: the point's tester is not chosen yet (plan.place)")
    link = BASELINE_LINKS["dpdk"][s.tester] if s.api == "dpdk" else BASELINE_LINKS["kernel"]
    values = s.model_dump()
    return Scenario.model_validate({
        **{name: values[name] for name in GENERATOR}, "switch": link, "mode": "throughput",
        "rate": 0, "switch_keep": False, "generator_baseline": False})
