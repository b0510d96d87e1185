"""Which `ip` makes the links a data plane asks for: the host's, or the lab's
newer one where the host's iproute2 predates the link type (netkit: iproute2
6.7; Debian 12 has 6.1, which passes no netkit options to the kernel)."""
from __future__ import annotations

import contextlib
import functools
import re

from cnfperf.host import lab, tools
from cnfperf.host.system import CommandFailed, run

NETKIT_SINCE = (6, 7)


@functools.cache
def version(binary: str) -> tuple[int, ...]:
    """(6, 1) from `ip -V`'s `iproute2-6.1.0`; () when it does not say."""
    with contextlib.suppress(CommandFailed, OSError):
        if found := re.search(r"iproute2-(\S+)", run([binary, "-V"], timeout=10)):
            return tools.release(found[1])
    return ()


def netkit_ip() -> str | None:
    """An `ip` that makes netkit links: the host's, else the lab's; None."""
    host = tools.find("ip")
    if host and version(host) >= NETKIT_SINCE:
        return host
    parts = lab.part("iproute2") / "bin" / "ip"
    if parts.is_file() and version(str(parts)) >= NETKIT_SINCE:
        return str(parts)
    return None


def netkit_problem() -> str | None:
    if netkit_ip() is not None:
        return None
    return (f"no ip of iproute2 >= {'.'.join(map(str, NETKIT_SINCE))} (netkit links): "
            f"the host's is older, and {lab.part('iproute2')} has none ({lab.HINT})")
