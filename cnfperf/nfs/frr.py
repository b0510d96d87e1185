"""`frr:ospf`, `frr:bgp`, `frr:static`: kernel routers whose routes a routing
daemon holds, FRR's, as paper 002's failover experiments ran Quagga: OSPF
(`ospf`: zebra, ospfd; its hello and dead intervals, fast hello below 1 s)
and eBGP with BFD (`bgp`: zebra, bgpd, bfdd; an AS per router, a BFD session
per link at bfd_interval × bfd_multiplier), both Debian's frr 8.4; static
routes watched by BFD (`static`: zebra, mgmtd, staticd, bfdd), FRR 10.3's
built from source (switches/frr; `make switches`), as 8.4's staticd has no
BFD.

The kernel forwards, as with `router` (nfs/router.py: its netns made a router
first, its counters the kernel's); what differs is who decides the routes.
cnfperf gives each port an address and a permanent neighbour entry for what
faces it: another router, a /31 of their own per link (10.78.P.2k and 2k+1
for pair P's link k); an end, the other address of the /31 that holds the
end's (a connected route to it). It installs no route, and starts the daemons
in the NF's netns, on its cores (run/daemons.py, from the host's
/usr/lib/frr: their files in a directory of the point's, `home`). OSPF
carries the ends as stubs of the routers' own LSAs (passive interfaces:
intra-area, computed with the SPF at once, not by its external routes' 1 s
timer), BGP redistributes them (connected), and both find every other
route; a link's cost is its OSPF cost, and for BGP its AS prepended cost − 1
times on what crosses it (ties go to the lower router ID). `static` is given
cnfperf's routes (graph.Graph.routes: every loop-free way to each end, the
path's cost its distance) as static routes, each watched by a BFD session to
its next hop at the point's timers: a way whose session goes down is
withdrawn and the next dearest takes over; a break beyond the next hop is
not seen (as with any static route). After a fault the
trial puts back the neighbour entries that went with the ports that were
down (restore), as for router.

FRR 10 configures staticd through mgmtd, which reads configuration files
from its compiled-in directory alone: `static`'s routes go to it through
vtysh once its daemons are up (configure_argv). Its daemons run in a
pathspace of their own (`-N`), whose state directory (mgmtd's sockets and
commit files; switches/frr/recipe.sh) is made a link to the NF's `home`.

Before the first trial the point waits until every session is up (OSPF
neighbours Full, BGP peers Established, BFD peers up) and both ends have a
route (settled). A fault then moves the traffic when the daemons notice: the
log's first session going down after the fault (noticed) is stored with the
fault.
"""
from __future__ import annotations

import contextlib
import grp
import ipaddress
import json
import os
import pwd
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from cnfperf import UserError, graph as graphs
from cnfperf.host import builds, tools as host_tools
from cnfperf.host.system import run
from cnfperf.nfs.router import RouterKind

if TYPE_CHECKING:
    from cnfperf.dataplanes.base import Attachment
    from cnfperf.host.facts import HostFacts
    from cnfperf.plan import NF, Pair
    from cnfperf.scenario import Scenario

# each protocol's daemons, zebra first
PROTOCOLS = {"ospf": ("zebra", "ospfd"), "bgp": ("zebra", "bgpd", "bfdd"),
             "static": ("zebra", "mgmtd", "staticd", "bfdd")}
DAEMONS = "/usr/lib/frr"          # where Debian's frr puts them
VTYSH = "vtysh"
# FRR built from source (switches/frr): the protocols that run it
BUILD = builds.Build("frr", "FRR 10.3 (zebra, mgmtd, staticd, bfdd): static routes with BFD",
                     ("sbin/staticd", "sbin/zebra", "sbin/mgmtd", "sbin/bfdd", "bin/vtysh"))
