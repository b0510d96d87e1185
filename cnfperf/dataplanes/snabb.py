"""snabb, snabb-wire: Snabb (LuaJIT, one busy-polling process) between
vhost-user ports, one per port of the test point.

snabb: Snabb's learning bridge (apps/bridge/learning.lua) joins every port,
with every port's MAC learnt from the start (as OVS's static entries: a
receiver never sends in throughput mode). snabb-wire: no bridge, each link's
two ports wired to each other (one's tx to the other's rx and back), the
path paper 003 finds much faster than Snabb's learning switch.

Snabb is the vhost-user client of each engine's virtio-user server (as OVS
is): as a server it would block in accept() until its client came, and the
engines start one at a time. Its one thread is its poll thread, on `cpus`
(floating over the point's cores when unpinned); it serves queue 0 of every
port, so switch_cores and switch_rxq stay 1. See snabb_app.py for what it
keeps where, and switches/patches/snabb/ for what was changed in it.

The engines keep their usual EAL arguments (DpdkPlane.eal_args): their
memory is all there from the start (--socket-mem and --socket-limit alike) in
single-file segments, so the regions virtio_user announces when Snabb
connects hold every mbuf, jumbo pools and two ports in one engine (a single
tester) included.

Counters come from Snabb's link counters (snabb_app.port_counters).

It runs on the host, or in a container or pod of its own (switch_in) from
IMAGE: the snabb build's program (LuaJIT linked in).
"""
from __future__ import annotations

from typing import Any

from cnfperf import polls
from cnfperf.host import builds
from cnfperf.dataplanes import snabb_app
from cnfperf.dataplanes.base import PortCounters
from cnfperf.dataplanes.dpdk_base import DpdkPlane, Frontend
from cnfperf.dataplanes.snabb_app import Links, RawPort, Snabb, VhostPort
from cnfperf.dataplanes.switch_image import built
from cnfperf.plan import Port

BUILD = builds.Build("snabb", "Snabb (LuaJIT apps: VhostUser, learning bridge)", ("bin/snabb",))
IMAGE = built("switch-snabb", "Snabb", lambda: (str(builds.program(BUILD)),), budget_mb=32)


class SnabbPlane(DpdkPlane):
    name = "snabb"
    description = "Snabb: its learning bridge between vhost-user client ports (one process)"
    style = 10
    poll_threads = 1
    build = BUILD
    wired = False     # the bridge, or wires between each link's ports
    nic_ports = True  # a wire's NIC through its RawSocket app (an AF_PACKET socket)
    nic_drivers = ("af_packet",)
    cut_refusal = "Snabb's app network is fixed while it runs: it has no command to take a port down"
    # Seen here: QEMU 7.2 as the server of Snabb's vhost-user client port
    # fails its handshake ("vhost_backend_init failed: Protocol error").
    vm_refusal = "QEMU's vhost-user handshake with Snabb's client ports fails (protocol error)"
    processes = True   # switch_in = container or pod: Snabb in its own (IMAGE)
    image = IMAGE

    def __init__(self, journal, home=None):
        super().__init__(journal, home)
        self.snabb: Snabb | None = None

    def _apps(self) -> dict[Port, str]:
        """Each port's Snabb app (and bridge port) name: Lua names, not ours."""
        return {port: f"p{i}" for i, port in enumerate(self.point.ports_joined_here())}

    def _links(self) -> dict[str, Links]:
        """Per port name, the Snabb links that carry its frames."""
        apps = self._apps()
        if not self.wired:
            return {port.name: snabb_app.bridge_links(app) for port, app in apps.items()}
        found = {}
        for link in self.point.links_joined_here():
            a, b = apps[link.a], apps[link.b]
            found[link.a.name] = snabb_app.wire_links(a, b)
            found[link.b.name] = snabb_app.wire_links(b, a)
        return found

    def _sizes(self) -> tuple[int, int]:
        """(links, ports) of Snabb's app network: a bridge has two links per
        port, wires one."""
        ports = len(self.point.ports_joined_here())
        return (ports if self.wired else 2 * ports), ports

    def switch_mb(self) -> int:
        return snabb_app.memory_mb(*self._sizes())

    def _socket(self, port: Port) -> str:
        return str(self.sock_dir / f"{port.name}.sock")

    def program(self) -> str:
        apps = self._apps()
        # a wire's NIC (its node on another host) through Snabb's raw socket app
        ports = [RawPort(app, nic, port.mac) if (nic := self.point.nic(port.name)) else
                 VhostPort(app, self._socket(port), port.mac) for port, app in apps.items()]
        wires = [(apps[l.a], apps[l.b]) for l in self.point.links_joined_here()] \
            if self.wired else None
        return snabb_app.program(ports, wires, busy=not polls.mode(self.point.scenario.poll).sleeps,
                                 prealloc=snabb_app.steps(*self._sizes()))

    def setup(self) -> None:
        script = self.dir / "snabb.lua"
        script.write_text(self.program())
        # Its one thread polls: on its core (unpinned, over the point's cores);
        # a container's cpuset is that already.
        self.snabb = Snabb(builds.program(BUILD), script, self.dir / "shm", self.huge_dir,
                           f"{self.point.prefix}snabb", self.launch(self.poll_cpuset), self.journal)
        self.snabb.start()

    def pids(self) -> list[int]:
        return [self.snabb.pid] if self.snabb and self.snabb.pid else []

    def frontend(self, port: Port) -> Frontend:
        return Frontend(self._socket(port), server=True)

    def queues(self) -> list[dict[str, Any]]:
        core = None if self.point.floating else self.cpus[0]
        return [{"port": port.name, "queue": 0, "core": core}
                for port in self.point.ports_joined_here()]

    def counters(self) -> dict[str, PortCounters]:
        return self.snabb.counters(self._links()) if self.snabb else {}

    def teardown(self) -> None:
        if self.snabb is not None:
            self.snabb.stop()
            self.snabb = None


class SnabbWirePlane(SnabbPlane):
    name = "snabb-wire"
    description = "Snabb: each link's two vhost-user client ports wired to each other, no bridge"
    style = 11
    wired = True
    forwards = ("port",)
