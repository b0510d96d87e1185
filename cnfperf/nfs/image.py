"""`image:REF ARGS`: a network function as it is shipped, a container image of
the user's, run by the podman runtime whatever `runtime` the other nodes use.

REF is an image in podman's store (NAME[:TAG], as `podman images` lists it)
or an archive of one (PATH.tar, .tar.gz: what `podman save` writes), loaded
into cnfperf's store before its containers are made. Its container runs the
image's entrypoint with ARGS, its NF's ports filled in (placeholders.py), as
`podman run REF ARGS` would; without ARGS, the image's own command. The
ports are there as for any NF: kernel interfaces in its netns ({iface1},
{iface2}), or DPDK's sockets and hugepages mounted where the EAL arguments
({eal}) say.

Like a command of the user's (cmd.py) it polls as it does (one poller per
core), counts as up SETTLE_S after it starts, is stopped with SIGINT once no
engine polls, and prints what it prints.
"""
from __future__ import annotations

import functools
import os
import shlex
from typing import TYPE_CHECKING, Callable, Sequence

from cnfperf import UserError
from cnfperf.host import tools
from cnfperf.nfs import placeholders
from cnfperf.nfs.base import Command, NfKind
from cnfperf.nfs.cmd import udp_warning
from cnfperf.runtimes import Image, podman, user_image
from cnfperf.runtimes.podman import PodmanRuntime

if TYPE_CHECKING:
    from cnfperf.dataplanes.base import Attachment
    from cnfperf.host.facts import HostFacts
    from cnfperf.plan import NF, Pair
    from cnfperf.scenario import Scenario

# Asked once per image and run: a sweep validates many scenarios.
_present = functools.cache(podman.exists)


class ImageKind(NfKind):
    prefix = "image:"
    forms = {"image:REF ARGS": "a container image of yours, NAME[:TAG] in podman's store or "
                               "an archive PATH.tar, run with ARGS, its ports substituted"}
    runtime = PodmanRuntime.name

    @property
    def ref(self) -> str:
        """The image's name, or its archive's absolute path."""
        words = self._words()
        ref = words[0] if words else ""
        return os.path.abspath(ref) if podman.is_archive(ref) else ref

    @property
    def args(self) -> str:
        """ARGS (a template of placeholders.py)."""
        return shlex.join(self._words()[1:])

    def _words(self) -> list[str]:
        try:
            return shlex.split(self.nf[len(self.prefix):])
        except ValueError:   # an unclosed quote: scenario_problem says so
            return []

    def check_own(self, s: Scenario) -> None:
        if not self.nf[len(self.prefix):].strip():
            raise UserError("nf", "image: needs an image, e.g. image:localhost/my-nf:1 "
                                  "--in {iface1} --out {iface2}")
        if self.args:
            placeholders.check_command(self.args, s.nf_api)
        if podman.is_archive(self.ref):
            if not os.path.isfile(self.ref):
                raise UserError("nf", f"image archive {self.ref}: no such file")
        elif tools.find("podman") is not None and os.geteuid() == 0 and \
                not _present(self.ref):
            # without podman, or root, the host check says what is missing (exit 1)
            raise UserError("nf", f"image {self.ref}: not in podman's store (podman images; "
                                  "podman build or podman load puts it there)")

    def warnings(self, s: Scenario) -> tuple[str, ...]:
        if not (s.nfs and s.api == "udp"):
            return ()
        return (udp_warning("an image that sends frames on as it reads them must finish them"),)

    def problems(self, s: Scenario, host: HostFacts) -> list[str]:
        return [f"nf image: runtime podman: {p}" for p in PodmanRuntime.check()]

    def image(self, api: str, static_apis: Callable[[], Sequence[str]]) -> Image:
        return user_image(self.ref)

    def command(self, engine: str, nf: NF, ports: Sequence[Attachment], hops: Sequence[str],
                pair: Pair, s: Scenario, eal: Sequence[str],
                floating: Sequence[int] = ()) -> Command:
        """`engine`: the image the container was made from (podman.py), whose
        entrypoint runs with ARGS filled in."""
        values = placeholders.values(nf, ports, hops, eal, floating)
        args = placeholders.fill_command(self.args, values, eal) if self.args else []
        return Command(podman.command_of(engine, args), records=False)
