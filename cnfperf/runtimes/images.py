"""Images as declarations. Whoever needs an image declares it here, as data:
the core ones below (the tester's ends, the static engine's, the tools one),
an NF kind its own (nfs/click.py: the click images), a data plane the one its
processes run in (dataplanes: the switch image), the noisy neighbour its own
(run/noise.py). The runtimes build any declaration alike (rootfs.spec_for):
no runtime names an image, and run/testbed.py asks the declaration which
program to hand (`program`, `build`).

What goes in: the program the image is built around, at `path`; with `shell`
static BusyBox and a few applets (the shell keeps the container alive), else the
program alone is its init (`idle`: its arguments to wait for a signal); the
host programs `tools` (host.tools names) and `found()`'s, with their ldd
closure; the libraries `preloads` (and `found()`'s); and for a dynamic program
its ldd closure, the DPDK drivers its EAL loads, what glibc and libxdp load
from disk. An image larger than `budget_mb` is refused when it is built."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from cnfperf.host import tools as host_tools
from cnfperf.host.builds import Build

# What an image is built around: the engine as built, the static engine
# (cnfperf-engine-static), or a named build's program (host/builds.py).
ENGINE = "engine"
STATIC = "engine-static"
BUILD = "build"
PROGRAMS = (ENGINE, STATIC, BUILD)

ENGINE_PATH = "/bin/cnfperf-engine"
STATIC_ENGINE_PATH = "/bin/cnfperf-engine-static"


@dataclass(frozen=True)
class Found:
    """What an image holds that only the host can say (the switch's daemons
    where it has them): host programs and preloaded libraries."""

    tools: tuple[str, ...] = ()
    preloads: tuple[str, ...] = ()


@dataclass(frozen=True)
class Image:
    name: str                           # its kind's name, as testbed and the store say it
    about: str                          # what runs in it, said where it is declared
    program: str = ENGINE               # ENGINE, STATIC or BUILD
    build: Build | None = None          # BUILD: the build whose program it is (builds.program)
    path: str = ENGINE_PATH             # where the program is inside
    shell: bool = True                  # static BusyBox: a shell keeps it alive
    idle: tuple[str, ...] = ()          # no shell: the program's arguments to idle as pid 1
    tools: tuple[str, ...] = ()         # host programs (host.tools names) it holds too
    preloads: tuple[str, ...] = ()      # libraries it holds at their host paths
    # host programs and libraries only the host can name (ContainerError: none)
    found: Callable[[], Found] | None = None
    budget_mb: float = 64.0             # refused when built larger (rootfs.build)
    user: bool = False                  # a user's image (podman's store): `name` is its reference
    # its NFs run commands of the user's (cmd:, testpmd): in a VM with a disk
    # image of the user's (vm_image) they run in it
    commands: bool = False

    def __post_init__(self) -> None:
        if self.program not in PROGRAMS:
            raise ValueError(f"image {self.name}: program {self.program!r}: one of "
                             f"{', '.join(PROGRAMS)}")
        if (self.program == BUILD) != (self.build is not None):
            raise ValueError(f"image {self.name}: a build's program names its build, "
                             "and only it")
        for name in self.tools:
            if name not in host_tools.TOOLS:
                raise ValueError(f"image {self.name}: tool {name!r} is not in host.tools")

    @property
    def static(self) -> bool:
        """Its program is statically linked (no loader in the image)."""
        return self.program == STATIC

    @property
    def init(self) -> tuple[str, ...] | None:
        """What keeps a container of it alive without a shell (None: the shell's)."""
        return None if self.shell else (self.path, *self.idle)


def user_image(ref: str) -> Image:
    """A user's image by its reference (NAME[:TAG] or an archive): podman
    runs it as it is; no runtime builds it."""
    return Image(name=ref, about="a user's image", user=True, shell=False)


# The core images. FULL: the engine as built (shared objects, DPDK drivers and
# all) with a shell; the tester ends and DPDK network functions run in it.
# MINIMAL: the static engine alone, for network functions on a kernel api.
# TOOLS: FULL plus Debian's dpdk-testpmd and its libraries (~15 MB more), for
# NFs that run a command of their own (nf = testpmd, cmd:TEMPLATE).
FULL = Image("full", "the tester's ends, DPDK network functions: the engine as built, a shell",
             budget_mb=64)
MINIMAL = Image("minimal", "engine network functions on a kernel api: the static engine alone",
                program=STATIC, path=STATIC_ENGINE_PATH, shell=False, idle=("--idle",),
                budget_mb=8)
TOOLS = Image("tools", "testpmd and users' commands: the full image and dpdk-testpmd",
              tools=(host_tools.TESTPMD,), commands=True, budget_mb=96)
CORE = (FULL, MINIMAL, TOOLS)


def names(images: Sequence[Image]) -> str:
    return ", ".join(i.name for i in images)