BUILT = ("static",)
# the build's state directory: a pathspace's below it (switches/frr/recipe.sh)
STATE = Path("/run/cnfperf/routing/lib/frr")
# the BFD profile static routes are watched with: the point's timers
PROFILE = "cnfperf"
# daemons given no configuration file: mgmtd reads none, staticd is mgmtd's
NO_FILE = ("mgmtd", "staticd")
LINK_BLOCK = ipaddress.IPv4Address("10.78.0.0")   # routers' links: a /24 per pair
ID_BLOCK = ipaddress.IPv4Address("10.79.0.0")     # router IDs: a /24 per pair
AS_BASE = 64512                   # a private AS per router: 64512 + its index
# BGP weighs a link's cost as its AS prepended cost − 1 times (at most this many)
# on what the router advertises over it: the path through it looks that long
MAX_PREPENDS = 16
PREPEND = "cnfperf-prepend-"
LOG = "frr.log"
ZSERV = "zserv.api"               # zebra's socket: there once it is up
USER = "frr"                      # the user the daemons drop to
_STAMP = re.compile(r"^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?) ")


def graph_of(s: Scenario) -> graphs.Graph:
    """The point's graph, a chain's as one (its NFs nf0, nf1…)."""
    if s.graph:
        return graphs.parse(s.graph)
    ends = [graphs.SENDER, *(f"nf{i}.{side}" for i in range(s.nfs) for side in "ab"),
            graphs.RECEIVER]
    return graphs.parse("; ".join(f"{ends[i]} - {ends[i + 1]}" for i in range(0, len(ends), 2)))


def label(nf: NF) -> str:
    return nf.label or f"nf{nf.index}"


@dataclass(frozen=True)
class Side:
    """One port of a router as its configuration sees it."""
    slot: int
    iface: str
    peer: str                 # what faces it: sender, receiver or an NF's name
    mine: str = ""            # a router-to-router link's addresses (/31); "" to an end
    theirs: str = ""
    cost: int = 1


def sides(nf: NF, ifaces: Sequence[str], graph: graphs.Graph, pair: int) -> list[Side]:
    """Its ports: what faces each, and a router-to-router link's /31."""
    out = []
    for k, edge in enumerate(graph.edges):
        for here, far in ((edge.a, edge.b), (edge.b, edge.a)):
            if here.node != label(nf):
                continue
            if far.node in graphs.ENDS:
                out.append(Side(here.slot, ifaces[here.slot], far.node, cost=edge.cost))
                continue
            base = LINK_BLOCK + 256 * pair + 2 * k
            mine, theirs = (base, base + 1) if here == edge.a else (base + 1, base)
            out.append(Side(here.slot, ifaces[here.slot], far.node, str(mine), str(theirs),
                            edge.cost))
    return sorted(out, key=lambda side: side.slot)


def batch(nf: NF, ifaces: Sequence[str], hops: Sequence[str], pair: Pair, s: Scenario) -> list[str]:
    """The `ip -batch` lines cnfperf makes: addresses, permanent neighbour
    entries, and a route to an end where it is next to it (the daemons find
    the others)."""
    ends = {graphs.SENDER: pair.sender.ip, graphs.RECEIVER: pair.receiver.ip}
    lines = []
    for side in sides(nf, ifaces, graph_of(s), pair.index):
        if side.mine:
            lines += [f"address replace {side.mine}/31 dev {side.iface}",
                      f"neighbour replace {side.theirs} lladdr {hops[side.slot]} dev {side.iface} "
                      "nud permanent"]
        else:
            # the /31 that holds the end: a connected route to it, which OSPF
            # carries in the router's own LSA (intra-area: computed with the
            # SPF, not by the external routes' 1 s timer) and BGP redistributes
            lines += [f"address replace {end_side(ends[side.peer])} dev {side.iface}",
                      f"neighbour replace {ends[side.peer]} lladdr {hops[side.slot]} "
                      f"dev {side.iface} nud permanent"]
    return lines


def end_side(end: str) -> str:
    """The address of a router's port that faces an end: the other of the
    /31 that holds the end's (10.77.P.1 → .0/31, 10.77.P.2 → .3/31: the two
    ends' /31s apart)."""
    net = ipaddress.IPv4Interface(f"{end}/31").network
    mine = next(a for a in (net.network_address, net.broadcast_address) if str(a) != end)
    return f"{mine}/31"


def router_id(nf: NF) -> str:
    return str(ID_BLOCK + 256 * nf.pair + nf.index + 1)


