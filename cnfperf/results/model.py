"""What a test point measured: per endpoint (from the engine's summary), per pair
(sender and receiver side by side) and in total.

Loss is the sender's transmitted count minus what its peer received: the
receiver alone cannot see frames lost after the last one it got.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from cnfperf.dataplanes.base import PortCounters

PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9, "p9999": 99.99}
LATENCY_KEYS = ("min", "mean", *PERCENTILES, "max")


@dataclass
class Latency:
    kind: str                     # one_way | rtt (the engine's words)
    samples: int
    ns: dict[str, float | None]   # LATENCY_KEYS -> nanoseconds
    # [lower_ns, upper_ns, count] per non-empty bucket, as the engine prints it:
    # histograms add, so a total over pairs has exact-to-the-bucket percentiles.
    histogram: list[list[int]] = field(default_factory=list)


@dataclass
class EndpointMetrics:
    pair: int
    endpoint: str
    role: str
    cpu: int
    tx_packets: int = 0
    rx_packets: int = 0
    tx_pps: float = 0.0           # achieved, over the measured window
    rx_pps: float = 0.0
    tx_bps: float = 0.0
    rx_bps: float = 0.0
    offered_pps: float = 0.0      # what the sender was asked for (0 = max)
    reordered: int = 0
    duplicates: int = 0
    corrupt: int = 0
    seq_lost: int = 0             # gaps the receiver saw in sequence numbers
    warmup_packets: int = 0
    seconds: float = 0.0          # length of the measured window
    latency: Latency | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    # udp api: datagrams its node's kernel dropped over the trial (udp_errors.py);
    # None: another api, or the counters could not be read
    udp_in_errors: int | None = None
    udp_in_csum_errors: int | None = None
    udp_rcvbuf_errors: int | None = None
    # What its polling loop lost in the measured window (the engine's `stalls`:
    # gaps between two iterations above threshold_ns): how many, their sum,
    # the longest, and the sum's share of the window; None: an engine that did
    # not say (a command NF, or one built before it counted them).
    stall_count: int | None = None
    stall_total_ns: int | None = None
    stall_max_ns: int | None = None
    stall_share: float | None = None
    stall_threshold_ns: int | None = None


# A point is marked when one of its pollers lost more than this share of its
# measured window to stalls: its numbers are then the host's scheduling as
# much as the data plane's (a tester that loses its core drops or skips what it
# would have sent or taken meanwhile). Not lower: a quiet 2-core VM's own work
# (its agent, kdamond, kworkers, the hypervisor's steal) takes 1-1.5 % of a
# poller's core there with nothing of cnfperf's on it (docs/cpu.md), and a mark
# every point carries tells nothing.
STALL_MARK = 0.05


@dataclass
class PairResult:
    pair: int
    offered_pps: float
    sent: int
    received: int
    lost: int
    loss_ratio: float
    tx_pps: float
    rx_pps: float
    rx_bps: float
    reordered: int
    duplicates: int
    latency: Latency | None
    # Received rate over the steady-state intervals only (runner: stats.steady_state);
    # None when the run was too short to have any.
    steady_rx_pps: float | None = None
    # What the pair was asked, where a point's pairs differ (a profile per pair:
    # scenario.profile); None where they are alike
    profile: dict[str, Any] | None = None
    # A fault's measure (run/fault.py): the longest gap in time the counting end
    # saw in its sequence numbers, less one frame interval, and the frames lost
    # in it (the engine's outage_ns and outage_lost; a total: its pairs'
    # longest); None without a fault (the engine reports a gap for any loss: a
    # policed on/off stream's is no outage) or where the engine said none.
    outage_ns: float | None = None
    outage_lost: int | None = None
    # What was received held to the profile (the shaper's, else the policer's
    # rate and bucket: engine --conformance): the smallest bucket, in frames,
    # it conforms to at that rate, and the share of its frames beyond the
    # profile's bucket; None without a profile.
    conformance_sigma: float | None = None
    conformance_exceeded: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


DROP_REASONS = ("other", "bad", "no_route", "ttl", "policer", "shaper")


@dataclass
class NFPort:
    """One port of a network function, as its engine counted it: what came in
    there (and was dropped there, by reason), what left there."""

    port: int                     # 1 (towards the sender) or 2
    rx_packets: int = 0
    tx_packets: int = 0
    tx_refused: int = 0
    dropped: dict[str, int] = field(default_factory=dict)   # DROP_REASONS -> frames
    delayed: int = 0              # frames its shaper held back before they left here


@dataclass
class NFResult:
    """A network function on a pair's path: its counters, its startup, its polling."""

    name: str
    pair: int
    index: int                    # 0-based position on the path, from the sender
    kind: str
    cpu: int
    ports: list[NFPort]
    # Startup, as if the engine were started with its container: the container's
    # creation plus, from the engine's start, its ports up (ready) and its first
    # forwarded frame (which waits for the sender, started after every NF).
    ready_s: float | None = None
    first_tx_s: float | None = None
    polls: int = 0
    empty_polls: int = 0
    # On several cores (the engine's --threads): the frames each core's thread
    # took in, queue by queue; None on one.
    queues: list[int] | None = None

    @property
    def busy_ratio(self) -> float | None:
        """Polls that found frames: near 1, the NF had no time to spare (CPU-bound)."""
        return busy_ratio({"polls": self.polls, "empty_polls": self.empty_polls})


