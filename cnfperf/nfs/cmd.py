"""`cmd:TEMPLATE`: a command of the user's, its NF's ports filled in
(placeholders.py), run in the tools image (runc, podman: the engine and
dpdk-testpmd) or from the host (netns).

It polls as it does, whatever `poll` says (one poller per core it has), counts
as up SETTLE_S after it starts, is stopped with SIGINT once no engine polls,
and prints what it prints: its counters are not read. Whether it finishes the
udp ends' checksums only its author knows: the plan warns.
"""
from __future__ import annotations

import shlex
import shutil
from typing import TYPE_CHECKING, Callable, Sequence

from cnfperf.host import tools
from cnfperf.nfs import placeholders
from cnfperf.nfs.base import Command, NfKind
from cnfperf.runtimes import RUNTIMES, TOOLS, Image

if TYPE_CHECKING:
    from cnfperf.dataplanes.base import Attachment
    from cnfperf.host.facts import HostFacts
    from cnfperf.plan import NF, Pair
    from cnfperf.scenario import Scenario


class CmdKind(NfKind):
    """A command template: the family of `cmd:`, and testpmd's base."""

    prefix = "cmd:"
    forms = {"cmd:TEMPLATE": "a command of yours, its ports substituted"}

    @property
    def template(self) -> str:
        return self.nf[len(self.prefix):]

    def check_own(self, s: Scenario) -> None:
        placeholders.check_command(self.template, s.nf_api)

    def warnings(self, s: Scenario) -> tuple[str, ...]:
        """Between udp ends: their kernels leave each UDP checksum for the device
        to finish (checksum offload), and a command that sends the frames on as
        it reads them (packet sockets, DPDK's af_packet) leaves them unfinished;
        the receiver's kernel then drops every datagram."""
        if not (s.nfs and s.api == "udp"):
            return ()
        return (udp_warning("a command that sends frames on as it reads them must finish them"),)

    def problems(self, s: Scenario, host: HostFacts) -> list[str]:
        if not RUNTIMES[s.runtime].host_files:   # the tools image holds dpdk-testpmd
            return tools.problems(tools.TESTPMD)
        # a runtime of the host's files (netns) runs a command from the host: it must be there
        program = shlex.split(self.template)[0] if self.template.strip() else ""
        if program and shutil.which(program) is None:
            return [f"nf {program}: not found on this host's PATH"]
        return []

    def image(self, api: str, static_apis: Callable[[], Sequence[str]]) -> Image:
        return TOOLS

    def command(self, engine: str, nf: NF, ports: Sequence[Attachment], hops: Sequence[str],
                pair: Pair, s: Scenario, eal: Sequence[str],
                floating: Sequence[int] = ()) -> Command:
        values = placeholders.values(nf, ports, hops, eal, floating)
        return Command(placeholders.fill_command(self.template, values, eal), records=False)


def udp_warning(who: str) -> str:
    return (f"the udp ends' kernels leave UDP checksums for the device to finish: {who}, or the "
            "receiver's kernel drops every datagram (the loss table says so)")
