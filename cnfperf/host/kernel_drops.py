"""Where a kernel network function lost frames: the counters the kernel keeps.

A network function whose forwarding is the kernel's (nf = router) has no
counters of its own; the kernel's say where its frames went. A trial reads
them before the traffic and after it, and stores the difference with the NF's
summary (`kernel`, beside its ports' counts):

- its interfaces' counts (rx and tx packets, rx and tx drops: a full backlog
  on the way in, a refusal of the device on the way out), as a kernel data
  plane reads its ports' (links.link_stats);
- their qdiscs' drops and overlimits (`tc -s qdisc`: a veth's and a
  macvlan's default is noqueue, which drops nothing; a shaper's queue does);
- its netns's IP counters: frames the kernel had no route for (IpExt
  InNoRoutes, in /proc/net/netstat; the ICMP unreachable it may answer is
  rate-limited), forwarded (Ip ForwDatagrams), dropped for a bad header or
  address (InHdrErrors, InAddrErrors), discarded (InDiscards, OutDiscards),
  unroutable on the way out (OutNoRoutes);
- the host's softnet counters per CPU (/proc/net/softnet_stat): frames dropped
  because a CPU's backlog queue was full, and time squeezes (a NET_RX softirq
  that ran out of budget or time with work left). These are per host, not per
  network namespace: every netns's frames on that CPU count, the tester's and
  the switch's included, so they are stored once per NF as the host's, and the
  report says so.

Everything is read from this process, a thread of it joining the namespace
(links.in_netns) for /proc/thread-self/net, and `ip -n`, `tc -n` for the
interfaces and qdiscs: the NF's container needs no tool of its own.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from cnfperf.host.links import LINK_STATS, in_netns, ip, link_stats, parse_link_stats
from cnfperf.host.system import CommandFailed

# /proc/net/snmp's Ip and /proc/net/netstat's IpExt counters we keep, as stored
IP_COUNTERS = {"Ip": {"ForwDatagrams": "forwarded", "InHdrErrors": "in_hdr_errors",
                      "InAddrErrors": "in_addr_errors", "InDiscards": "in_discards",
                      "OutDiscards": "out_discards", "OutNoRoutes": "out_no_routes"},
               "IpExt": {"InNoRoutes": "in_no_routes"}}
# The IP counters of frames the NF took in and dropped, but for want of a route
# (its `other` drops: summary()), and the loss table's words for each
INSIDE_DROPS = {"out_no_routes": "no route on the way out", "in_hdr_errors": "bad header",
                "in_addr_errors": "bad address", "in_discards": "discarded on the way in",
                "out_discards": "discarded on the way out"}
# softnet_stat's columns: frames processed, dropped (backlog full), time squeezes;
# the 13th (kernels since 5.10) is the CPU's number, else the line's order is.
SOFTNET = {"processed": 0, "dropped": 1, "time_squeeze": 2}
SOFTNET_CPU = 12


def parse_ip(*texts: str) -> dict[str, int]:
    """/proc/net/snmp and /proc/net/netstat (each a header line and a value line
    per group): IP_COUNTERS by their stored names; those a kernel lacks are left out."""
    out = {}
    for text in texts:
        rows: dict[str, list[list[str]]] = {}
        for line in text.splitlines():
            group, _, rest = line.partition(":")
            rows.setdefault(group, []).append(rest.split())
        for group, names in IP_COUNTERS.items():
            if len(rows.get(group, [])) < 2:
                continue
            values = dict(zip(rows[group][0], rows[group][1]))
            out.update({stored: int(values[name]) for name, stored in names.items()
                        if values.get(name, "").lstrip("-").isdigit()})
    return out


def parse_softnet(text: str) -> dict[int, dict[str, int]]:
    """/proc/net/softnet_stat (hexadecimal): {cpu: SOFTNET}. A line without the
    CPU column counts by its place (an offline CPU has no line, so that is a
    guess only on kernels before 5.10)."""
    out = {}
    for n, line in enumerate(text.splitlines()):
        values = [int(v, 16) for v in line.split()]
        if len(values) < 3:
            continue
        cpu = values[SOFTNET_CPU] if len(values) > SOFTNET_CPU else n
        out[cpu] = {key: values[i] for key, i in SOFTNET.items()}
    return out


def parse_qdiscs(text: str, ifaces: Sequence[str]) -> dict[str, dict[str, int]]:
    """`tc -s -j qdisc show`: per interface of `ifaces`, its qdiscs' drops,
    overlimits and requeues summed (a root and its children each count theirs)."""
    out = {iface: {"drops": 0, "overlimits": 0, "requeues": 0} for iface in ifaces}
    for q in json.loads(text or "[]"):
        iface = q.get("dev")
        if iface not in out:
            continue
        for key in out[iface]:
            out[iface][key] += int(q.get(key) or 0)
    return out


def read_softnet() -> dict[int, dict[str, int]]:
    return parse_softnet(Path("/proc/net/softnet_stat").read_text())


# The same files and qdiscs read by one script in a VM's guest (its own kernel's
# counters: its softnet is its vCPUs'), in this order, SEPARATOR between them.
SEPARATOR = "@@cnfperf@@"
SNAPSHOT = f"; echo {SEPARATOR}; ".join(
    ["ip -s -j link show", "cat /proc/net/snmp", "cat /proc/net/netstat",
     "cat /proc/net/softnet_stat", "tc -s -j qdisc show"])


def parse_snapshot(text: str, ifaces: Sequence[str]) -> dict[str, Any]:
    """SNAPSHOT's output: the counters read() gives. ValueError if it is not that."""
    parts = text.split(SEPARATOR)
    if len(parts) != 5:
        raise ValueError(f"a snapshot of {len(parts)} parts, not 5")
    links, snmp, netstat, softnet, qdiscs = (p.strip("\n") for p in parts)
    stats = parse_link_stats(links)
    return {"interfaces": {i: stats.get(i, {}) for i in ifaces},
            "qdiscs": parse_qdiscs(qdiscs, ifaces), "ip": parse_ip(snmp, netstat),
            "softnet": parse_softnet(softnet)}


