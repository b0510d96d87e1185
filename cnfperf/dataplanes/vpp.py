"""vpp: FD.io VPP switching in one L2 bridge domain, over its own vhost-user
ports (`vpp`) or over memif ports (`vpp-memif`, FD.io CSIT's container path).

VPP is built from source (switches/build.sh, without its dpdk plugin): its own
vhost-user and memif plugins need no DPDK. Every port of the test point is a
VPP interface in bridge domain 1, its MAC a static l2fib entry, so frames are
forwarded by destination from the first one (a receiver never sends in
throughput mode; a learning bridge would flood). With forward = port there
is no bridge domain: each link's two interfaces are cross-connected both ways
(`set interface l2 xconnect A B`, and B A). Engines attach as DPDK
virtio-user clients of VPP's vhost-user server sockets, or as memif clients of
VPP's memif server sockets: VPP creates every socket before any engine starts.

A port of a node on another host (TestPoint.nics: the tester's, in TG–DUT) is
the wire's NIC, lent to VPP's netns for the point (DpdkPlane._lend_nics): VPP
opens it with its af_packet plugin (`create host-interface`, VPP's interface
`host-<NIC>`), loaded only for a point with such a port, so a VPP without the
plugin still runs every other point.

Everything VPP keeps is in the run directory: its startup configuration, CLI,
API and stats sockets, runtime directory and log (vpp_app.VppProcess).
Counters are VPP's interface counters, which outlive a peer's disconnect.

Threads: VPP pins its main thread always (to main-core, or the core it started
on), so `pin = no` cannot be honoured and is refused. The main thread polls the
ports on the switch core; workers (switch_cores > 1) are refused for now: VPP
will not put one on the main thread's core, so n cores would give n - 1 poll
threads. queues() reads VPP's Rx placement.

Rings (switch_rxd, switch_txd): VPP's vhost-user ports have no size of their
own, the ring is the front end's (the engine's virtio-user `queue_size`,
DpdkPlane.ring); a memif ring is its client's, the engine's, and `vpp-memif`
does not size it. applied() reads each interface's L2 mode back (`show mode`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from cnfperf.fields import AUTO
from cnfperf.dataplanes import dpdk_args, vpp_app, vpp_install
from cnfperf.dataplanes.base import PortCounters
from cnfperf.dataplanes.dpdk_base import DpdkPlane, Frontend
from cnfperf.dataplanes.switch_image import built
from cnfperf.plan import Port

if TYPE_CHECKING:
    from cnfperf.host.facts import HostFacts

BRIDGE_DOMAIN = 1


def _files() -> tuple[str, ...]:
    """What VPP's container holds of it: its program and the plugins it has
    (vppctl stays on the host: it speaks to the CLI socket in the run directory)."""
    vpp = vpp_install.vpp()
    return (str(vpp.program), *(str(vpp.plugins / p) for p in sorted(vpp.has)))


IMAGE = built("switch-vpp", "VPP", _files, budget_mb=64)


class VppPlane(DpdkPlane):
    name = "vpp"
    description = ("FD.io VPP, one L2 bridge domain or cross-connects over its own vhost-user "
                   "ports (no DPDK inside)")
    style = 7
    forwards = ("mac", "port")
    rings = True       # its vhost-user ports' rings, through their front ends
    nic_rings = False  # its af_packet plugin's ring on a wire's NIC is not sized
    poll_threads = 1
    build = vpp_install.BUILD
    probes = (vpp_install.PROBE,)
    # The VPP plugin its ports are (vpp_install.VPP_PLUGINS): a system VPP may lack
    # the other data plane's, and VPP loads this one alone.
    plugin: ClassVar[str] = "vhost_plugin.so"
    rx_interrupts = True
    floats = False
    nic_ports = True    # a wire's NIC through VPP's af_packet plugin (host-interface)
    nic_drivers = ("af_packet",)   # its af_packet plugin (an AF_PACKET socket)
    cut_at = ("switch",)   # set interface state … down: a fault (run/fault.py)
    undo = vpp_app.UNDO   # its shared memory files (vpp_app.unjournal)
    keeps = True
    processes = True   # switch_in = container or pod: VPP in its own (IMAGE)
    image = IMAGE
    # VPP will not put a worker on its main thread's core: with n switch cores
    # only n - 1 would poll, so its main thread polls on one (max_cores = 1); its
    # ports are given one queue each (max_rxq = 1).
    # VPP's vhost-user output adds what a full ring refused to the interface's
    # `drops` (beside what was dropped of what came in); memif's output does not,
    # nor does af_packet's (a NIC's port: self.nics).
    tx_drops_in_drops: ClassVar[bool] = True

    def __init__(self, journal, home=None):
        super().__init__(journal, home)
        self.vpp: vpp_app.VppProcess | None = None
        self.ifaces: dict[str, str] = {}   # port name -> VPP interface name
        self.nics: set[str] = set()        # the VPP interfaces that are wires' NICs

    @classmethod
    def check(cls, host: HostFacts) -> list[str]:
        return super().check(host) + vpp_install.vpp_plugin_problems(cls.plugin)

    @classmethod
    def nic_problems(cls, host: HostFacts) -> list[str]:
        return vpp_install.vpp_plugin_problems(vpp_install.AF_PACKET)

    def plugins(self) -> tuple[str, ...]:
        """The plugins VPP loads for the point: its ports', and af_packet's where
        a wire's NIC is one of them."""
        nics = any(self.point.nic(p.name) for p in self.point.ports_joined_here())
        return (self.plugin, vpp_install.AF_PACKET) if nics else (self.plugin,)

    @classmethod
    def versions(cls, host: HostFacts) -> dict[str, str]:
        """Which VPP ran it: cnfperf's build or a system one (vpp_install.describe_vpp)."""
        return {"vpp": host.probes.get(vpp_install.PROBE.key) or ""}

    def _socket(self, port: Port) -> str:
        return str(self.sock_dir / f"{port.name}.sock")

    def setup(self) -> None:
        s = self.point.scenario
        plugins = self.plugins()
        if vpp_install.AF_PACKET in plugins and \
                (lacks := vpp_install.vpp_plugin_problems(vpp_install.AF_PACKET)):
            # preflight says so first (checks.host_problems asks nic_problems)
            raise vpp_app.VppError(f"a wire's NIC as a port: {lacks[0]}")
        self.vpp = vpp_app.VppProcess(self.dir / "vpp", f"vpp {self.point.prefix}",
                                      self.cpus, size=s.size, plugins=plugins, poll=s.poll,
                                      launch=self.launch())
        self.vpp.start(self.journal, self.point.prefix)
        bridge = self.forward == "mac"
        if bridge:
            self.vpp.configure(f"create bridge-domain {BRIDGE_DOMAIN} learn 0")
        for i, port in enumerate(self.point.ports_joined_here()):
            iface = self._create_nic(port) or self._create(i, port)
            self.ifaces[port.name] = iface
            if bridge:
                self.vpp.configure(f"set interface l2 bridge {iface} {BRIDGE_DOMAIN}")
                self.vpp.configure(f"l2fib add {port.mac} {BRIDGE_DOMAIN} {iface} static")
            self.vpp.configure(f"set interface state {iface} up")
        if not bridge:
            for command in vpp_app.xconnects(self.ifaces, self.point.links_joined_here()):
                self.vpp.configure(command)

    @property
    def forward(self) -> str:
        """The point's forward, auto resolved: VPP's own is its bridge domain (mac)."""
        forward = self.point.scenario.forward
        return self.forwards[0] if forward == AUTO else forward

    def applied(self) -> dict:
        """Each port's interface and its L2 mode as VPP shows it (`show mode`:
        `bridge … bd_id 1` or `xconnect <its peer>`); a vhost-user port's ring
        as its front end is told it."""
        if self.vpp is None:
            return {}
        modes = vpp_app.parse_show_mode(self.vpp.cli("show mode"))
        ports = {}
        for name, iface in self.ifaces.items():
            ports[name] = {"iface": iface, "mode": modes.get(iface, "")}
            if self.ring and iface not in self.nics:
                ports[name]["ring"] = self.ring
        return {"forward": self.forward, "ports": ports}

    def cut(self, port: Port, at: str, up: bool) -> None:
        """The port's interface administratively down (VPP drops what it would
        send there and polls nothing from it) or up."""
        assert self.vpp is not None
        self.vpp.cli(f"set interface state {self.ifaces[port.name]} {'up' if up else 'down'}")

    def _create_nic(self, port: Port) -> str | None:
        """VPP's side of a port that is a wire's NIC (TestPoint.nics), None for
        another: an af_packet interface on it. start() lent it, up, promiscuous
        (frames for the far node's MAC) and its MTU raised for the frame size:
        the NIC's MTU is what bounds af_packet's sends, VPP's L2 path checks
        none, and its rings take frames to 64 KB."""
        nic = self.point.nic(port.name)
        if nic is None:
            return None
        iface = self.vpp.configure(f"create host-interface name {nic}")
        self.nics.add(iface)
        mode = vpp_app.NIC_RX_MODES[self.point.scenario.poll]
        self.vpp.configure(f"set interface rx-mode {iface} {mode}")
        return iface

    def _create(self, index: int, port: Port) -> str:
        """VPP's side of a port: a vhost-user server socket (VPP maps the
        engine's memory and copies, as a vhost backend does)."""
        return self.vpp.configure(f"create vhost-user socket {self._socket(port)} server")

    def frontend(self, port: Port) -> Frontend:
        return Frontend(self._socket(port), ring=self.ring)

    def pids(self) -> list[int]:
        return [self.vpp.pid] if self.vpp and self.vpp.pid else []

    def reset(self) -> None:
        """Interface and error counters cleared; the bridge domain learns
        nothing (learn 0), its static entries are the same ports' MACs."""
        self.vpp.cli("clear interfaces")
        self.vpp.cli("clear errors")

    def alive(self) -> bool:
        if self.vpp is None or self.vpp.proc is None or self.vpp.proc.poll() is not None:
            return False
        try:
            self.vpp.cli("show version")
        except vpp_app.VppError:
            return False
        return True

    def counters(self) -> dict[str, PortCounters]:
        if self.vpp is None:
            return {}
        by_iface = vpp_app.parse_show_interface(self.vpp.cli("show interface"))
        errors = vpp_app.parse_show_errors(self.vpp.cli("show errors"))
        # an interface `show interface` did not list: its counts unknown, not none
        return {name: vpp_app.port_counters(by_iface[iface],
                                            vpp_app.tx_drops(errors.get(f"{iface}-tx", {})),
                                            self.tx_drops_in_drops and iface not in self.nics)
                if iface in by_iface else PortCounters(None, None, None, None)
                for name, iface in self.ifaces.items()}

    def cost_begin(self) -> None:
        if self.vpp is not None:
            self.vpp.cli("clear runtime")

    def cost(self) -> dict[str, Any] | None:
        """Its graph's clocks per packet and vectors per call (show runtime,
        since cost_begin's clear runtime)."""
        if self.vpp is None:
            return None
        return vpp_app.parse_show_runtime(self.vpp.cli("show runtime"))

    def queues(self) -> list[dict]:
        if self.vpp is None:
            return []
        names = {iface: name for name, iface in self.ifaces.items()}
        placed = vpp_app.parse_rx_placement(self.vpp.cli("show interface rx-placement"))
        return [{"port": names.get(q["iface"], q["iface"]), "queue": q["queue"],
                 "core": self.vpp.thread_cpus.get(q["thread"])} for q in placed]

    def teardown(self) -> None:
        if self.vpp is not None:
            self.vpp.stop()
            vpp_app.unjournal(self.journal, self.point.prefix, self.vpp)
            self.vpp = None


