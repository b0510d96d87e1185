"""ovs: Open vSwitch with DPDK, userspace datapath, NORMAL (learning) switching
or port-to-port rules (forward).

One dpdkvhostuserclient port per port of the test point: OVS is the vhost-user
client, so the engines' virtio-user ports are the servers and OVS (re)connects to
them as they come up: DPDK retries a missing server once a second, and every 10 ms
with the engine build's libcnfperf-vhost-retry.so, which ovs-vswitchd is started
preloaded with where it was built (ovsdb.py). (As the server, dpdkvhostuser, OVS would spare the engines
its reconnect, up to a second per trial; but then it counted frames as sent to
a receiver that never got them, about 1 run in 4 of the data-plane tests.)
Every port's MAC is entered in the MAC table as a static entry when
its port is added: a receiver never sends in throughput mode, and NORMAL would
otherwise flood every frame to every port (and count a drop on the bridge's own
port). ovsdb-server and ovs-vswitchd are private to the test point (see ovsdb.py).

Counters: a vhost-user port's own counters exist only while its peer is
connected, and the runner reads them after the engines are gone. So packets are
counted by OpenFlow rules that survive disconnects, around NORMAL, which still
makes every forwarding decision (forward = mac, or auto):
    table 0, in_port=P   -> resubmit(,1)   rx_packets of P (frames from its engine)
    table 1, dl_dst=MAC  -> NORMAL         frames switched to P
With forward = port the rules themselves forward, as the paper-000 setup's
`in_port=1,actions=output:2` and back, no MAC table (no static entries), and
what no rule takes is dropped (add-br's own NORMAL rule in table 0 too):
    table 0, in_port=P   -> resubmit(,1)   rx_packets of P
    table 1, in_port=Q   -> output:P       frames switched to P (Q: its link's other port)
Drops come from the port counters, sampled while connected and summed across
reconnects (what drops in the last sampling interval before a disconnect is
missed); tx_packets is what was switched to P minus its tx drops. A count a live
port does not keep (dump-ports' `?`) is unknown (None), and so is tx_packets then.

Kept between points (switch_keep, run/keep.py): the ports, their MACs and the
rules stay; reset() purges the datapath's flows, replaces the rules (their
counts start at zero) and counts drops from then on.

Queues: a vhost-user port's Rx queues are what its virtio-user peer offers
(`queues=` in the engines' vdev: switch_rxq); OVS's options:n_rxq applies to
physical DPDK ports only. OVS spreads the queues over its PMD threads itself
(pmd-rxq-assign), or, with rxq_affinity = pinned, each port's queues are
pinned in turn to the PMD cores (other_config:pmd-rxq-affinity, set as the
port is added): a PMD with pinned queues is isolated, it polls those alone.
queues() reads where they went from pmd-rxq-show.

Descriptors (switch_rxd, switch_txd): a DPDK port's (a wire's NIC) are OVS's
options:n_rxq_desc and n_txq_desc. OVS 3.1 takes no descriptor count for a
vhost-user port (its options are the socket and tx-retries-max): the ring is
the front end's, the engine's virtio-user `queue_size`, one size both ways
(DpdkPlane.ring). applied() reads back the rules, the database's settings of
every port and, for DPDK ports, the descriptors vswitchd configured (dpif/show).
"""
from __future__ import annotations

import contextlib
import os
import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from cnfperf import PREFIX
from cnfperf.dataplanes import ovs_host, ovsdb, procs
from cnfperf.dataplanes.base import PortCounters, unknown_or
from cnfperf.dataplanes.dpdk_base import DpdkPlane, Frontend
from cnfperf.dataplanes.switch_image import SWITCH
from cnfperf.dataplanes.kernel import mtu_for
from cnfperf.fields import AUTO, NIC_DRIVERS
from cnfperf.host.links import del_link, links
from cnfperf.host.journal import RUN_DIR
from cnfperf.plan import Port
from cnfperf.host.system import CommandFailed

if TYPE_CHECKING:
    from cnfperf.host.facts import HostFacts
    from cnfperf.scenario import Scenario