def configs(protocol: str, nf: NF, ifaces: Sequence[str], pair: Pair, s: Scenario,
            home: Path) -> dict[str, str]:
    """Each daemon's configuration file's text, by daemon."""
    graph = graph_of(s)
    mine = sides(nf, ifaces, graph, pair.index)
    ends = {graphs.SENDER: pair.sender.ip, graphs.RECEIVER: pair.receiver.ip}
    head = [f"hostname {label(nf)}", f"log file {home / LOG} debugging", "log timestamp precision 6",
            "!"]
    out = {"zebra": "\n".join(head)}
    links = [side for side in mine if side.mine]
    if protocol == "static":
        profile = ["bfd", f" profile {PROFILE}", f"  transmit-interval {s.bfd_interval}",
                   f"  receive-interval {s.bfd_interval}",
                   f"  detect-multiplier {s.bfd_multiplier}", " exit", "exit"]
        out["bfdd"] = "\n".join([*head, "debug bfd peer", *profile])
        out["staticd"] = "\n".join(static_routes(mine, graph.routes(label(nf)), ends))
        return {name: text + "\n" for name, text in out.items()}
    # a BFD session per router-to-router link, its timers the point's: the
    # peers configured here are the ones bgpd asks bfdd for (bgp's only)
    peers = ["bfd"]
    for side in links:
        peers += [f" peer {side.theirs} local-address {side.mine} interface {side.iface}",
                  f"  transmit-interval {s.bfd_interval}", f"  receive-interval {s.bfd_interval}",
                  f"  detect-multiplier {s.bfd_multiplier}", " exit"]
    out["bfdd"] = "\n".join([*head, "debug bfd peer", *peers, "exit"])
    if protocol == "ospf":
        conf = [*head]
        for side in mine:
            if side.peer in graphs.ENDS:   # a stub: the end's address, no neighbour
                conf += [f"interface {side.iface}", " ip ospf area 0", " ip ospf passive",
                         "exit"]
        for side in links:
            conf += [f"interface {side.iface}", " ip ospf area 0",
                     " ip ospf network point-to-point", f" ip ospf cost {side.cost}",
                     *_ospf_timers(s), "exit"]
        conf += ["router ospf", f" ospf router-id {router_id(nf)}",
                 " log-adjacency-changes detail",
                 # a change is flooded and computed at once: OSPF's own holds (5 s
                 # between a router's LSAs, 1 s between arrivals) would add
                 # seconds to the detection paper 002 measures
                 " timers throttle spf 0 10 50", " timers throttle lsa all 0",
                 " timers lsa min-arrival 0", "exit"]
        out["ospfd"] = "\n".join(conf)
    if protocol == "bgp":
        index = {name: i for i, name in enumerate(graph.nfs)}
        conf = [*head, f"router bgp {AS_BASE + nf.index}", f" bgp router-id {router_id(nf)}",
                " no bgp ebgp-requires-policy", " bgp log-neighbor-changes"]
        family, maps = [], {}
        for side in links:
            conf += [f" neighbor {side.theirs} remote-as {AS_BASE + index[side.peer]}",
                     f" neighbor {side.theirs} bfd",
                     f" neighbor {side.theirs} timers connect 1",
                     f" neighbor {side.theirs} advertisement-interval 0"]
            prepends = min(side.cost - 1, MAX_PREPENDS)
            if prepends:   # a dearer link: what crosses it looks that much further
                maps[prepends] = f"{PREPEND}{prepends}"
                family.append(f"  neighbor {side.theirs} route-map {maps[prepends]} out")
        conf += [" address-family ipv4 unicast", "  redistribute connected", *family,
                 " exit-address-family", "exit"]
        for count, name in sorted(maps.items()):
            conf += [f"route-map {name} permit 10",
                     f" set as-path prepend {' '.join([str(AS_BASE + nf.index)] * count)}", "exit"]
        out["bgpd"] = "\n".join(conf)
    return {name: text + "\n" for name, text in out.items() if name in PROTOCOLS[protocol]}


def static_routes(mine: Sequence[Side], routes: Sequence[graphs.Route],
                  ends: dict[str, str]) -> list[str]:
    """`static`'s configuration: a route to each end out of every way to it
    but a port facing it (connected), its next hop the far router's /31
    address, its distance the way's cost, each watched by BFD."""
    by_slot = {side.slot: side for side in mine}
    lines = []
    for route in routes:
        side = by_slot[route.slot]
        if side.mine:
            lines.append(f"ip route {ends[route.end]}/32 {side.theirs} {side.iface} "
                         f"{min(route.metric, 255)} bfd profile {PROFILE}")
    return lines