class VppMemifPlane(VppPlane):
    name = "vpp-memif"
    description = "FD.io VPP, one L2 bridge domain over memif ports (CSIT's container path)"
    style = 8
    plugin = "memif_plugin.so"
    tx_drops_in_drops = False
    rx_interrupts = False
    rings = False      # a memif ring is its client's, the engine's (not sized here)

    def _create(self, index: int, port: Port) -> str:
        """A memif socket per port, VPP its server (it listens; the engine, the
        client, owns the shared memory's rings)."""
        sock = index + 1   # socket id 0 is VPP's default socket
        self.vpp.configure(f"create memif socket id {sock} filename {self._socket(port)}")
        self.vpp.configure(f"create interface memif id 0 socket-id {sock} master "
                           f"{vpp_app.memif_buffer(self.point.scenario.size)}")
        return f"memif{sock}/0"   # VPP names it so (and prints nothing)

    # memif's rings live in memory its two processes share: no guest is one of them.
    vm_refusal = "memif's shared memory does not reach into a virtual machine"

    def frontend(self, port: Port) -> None:
        return None    # a memif client, not a vhost-user front end: vdev() says so

    def vdev(self, port: Port) -> str:
        return dpdk_args.memif(port.slot, self._socket(port), "client", mac=port.mac,
                               frame_size=self.point.scenario.size)
