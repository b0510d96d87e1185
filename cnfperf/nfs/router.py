"""`router`: the Linux kernel forwards in the NF's network namespace (paper
002's virtual router), no program of ours in the path.

Each router NF's netns is made a router once its ports are there (prepare,
from this process, before any trial): IPv4 forwarding on, an address on each
port, a host route to each end of its path through the port that faces it,
and a permanent neighbour entry for each end with the MAC of the next hop
that way (the next router's port, or the end's): no ARP, so nothing is
resolved while traffic flows and a chain of routers works as one router
does. Its kernel addresses frames to the next hop by that entry, as the
engine's `l3` does by its route table (nfs/engine.py); the tester's ends send
to the router's port MAC, as to any NF.

Scale knobs:
- nf_routes: prefixes toward the receiver's side it has a route for. One: the
  receiver's address, as any NF sees it. More (or nf_unrouted): the tester's
  flows take turns over nf_routes + nf_unrouted /32 prefixes of the pair's
  (plan.spread_address, the engine's --ip-span), the first nf_routes routed
  via the receiver, whose host route and neighbour entry they share;
- nf_unrouted: the further prefixes it has no route for: the kernel drops
  their frames for want of one (IpExt InNoRoutes), which the loss table shows;
- nf_interfaces: its interfaces, its two ports and macvlan sub-interfaces of
  its first port up to the number (an address each), as paper 002's Paper B
  adds virtual interfaces to a router.

Where its softirq work runs: a veth or macvlan delivers a frame on the CPU
that sent it (netif_rx queues it on that CPU's backlog), whatever the NF's
cpuset. With pin (the default) each port's RPS map is the NF's cores, so the
kernel takes the frames it received off its backlog, and forwards them, on the
NF's cores: their softirq time is the router's work (docs/cpu.md says how far).

A fault that takes a router's interface down (run/fault.py: nf:K, or link:K
where its port is the link's end) makes its kernel drop the routes and
neighbour entries through it (its addresses stay); nothing in the netns puts
them back. As a routing daemon holding static routes would, the trial
re-installs them once the interface is up again (restore: the batch's
neighbour and route lines for that interface, `replace` forms, idempotent): the
path forwards again only then, and that re-install is part of the outage the
receiver measures (the fault's restore_ns says how long it took).

The container's process is the engine idling (`--idle`: it ends on SIGINT);
its counters are the kernel's, read by the trial (host/kernel_drops.py).
"""
from __future__ import annotations

import ipaddress
import subprocess
import tempfile
from typing import TYPE_CHECKING, Callable, Sequence

from cnfperf import SystemFailure, UserError, fields, graph as graphs
from cnfperf.dataplanes import DATAPLANES
from cnfperf.host import kernel_drops
from cnfperf.host.rps import rps_script
from cnfperf.host.links import ip
from cnfperf.host.system import run
from cnfperf.nfs.base import Command, NfKind
from cnfperf.fields import PLACES
from cnfperf.plan import MAX_DESTINATIONS, destinations, port_host, spread_address
from cnfperf.runtimes import FULL, Image

if TYPE_CHECKING:
    from cnfperf.dataplanes.base import Attachment
    from cnfperf.plan import NF, Pair
    from cnfperf.runtimes import Container
    from cnfperf.scenario import Scenario

KERNEL_APIS = ("raw", "mmap", "xdp")   # nf_api means nothing to it: any but dpdk
# The sub-interfaces' addresses: 172.16.0.0/12, one per interface (in each NF's
# own netns, so every router may use the same ones).
IFACE_BLOCK = ipaddress.IPv4Address("172.16.0.0")
SUB_PREFIX = "sub"       # sub-interface names: sub1, sub2, … (in the NF's netns)


def port_address(ends_ip: str, index: int, port: int) -> str:
    """Port `port` (0: towards the sender, 1; a graph's, its slot) of the
    path's router `index`: in the ends' /24, the host number of its MAC's last
    octet (plan.port_host), a /32 so the /24 is no connected route of the
    router's."""
    net = ipaddress.IPv4Interface(f"{ends_ip}/24").network
    return str(net.network_address + port_host(index, port))


