"""Runtimes by name: the containers' (a scenario's `--runtime`) and the VMs'.
Nothing outside this package compares a runtime's or a placement's name: it
asks the class its capabilities (own_kernel, place, host_files), found
through RUNTIMES, placements(), placed() and in_guest()."""
from typing import Iterator, Mapping

from .base import (Container, ContainerError, ImageInfo, Journal, Mount, Nic, Quota, Runtime,
                   gathered)
from .images import CORE, FULL, MINIMAL, TOOLS, Found, Image, user_image
from .netns import NetnsRuntime
from .pod.runtime import PodRuntime
from .podman import PodmanRuntime
from .runc import RuncRuntime
from .vm import VmRuntime

# Every runtime, by name: cleanup and doctor see them all. A scenario's runtime
# is one of the containers' (CONTAINER_RUNTIMES); the others are placements'.
RUNTIMES: dict[str, type[Runtime]] = {"runc": RuncRuntime, "netns": NetnsRuntime,
                                       "podman": PodmanRuntime, "vm": VmRuntime,
                                       "pod": PodRuntime}


class _Containers(Mapping[str, type[Runtime]]):
    """The runtimes a scenario's `runtime` may name: those no placement names
    (a view of RUNTIMES: one registered later is in it)."""

    def __getitem__(self, name: str) -> type[Runtime]:
        rt = RUNTIMES[name]
        if rt.place is not None:
            raise KeyError(name)
        return rt

    def __iter__(self) -> Iterator[str]:
        return iter([n for n, rt in RUNTIMES.items() if rt.place is None])

    def __len__(self) -> int:
        return sum(rt.place is None for rt in RUNTIMES.values())


CONTAINER_RUNTIMES: Mapping[str, type[Runtime]] = _Containers()

# Where nf_in and endpoint_in put a node: in a container of the scenario's
# runtime (CONTAINER), or in the runtime whose `place` it is (vm: a VM, pod:
# a pod on a cluster).
CONTAINER = "container"


def placements() -> dict[str, type[Runtime] | None]:
    """Every placement and the runtime it names (None: the scenario's)."""
    return {CONTAINER: None, **{rt.place: rt for rt in RUNTIMES.values() if rt.place}}


def placed(place: str) -> str | None:
    """The name of the runtime a placement puts nodes in (None: the scenario's
    `runtime`); KeyError for no placement."""
    rt = placements()[place]
    return None if rt is None else next(n for n, r in RUNTIMES.items() if r is rt)


def in_guest(place: str) -> bool:
    """Whether a node placed there runs in a virtual machine of its own (a
    kernel and a clock of its own); False for what is no placement (the
    scenario's checks name that)."""
    rt = placements().get(place)
    return rt is not None and rt.own_kernel


def guest() -> type[Runtime]:
    """The runtime whose containers are virtual machines (own_kernel): what a
    scenario's accel, vm_memory and vm_image configure, and doctor's VM rows."""
    return next(rt for rt in RUNTIMES.values() if rt.own_kernel)

__all__ = ["RUNTIMES", "CONTAINER_RUNTIMES", "CONTAINER", "CORE", "FULL", "MINIMAL",
           "TOOLS", "Container", "ContainerError", "Found", "Image", "ImageInfo", "Journal",
           "Mount", "Nic", "PodRuntime", "Quota", "Runtime", "RuncRuntime", "NetnsRuntime", "PodmanRuntime",
           "VmRuntime", "gathered", "guest", "in_guest", "placed",
           "placements", "user_image"]
