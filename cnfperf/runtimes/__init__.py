"""Runtimes by name: the containers' (a scenario's `--runtime`) and the VMs'."""
from .base import (CLICK, CLICK_DPDK, FULL, IMAGES, MINIMAL, NOISE, SWITCH, TOOLS, Container, ContainerError, ImageInfo, Journal, Mount,
                   Nic, Quota, Runtime)
from .netns import NetnsRuntime
from .podman import PodmanRuntime
from .runc import RuncRuntime
from .vm import VmRuntime

# Every runtime, by name: cleanup and doctor see them all. A scenario's runtime
# is one of the containers' (CONTAINER_RUNTIMES); the vm one makes VMs.
RUNTIMES: dict[str, type[Runtime]] = {"runc": RuncRuntime, "netns": NetnsRuntime,
                                       "podman": PodmanRuntime, "vm": VmRuntime}
CONTAINER_RUNTIMES = {name: rt for name, rt in RUNTIMES.items() if rt.kind == "container"}
VM = "vm"   # the runtime of the nodes nf_in and endpoint_in put in virtual machines

__all__ = ["RUNTIMES", "CONTAINER_RUNTIMES", "VM", "CLICK", "CLICK_DPDK", "FULL", "IMAGES", "MINIMAL", "NOISE", "SWITCH", "TOOLS", "Container", "ContainerError", "ImageInfo",
           "Journal", "Mount", "Nic", "Quota", "Runtime", "RuncRuntime", "NetnsRuntime",
           "PodmanRuntime", "VmRuntime"]
