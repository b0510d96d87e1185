"""`testpmd`: Debian's dpdk-testpmd in mac forwarding mode, a command template
of ours (cmd.py) on nf_api = dpdk.

testpmd forwards between its ports in pairs, rewriting MACs to each port's peer;
--stats-period keeps it running without a terminal, and SIGINT makes it print
its forward statistics and exit: its per-port counters. With two cores
(nf_cores = 2) each direction is forwarded by a core of its own; more would
have nothing to forward (paired ports: two streams). It sends frames on as it
got them: between udp ends their checksums stay unfinished (refused).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from cnfperf.dataplanes.testpmd_app import frame_args, parse_fwd_stats
from cnfperf.host import tools
from cnfperf.nfs.base import Command
from cnfperf.nfs.cmd import CmdKind
from cnfperf.nfs.engine import forwards_unfinished

if TYPE_CHECKING:
    from cnfperf.dataplanes.base import Attachment
    from cnfperf.host.facts import HostFacts
    from cnfperf.plan import NF, Pair
    from cnfperf.scenario import Scenario

NF_CORES = 2
TEMPLATE = (f"{tools.TESTPMD} {{eal}} --lcores {{lcores}} -- --forward-mode=mac "
            "--port-topology=paired --nb-cores={cores} --stats-period=1 "
            "--total-num-mbufs=8192 --eth-peer=0,{peer1} --eth-peer=1,{peer2}")
READY = "packet forwarding - ports="


class TestPmdKind(CmdKind):
    names = ("testpmd",)
    styles = {"testpmd": 4}
    prefix = ""
    forms = {}
    apis = ("dpdk",)

    @property
    def template(self) -> str:
        return TEMPLATE

    @property
    def counted(self) -> bool:
        return True

    def scenario_problem(self, s: Scenario) -> tuple[str, str] | None:
        if s.nf_api not in self.apis:
            return "nf_api", "testpmd forwards between DPDK ports: nf_api = dpdk"
        if (problem := super().scenario_problem(s)) is not None:
            return problem
        if s.api == "udp":
            return "nf", forwards_unfinished(self.nf)
        return None

    def cores_problem(self, s: Scenario) -> str | None:
        if s.nf_cores > NF_CORES:
            return (f"testpmd forwards its {NF_CORES} directions on a core each: "
                    f"nf_cores ≤ {NF_CORES}")
        return None

    def warnings(self, s: Scenario) -> tuple[str, ...]:
        return ()

    def problems(self, s: Scenario, host: HostFacts) -> list[str]:
        # it runs from the host, or from the tools image
        return tools.problems(tools.TESTPMD)

    def command(self, engine: str, nf: NF, ports: Sequence[Attachment], hops: Sequence[str],
                pair: Pair, s: Scenario, eal: Sequence[str],
                floating: Sequence[int] = ()) -> Command:
        argv = super().command(engine, nf, ports, hops, pair, s, eal, floating).argv
        return Command([*argv, *frame_args(s.size)], records=False, ready=READY)

    def summary(self, output: str) -> dict[str, Any]:
        """Its forward statistics at exit, as the engine's per-port counters."""
        stats = parse_fwd_stats(output)
        ports = [{"port": port + 1, "rx_packets": c["rx_packets"], "tx_packets": c["tx_packets"],
                  "tx_refused": c["tx_dropped"], "dropped": {"other": c["rx_dropped"]}}
                 for port, c in sorted(stats.items())]
        return {"nf": self.nf, "ports": ports,
                "rx_packets": sum(p["rx_packets"] for p in ports),
                "tx_packets": sum(p["tx_packets"] for p in ports)}