def read(netns: str, ifaces: Sequence[str]) -> dict[str, Any] | None:
    """The counters of a network namespace's interfaces (`ifaces`), its IP
    counters and the host's softnet ones; None when they cannot be read (what
    is only written down does not fail a point)."""
    def inside() -> tuple[str, str]:
        net = Path("/proc/thread-self/net")
        return (net / "snmp").read_text(), (net / "netstat").read_text()
    try:
        snmp, netstat = in_netns(netns, inside)
        links = link_stats(netns)
        qdiscs = parse_qdiscs(ip("-s", "-j", "qdisc", "show", netns=netns, tool="tc"), ifaces)
        softnet = read_softnet()
    except (OSError, CommandFailed, ValueError):
        return None
    return {"interfaces": {i: links.get(i, {}) for i in ifaces}, "qdiscs": qdiscs,
            "ip": parse_ip(snmp, netstat), "softnet": softnet}


_MISSING = object()


def _sub(after: Any, before: Any) -> Any:
    """after − before, key by key, through nested dicts (a key missing before: as
    after); a count unknown (None) before or after is unknown."""
    if isinstance(after, dict):
        before = before if isinstance(before, dict) else {}
        return {k: _sub(v, before.get(k, _MISSING)) for k, v in after.items()}
    if after is None or before is None:
        return None
    return after - before if isinstance(before, int) else after