# A poller is CPU-bound when it found frames in at least this share of its polls.
# A loop with time to spare polls faster than frames arrive, so many of its polls
# come back empty (an idle one: nearly all); one that almost never finds an empty
# ring is always behind its input, and its core, not the data plane, sets the
# rate. 0.95 rather than 1: the first polls before traffic and the drain after it
# are empty even for a saturated loop (see busy_ratio for what that costs).
CPU_BOUND_BUSY = 0.95


def busy_ratio(poll: dict[str, Any] | None) -> float | None:
    """1 − empty_polls / polls of an engine summary's `poll` object; None without
    polls (a sender's loop does not receive). The counters cover the engine's whole
    life, its idle polls before the senders start and during the drain included."""
    polls = int((poll or {}).get("polls") or 0)
    return 1 - int((poll or {}).get("empty_polls") or 0) / polls if polls else None


# What a node is, in cpu_usage rows: a tester end's engine role, a network
# function, the switch's own processes.
CPU_KINDS = ("send", "recv", "client", "server", "tester", "nf", "switch", "noise")


@dataclass
class CpuUsage:
    """A node's CPU use over a trial's measured window (cnfperf/run/cpu.py)."""

    node: str
    kind: str                     # CPU_KINDS
    cores: str                    # the cores it may run on (a cpulist)
    quota: float | None           # its CFS quota, % of one core; None: none
    user_s: float | None          # None: its counters could not be read
    system_s: float | None
    softirq_s: float              # on its cores, whoever's packets they were
    wall_s: float                 # the window
    packets: int | None           # it handled in the window (None: unknown)
    tsc_hz: float | None          # what cycles are counted in
    tsc_source: str               # where tsc_hz came from
    threads: list[dict[str, Any]] = field(default_factory=list)   # placement: cpu.threads
    # Its work is the kernel's softirq on its cores (a router NF whose RPS map
    # is its cores: run/cpu.py): counted in its cycles per packet. Not a
    # column: the cycles stored say it.
    softirq_counts: bool = False

    @property
    def cycles_per_packet(self) -> float | None:
        if self.user_s is None or self.system_s is None:
            return None
        cpu_s = self.user_s + self.system_s + (self.softirq_s if self.softirq_counts else 0.0)
        return cycles_per_packet(self.tsc_hz, cpu_s, self.packets)


def cycles_per_packet(tsc_hz: float | None, cpu_s: float, packets: int | None
                      ) -> float | None:
    """TSC cycles of CPU time per packet; None without packets or a TSC rate."""
    return tsc_hz * cpu_s / packets if packets and tsc_hz else None