# OVS sizes one shared mbuf pool per MTU to what fits, halving from 256k mbufs
# down to 16k, and would make it once the first vhost-user peer has connected.
# A try that does not fit takes every free byte before it gives up, and a
# second peer connecting meanwhile found no memory for its device ("failed to
# allocate memory for new device": OVS drops the connection and never retries
# that port; the engine fails with a broken pipe): a 2-pair run lost a port
# about 1 run in 5 under load. So setup has the pool made before any peer can
# connect (Ovs.make_pool), and every port reuses it. Within 384 MB it is 128k
# mbufs (~310 MB: 256k did not fit), and the devices have the ~60 MB left.
SWITCH_MB = 384
JUMBO_SWITCH_MB = 1024
# The netdev datapath's own tap device; one per host, whoever runs it.
DATAPATH_DEVICE = "ovs-netdev"
RX_COOKIE, TX_COOKIE = 0x10000, 0x20000
DROPS = ("rx_dropped", "tx_dropped")
SAMPLE_INTERVAL = 0.5
# The point's `poll`, as OVS's PMD threads can do it: they have no Rx interrupts,
# only a bounded sleep when idle (µs; OVS allows up to 10000). adaptive sleeps as
# long as the engine's own back-off at most; interrupt stands for "mostly asleep".
PMD_MAXSLEEP_US = {"busy": 0, "adaptive": 128, "interrupt": 1000}
# The Interface settings applied() reads back from the database.
SETTINGS = ("pmd-rxq-affinity", "n_rxq_desc", "n_txq_desc")
# What dpif/show says a DPDK port was configured with.
CONFIGURED = ("configured_rxq_descriptors", "configured_txq_descriptors")


def rules(forward: str, ports: Sequence[tuple[int, str]], peers: Mapping[int, int]) -> list[str]:
    """The bridge's OpenFlow rules for `forward` (mac or port): `ports` are
    (OpenFlow port, MAC) each, `peers` each port's link's other port. Each
    port's frames in are counted by their rule in table 0 (RX_COOKIE), the
    frames switched to it by its rule in table 1 (TX_COOKIE). With forward =
    port, what no rule takes is dropped: the rule OVS's add-br put in table 0
    (priority 0, NORMAL: for the bridge's own port) is replaced by a drop."""
    last = "NORMAL" if forward == "mac" else "drop"
    found = [f"table=1,priority=0,actions={last}"]
    if forward == "port":
        found.insert(0, "table=0,priority=0,actions=drop")
    for ofport, mac in ports:
        to_it = f"dl_dst={mac},actions=NORMAL" if forward == "mac" else \
            f"in_port={peers[ofport]},actions=output:{ofport}"
        found += [f"cookie={RX_COOKIE | ofport:#x},table=0,priority=10,in_port={ofport},"
                  "actions=resubmit(,1)",
                  f"cookie={TX_COOKIE | ofport:#x},table=1,priority=10,{to_it}"]
    return found


def affinity(ports: Mapping[str, int], cores: Sequence[int]) -> dict[str, str]:
    """pmd-rxq-affinity for each port: its Rx queues (ports: their number by
    name) pinned in turn to `cores`, port after port (`0:1` for one queue on
    core 1): with one pair on two PMD cores the sender's port is polled on
    one, the receiver's on the other."""
    found, n = {}, 0
    for port, queues in ports.items():
        found[port] = ",".join(f"{q}:{cores[(n + q) % len(cores)]}" for q in range(queues))
        n += queues
    return found


def port_queues(s: Scenario, port: Port) -> int:
    """A port's queues: switch_rxq, or its NF's (plan.Port.queues: a thread of
    the NF polls each) where that is more."""
    return max(s.switch_rxq, port.queues)


def port_settings(s: Scenario, nic: bool, pinned: str | None, queues: int = 1) -> list[str]:
    """The Interface columns a port is added with: its Rx queues' affinity
    (pmd-rxq-affinity), on a DPDK port (a NIC) its descriptors, and on a port
    of an NF that polls several queues (`queues`) hash steering: OVS sends
    each flow to the queue its 5-tuple hashes to, where by default a PMD
    thread sends all it forwards to one (tx-steering=thread)."""
    found = [f'other_config:pmd-rxq-affinity="{pinned}"'] if pinned else []
    found += ["other_config:tx-steering=hash"] if queues > 1 else []
    if nic:
        # a DPDK port's queues are asked of it (a vhost-user port's, of its peer)
        found += [f"options:n_rxq={s.switch_rxq}"] if s.switch_rxq > 1 else []
        found += [f"options:{key}={n}" for key, n in (("n_rxq_desc", s.switch_rxd),
                                                       ("n_txq_desc", s.switch_txd)) if n]
    return found