def _ospf_timers(s: Scenario) -> list[str]:
    if s.ospf_hello < 1:   # fast hello: dead after 1 s, that many hellos in it
        return [f" ip ospf dead-interval minimal hello-multiplier {round(1 / s.ospf_hello)}"]
    return [f" ip ospf hello-interval {int(s.ospf_hello)}", f" ip ospf dead-interval {s.ospf_dead}"]


def built(protocol: str) -> bool:
    return protocol in BUILT


def program(protocol: str, daemon: str) -> str:
    """Where a protocol's daemon (or vtysh) is: Debian's or the build's."""
    if built(protocol):
        return str(builds.program(BUILD, f"{'bin' if daemon == VTYSH else 'sbin'}/{daemon}"))
    return VTYSH if daemon == VTYSH else f"{DAEMONS}/{daemon}"


def pathspace(home: Path) -> str:
    """A built daemon's pathspace (`-N`): its NF's, which no other NF has."""
    return "cnfperf-" + re.sub(r"[^A-Za-z0-9_-]", "-", home.name)


def argv(protocol: str, daemon: str, home: Path) -> list[str]:
    """A daemon's command line: its files in `home`, no vty on TCP; the
    build's in a pathspace of its own (mgmtd's sockets), those without a
    file logging by their command line."""
    out = [program(protocol, daemon)]
    if daemon not in NO_FILE or not built(protocol):
        out += ["-f", str(home / f"{daemon}.conf")]
    out += ["-i", str(home / f"{daemon}.pid"), "-z", str(home / ZSERV),
            "--vty_socket", str(home), "-P", "0"]
    if built(protocol):
        out += ["-N", pathspace(home)]
        if daemon in NO_FILE:
            out += ["--log", f"file:{home / LOG}", "--log-level", "debug"]
    if daemon == "bfdd" and not built(protocol):   # 8.4's control socket (10 has none)
        out += ["--bfdctl", str(home / "bfdd.sock")]
    return out


def vtysh_argv(protocol: str, home: Path) -> list[str]:
    """vtysh for an NF's daemons; the build's reads its own configuration from
    `home` (an empty file: its compiled-in directory does not exist)."""
    out = [program(protocol, VTYSH), "--vty_socket", str(home)]
    return [*out, "--config_dir", str(home)] if built(protocol) else out


def vtysh(protocol: str, home: Path, daemon: str, command: str) -> object:
    """A `show … json` command's answer from one daemon, None if it gives none."""
    try:
        out = subprocess.run([*vtysh_argv(protocol, home), "-d", daemon, "-c", command],
                             capture_output=True, text=True, timeout=5).stdout
        return json.loads(out) if out.strip() else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None


def sessions(protocol: str, home: Path) -> list[tuple[str, bool]]:
    """(peer, up) for each of its sessions: BFD peers, OSPF neighbours, BGP peers."""
    if protocol == "ospf":
        found = vtysh(protocol, home, "ospfd", "show ip ospf neighbor json") or {}
        return [(rid, n.get("nbrState", n.get("state", "")).startswith("Full"))
                for rid, ns in (found.get("neighbors") or {}).items()
                for n in (ns if isinstance(ns, list) else [ns])]
    out = []
    if protocol == "bgp":
        found = vtysh(protocol, home, "bgpd", "show bgp ipv4 unicast summary json") or {}
        out += [(f"bgp {peer}", p.get("state") == "Established")
                for peer, p in (found.get("peers") or {}).items()]
    found = vtysh(protocol, home, "bfdd", "show bfd peers json") or []
    out += [(f"bfd {p.get('peer')}", p.get("status") == "up") for p in found
            if isinstance(p, dict)]
    return out


def noticed(home: Path, since: float) -> tuple[float, str] | None:
    """(wall clock, its line) of the first session the log says went down at
    or after `since` (wall clock), None if none did."""
    return next(((when, line) for when, _, up, line in changes(home)
                 if not up and when >= since), None)


