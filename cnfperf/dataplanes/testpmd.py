"""testpmd: DPDK's testpmd in io mode between paired vhost-user ports.

The reference framework's "pmd" baseline: the fastest path through a switch
process, with no switching logic. Link k's ends are on ports 2k and 2k+1;
io forwarding with the paired topology moves every packet from one to the
other unchanged, both ways. Engines attach as virtio-user clients to
testpmd's vhost-user sockets.

switch_cores forwarding lcores (--nb-cores) share the streams, and switch_rxq
queues per port (--rxq/--txq, and the vhost vdevs' and the engines' virtio-user
`queues=`) make more streams: testpmd gives each lcore a contiguous run of
(port, queue) streams, so with one pair, 2 cores and 2 queues one core gets
queue 0 of both ports and the other queue 1, which the engines never use.

It always forwards port to port (forward = port, or auto). switch_rxd and
switch_txd are its --rxd and --txd, which size the rings of its DPDK ports (a
wire's NIC); its vhost PMD ports take their rings from their front ends, the
engines' virtio-user `queue_size` (DpdkPlane.ring). applied() reads back what
testpmd configured each port with (`show config rxtx`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cnfperf.fields import NIC_DRIVERS
from cnfperf.host import tools
from cnfperf.dataplanes import dpdk_args, procs, testpmd_app
from cnfperf.dataplanes.base import PortCounters
from cnfperf.dataplanes.dpdk_base import DpdkPlane, Frontend
from cnfperf.dataplanes.switch_image import SWITCH
from cnfperf.dataplanes.testpmd_app import TestPmd
from cnfperf.plan import Port

if TYPE_CHECKING:
    from cnfperf.host.facts import HostFacts

# DPDK's default RTE_MAX_ETHPORTS is 32: two ports per link.
MAX_LINKS = 16
MBUFS_PER_PORT = 4096  # per queue: vhost rings of 1024 plus what sits in bursts and caches


class TestPmdPlane(DpdkPlane):
    __test__ = False  # a class named Test* that is not a test suite
    name = "testpmd"
    description = "dpdk-testpmd io forwarding between paired vhost-user ports (no switching logic)"
    style = 5
    forwards = ("port",)   # each port's frames to its pair's other port: no MAC table
    rings = nic_rings = True
    max_links = MAX_LINKS
    poll_threads = 1
    max_cores = max_rxq = None   # forwarding lcores and Rx queues per port, as many as asked
    cut_refusal = ("testpmd stops a port only while it forwards on none (`port stop` wants "
                   "`stop` first), and its vhost-user ports have no link down")
    rx_interrupts = True
    processes = True
    image = SWITCH
    nic_ports = True
    nic_drivers = NIC_DRIVERS
    keeps = True

    def __init__(self, journal, home=None):
        super().__init__(journal, home)
        self.testpmd: TestPmd | None = None
        self.streams: list[testpmd_app.Stream] = []
        self.begun: tuple[int, int] | None = None   # its cycles at cost_begin

    @classmethod
    def check(cls, host: HostFacts) -> list[str]:
        problems = super().check(host)
        problems += tools.problems(testpmd_app.BINARY)
        return problems

    def _ports(self) -> int:
        return 2 * len(self.point.links_joined_here())

    def _mbufs(self) -> int:
        # a NIC's queue fills its Rx ring with mbufs and holds a full Tx ring's
        s = self.point.scenario
        per_queue = max(MBUFS_PER_PORT, (s.switch_rxd or 0) + (s.switch_txd or 0) + 1024)
        return self._ports() * per_queue * s.switch_rxq

    def switch_mb(self) -> int:
        mbuf = testpmd_app.mbuf_size(self.point.scenario.size)
        pool = self._mbufs() * (mbuf + 192) / 2**20
        return 32 * (int(pool) // 32 + 2)   # + EAL's own, in whole 32 MB steps

    def port(self, port: Port) -> int:
        index, link = self.link_of(port)
        return 2 * index + (1 if port == link.b else 0)

    def _socket(self, port: int) -> str:
        return str(self.sock_dir / f"tpmd{port}.sock")

    def app_args(self) -> list[str]:
        """testpmd's own arguments: io forwarding between paired ports, on the
        switch's cores and queues, for the point's frames and descriptors."""
        s = self.point.scenario
        # --record-core-cycles: its own cycles per packet (cost), two TSC reads a burst
        return ["--forward-mode=io", "--port-topology=paired", f"--nb-cores={len(self.cpus)}",
                "--record-core-cycles",
                f"--rxq={s.switch_rxq}", f"--txq={s.switch_rxq}", f"--burst={min(s.burst, 512)}",
                f"--total-num-mbufs={self._mbufs()}", *testpmd_app.frame_args(s.size),
                *testpmd_app.ring_args(s.switch_rxd, s.switch_txd)]

    def setup(self) -> None:
        rxq = self.point.scenario.switch_rxq
        # a wire's end (its node on another host) through the af_packet or af_xdp PMD
        wired = {self.port(p): p for p in self.point.ports_joined_here() if self.point.nic(p.name)}
        vdevs = [self.nic_vdev(i, wired[i]) if i in wired else
                 dpdk_args.vhost(i, self._socket(i), queues=rxq) for i in range(self._ports())]
        # The main lcore only reads the prompt: it shares the first forwarding core.
        lcores = dpdk_args.lcores(self.cpus, self.point.floating)
        eal = dpdk_args.eal_args(f"{self.point.prefix}tpmd", self.huge_dir, self.switch_mb(),
                                 vdevs, lcores=lcores)
        self.testpmd = TestPmd(eal, self.app_args(), name=f"testpmd {self.point.prefix}",
                               launch=self.launch())
        self.testpmd.start()
        procs.journal_process(self.journal, f"{self.point.prefix}tpmd", self.testpmd.pid)
        self.streams = testpmd_app.parse_streams(self.testpmd.forward())

    def pids(self) -> list[int]:
        return [self.testpmd.pid] if self.testpmd and self.testpmd.pid else []

    def reset(self) -> None:
        """Forwarding stopped and started again: `start` zeroes the forwarding
        counters counters() reads (and the PMDs' own are cleared too)."""
        self.testpmd.command("stop")
        self.testpmd.command("clear port stats all")
        self.streams = testpmd_app.parse_streams(self.testpmd.forward())

    def alive(self) -> bool:
        if self.testpmd is None or self.testpmd.console is None or \
                self.testpmd.console.proc.poll() is not None:
            return False
        try:
            self.testpmd.command("show config fwd")
        except procs.ProcessError:
            return False
        return True

    def frontend(self, port: Port) -> Frontend:
        return Frontend(self._socket(self.port(port)), queues=self.point.scenario.switch_rxq,
                        ring=self.ring)

    def applied(self) -> dict:
        """Each port's Rx and Tx descriptors as testpmd configured them (`show
        config rxtx`), its vhost ports' rings as their front ends are told them."""
        if self.testpmd is None:
            return {}
        rings = testpmd_app.parse_config_rxtx(self.testpmd.command("show config rxtx"))
        ports = {}
        for port in self.point.ports_joined_here():
            found = dict(rings.get(self.port(port), {}))
            if not self.point.nic(port.name) and self.ring:
                found["ring"] = self.ring
            ports[port.name] = {"port": self.port(port), **found}
        # --record-core-cycles: two TSC reads a burst that a run before it did not make
        return {"forward": "port", "record_core_cycles": True, "ports": ports}

    def queues(self) -> list[dict]:
        """From the streams testpmd printed at `start`: which lcore polls which
        (port, queue), each lcore on the core lcores() gave it."""
        names = {self.port(port): port.name for port in self.point.ports_joined_here()}
        cpus = dpdk_args.lcore_cpus(self.cpus, self.point.floating)
        return [{"port": names.get(st.port, str(st.port)), "queue": st.queue,
                 "core": cpus.get(st.lcore)} for st in self.streams]

    def counters(self) -> dict[str, PortCounters]:
        if self.testpmd is None:
            return {}
        stats = self.testpmd.fwd_stats()
        return {port.name: PortCounters(**stats[self.port(port)])
                for port in self.point.ports_joined_here() if self.port(port) in stats}

    def cost_begin(self) -> None:
        """Where its forwarding cycles stand (they count from `start`)."""
        self.begun = None
        if self.testpmd is not None:
            self.testpmd.fwd_stats()
            self.begun = self.testpmd.cycles or (0, 0)

    def cost(self) -> dict[str, Any] | None:
        """Its forwarding cores' cycles per packet since cost_begin, on bursts
        that moved packets (--record-core-cycles)."""
        if self.testpmd is None or self.begun is None:
            return None
        self.testpmd.fwd_stats()
        if self.testpmd.cycles is None:
            return None
        cycles, packets = (now - then for now, then in zip(self.testpmd.cycles, self.begun))
        if packets <= 0:
            return None
        return {"source": "testpmd --record-core-cycles", "packets": packets,
                "cycles_per_packet": cycles / packets}

    def teardown(self) -> None:
        if self.testpmd is not None:
            self.testpmd.stop()
            self.testpmd = None
            self.journal.discard("process", f"{self.point.prefix}tpmd")