class DropSampler:
    """Sums port drop counters across the resets a peer's disconnect causes.
    OVS prints `?` (None) for every count of a vhost-user port whose peer is
    not connected: it has no device, counts nothing, and what it counted
    before is banked, as at a reset. A count a live port (one that gave some
    counts) did not give is one it does not keep: unless a live reading gave
    it, it is unknown (None in totals), never 0.
    Held while a trial's window is open (hold): each sample is an ovs-ofctl
    run, a process of ours on some core, and on a host whose cores all have a
    busy poller 2 of them a second cost the pollers several ms a second. A
    peer does not disconnect inside the window, and counters() samples once
    more when the trial reads them."""

    def __init__(self, read: Callable[[], dict[int, dict[str, int | None]]],
                 interval: float = SAMPLE_INTERVAL):
        self._read = read
        self._interval = interval
        self._last: dict[int, dict[str, int]] = {}
        self._base: dict[int, dict[str, int]] = {}
        self._known: dict[int, set[str]] = {}    # counts a live port gave as numbers
        self._unkept: dict[int, set[str]] = {}   # counts a live port gave as `?`
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._held = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="ovs-drops")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def hold(self, held: bool) -> None:
        if held:
            self._held.set()
        else:
            self._held.clear()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            if self._held.is_set():
                continue
            try:
                self.sample()
            except Exception:  # noqa: BLE001 - a missed sample is retried next interval
                pass

    def rebase(self) -> None:
        """Count from zero again: what the ports have counted so far is the base's."""
        now = self._read()
        with self._lock:
            self._last = {port: {k: counts.get(k) or 0 for k in DROPS}
                          for port, counts in now.items()}
            self._base = {port: {k: -v for k, v in last.items()} for port, last in self._last.items()}
            self._known, self._unkept = {}, {}
            for port, counts in now.items():
                self._note(port, counts)

    def sample(self) -> None:
        now = self._read()
        with self._lock:
            for port, counts in now.items():
                last = self._last.get(port, {})
                base = self._base.setdefault(port, dict.fromkeys(DROPS, 0))
                self._note(port, counts)
                for key in DROPS:
                    if (counts.get(key) or 0) < last.get(key, 0):
                        base[key] += last[key]
                self._last[port] = {k: counts.get(k) or 0 for k in DROPS}

    def _note(self, port: int, counts: dict[str, int | None]) -> None:
        """Which counts a live port gave (some number among its counts), and
        which it did not."""
        if all(n is None for n in counts.values()):
            return                                   # no device: no peer connected
        for key in DROPS:
            given = self._known if counts.get(key) is not None else self._unkept
            given.setdefault(port, set()).add(key)

    def totals(self) -> dict[int, dict[str, int | None]]:
        with self._lock:
            return {port: {k: None if k in self._unkept.get(port, ()) and
                           k not in self._known.get(port, ()) else
                           self._base.get(port, {}).get(k, 0) + last[k] for k in DROPS}
                    for port, last in self._last.items()}