# A session's state changes in FRR's own words, per daemon (with `debug bfd
# peer`, `log-adjacency-changes detail`, `bgp log-neighbor-changes`): (its
# peer, from, to)
_CHANGES = (re.compile(r"state-change: \[.*?peer:([^\s\]]+).*?\] (\S+) -> (\S+)"),
            re.compile(r"AdjChg: Nbr ([^\s,]+).*: (\S+) -> (\S+) \("),
            re.compile(r"%ADJCHANGE: neighbor (\S+?)\(.*?\b(?P<to>Up|Down)\b"))


def changes(home: Path) -> list[tuple[float, str, bool, str]]:
    """(wall clock, session, up, its line without FRR's message ids) of every
    state change the log says a session made: into up (BFD up, OSPF Full,
    BGP Up) or out of it."""
    try:
        text = (home / LOG).read_text(errors="replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        stamp = _STAMP.match(line)
        for kind, pattern in enumerate(_CHANGES):
            found = pattern.search(line) if stamp else None
            if found is None:
                continue
            if kind == 2:
                up = found["to"] == "Up"
            else:
                was, now = found[2], found[3]
                full = ("up", "Full")[kind]
                if full not in (was.split("/")[0], now.split("/")[0]):
                    break   # between two states short of up: no change of ours
                up = now.split("/")[0] == full
            said = re.sub(r"\[[0-9A-Z]{5}-[0-9A-Z]{5}\](\[EC \d+\])? ", "",
                          line[stamp.end():].strip())
            out.append((_wall(stamp[1]), f"{('bfd', 'ospf', 'bgp')[kind]} {found[1]}", up, said))
            break
    return out


def routing(home: Path, since: float, until: float) -> dict[str, object]:
    """What a router's sessions did between `since` and `until` (wall clock):
    how many went down, and for how long in all (a session down when the
    window opened counts from then)."""
    last: dict[str, tuple[float, bool]] = {}
    downs, down_s = 0, 0.0
    for when, session, up, _ in changes(home):
        if when > until:
            break
        was = last.get(session)
        if was is not None and not was[1] and up:   # a time down ends
            down_s += max(0.0, when - max(was[0], since))
        if not up and when >= since and (was is None or was[1]):
            downs += 1
        last[session] = (when, up)
    down_s += sum(until - max(at, since) for at, up in last.values() if not up)
    return {"sessions": len(last), "up": sum(up for _, up in last.values()), "downs": downs,
            "down_s": round(down_s, 6), "seconds": round(until - since, 6)}


def _wall(stamp: str) -> float:
    whole, _, frac = stamp.partition(".")
    return time.mktime(time.strptime(whole, "%Y/%m/%d %H:%M:%S")) + float(f"0.{frac or 0}")


class FrrKind(RouterKind):
    names = tuple(f"frr:{protocol}" for protocol in PROTOCOLS)
    styles = {"frr:ospf": 8, "frr:bgp": 9, "frr:static": 10}
    builds = (BUILD,)
    own_fields = ("bfd_interval", "bfd_multiplier", "ospf_hello", "ospf_dead")

    def stored(self) -> dict[str, object]:
        """Its ports' counts include its daemons' own packets (the report says so)."""
        return {**super().stored(), "daemons": True}

    @property
    def protocol(self) -> str:
        return self.nf.removeprefix("frr:")

    @property
    def daemons(self) -> tuple[str, ...]:
        return PROTOCOLS[self.protocol]

    def routed(self, s: Scenario) -> bool:
        return True    # its daemons move its routes

    def lines(self, nf: NF, ifaces: Sequence[str], hops: Sequence[str], pair: Pair,
              s: Scenario) -> list[str]:
        return batch(nf, ifaces, hops, pair, s)

    def check_own(self, s: Scenario) -> None:
        super().check_own(s)   # router's, and the daemons run from this host (nf_in)
        if s.ospf_hello < 1 and s.ospf_dead != 1:
            raise UserError("ospf_dead", f"{s.ospf_dead}: OSPF's fast hello (ospf_hello "
                                         f"{s.ospf_hello:g} s) declares a neighbour dead "
                                         "after 1 s: ospf_dead = 1")
        if s.ospf_hello >= 1 and (s.ospf_hello != int(s.ospf_hello) or s.ospf_dead <= s.ospf_hello):
            raise UserError("ospf_hello", f"{s.ospf_hello:g}: whole seconds below ospf_dead "
                                          f"({s.ospf_dead}), or below 1 for fast hello")
        if s.ospf_hello < 1 and round(1 / s.ospf_hello) > 10:
            raise UserError("ospf_hello", f"{s.ospf_hello:g}: OSPF's fast hello sends at most "
                                          "10 hellos a second (ospf_hello ≥ 0.1)")

    def problems(self, s: Scenario, host: HostFacts) -> list[str]:
        if built(self.protocol):
            return [f"nf {self.nf}: {p}" for p in builds.problems(BUILD)]
        missing = [d for d in self.daemons if not Path(DAEMONS, d).exists()]
        if missing or host_tools.find(VTYSH) is None:
            return [f"nf {self.nf}: FRR's {', '.join(missing or [VTYSH])} not found (Debian "
                    "package frr; make deps installs it)"]
        return []

    def start_argv(self, nf: NF, ports: Sequence[Attachment], pair: Pair, s: Scenario,
                   home: Path) -> list[tuple[str, list[str], Path | None]]:
        """Its daemons' configurations written in `home` (theirs: they drop
        to FRR's user), and their command lines, zebra first: the others
        connect to its socket."""
        ifaces = [p.iface for p in ports if p.iface]
        for daemon, text in configs(self.protocol, nf, ifaces, pair, s, home).items():
            (home / f"{daemon}.conf").write_text(text)
        if built(self.protocol):
            (home / "vtysh.conf").write_text("")   # vtysh_argv's
        with contextlib.suppress(KeyError):   # no such user: problems() said so
            os.chown(home, pwd.getpwnam(USER).pw_uid, grp.getgrnam(USER).gr_gid)
        return [(daemon, argv(self.protocol, daemon, home), self._ready(daemon, home))
                for daemon in self.daemons]

    @staticmethod
    def _ready(daemon: str, home: Path) -> Path | None:
        """What says a daemon is up before the next starts: zebra's socket
        (the others connect to it); mgmtd's back-end socket (staticd does)."""
        return {"zebra": home / ZSERV, "mgmtd": home / "mgmtd_be.sock"}.get(daemon)

    def links(self, home: Path) -> list[Path]:
        """The build's state directory for the NF's pathspace (mgmtd's sockets
        and commit files): a link to `home` while its daemons run."""
        return [STATE / pathspace(home)] if built(self.protocol) else []

    def configure_argv(self, home: Path) -> list[str] | None:
        """`static`'s routes, to mgmtd through vtysh (it reads no file of ours)."""
        if not built(self.protocol):
            return None
        return [*vtysh_argv(self.protocol, home), "-f", str(home / "staticd.conf")]

    def noticed(self, home: Path, since: float) -> tuple[float, str] | None:
        return noticed(home, since)

    def routing(self, home: Path, since: float, until: float) -> dict[str, object] | None:
        return {"protocol": self.protocol, **routing(home, since, until)}

    def settled(self, netns: str, nf: NF, pair: Pair, s: Scenario, home: Path) -> str | None:
        """What is not up yet: a session, a route to an end, or (BGP, which
        keeps them) a way to an end that a neighbour offers: a failover
        measured before the backup was learnt would measure BGP's start."""
        found = sessions(self.protocol, home)
        if not found:
            return "no session yet"
        down = [peer for peer, up in found if not up]
        if down:
            return f"sessions not up: {', '.join(down)}"
        ends = {graphs.SENDER: pair.sender.ip, graphs.RECEIVER: pair.receiver.ip}
        for ip in ends.values():
            out = run(["ip", "-n", netns, "route", "show", "match", ip], what="routes")
            if not out.strip():
                return f"no route to {ip} yet"
        if self.protocol == "bgp":
            graph = graph_of(s)
            peers = {side.slot: side.peer for side in sides(nf, [""] * len(nf.ports), graph,
                                                           pair.index)}
            for end, ip in ends.items():
                ways = sum(r.end == end and peers[r.slot] not in graphs.ENDS
                           for r in graph.routes(label(nf)))
                paths = vtysh(self.protocol, home, "bgpd",
                              f"show bgp ipv4 unicast {ip} json") or {}
                learnt = sum((p.get("peer") or {}).get("type") == "external"
                             for p in paths.get("paths") or [])
                if learnt < ways:
                    return f"{learnt} of {ways} BGP paths to {ip}"
        return None