@dataclass
class PointResult:
    pairs: list[PairResult]
    total: PairResult
    endpoints: list[EndpointMetrics]
    counters: dict[str, PortCounters]
    nfs: list[NFResult] = field(default_factory=list)
    # the switch's queue-to-core affinity (DataPlane.queues): {port, queue, core} each
    queues: list[dict[str, Any]] = field(default_factory=list)
    cpu: list[CpuUsage] = field(default_factory=list)
    # What a fault did (run/fault.py's record), None without one
    fault: dict[str, Any] | None = None
    # What the noisy neighbour did (run/noise.py's record), None without one
    noise: dict[str, Any] | None = None
    # The switch's own per-packet cost, as it counts it (DataPlane.cost); None
    # where it reports none
    switch_cost: dict[str, Any] | None = None

    def cpu_bound(self) -> list[str]:
        """The nodes whose engine found frames in nearly every poll (CPU_BOUND_BUSY):
        the tester's ends and the network functions, from their summaries' `poll`."""
        ratios = {m.endpoint: busy_ratio(m.summary.get("poll")) for m in self.endpoints}
        for nf in self.nfs:   # the same counters, also when only the NF result has them
            ratios.setdefault(nf.name, nf.busy_ratio)
        return [name for name, ratio in ratios.items() if (ratio or 0) >= CPU_BOUND_BUSY]

    def stalled(self) -> EndpointMetrics | None:
        """The poller (a tester end or an engine NF) that lost the most of its
        window to stalls; None when no engine said (none counted them)."""
        known = [m for m in self.endpoints if m.stall_share is not None]
        return max(known, key=lambda m: m.stall_share, default=None)

    def stall_warnings(self) -> list[str]:
        """A warning per poller that lost more than STALL_MARK of its window."""
        return [stall_warning(m) for m in self.endpoints
                if m.stall_share is not None and m.stall_share > STALL_MARK]


def stall_warning(m: EndpointMetrics) -> str:
    """`p0s (tester) lost 4.1 % of its window to 37 stalls (longest 9.7 ms): …`."""
    return (f"{m.endpoint} ({m.role}) lost {100 * (m.stall_share or 0):.1f} % of its window to "
            f"{m.stall_count} stalls over {(m.stall_threshold_ns or 0) / 1e3:g} µs (longest "
            f"{(m.stall_max_ns or 0) / 1e6:.1f} ms): its core was another's; more than "
            f"{100 * STALL_MARK:g} % marks the point")


def stalls(summary: dict[str, Any], seconds: float) -> dict[str, Any]:
    """An engine summary's `stalls` (engine/README.md) as EndpointMetrics'
    stall_* fields; all None without one. The share is of `seconds`, the
    engine's measured window: the sum over its polling loops, so a two-thread
    client's share is at most twice what its worse loop lost and never less
    (the engine sums its loops: a mark errs towards marking)."""
    s = summary.get("stalls")
    if not isinstance(s, dict) or s.get("total_ns") is None:
        return dict.fromkeys(("stall_count", "stall_total_ns", "stall_max_ns", "stall_share",
                              "stall_threshold_ns"))
    total = int(s["total_ns"])
    return {"stall_count": int(s.get("count") or 0), "stall_total_ns": total,
            "stall_max_ns": int(s.get("max_ns") or 0),
            "stall_share": total / (seconds * 1e9) if seconds > 0 else None,
            "stall_threshold_ns": s.get("threshold_ns")}


