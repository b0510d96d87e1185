"""What a node's kernel dropped of the UDP datagrams that reached it.

With the udp api the ends' kernels receive the datagrams, and a datagram
their kernel drops never reaches the engine: a checksum it finds wrong (one a
network function sent on unfinished, engine/README.md: *Frames as the wire
carried them*), a full socket buffer. A trial reads each udp end's Udp
counters (/proc/net/snmp of its network namespace) before the traffic and
after it, and stores the difference with the end's metrics; the loss table
names them where the path lost frames. InErrors counts every datagram the
kernel dropped as an error, InCsumErrors those of them whose checksum was
wrong, RcvbufErrors those its socket had no room for (common at rate = max:
the receiver's kernel takes datagrams faster than its engine reads them).

The counters are read by a thread of ours that joins the namespace (setns
moves only the calling thread) and ends: no process is forked for them, as
`ip netns exec` would fork one per read and remount /sys.
"""
from __future__ import annotations

from pathlib import Path

from cnfperf.host.links import in_netns


# /proc/net/snmp's Udp counter -> the metrics column
COUNTERS = {"InErrors": "udp_in_errors", "InCsumErrors": "udp_in_csum_errors",
            "RcvbufErrors": "udp_rcvbuf_errors"}


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
        return parse(snmp_of(netns))
    except OSError:
        return None


def snmp_of(netns: str) -> str:
    """/proc/net/snmp as the namespace sees it, from a thread that joins it: /proc/net
    is the process's (its first thread's) view, /proc/thread-self/net this thread's."""
    return in_netns(netns, lambda: Path("/proc/thread-self/net/snmp").read_text())


def dropped(before: dict[str, int] | None, after: dict[str, int] | None) -> dict[str, int]:
    """What the counters grew by: {column: datagrams}; {} when either read failed."""
    if not before or not after:
        return {}
    return {column: after[column] - before[column] for column in after if column in before}


def describe(errors: int | None, csum: int | None, rcvbuf: int | None = None,
             who: str = "receiver", what: str = "datagrams") -> list[str]:
    """The loss table's words for an end's kernel drops: `the receiver's kernel
    dropped 24,992 datagrams with bad UDP checksums`, `… 1,200 datagrams: its
    socket buffer was full`, and those for other errors; [] for none. rcvbuf
    None: not counted (points stored before), so a full buffer is only a guess."""
    errors, csum = errors or 0, csum or 0
    out = []
    if csum:
        out.append(f"the {who}'s kernel dropped {csum:,} {what} with bad UDP checksums")
    if rcvbuf:
        out.append(f"the {who}'s kernel dropped {rcvbuf:,} {what}: its socket buffer was full "
                   "(UDP RcvbufErrors)")
    other = errors - csum - (rcvbuf or 0)
    if other > 0:
        guess = "" if rcvbuf is not None else ", e.g. a full socket buffer"
        out.append(f"the {who}'s kernel dropped {other:,} {what} for other errors "
                   f"(UDP InErrors{guess})")
    return out
