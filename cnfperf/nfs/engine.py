"""The engine's own NFs: `cnfperf-engine nf --nf KIND` (engine/src/roles/nf.c).

They print the engine's records (`ready` once their ports are up, a `summary`
with per-port counters), hold their ports until their stdin ends, poll in one
thread (busy unless poll = interrupt), and finish the udp ends' checksums on
every nf_api. On a kernel api they run the static engine alone in the
minimal image, when it was built with that api; on dpdk the tester's image.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from cnfperf.engine import nf_argv
from cnfperf.nfs.base import Command, NfKind
from cnfperf.runtimes import FULL, MINIMAL

if TYPE_CHECKING:
    from cnfperf.dataplanes.base import Attachment
    from cnfperf.host.facts import HostFacts
    from cnfperf.plan import NF, Pair
    from cnfperf.scenario import Scenario

ONE_PORT = ("mirror",)   # sends every frame back where it came from
ROUTERS = ("l3",)        # given a route to each end of its path


class EngineNf(NfKind):
    names = ("l2", "mirror", "strip-encap", "l3")
    styles = {"l2": 0, "mirror": 1, "strip-encap": 2, "l3": 3}
    records = True
    holds_ports = True

    @property
    def ports(self) -> int:
        return 1 if self.nf in ONE_PORT else 2

    def cores_problem(self, s: Scenario) -> str | None:
        if s.nf_cores > 1:
            return (f"the engine's {self.nf} NF polls in one thread: nf_cores = 1, "
                    "or nf = testpmd (a core per direction) or cmd:TEMPLATE")
        return None

    def pollers(self, s: Scenario, cores: int) -> int:
        return 0 if s.poll == "interrupt" else 1

    def problems(self, s: Scenario, host: HostFacts) -> list[str]:
        """The engine lists its NF kinds in --version; one that does not (built
        before it said) is taken at its word when it runs."""
        known = host.engine.nfs
        if known is None or self.nf in known:
            return []
        return [f"nf {self.nf}: the engine has no such NF (it has {', '.join(known) or 'none'}): "
                "make build"]

    def image(self, api: str, static_apis: Callable[[], Sequence[str]]) -> str:
        return MINIMAL if api != "dpdk" and api in static_apis() else FULL

    def command(self, engine: str, nf: NF, ports: Sequence[Attachment], hops: Sequence[str],
                pair: Pair, s: Scenario, eal: Sequence[str],
                floating: Sequence[int] = ()) -> Command:
        # A router's table: host routes to the two ends, not a cross-connect.
        routes = ["--route", f"{pair.receiver.ip}/32,2", "--route", f"{pair.sender.ip}/32,1"] \
            if self.nf in ROUTERS else []
        return Command(nf_argv(engine, nf, ports, hops, s, eal, floating, routes),
                       records=True)
