"""The NfKind interface: what the orchestrator asks of a network function's kind.

An NF kind is what `nf` names: the engine's own (l2, mirror, strip-encap, l3),
the kernel's forwarding (router), testpmd, a user's command (cmd:TEMPLATE), Click (click:KIND, click:FILE) or a
user's container image (image:REF ARGS).
Kinds come in families, one file each, registered in nfs/__init__.py; a
family's class says which values it takes (`names`, `prefix`), and an
instance answers for one value:

  ports                       one (frames go back where they came from) or two
  scenario_problem(s)         a combination it refuses: (field, why), exit 2
  cores_problem(s)            why it cannot use nf_cores, or None
  queues(s)                   the queues each of its ports has (one per core: a thread each)
  warnings(s)                 what the plan says about it (a udp checksum it may leave)
  pollers(s, cores)           busy pollers one NF counts as on its cores
  problems(s, host)           what the host lacks to run it (preflight, doctor)
  image(api, static_apis)     the container image its NFs run in
  runtime                     the runtime that makes their containers (None: `runtime`'s)
  command(...)                its command line, and how it says it is up
  ready(lines), summary(out)  when it was up, its counters, from its output
  prepare(...)                what its netns needs before any trial (router)
  start_argv, settled, noticed, routing  its routing daemons beside it (frr), what they said
  counters(node, ports)       a kernel kind's counters, read around each trial
  records, holds_ports, settle_s, counted, apis, lazy, kernel, routes: what it does as it runs
  own_fields                  fields that concern its NFs only (router's nf_routes, …)
  style, stored()             its colour and marker in reports, stored with each point

plan.py and dataplanes/ do not import this package: run/checks/ and
run/testbed.py resolve the kind and hand down the facts placing needs
(ports, pollers, warnings, queues).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Sequence

from cnfperf import UserError
from cnfperf.fields import NF_APIS

if TYPE_CHECKING:
    from cnfperf.dataplanes.base import Attachment
    from cnfperf.host.builds import Build
    from cnfperf.host.facts import HostFacts
    from cnfperf.plan import NF, Pair
    from cnfperf.runtimes import Container, Image
    from cnfperf.scenario import Scenario

# A command that says nothing of its ports counts as up this long after it starts.
SETTLE_S = 2.0


@dataclass(frozen=True)
class Command:
    argv: list[str]
    records: bool                 # prints the engine's JSON records
    ready: str | None = None      # a line of its output that says its ports are up


class NfKind:
    """One value of `nf`, answered by its family's class."""

    # The values it takes as they are (listed in --help and the docs), and the
    # forms of those with an argument (`cmd:TEMPLATE`: what the argument is);
    # a value starting with `prefix` is the family's.
    names: ClassVar[tuple[str, ...]] = ()
    forms: ClassVar[dict[str, str]] = {}
    prefix: ClassVar[str] = ""
    # The nf_apis it runs on (scenario_problem refuses others, a family first in
    # its own words; doctor asks each).
    apis: ClassVar[tuple[str, ...]] = NF_APIS
    # The runtime its NFs' containers are made in whatever `runtime` the other
    # nodes use (a user's image needs podman); None: the scenario's.
    runtime: ClassVar[str | None] = None
    # It prints the engine's JSON records (ready, summary), and keeps its ports
    # open after its summary until its stdin ends (the trial's two-phase stop);
    # else it is stopped with SIGINT once no engine polls, and exits.
    records: ClassVar[bool] = False
    holds_ports: ClassVar[bool] = False
    # Its process may be its container's init (Runtime.create(lazy=True)): one
    # step to start instead of a container and then the process in it. Only a
    # program that ends on SIGINT and SIGTERM by its own handlers fits (an init
    # ignores signals it has no handler for), and one per container at a time.
    lazy: ClassVar[bool] = False
    # Up this long after it starts, when neither a record nor a line says so.
    settle_s: ClassVar[float] = SETTLE_S
    # It polices and shapes frames itself before it forwards them (policer or
    # shaper = engine: the engine's --policer, --shaper).
    buckets: ClassVar[bool] = False
    # Its forwarding is the kernel's (router): its counters are the kernel's,
    # read by the trial around the traffic (host/kernel_drops.py), and
    # prepare() makes its netns what it is before any trial.
    kernel: ClassVar[bool] = False
    # It routes: each frame leaves by the port its destination's route says,
    # over any number of ports, so it may stand in a graph (graph.py); the
    # others forward port 1 to port 2 and back.
    routes: ClassVar[bool] = False
    # Its colour and marker in every report, per value it takes as it is:
    # report/style.py's NF style number (counted down from the palette's last
    # pair, below style.KIND_STYLES). A number of its own, never reused or
    # changed (a unit test holds them apart): stored with each point
    # (stored()), so an old run is drawn as it was. A value without one (a
    # user's command or Click file) is drawn by a hash of its text.
    styles: ClassVar[Mapping[str, int]] = {}
    # The builds from source it runs (switches/NAME/, host/builds.py): doctor's rows.
    builds: ClassVar[tuple[Build, ...]] = ()
    # Scenario fields that mean something to its NFs only (fields.py's names):
    # set away from their defaults, they need this family's NFs (own_fields_problem).
    own_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, nf: str):
        self.nf = nf

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.nf!r})"

    @classmethod
    def matches(cls, nf: str) -> bool:
        return nf in cls.names or bool(cls.prefix) and nf.startswith(cls.prefix)

    @property
    def style(self) -> int | None:
        """Its report style number (`styles`), or None for a value without one."""
        return self.styles.get(self.nf)

    def stored(self) -> dict[str, Any]:
        """What a report needs of it, stored with every point its NFs ran in
        (results/store.py: points.nf_facts): the report reads a run through
        these, never through today's NF kinds."""
        return {"name": self.nf, "style": self.style}

    @property
    def ports(self) -> int:
        """Its ports: two (in at one, out at the other), or one for a kind that
        sends frames back where they came from (the path ends there)."""
        return 2

    @property
    def counted(self) -> bool:
        """Whether it prints counters of its own (a run without them fails)."""
        return self.records

    def check_own(self, s: Scenario) -> None:
        """Raises UserError for a rule of the family's own that the scenario
        breaks (scenario_problem asks it first)."""

    def scenario_problem(self, s: Scenario) -> tuple[str, str] | None:
        """(field, why) when the scenario asks what this kind cannot do (exit 2):
        the base's rules are the path's; a family checks its own first
        (check_own, or an override of this)."""
        try:
            self.check_own(s)
        except UserError as e:
            return refused(e)
        if s.nf_api not in self.apis:
            return "nf_api", f"{self.nf} runs on nf_api {' or '.join(self.apis)}, not {s.nf_api}"
        if s.graph and not self.routes:
            return "graph", f"{self.nf} forwards from its port 1 to its port 2 and back: a " \
                            "graph's NFs route between their ports (nf = router)"
        if self.ports == 1 and s.nfs != 1:
            # It sends frames back where they came from: nothing can stand behind
            # it (and only a single tester takes them: testers.refusal).
            return "nf", f"{self.nf} sends frames back to their sender: it takes nfs = 1 " \
                         "and tester = single"
        return None

    def cores_problem(self, s: Scenario) -> str | None:
        """Why its NFs cannot use s.nf_cores cores each, or None."""
        return None

    def queues(self, s: Scenario) -> int:
        """The queues each of its ports has (plan.Port.queues): one, unless it
        polls a queue per core."""
        return 1

    def warnings(self, s: Scenario) -> tuple[str, ...]:
        """What the plan says about it for this scenario (--dry-run, the report)."""
        return ()

    def pollers(self, s: Scenario, cores: int) -> int:
        """Threads one NF spins on, given its cores: a program that polls as it
        does, whatever `poll` says, is one per core."""
        return cores

    def problems(self, s: Scenario, host: HostFacts) -> list[str]:
        """What keeps this host from running it, each naming what it concerns
        first (`nf click:mirror: ...`)."""
        return []

    def image(self, api: str, static_apis: Callable[[], Sequence[str]]) -> Image:
        """The image its NFs' containers are made from, on this nf_api: a core
        one (runtimes.images) or one the family declares (images.Image: a
        family with a program of its own, as Click's); `static_apis()`: what
        the static engine was built with (its --version, run only when asked)."""
        raise NotImplementedError

    def command(self, engine: str, nf: NF, ports: Sequence[Attachment], hops: Sequence[str],
                pair: Pair, s: Scenario, eal: Sequence[str],
                floating: Sequence[int] = ()) -> Command:
        """What one NF runs: `engine` is the program its image holds (the engine,
        Click); `hops` the MACs frames leaving port 1 and 2 go to; `floating` the
        cores an unpinned NF floats over (TestPoint.floating)."""
        raise NotImplementedError

    def prepare(self, netns: str, guest: Container | None, nf: NF, ports: Sequence[Attachment],
                hops: Sequence[str], pair: Pair, s: Scenario, cores: Sequence[int]) -> None:
        """What its node needs before any trial, once its ports are there (a
        kernel kind's addresses and routes): in its netns before its container
        is made (a container mounts its netns's /sys read-only, and that
        instance stays read-only while it is there), or with `guest` (a VM,
        made) in its guest; `cores` its cpuset as it sees it when pinned,
        else (). Nothing here."""

    def restore(self, netns: str, nf: NF, ports: Sequence[Attachment], hops: Sequence[str],
                pair: Pair, s: Scenario, ifaces: Sequence[str]) -> bool:
        """A fault took `ifaces` (its interfaces in its netns) down and up again
        (run/fault.py): the kernel dropped the routes and neighbour entries
        through them, and prepare() put in what it needs (a router's) back,
        promptly: the path is down until it is. The same arguments as
        prepare's; true if it put anything back. Nothing here."""
        return False

    @property
    def daemons(self) -> tuple[str, ...]:
        """The daemons it runs beside each container, in its netns (a routing
        daemon's: frr), by name; none here."""
        return ()

    def start_argv(self, nf: NF, ports: Sequence[Attachment], pair: Pair, s: Scenario,
                   home: Path) -> list[tuple[str, list[str], Path | None]]:
        """Its daemons (`daemons`) as (name, command line, a file that says it
        is up before the next starts, or None), their files written in `home`
        (a directory of the point's, the NF's own): run/daemons.py starts them
        once every NF of the point is prepared, waits until settled() says
        they are, and stops them with the point."""
        return []

    def links(self, home: Path) -> list[Path]:
        """Paths outside `home` where its daemons keep files (a build's
        compiled-in state directory): made links to `home` before they start,
        removed with them. None here."""
        return []

    def configure_argv(self, home: Path) -> list[str] | None:
        """A command that configures its daemons once every one of an NF has
        started (one that reads no file of ours: FRR 10's mgmtd), or None."""
        return None

    def settled(self, netns: str, nf: NF, pair: Pair, s: Scenario, home: Path) -> str | None:
        """What its daemons have not brought up yet (a session, a route), None
        once they have."""
        return None

    def noticed(self, home: Path, since: float) -> tuple[float, str] | None:
        """When (wall clock) and how its daemons first said a session went
        down at or after `since` (a fault's down), None if they did not."""
        return None

    def routing(self, home: Path, since: float, until: float) -> dict[str, Any] | None:
        """What its daemons' sessions did between two wall-clock times (a
        trial): how many there are and are up, how often and how long down;
        None without daemons."""
        return None

    def counters(self, node: Container, ports: Sequence[Attachment]) -> dict[str, Any] | None:
        """A `kernel` kind's counters now (host/kernel_drops.py's), read around
        each trial; None: none, or unreadable."""
        return None

    def ready(self, lines: list[str]) -> dict[str, Any] | None:
        """An engine-like `ready` record from its output, when it says when it was up."""
        return None

    def summary(self, output: str) -> dict[str, Any]:
        """An engine-like summary (per-port counters) from its output: none here."""
        return {"nf": self.nf, "ports": []}

    def check(self, s: Scenario) -> None:
        """scenario_problem as a UserError (exit 2)."""
        if (problem := self.scenario_problem(s)) is not None:
            raise UserError(*problem)


def refused(e: UserError) -> tuple[str, str]:
    """A rule written as a raise, as scenario_problem answers it."""
    return e.field, e.why
