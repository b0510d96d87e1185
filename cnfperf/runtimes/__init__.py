"""Container runtimes, by the name used on the command line (`--runtime`)."""
from .base import (CLICK, CLICK_DPDK, FULL, IMAGES, MINIMAL, NOISE, SWITCH, TOOLS, Container, ContainerError, ImageInfo, Journal, Mount,
                   Nic, Quota, Runtime)
from .netns import NetnsRuntime
from .runc import RuncRuntime

RUNTIMES: dict[str, type[Runtime]] = {"runc": RuncRuntime, "netns": NetnsRuntime}
VM = "vm"   # the runtime of the nodes nf_in and endpoint_in put in virtual machines

__all__ = ["RUNTIMES", "VM", "CLICK", "CLICK_DPDK", "FULL", "IMAGES", "MINIMAL", "NOISE", "SWITCH", "TOOLS", "Container", "ContainerError", "ImageInfo",
           "Journal", "Mount", "Nic", "Quota", "Runtime", "RuncRuntime", "NetnsRuntime"]
