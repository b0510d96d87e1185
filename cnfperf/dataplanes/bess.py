"""bess: BESS, paper 001's switch, with an L2Forward per link between vhost-user ports.

BESS runs one PMDPort per port of the test point, each on a net_vhost vdev
(DPDK 19.11's vhost PMD, linked into bessd), and each link through an
L2Forward holding its two ends' MACs (forward = mac, its own way), straight
from port to port (port), or, for the single tester's one port, through a
MACSwap back out of it (reflect: the switch alone, paper 001's baseline). The
pipeline and its counters: bess_app.py. Engines and VMs attach as its
vhost-user ports' front ends.

Threads: BESS's workers are its poll threads, one per switch core, each pinned
by BESS itself to its core (so pin = no cannot float them: floats). A link's
modules all run on one worker, the links dealt out in turn, so switch_cores >
links would leave a worker without work: refused. Its other threads (the gRPC
server, DPDK's master lcore) float over the point's cores, as the other
switches' do.

It runs on the host, or in a container or pod of its own (switch_in) from
IMAGE: bessd, its modules and its DPDK linked in. Its control
(bess_ctl.py, Debian's python3 with pybess) runs on the host and reaches it
by the gRPC socket in the point's directory, which the container shares.

Built from source (switches/bess/): BESS's last upstream commit and the DPDK
19.11.4 it is written for, which is not Debian's 22.11.
"""
from __future__ import annotations

import subprocess
import tomllib
from typing import TYPE_CHECKING, Any

from cnfperf.dataplanes import bess_app, dpdk_args, procs
from cnfperf.dataplanes.base import PortCounters
from cnfperf.dataplanes.bess_app import Bessd, LinkPlan
from cnfperf.dataplanes.dpdk_base import DpdkPlane, Frontend
from cnfperf.dataplanes.switch_image import built
from cnfperf.host import builds
from cnfperf.host.facts import Probe
from cnfperf.plan import Port

if TYPE_CHECKING:
    from cnfperf.host.facts import HostFacts
    from cnfperf.scenario import Scenario

BUILD = builds.Build("bess", "BESS, with the DPDK 19.11 it is built for", ("core/bessd",))
# Where its sources are pinned (bessd says "unknown" for its version: it asks git).
LOCK = builds.CHECKOUT / "switches" / "bess" / "sources.lock"


def describe() -> str | None:
    """doctor's BESS row, and what every BESS point stores (versions): the
    commits it is built from, where, and its build's stamp; None: not built."""
    if builds.missing(BUILD):
        return None
    try:
        lock = tomllib.loads(LOCK.read_text())
        what = f"{lock['bess']['commit'][:12]} with DPDK {lock['dpdk-19.11.4']['version']}"
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        what = "sources unknown"
    return f"{what} at {builds.home(BUILD)} (stamp {(builds.stamp(BUILD) or '?')[:12]})"


PROBE = Probe("bess", "BESS", describe, missing=lambda: "; ".join(builds.missing(BUILD)))

# bessd: its modules and DPDK are linked in
IMAGE = built("switch-bess", "BESS", lambda: (str(builds.program(BUILD)),), budget_mb=160)
# DPDK 19.11's RTE_MAX_ETHPORTS (32): two ports per link.
MAX_LINKS = 16
# BESS's packet pool (--buffers, a power of 2): far more than the frames in
# flight (a burst per port and queue, each worker's mempool cache); each
# buffer is SNBUF_SIZE (2496 bytes) and a mempool header.
BUFFERS = 16384
BUFFER_BYTES = 2496 + 64
# The Python modules its control needs (bess_app.PYTHON's): module -> package.
CONTROL_MODULES = {"grpc": "python3-grpcio", "google.protobuf": "python3-protobuf"}


