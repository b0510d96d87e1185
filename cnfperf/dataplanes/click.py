"""click: the Click modular router (built with DPDK) switching between vhost-user ports.

Click runs one net_vhost backend port per port of the test point (DPDK port i
is the point's i-th port: link k's ends are ports 2k and 2k+1), and each link
through an EtherSwitch of its own (why one per link, and how frames are
counted: click_app.py). Engines attach as virtio-user clients to its sockets.

Threads: Click's threads are DPDK's lcores. Thread 0 (the main lcore) serves
the control socket and sleeps; threads 1…switch_cores poll, one per switch
core (dpdk_args.lcores: the main lcore shares the first poll core). A link's
elements all run on one thread, the links dealt out in turn, so
switch_cores > links would leave a poll thread without work: refused.

It runs on the host, or in a container or pod of its own (switch_in) from
IMAGE: the click-dpdk build's program, DPDK linked in.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from cnfperf.fields import NIC_DRIVERS
from cnfperf.host import builds
from cnfperf.dataplanes import click_app, dpdk_args, procs
from cnfperf.dataplanes.base import PortCounters
from cnfperf.dataplanes.click_app import Click, LinkPlan
from cnfperf.dataplanes.dpdk_base import DpdkPlane, Frontend
from cnfperf.dataplanes.switch_image import built
from cnfperf.plan import Port

if TYPE_CHECKING:
    from cnfperf.scenario import Scenario

BUILD = builds.Build("click-dpdk", "Click modular router, userlevel with DPDK", ("bin/click",))
IMAGE = built("switch-click", "Click", lambda: (str(builds.program(BUILD)),), budget_mb=160)
# DPDK's RTE_MAX_ETHPORTS (32 in Debian's 22.11, which Click links): two ports per link.
MAX_LINKS = 16
# Mbufs per port: ToDPDKDevice's internal queue, a burst in flight, and the
# vhost PMD's dequeue; plus each lcore's mempool cache (256).
MBUFS_PER_PORT = 2048
MBUFS_PER_LCORE = 512
MBUF_BYTES = 2048 + 128 + 128 + 64   # data, headroom, struct rte_mbuf, mempool header


class ClickPlane(DpdkPlane):
    name = "click"
    description = "Click modular router with DPDK: an EtherSwitch per link between vhost-user ports"
    style = 9
    max_links = MAX_LINKS
    poll_threads = 1
    build = BUILD
    rx_interrupts = True   # engines reach it as virtio-user ports
    cut_refusal = ("its configuration is fixed while it runs: cnfperf has no handler to take "
                   "a port down")
    max_cores = None       # a poll thread per link at most (scenario_problem)
    # The engines send on queue 0 only, so it polls one Rx queue per port
    # (max_rxq = 1). Its mbufs are DPDK's default, 2 KB of data, and Click reads
    # only the first segment of a chained one.
    max_size = dpdk_args.STD_BUFFER + dpdk_args.FCS
    nic_ports = True       # a wire's NIC through the af_packet or af_xdp PMD
    nic_drivers = NIC_DRIVERS
    keeps = True
    processes = True   # switch_in = container or pod: Click in its own (IMAGE)
    image = IMAGE

    def __init__(self, journal, home=None):
        super().__init__(journal, home)
        self.click: Click | None = None
        self.index: dict[str, int] = {}    # port name -> DPDK port id
        # Kept between points: its counts when the point began (its control
        # socket is read, never written: counters() counts from these).
        self.base: dict[str, int] = {}

    @classmethod
    def scenario_problem(cls, s: Scenario, links: int) -> tuple[str, str] | None:
        if s.switch_cores > links:
            return "switch_cores", (f"click runs each link on one poll thread; {links} link(s) "
                                    f"keep at most {links} busy: switch_cores ≤ {links}")
        return None

    def _mbufs(self) -> int:
        return (len(self.point.ports_joined_here()) * MBUFS_PER_PORT
                + (len(self.cpus) + 1) * MBUFS_PER_LCORE)

    def switch_mb(self) -> int:
        pool = self._mbufs() * MBUF_BYTES / 2**20
        return 32 * (int(pool) // 32 + 2)   # + EAL's own, in whole 32 MB steps

    def _socket(self, index: int) -> str:
        return str(self.sock_dir / f"click{index}.sock")

    def _plan(self) -> list[LinkPlan]:
        """Link k on ports 2k and 2k+1, on poll thread 1 + k mod switch_cores."""
        return [LinkPlan(2 * k, 2 * k + 1, 1 + k % len(self.cpus), (link.a.name, link.b.name))
                for k, link in enumerate(self.point.links_joined_here())]

    def setup(self) -> None:
        s = self.point.scenario
        ports = self.point.ports_joined_here()
        self.index = {port.name: i for i, port in enumerate(ports)}
        # a wire's end (its node on another host) through the af_packet or af_xdp PMD
        nics = {i: self.nic_vdev(i, port) for i, port in enumerate(ports)
                if self.point.nic(port.name)}
        vdevs = [nics.get(i) or dpdk_args.vhost(i, self._socket(i))
                 for i in range(len(self.index))]
        lcores = dpdk_args.lcores(self.cpus, self.point.floating)
        eal = dpdk_args.eal_args(f"{self.point.prefix}click", self.huge_dir, self.switch_mb(),
                                 vdevs, lcores=lcores)
        control = str(self.dir / "click.ctl")
        config = self.dir / "switch.click"
        devices = {i: vdev.split(",", 1)[0] for i, vdev in nics.items()}
        config.write_text(click_app.configuration(self._plan(), s.burst, control, self._mbufs(),
                                                  devices))
        self.click = Click(str(builds.program(BUILD)), eal, config, control,
                           name=f"click {self.point.prefix}", launch=self.launch())
        pid = self.click.launch_process()
        procs.journal_process(self.journal, f"{self.point.prefix}click", pid)
        self.click.ready("in0.count")

    def pids(self) -> list[int]:
        return [self.click.pid] if self.click and self.click.pid else []

    def frontend(self, port: Port) -> Frontend:
        return Frontend(self._socket(self.index[port.name]))

    def queues(self) -> list[dict]:
        """Queue 0 of every port, polled by its link's thread (thread t is lcore t)."""
        cpus = dpdk_args.lcore_cpus(self.cpus, self.point.floating)
        names = {i: name for name, i in self.index.items()}
        return [{"port": names[p], "queue": 0, "core": cpus.get(link.thread)}
                for link in self._plan() for p in (link.a, link.b)] if self.index else []

    def counters(self) -> dict[str, PortCounters]:
        if self.click is None:
            return {}
        values = self.click.counts(click_app.counter_handlers(range(len(self.index))))
        values = {h: v - self.base.get(h, 0) for h, v in values.items()}
        peers = {}
        for link in self._plan():
            peers[link.a], peers[link.b] = link.b, link.a
        return {name: click_app.port_counters(values, i, peers[i])
                for name, i in self.index.items()}

    def reset(self) -> None:
        """Counted from here: its counts now are the base counters() subtracts.
        Its EtherSwitches have learnt the same ports' MACs (run/keep.py's key)."""
        self.base = {}
        self.base = self.click.counts(click_app.counter_handlers(range(len(self.index))))

    def alive(self) -> bool:
        if self.click is None or self.click.console is None or \
                self.click.console.proc.poll() is not None:
            return False
        try:
            self.click.read(["in0.count"])
        except (OSError, procs.ProcessError):
            return False
        return True

    def teardown(self) -> None:
        if self.click is not None:
            self.click.stop()
            self.click = None
            self.journal.discard("process", f"{self.point.prefix}click")