def delta(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the counters grew by over the trial; softnet only the CPUs where
    something was dropped or squeezed, and apart (`processed`) the frames
    each CPU's backlog took, where it took any: which cores an RPS map spread
    the work over (keys as strings: JSON's). None when either read failed."""
    if not before or not after:
        return None
    out = _sub(after, before)
    softnet = sorted(out["softnet"].items())
    out["processed"] = {str(cpu): c["processed"] for cpu, c in softnet if c.get("processed")}
    out["softnet"] = {str(cpu): {k: v for k, v in c.items() if k != "processed"}
                      for cpu, c in softnet if c.get("dropped") or c.get("time_squeeze")}
    return out


def describe(kernel: dict[str, Any] | None, ports: Sequence[str] = (),
             ported: bool = False) -> list[str]:
    """The loss table's words for a kernel NF's drops: `no route 1,000 (IpExt
    InNoRoutes)`, an interface's rx or tx drops, a qdisc's, and the host's
    softnet backlog drops and time squeezes (any netns's, on those CPUs); []
    for none. `ports`: its interfaces' names as shown, in order (else theirs);
    `ported`: leave out what its ports' counts already say (summary()), and
    name the IP counters as what their `other` drops were."""
    if not kernel:
        return []
    out = []
    counters = kernel.get("ip") or {}
    if counters.get("in_no_routes") and not ported:
        out.append(f"no route {counters['in_no_routes']:,} (IpExt InNoRoutes)")
    inside = [f"{words} {counters[key]:,}" for key, words in INSIDE_DROPS.items()
              if counters.get(key)]
    # with its ports' counts, these are what their `other` drops were
    out += [f"other: {', '.join(inside)}"] if ported and inside else inside
    names = dict(zip(kernel.get("interfaces") or {}, ports))
    for iface, c in ({} if ported else kernel.get("interfaces") or {}).items():
        for key, words in (("rx_dropped", "rx dropped"), ("tx_dropped", "tx dropped")):
            if c.get(key):
                out.append(f"{names.get(iface, iface)} {words} {c[key]:,}")
    for iface, q in ({} if ported else kernel.get("qdiscs") or {}).items():
        if q.get("drops"):
            out.append(f"{names.get(iface, iface)} qdisc dropped {q['drops']:,}")
    softnet = kernel.get("softnet") or {}
    dropped = sum(c.get("dropped", 0) for c in softnet.values())
    squeezed = sum(c.get("time_squeeze", 0) for c in softnet.values())
    cpus = ",".join(softnet)
    if dropped:
        out.append(f"backlog full {dropped:,} on CPU {cpus} (softnet, the host's: any netns)")
    if squeezed:
        out.append(f"time squeezes {squeezed:,} on CPU {cpus} (softnet, the host's)")
    return out


def summary(nf: str, kernel: dict[str, Any] | None) -> dict[str, Any]:
    """An engine-like summary of a kernel NF from its counters over the trial:
    per port (its interfaces in order: port 1 faces the sender) what came in
    and what left; dropped at the ingress port, as the engine's NFs count,
    what the kernel took in and dropped for want of a route (`no_route`: the
    netns's InNoRoutes, which the kernel does not count per interface, so on
    port 1, the way traffic goes) or for another reason (`other`: a bad
    header or address, a discard, no route on the way out); refused at the
    egress port its tx drops and its qdisc's. An interface's rx drops are
    not the NF's: a full backlog refused those frames before they were
    received (they are not in its rx_packets), so they are the link's loss,
    which the data plane's drop counters count. The counters themselves go
    along (`kernel`). Without counters (they could not be read), or with an
    interface's unknown (not found, a count the kernel did not give): no
    ports, never a port that counted 0."""
    if not kernel:
        return {"nf": nf, "ports": [], "kernel": None}
    interfaces = (kernel.get("interfaces") or {}).values()
    if not interfaces or any(c.get(k) is None for c in interfaces for k in LINK_STATS):
        return {"nf": nf, "ports": [], "kernel": kernel}
    ports = []
    counters = kernel.get("ip") or {}
    no_route = int(counters.get("in_no_routes") or 0)
    other = sum(int(counters.get(k) or 0) for k in INSIDE_DROPS)
    for n, (iface, c) in enumerate((kernel.get("interfaces") or {}).items(), 1):
        qdisc = (kernel.get("qdiscs") or {}).get(iface) or {}
        dropped = {"other": other if n == 1 else 0}
        if n == 1:
            dropped["no_route"] = no_route
        ports.append({"port": n, "rx_packets": int(c.get("rx_packets") or 0),
                      "tx_packets": int(c.get("tx_packets") or 0),
                      "tx_refused": int(c.get("tx_dropped") or 0) + int(qdisc.get("drops") or 0),
                      "dropped": dropped})
    return {"nf": nf, "ports": ports, "kernel": kernel}
