"""What a node's kernel dropped of the UDP datagrams that reached it.

With the udp api the ends' kernels receive the datagrams, and a datagram
their kernel drops never reaches the engine: a checksum it finds wrong (one a
network function sent on unfinished, engine/README.md: *Frames as the wire
carried them*), a full socket buffer. A trial reads each udp end's Udp
counters (/proc/net/snmp of its network namespace) before the traffic and
after it, and stores the difference with the end's metrics; the loss table
names them. InErrors counts every datagram the kernel dropped as an error,
InCsumErrors those of them whose checksum was wrong.
"""
from __future__ import annotations

from cnfperf import SystemFailure, system

# /proc/net/snmp's Udp counter -> the metrics column
COUNTERS = {"InErrors": "udp_in_errors", "InCsumErrors": "udp_in_csum_errors"}


def parse(snmp: str) -> dict[str, int]:
    """The COUNTERS of /proc/net/snmp's two Udp lines (names, then values);
    those a kernel lacks are left out."""
    udp = [line.split()[1:] for line in snmp.splitlines() if line.startswith("Udp:")]
    if len(udp) < 2:
        return {}
    values = dict(zip(udp[0], udp[1]))
    return {column: int(values[name]) for name, column in COUNTERS.items()
            if values.get(name, "").isdigit()}


def read(netns: str) -> dict[str, int] | None:
    """The counters of a network namespace; None when they cannot be read (what
    is only written down does not fail a point)."""
    try:
        return parse(system.run(["ip", "netns", "exec", netns, "cat", "/proc/net/snmp"],
                                what=f"UDP counters of {netns}", timeout=10))
    except SystemFailure:
        return None


def dropped(before: dict[str, int] | None, after: dict[str, int] | None) -> dict[str, int]:
    """What the counters grew by: {column: datagrams}; {} when either read failed."""
    if not before or not after:
        return {}
    return {column: after[column] - before[column] for column in after if column in before}


def describe(errors: int | None, csum: int | None, who: str = "receiver",
             what: str = "datagrams") -> list[str]:
    """The loss table's words for an end's kernel drops: `the receiver's kernel
    dropped 24,992 datagrams with bad UDP checksums`, and those for other
    reasons (a full socket buffer); [] for none."""
    csum, errors = csum or 0, errors or 0
    out = []
    if csum:
        out.append(f"the {who}'s kernel dropped {csum:,} {what} with bad UDP checksums")
    if errors > csum:
        out.append(f"the {who}'s kernel dropped {errors - csum:,} {what} for other errors "
                   "(UDP InErrors, e.g. a full socket buffer)")
    return out
