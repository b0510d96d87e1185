"""Container runtimes, by the name used on the command line (`--runtime`)."""
from .base import (CLICK, CLICK_DPDK, FULL, IMAGES, MINIMAL, NOISE, SWITCH, TOOLS, Container, ContainerError, ImageInfo, Journal, Mount,
                   Quota, Runtime)
from .netns import NetnsRuntime
from .podman import PodmanRuntime
from .runc import RuncRuntime

RUNTIMES: dict[str, type[Runtime]] = {"runc": RuncRuntime, "netns": NetnsRuntime,
                                       "podman": PodmanRuntime}

__all__ = ["RUNTIMES", "CLICK", "CLICK_DPDK", "FULL", "IMAGES", "MINIMAL", "NOISE", "SWITCH", "TOOLS", "Container", "ContainerError", "ImageInfo",
           "Journal", "Mount", "Quota", "Runtime", "RuncRuntime", "NetnsRuntime",
           "PodmanRuntime"]