def routes(nf: NF, s: Scenario) -> list[graphs.Route]:
    """Its routes to the pair's ends: a chain's router reaches the sender by
    its port a, the receiver by b; a graph's by every loop-free way, the
    cheapest first (graph.Graph.routes)."""
    if s.graph:
        return graphs.parse(s.graph).routes(nf.label)
    return [graphs.Route(graphs.SENDER, 0, 0), graphs.Route(graphs.RECEIVER, 1, 0)]


def sub_address(j: int) -> str:
    return str(IFACE_BLOCK + j)


def batch(nf: NF, ifaces: Sequence[str], hops: Sequence[str], pair: Pair, s: Scenario) -> list[str]:
    """The `ip -batch` lines that make the NF's netns the router: addresses,
    sub-interfaces, neighbours, routes."""
    sender, receiver = pair.sender.ip, pair.receiver.ip
    lines = [f"address replace {port_address(sender, nf.index, n)}/32 dev {iface}"
             for n, iface in enumerate(ifaces)]
    for j in range(1, s.nf_interfaces - 1):
        name = f"{SUB_PREFIX}{j}"
        lines += [f"link add {name} link {ifaces[0]} type macvlan mode private",
                  f"address replace {sub_address(j)}/32 dev {name}",
                  f"link set {name} up"]
    ends = {graphs.SENDER: sender, graphs.RECEIVER: receiver}
    for route in routes(nf, s):
        # a graph's routes to one end differ by metric: the cheapest is used
        # while its port has a carrier (ignore_routes_with_linkdown: sysctls)
        to, dev = ends[route.end], ifaces[route.slot]
        metric = f" metric {route.metric}" if s.graph else ""
        lines += [f"neighbour replace {to} lladdr {hops[route.slot]} dev {dev} nud permanent",
                  f"route replace {to}/32 dev {dev}{metric}"]
    if destinations(s) > 1:   # the flows' prefixes: the first nf_routes routed, via the receiver
        lines += [f"route replace {spread_address(pair.index, j)}/32 via {receiver} dev {ifaces[1]}"
                  for j in range(s.nf_routes)]
    return lines


def restore_lines(lines: Sequence[str], ifaces: Sequence[str]) -> list[str]:
    """The batch's lines that the kernel undid when `ifaces` went down: the
    neighbour entries and routes through them (addresses stay), in order
    (a route via the receiver after the receiver's host route)."""
    return [line for line in lines if line.startswith(("neighbour ", "route "))
            and line.rsplit(" dev ", 1)[-1].split()[0] in ifaces]


def sysctls(ifaces: Sequence[str], graph: bool = False) -> list[str]:
    """Forwarding on; its ports answer no ARP for other ports' addresses, nor
    send redirects (frames leave by another port than they came in). In a
    graph a route whose port lost its carrier is passed over for the next
    (ignore_routes_with_linkdown), and a frame may come in by another port
    than its sender's route leaves by (after a failover, or by costs that
    differ each way): no reverse-path filter (a netns inherits the host's)."""
    out = ["net.ipv4.ip_forward=1", "net.ipv4.conf.all.send_redirects=0"]
    if graph:
        out += ["net.ipv4.conf.all.ignore_routes_with_linkdown=1", "net.ipv4.conf.all.rp_filter=0"]
    for iface in ifaces:
        out += [f"net.ipv4.conf.{iface}.send_redirects=0", f"net.ipv4.conf.{iface}.arp_ignore=1"]
        if graph:
            out.append(f"net.ipv4.conf.{iface}.rp_filter=0")
    return out