class BessPlane(DpdkPlane):
    name = "bess"
    description = "BESS: an L2Forward per link between vhost-user ports (paper 001's switch)"
    style = 15
    max_links = MAX_LINKS
    poll_threads = 1
    build = BUILD
    probes = (PROBE,)      # doctor's BESS row, stored with every point it served
    rx_interrupts = True   # engines reach it as virtio-user ports
    floats = False         # BESS pins each worker to its core itself
    cut_refusal = "cnfperf has no handler to take one of its ports down"
    max_cores = None       # a worker per link at most (scenario_problem)
    # Its packet buffers hold 2 KB of data (SNBUF_DATA) in one segment.
    max_size = dpdk_args.STD_BUFFER + dpdk_args.FCS
    # its L2Forward (by MAC), PortInc to PortOut (port), MACSwap (reflect)
    forwards = ("mac", "port", "reflect")
    keeps = True
    processes = True       # switch_in = container or pod: bessd in its own (IMAGE)
    image = IMAGE

    def __init__(self, journal, home=None):
        super().__init__(journal, home)
        self.bessd: Bessd | None = None
        self.index: dict[str, str] = {}    # the point's port name -> its BESS port name
        # Kept between points: its counts when the point began.
        self.base: dict[str, list[int]] = {}
        self.begun: dict[str, list[int]] | None = None   # its workers' usage at cost_begin

    @classmethod
    def check(cls, host: HostFacts) -> list[str]:
        return super().check(host) + control_problems()

    @classmethod
    def versions(cls, host: HostFacts) -> dict[str, str]:
        return {"bess": host.probes.get(PROBE.key) or ""}

    @classmethod
    def scenario_problem(cls, s: Scenario, links: int) -> tuple[str, str] | None:
        if s.switch_cores > links:
            return "switch_cores", (f"bess runs each link on one worker; {links} link(s) "
                                    f"keep at most {links} busy: switch_cores ≤ {links}")
        return None

    @staticmethod
    def node_mb() -> int:
        """bessd's -m: the hugepage memory it takes on each NUMA node, where it
        makes a packet pool of BUFFERS too."""
        pool = BUFFERS * BUFFER_BYTES / 2**20
        return 32 * (int(pool) // 32 + 3)   # + EAL's own and the ports', in 32 MB steps

    def switch_mb(self) -> int:
        return self.node_mb() * bess_app.numa_nodes()

    def _socket(self, index: int) -> str:
        return str(self.sock_dir / f"bess{index}.sock")

    def _forward(self) -> str:
        """How the point's links forward: as asked, auto by MAC."""
        forward = self.point.scenario.forward
        return forward if forward in ("port", "reflect") else "mac"

    def _plan(self) -> list[LinkPlan]:
        """Each link on worker k mod switch_cores. With forward = reflect, a
        link whose ends are one port (plan.reflect_links) reflects; another
        (the noise pair's, noise = traffic) is forwarded by MAC."""
        forward = self._forward()
        return [LinkPlan(self.index[link.a.name], self.index[link.b.name],
                         (link.a.mac, link.b.mac), k % len(self.cpus),
                         "reflect" if link.reflects else "mac" if forward == "reflect"
                         else forward)
                for k, link in enumerate(self.point.links_joined_here())]

    def setup(self) -> None:
        ports = self.point.ports_joined_here()
        self.index = {port.name: f"p{i}" for i, port in enumerate(ports)}
        # (no wire's NIC among them: nic_ports is False, checks refuse such a point)
        vdevs = {f"p{i}": dpdk_args.vhost(i, self._socket(i)) for i in range(len(ports))}
        eal = ["--file-prefix", f"{self.point.prefix}bess", "--huge-dir", self.huge_dir,
               "--no-pci"]
        self.bessd = Bessd(str(builds.program(BUILD)), builds.home(BUILD), self.dir, eal,
                           self.node_mb(), BUFFERS, name=f"bess {self.point.prefix}",
                           launch=self.launch())
        pid = self.bessd.launch_process()
        procs.journal_process(self.journal, f"{self.point.prefix}bess", pid)
        self.bessd.ready()
        self.bessd.ask(bess_app.request(self._plan(), vdevs, dict(enumerate(self.cpus))))

    def pids(self) -> list[int]:
        return [self.bessd.pid] if self.bessd and self.bessd.pid else []

    def frontend(self, port: Port) -> Frontend:
        return Frontend(self._socket(int(self.index[port.name][1:])))

    def queues(self) -> list[dict]:
        """Queue 0 of every port, polled by its link's worker."""
        names = {b: a for a, b in self.index.items()}
        return [{"port": names[p], "queue": 0, "core": self.cpus[link.worker]}
                for link in self._plan() for p in dict.fromkeys((link.a, link.b))] \
            if self.index else []

    def applied(self) -> dict[str, Any]:
        """How it forwards, and every module bessd holds, read back from it:
        each one's class and the modules its output gates lead to."""
        if self.bessd is None or not self.index:
            return {}
        return {"forward": self._forward(), "modules": self.bessd.ask({"do": "modules"})}

    def _stats(self) -> dict[str, list[int]]:
        return self.bessd.ask({"do": "stats", "ports": sorted(self.index.values())})

    def counters(self) -> dict[str, PortCounters]:
        if self.bessd is None or not self.index:
            return {}
        stats = {p: [v - b for v, b in zip(vals, self.base.get(p, (0, 0, 0, 0)))]
                 for p, vals in self._stats().items()}
        peers = {}   # a reflector's port has none: its frames go back out of it
        for link in self._plan():
            if link.forward != "reflect":
                peers[link.a], peers[link.b] = link.b, link.a
        return {name: bess_app.port_counters(stats, p, peers.get(p))
                for name, p in self.index.items()}

    def cost_begin(self) -> None:
        """Where its workers' usage stands (it counts from their making)."""
        self.begun = None
        if self.bessd is not None and self.index:
            self.begun = self.bessd.ask({"do": "usage"})

    def cost(self) -> dict[str, Any] | None:
        """Its workers' cycles per packet and packets per run since cost_begin
        (each worker's root traffic class: get_tc_stats)."""
        if self.bessd is None or self.begun is None:
            return None
        return bess_app.cost(self.begun, self.bessd.ask({"do": "usage"}))

    def reset(self) -> None:
        """Counted from here: its counts now are the base counters() subtracts.
        Its L2Forwards hold the same ports' MACs (run/keep.py's key)."""
        self.base = {}
        self.base = self._stats()

    def alive(self) -> bool:
        if self.bessd is None or self.bessd.console is None or \
                self.bessd.console.proc.poll() is not None:
            return False
        try:
            self._stats()
        except procs.ProcessError:
            return False
        return True

    def teardown(self) -> None:
        if self.bessd is not None:
            self.bessd.stop()
            self.bessd = None
            self.journal.discard("process", f"{self.point.prefix}bess")


def control_problems() -> list[str]:
    """Whether Debian's python3 has what bess_ctl.py imports, one line per lack
    (one python asked about them all: it prints those it cannot import)."""
    probe = ("import importlib.util as u, sys\n"
             "print(' '.join(m for m in sys.argv[1:] if not u.find_spec(m.split('.')[0])"
             " or not u.find_spec(m)))")
    try:
        done = subprocess.run([bess_app.PYTHON, "-c", probe, *CONTROL_MODULES], check=True,
                              capture_output=True, text=True, timeout=30)
        lacking = done.stdout.split()
    except (OSError, subprocess.SubprocessError):
        lacking = list(CONTROL_MODULES)
    return [f"{bess_app.PYTHON} cannot import {module}, which BESS's control needs "
            f"(apt install {CONTROL_MODULES[module]})" for module in lacking]