def endpoint_metrics(pair: int, endpoint: str, role: str, cpu: int,
                     summary: dict[str, Any]) -> EndpointMetrics:
    """Reads an engine `summary` record (engine/README.md)."""
    def num(key: str) -> float:
        return float(summary.get(key) or 0)

    m = EndpointMetrics(pair=pair, endpoint=endpoint, role=role, cpu=cpu, summary=summary)
    m.tx_packets, m.rx_packets = int(num("tx_packets")), int(num("rx_packets"))
    m.offered_pps, m.tx_pps = num("offered_pps"), num("tx_pps")
    m.rx_pps, m.tx_bps, m.rx_bps = num("rx_pps"), num("tx_bps"), num("rx_bps")
    m.reordered, m.duplicates = int(num("reordered")), int(num("duplicate"))
    m.corrupt, m.seq_lost = int(num("corrupt")), int(num("lost"))
    m.warmup_packets, m.seconds = int(num("warmup_packets")), num("duration_s")
    for key, value in stalls(summary, m.seconds).items():
        setattr(m, key, value)
    lat = summary.get("latency")
    if isinstance(lat, dict) and lat.get("count"):
        m.latency = Latency(kind=str(lat.get("kind", "")), samples=int(lat["count"]),
                            ns={k: lat.get(f"{k}_ns") for k in LATENCY_KEYS},
                            histogram=[list(b) for b in lat.get("histogram", [])])
    return m


def merge_latency(parts: list[Latency]) -> Latency | None:
    """One latency over several endpoints: histograms add; percentiles are
    read from the sum the way the engine reads them (upper bucket bound,
    clamped to the exact min and max)."""
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    buckets: dict[tuple[int, int], int] = {}
    for part in parts:
        for lo, hi, count in part.histogram:
            buckets[(lo, hi)] = buckets.get((lo, hi), 0) + count
    count = sum(p.samples for p in parts)
    lo_ns = min(p.ns["min"] for p in parts)
    hi_ns = max(p.ns["max"] for p in parts)
    ns: dict[str, float | None] = {
        "min": lo_ns, "max": hi_ns,
        "mean": sum(p.ns["mean"] * p.samples for p in parts) / count}
    ordered = sorted(buckets.items())
    for key, pct in PERCENTILES.items():
        rank = min(count, max(1, math.ceil(pct / 100 * count - 1e-9)))
        seen, value = 0, hi_ns
        for (_, upper), n in ordered:
            seen += n
            if seen >= rank:
                value = max(lo_ns, min(upper, hi_ns))
                break
        ns[key] = value if ordered else None
    return Latency(kind=parts[0].kind, samples=count, ns=ns,
                   histogram=[[lo, hi, n] for (lo, hi), n in ordered])


def nf_result(name: str, pair: int, index: int, cpu: int, summary: dict[str, Any],
              create_s: float | None, started_ns: int | None,
              ready: dict[str, Any] | None) -> NFResult:
    """Reads an nf engine's `summary` (engine/README.md). Startup: `create_s` the
    container's creation took, `started_ns` the wall clock when its engine was
    started, and the wall clock of its `ready` and first forwarded frame."""
    def since(wall_ns: Any) -> float | None:
        if create_s is None or started_ns is None or not isinstance(wall_ns, int):
            return None
        return create_s + (wall_ns - started_ns) / 1e9

    ports = [NFPort(port=int(p.get("port", 0)), rx_packets=int(p.get("rx_packets") or 0),
                    tx_packets=int(p.get("tx_packets") or 0),
                    tx_refused=int(p.get("tx_refused") or 0),
                    delayed=int(p.get("delayed") or 0),
                    dropped={k: int((p.get("dropped") or {}).get(k) or 0) for k in DROP_REASONS})
             for p in summary.get("ports") or []]
    poll = summary.get("poll") or {}
    queues = [int(q.get("rx_packets") or 0) for q in summary.get("queues") or []]
    return NFResult(name=name, pair=pair, index=index, kind=str(summary.get("nf", "")), cpu=cpu,
                    ports=ports, ready_s=since((ready or {}).get("wall_ns")),
                    first_tx_s=since(summary.get("first_tx_wall_ns")),
                    polls=int(poll.get("polls") or 0), empty_polls=int(poll.get("empty_polls") or 0),
                    queues=queues if len(queues) > 1 else None)