def guest_script(ifaces: Sequence[str], lines: Sequence[str], cores: Sequence[int],
                 graph: bool = False) -> str:
    """The same, as one shell script for a VM's guest (the host's programs, its
    root seen read-only: VmRuntime), stopping at the first failure."""
    heredoc = "\n".join(lines)
    script = [f"sysctl -q -w {' '.join(sysctls(ifaces, graph))}",
              f"ip -batch - <<'EOF'\n{heredoc}\nEOF"]
    if cores:
        script.append(rps_script(ifaces, cores))
    return "set -e\n" + "\n".join(script) + "\n"


def guest_run(node: Container, script: str, what: str, timeout: float = 60) -> str:
    """A short script in a VM's guest: its output; SystemFailure with its
    error's last line if it fails."""
    proc = node.exec(["sh", "-c", script])
    try:
        out, err = proc.communicate(timeout=timeout * node.slowdown)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise SystemFailure(f"{what}: no answer from the guest within {timeout:g} s") from None
    if proc.returncode != 0:
        last = (err or b"").decode(errors="replace").strip().splitlines()[-1:] or ["?"]
        raise SystemFailure(f"{what}: exited with code {proc.returncode}: {last[0]}")
    return (out or b"").decode(errors="replace")


class RouterKind(NfKind):
    names = ("router",)
    routes = True    # graph.py: a graph's NFs
    styles = {"router": 7}
    apis = KERNEL_APIS
    kernel = True    # its counters are the kernel's (host/kernel_drops.py)
    settle_s = 0.0   # up once prepared: its process forwards nothing
    own_fields = ("nf_routes", "nf_interfaces", "nf_unrouted")

    def routed(self, s: Scenario) -> bool:
        """Whether its ways to the ends may change while it runs (a graph's
        backup routes; a routing daemon's): a route whose port lost its
        carrier is passed over, no reverse-path filter (sysctls)."""
        return bool(s.graph)

    def lines(self, nf: NF, ifaces: Sequence[str], hops: Sequence[str], pair: Pair,
              s: Scenario) -> list[str]:
        """The `ip -batch` lines that make its netns what it is (batch)."""
        return batch(nf, ifaces, hops, pair, s)

    def check_own(self, s: Scenario) -> None:
        dataplane = DATAPLANES.get(s.switch)
        if dataplane is not None and dataplane.kind != "kernel":
            kernel = [n for n, dp in DATAPLANES.items() if dp.kind == "kernel"]
            raise UserError("nf", f"router is the kernel's forwarding: it needs kernel interfaces, "
                                  f"which {s.switch} does not give (switch = "
                                  f"{', '.join(kernel)})")
        if s.nf_api == "dpdk":
            raise UserError("nf_api", "router is the kernel's forwarding: not on DPDK ports "
                                      f"(nf_api = {' or '.join(KERNEL_APIS)}: it is not used)")
        if s.nf_host:
            raise UserError("nf_host", "router NFs are made routers on this host only")
        if self.routed(s):
            who = f"{self.nf} in a graph" if s.graph else self.nf
            for name in ("nf_routes", "nf_interfaces", "nf_unrouted"):
                if getattr(s, name) != fields.by_name()[name].default:
                    raise UserError(name, f"{who} routes to the pair's two ends: {name} is for "
                                          "router in a chain (leave it out)")
            if s.nf_in != PLACES[0]:
                raise UserError("nf_in", f"{who} is made a router on this host, in containers "
                                         f"(nf_in = {PLACES[0]})")
        spread = destinations(s)
        if spread > MAX_DESTINATIONS:
            raise UserError("nf_unrouted", f"nf_routes + nf_unrouted = {spread}: at most "
                                           f"{MAX_DESTINATIONS} prefixes (one flow each at least)")
        if spread > 1 and s.flows < spread:
            raise UserError("flows", f"{s.flows} flows over nf_routes + nf_unrouted = {spread} "
                                     f"prefixes would leave some without frames: flows ≥ {spread}")
        if spread > 1 and s.api == "udp":
            raise UserError("api", "flows spread over a router's prefixes are addressed by the "
                                   "engine, not by udp's sockets: api = raw, mmap, xdp or dpdk")

    def warnings(self, s: Scenario) -> tuple[str, ...]:
        """A quota limits a container's processes; a router's forwarding is the
        kernel's softirq, which no cgroup is charged for (a VM's guest kernel
        runs on its vCPUs, which its quota does limit)."""
        if s.nf_quota is not None and "container" in s.nf_in.split("+"):
            return ("nf_quota limits a router container's process, not its kernel's forwarding "
                    "(softirq is charged to no cgroup): it does not slow the router; a router in "
                    "a VM (nf_in = vm) is limited by it",)
        return ()

    def cores_problem(self, s: Scenario) -> str | None:
        return None   # its softirq work goes to every core of its RPS map

    def counters(self, node: Container, ports: Sequence[Attachment]) -> dict | None:
        """The kernel's counters of the NF (host/kernel_drops.py): a container's
        netns read from here, a VM's guest by a script in it; None unreadable."""
        ifaces = [p.iface or "" for p in ports]
        if not node.own_kernel:
            return kernel_drops.read(node.netns, ifaces)
        try:
            return kernel_drops.parse_snapshot(
                guest_run(node, kernel_drops.SNAPSHOT, f"counters of {node.name}"), ifaces)
        except (SystemFailure, ValueError, OSError):
            return None

    def pollers(self, s: Scenario, cores: int) -> int:
        return 0      # the kernel's softirq, no thread of its own spins

    def image(self, api: str, static_apis: Callable[[], Sequence[str]]) -> Image:
        return FULL   # the engine, idling: nothing of its own forwards

    def command(self, engine: str, nf: NF, ports: Sequence[Attachment], hops: Sequence[str],
                pair: Pair, s: Scenario, eal: Sequence[str],
                floating: Sequence[int] = ()) -> Command:
        return Command([engine, "--idle"], records=False)

    def prepare(self, netns: str, guest: Container | None, nf: NF, ports: Sequence[Attachment],
                hops: Sequence[str], pair: Pair, s: Scenario, cores: Sequence[int]) -> None:
        """Make the NF's netns a router before any trial: sysctls, then
        addresses, sub-interfaces, neighbours and routes in one `ip -batch`,
        then its RPS map when it is pinned (`cores`: its cpuset, or () when
        unpinned). A container's netns from here before the container is made
        (inside, /proc/sys is read-only, and the netns's /sys too once the
        container has mounted it); a VM's guest kernel (`guest`) by a script
        run in it."""
        ifaces = [p.iface for p in ports if p.iface]
        lines = self.lines(nf, ifaces, hops, pair, s)
        if guest is not None:
            guest_run(guest, guest_script(ifaces, lines, cores, self.routed(s)),
                      f"router {nf.name}")
            return
        run(["ip", "netns", "exec", netns, "sysctl", "-q", "-w", *sysctls(ifaces, self.routed(s))],
            what=f"router {netns}: sysctls")
        _ip_batch(netns, lines)
        if cores:
            run(["ip", "netns", "exec", netns, "sh", "-ec", rps_script(ifaces, cores)],
                what=f"router {netns}: RPS map")

    def restore(self, netns: str, nf: NF, ports: Sequence[Attachment], hops: Sequence[str],
                pair: Pair, s: Scenario, ifaces: Sequence[str]) -> bool:
        """Its neighbours and routes through `ifaces` again, after a fault took
        them down and up (the kernel dropped them with the down)."""
        all_ifaces = [p.iface for p in ports if p.iface]
        lines = restore_lines(self.lines(nf, all_ifaces, hops, pair, s), ifaces)
        if lines:
            _ip_batch(netns, lines)
        return bool(lines)


def _ip_batch(netns: str, lines: Sequence[str]) -> None:
    with tempfile.NamedTemporaryFile("w", prefix="cnfperf-router-", suffix=".ip") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        ip("-batch", f.name, netns=netns)