class OvsPlane(DpdkPlane):
    name = "ovs"
    description = ("Open vSwitch, DPDK userspace datapath, vhost-user client ports, NORMAL "
                   "switching or port-to-port rules")
    style = 6
    forwards = ("mac", "port")
    pins_rxq = True
    rings = nic_rings = True
    poll_threads = 1
    rx_interrupts = True
    max_cores = max_rxq = None   # PMD threads and Rx queues per port, as many as asked
    cut_at = ("switch",)         # ovs-ofctl mod-port … down: a fault (run/fault.py)
    probes = (ovs_host.PROBE,)   # doctor's OVS-DPDK row, stored with every run's host facts
    tools = ovs_host.TOOLS       # OVS's programs and their packages

    @classmethod
    def queues_problem(cls, api: str) -> str | None:
        return None   # tx-steering=hash on an NF's ports (port_settings)

    @classmethod
    def pollers(cls, s, cores: int) -> int:
        # Unpinned, the PMD mask spans every core, and OVS runs a PMD thread on each.
        return super().pollers(s, cores) if s.pin else cores
    processes = True
    image = SWITCH
    nic_ports = True
    nic_drivers = NIC_DRIVERS
    keeps = True

    def __init__(self, journal, home=None):
        super().__init__(journal, home)
        self.ovs: ovsdb.Ovs | None = None
        self.bridge = ""
        self.ofports: dict[int, str] = {}   # OpenFlow port -> port name
        self.flows: list[str] = []          # the bridge's rules, as setup() added them
        self.drops: DropSampler | None = None

    @classmethod
    def check(cls, host: HostFacts) -> list[str]:
        problems = super().check(host) + ovsdb.problems()
        # Another cnfperf run's OVS is not a problem of this host: the host lock
        # makes this run wait or report that run.
        if os.path.exists(f"/sys/class/net/{DATAPATH_DEVICE}") and \
                not procs.find(f"{RUN_DIR}/{PREFIX}", ovsdb.COMMS):
            problems.append(f"another userspace OVS is running here ({DATAPATH_DEVICE} exists); "
                            "stop it first")
        return problems

    def _mtu(self) -> int:
        return mtu_for(self.point.scenario.size)

    def switch_mb(self) -> int:
        return SWITCH_MB if self._mtu() <= 1500 else JUMBO_SWITCH_MB

    def _socket(self, port: Port) -> str:
        return str(self.sock_dir / f"{port.name}.sock")

    def setup(self) -> None:
        # OVS pins one PMD thread to every core of pmd-cpu-mask and cannot leave
        # them free: unpinned (pin = no) the mask spans the point's cores, so
        # there is a PMD thread on each of them (not switch_cores), and OVS
        # spreads the Rx queues over all of them.
        self.ovs = ovsdb.Ovs(self.dir / "ovs", f"{self.point.prefix}ovs", self.huge_dir,
                             self.switch_mb(), pmd_cpus=self.poll_cpuset, journal=self.journal,
                             pmd_maxsleep_us=PMD_MAXSLEEP_US[self.point.scenario.poll],
                             launch=self.launch())
        self.ovs.start()
        self.bridge = self.point.name("br")
        # The netdev datapath makes persistent tap devices for itself and for the
        # bridge's own port, in its netns: `exit --cleanup` removes them, a SIGKILL
        # does not (in a container, deleting its netns does).
        for tap in self._taps():
            self.journal.add("link", tap, netns=self.netns)
        self.ovs.add_bridge(self.bridge)
        s = self.point.scenario
        ports = self.point.ports_joined_here()
        pinned = affinity({p.name: port_queues(s, p) for p in ports}, self.poll_cpuset) \
            if s.rxq_affinity == "pinned" else {}
        for ofport, port in enumerate(ports, start=1):
            vdev = self.nic_vdev(ofport, port)
            settings = port_settings(s, bool(vdev), pinned.get(port.name), port.queues)
            if vdev:   # a wire's end: its node is on another host
                self.ovs.add_dpdk_port(self.bridge, port.name, vdev, ofport, settings)
            else:
                self.ovs.add_vhost_client_port(self.bridge, port.name, self._socket(port), ofport,
                                               settings)
            if self._mtu() != 1500:
                self.ovs.vsctl("set", "Interface", port.name, f"mtu_request={self._mtu()}")
            if self.forward == "mac":
                self.ovs.learn(self.bridge, port.name, port.mac)
            self.ofports[ofport] = port.name
        self.ovs.make_pool(self.bridge, self.point.name("pool"), len(ports) + 1, self._mtu())
        number = {name: ofport for ofport, name in self.ofports.items()}
        peers = {number[end.name]: number[other.name] for link in self.point.links_joined_here()
                 for end, other in ((link.a, link.b), (link.b, link.a))}
        self.flows = rules(self.forward, [(number[p.name], p.mac) for p in ports], peers)
        self.ovs.add_flows(self.bridge, self.flows)
        self.drops = DropSampler(lambda: self.ovs.counters(self.bridge))
        self.drops.start()

    @property
    def forward(self) -> str:
        """The point's forward, auto resolved: OVS's own is NORMAL (mac)."""
        forward = self.point.scenario.forward
        return self.forwards[0] if forward == AUTO else forward

    def cut(self, port: Port, at: str, up: bool) -> None:
        """The port's OpenFlow port down (it takes in and sends out nothing) or up."""
        assert self.ovs is not None
        self.ovs.mod_port(self.bridge, port.name, "up" if up else "down")

    def applied(self) -> dict[str, Any]:
        """The rules vswitchd holds, each port's settings in the database
        (SETTINGS) and, for a DPDK port, the descriptors it was configured with
        (dpif/show); a vhost-user port's ring as its front end is told it."""
        if self.ovs is None:
            return {}
        rows = self.ovs.interfaces("type", "options", "other_config")
        configured = ovsdb.parse_dpif_show(self.ovs.appctl("dpif/show")) \
            if any(r["type"] == "dpdk" for r in rows.values()) else {}
        ports = {}
        for ofport, name in self.ofports.items():
            row = rows.get(name, {})
            found = {"ofport": ofport, "type": row.get("type", "")}
            for column in ("options", "other_config"):
                found.update({k: v for k, v in (row.get(column) or {}).items() if k in SETTINGS})
            found.update({k: int(v) for k, v in configured.get(name, {}).items()
                          if k in CONFIGURED})
            if row.get("type") == "dpdkvhostuserclient" and self.ring:
                found["ring"] = self.ring
            ports[name] = found
        return {"forward": self.forward, "rules": self.ovs.rules(self.bridge), "ports": ports}

    def reset(self) -> None:
        """As after setup(): the datapath's cached flows purged (their counts
        pushed to the rules first), the rules replaced by fresh ones (zero
        counts), the drops counted from now. The static MAC entries stay (with
        forward = mac): the point's ports and MACs are the same (run/keep.py's key)."""
        self.ovs.appctl("revalidator/purge")
        self.ovs.replace_flows(self.bridge, self.flows)
        self.drops.rebase()

    def alive(self) -> bool:
        return self.ovs is not None and self.ovs.alive()

    def stale(self) -> str | None:
        return (self.ovs.gone() if self.ovs is not None else None) or super().stale()

    def pids(self) -> list[int]:
        return self.ovs.pids() if self.ovs else []

    def frontend(self, port: Port) -> Frontend:
        return Frontend(self._socket(port), server=True,
                        queues=port_queues(self.point.scenario, port), ring=self.ring)

    def queues(self) -> list[dict]:
        if self.ovs is None:
            return []
        return ovsdb.parse_pmd_rxq_show(self.ovs.appctl("dpif-netdev/pmd-rxq-show"))

    def counters(self) -> dict[str, PortCounters]:
        if self.ovs is None or self.drops is None:
            return {}
        packets = self.ovs.flow_packets(self.bridge)
        self.drops.sample()
        drops = self.drops.totals()
        found = {}
        for port, name in self.ofports.items():
            # a port dump-ports never listed: its drops unknown, not none
            dropped = drops.get(port, dict.fromkeys(DROPS))
            # Switched to the port minus what its full ring refused: delivered,
            # as a kernel port's tx_packets counts (unknown with its drops).
            delivered = unknown_or(packets.get(TX_COOKIE | port, 0), dropped["tx_dropped"],
                                   lambda switched, refused: max(0, switched - refused))
            found[name] = PortCounters(rx_packets=packets.get(RX_COOKIE | port, 0),
                                       tx_packets=delivered, **dropped)
        return found

    def cost_begin(self) -> None:
        if self.ovs is not None:
            self.ovs.appctl("dpif-netdev/pmd-stats-clear")

    def cost(self) -> dict[str, Any] | None:
        """Its PMD threads' processing cycles per packet and busy share
        (pmd-stats-show, since cost_begin's pmd-stats-clear)."""
        if self.ovs is None:
            return None
        return ovsdb.parse_pmd_stats_show(self.ovs.appctl("dpif-netdev/pmd-stats-show"))

    def window(self, open: bool) -> None:
        if self.drops is not None:
            self.drops.hold(open)

    def _taps(self) -> tuple[str, ...]:
        return (DATAPATH_DEVICE, self.bridge) if self.bridge else ()

    def teardown(self) -> None:
        if self.drops is not None:
            self.drops.stop()
            self.drops = None
        if self.ovs is not None:
            self.ovs.stop()
            self.ovs = None
        for tap in self._taps():
            with contextlib.suppress(CommandFailed):   # one that stays stays journaled
                del_link(tap, self.netns)
                if tap not in links(self.netns):
                    self.journal.discard("link", tap)