def pair_result(index: int, sender: EndpointMetrics, receiver: EndpointMetrics,
                mode: str, fault: bool = False) -> PairResult:
    """The pair's result from its ends' metrics; its outage only with a fault
    in the point (`fault`): without one a gap is loss, not an outage."""
    if mode == "latency":
        # The client sees both directions: what it sent and which echoes came back.
        sent, received, dup = sender.tx_packets, sender.rx_packets, sender.duplicates
        rx_pps, rx_bps, reordered = sender.rx_pps, sender.rx_bps, sender.reordered
        latency, counting = sender.latency, sender
    else:
        sent, received, dup = sender.tx_packets, receiver.rx_packets, receiver.duplicates
        rx_pps, rx_bps, reordered = receiver.rx_pps, receiver.rx_bps, receiver.reordered
        latency, counting = receiver.latency, receiver
    lost = max(0, sent - (received - dup))
    outage_ns, outage_lost = ((counting.summary.get("outage_ns"),
                               counting.summary.get("outage_lost")) if fault else (None, None))
    sigma, exceeded = conformance(receiver.summary)
    return PairResult(pair=index, offered_pps=sender.offered_pps, sent=sent, received=received,
                      lost=lost, loss_ratio=lost / sent if sent else 0.0, tx_pps=sender.tx_pps,
                      rx_pps=rx_pps, rx_bps=rx_bps, reordered=reordered, duplicates=dup,
                      latency=latency,
                      outage_ns=float(outage_ns) if outage_ns is not None else None,
                      outage_lost=int(outage_lost) if outage_lost is not None else None,
                      conformance_sigma=sigma, conformance_exceeded=exceeded)


def conformance(summary: dict[str, Any]) -> tuple[float | None, float | None]:
    """(sigma, the share of frames beyond the contract's bucket) of a receiving
    end's `conformance` (engine/README.md); (None, None) without one or frames."""
    c = summary.get("conformance")
    if not isinstance(c, dict) or not c.get("frames"):
        return None, None
    return float(c["sigma"]), int(c.get("exceeded") or 0) / int(c["frames"])


def total(pairs: list[PairResult]) -> PairResult:
    """Sums over pairs; latency from the merged histograms."""
    sent = sum(p.sent for p in pairs)
    lost = sum(p.lost for p in pairs)
    latency = merge_latency([p.latency for p in pairs if p.latency])
    steady = [p.steady_rx_pps for p in pairs]
    # 0 is unpaced (max): a total with an unpaced pair (its own profile) is too
    offered = 0.0 if any(not p.offered_pps for p in pairs) else sum(p.offered_pps for p in pairs)
    longest = max((p for p in pairs if p.outage_ns is not None), key=lambda p: p.outage_ns,
                  default=None)
    held = [p for p in pairs if p.conformance_sigma is not None]
    beyond = sum(p.received for p in held)
    return PairResult(pair=-1, offered_pps=offered, sent=sent,
                      received=sum(p.received for p in pairs), lost=lost,
                      loss_ratio=lost / sent if sent else 0.0,
                      tx_pps=sum(p.tx_pps for p in pairs), rx_pps=sum(p.rx_pps for p in pairs),
                      rx_bps=sum(p.rx_bps for p in pairs),
                      reordered=sum(p.reordered for p in pairs),
                      duplicates=sum(p.duplicates for p in pairs), latency=latency,
                      steady_rx_pps=None if None in steady else sum(steady),
                      outage_ns=longest.outage_ns if longest else None,
                      outage_lost=longest.outage_lost if longest else None,
                      conformance_sigma=max((p.conformance_sigma for p in held), default=None),
                      conformance_exceeded=sum((p.conformance_exceeded or 0) * p.received
                                               for p in held) / beyond if beyond else None)


def baseline_share(rx_pps: float | None, baseline_pps: float | None) -> float | None:
    """A point's received rate as a share of its generator baseline's (what the
    tester moved through the lightest link: run/baseline.py), 1.0 = as fast as
    the generator went there; None without a baseline, or one that moved
    nothing (no share of nothing)."""
    if rx_pps is None or not baseline_pps:
        return None
    return rx_pps / baseline_pps
