"""Network namespaces and links through iproute2, for the data planes, the
testbed, the runner and cleanup.

Everything is created inside namespaces named with the run's prefix: the host's
own namespace never sees our links, so its firewall, br_netfilter, udev or a
network manager cannot touch the measurement, and deleting a namespace takes
every link in it along.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence, TypeVar

from cnfperf.host.journal import undo_each
from cnfperf.host.system import KILL_WAIT_S, CommandFailed, run, signal_all, wait_gone

if TYPE_CHECKING:
    from cnfperf.host.journal import Journal

# Where `ip netns` keeps a namespace's name, for setns(2) and nsenter.
NETNS_DIR = Path("/var/run/netns")
# IPv6 would send router solicitations and MLD reports into the measurement.
_QUIET = ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]


# A macvtap's character device is /dev/tap<ifindex> in the host's one devtmpfs,
# while ifindexes count per netns: macvtaps in two netns can share one, and the
# second VM would open the first one's device. So each macvtap is created with
# an ifindex of its own, above those netns hand out.
TAP_INDEX_BASE = 4096


def tap_index() -> list[str]:
    """`index N` for `ip link add … type macvtap`: the first N from TAP_INDEX_BASE
    that no /dev/tapN holds (the node appears when its link is made)."""
    n = TAP_INDEX_BASE
    while os.path.exists(f"/dev/tap{n}"):
        n += 1
    return ["index", str(n)]


def ip(*args: str, netns: str | None = None, tool: str = "ip") -> str:
    """`ip` (or `tc`, `bridge`: the same `-n`) in netns, or in the host's namespace."""
    return run([tool, *(["-n", netns] if netns else []), *args])


# The counters kept of an interface, as `ip -s -j link show` gives them (stats64).
LINK_STATS = ("rx_packets", "rx_dropped", "tx_packets", "tx_dropped")


def parse_link_stats(text: str) -> dict[str, dict[str, int | None]]:
    """`ip -s -j link show`: {interface: LINK_STATS}; a count it did not give
    is None (unknown), never 0."""
    out = {}
    for link in json.loads(text or "[]"):
        stats = link.get("stats64") or {}
        counts = {key: (stats.get(key[:2]) or {}).get(key[3:]) for key in LINK_STATS}
        out[link["ifname"]] = {key: None if n is None else int(n) for key, n in counts.items()}
    return out


def link_stats(netns: str | None) -> dict[str, dict[str, int | None]]:
    """LINK_STATS of every interface in netns (None: the host's)."""
    return parse_link_stats(ip("-s", "-j", "link", "show", netns=netns))


def netns_list() -> list[str]:
    return [line.split()[0] for line in ip("netns", "list").splitlines() if line.strip()]


def add_netns(journal: Journal, name: str) -> None:
    journal.add("netns", name)
    ip("netns", "add", name)
    _sysctl(name, _QUIET)
    ip("link", "set", "lo", "up", netns=name)


def quiet_netns(name: str, links: Sequence[str] = ()) -> None:
    """What add_netns makes of a netns, made of one made elsewhere (a pod's),
    its `links` there already: no IPv6 (no router solicitations on a port)."""
    _sysctl(name, _QUIET + [f"net.ipv6.conf.{l}.disable_ipv6=1" for l in links])
    ip("link", "set", "lo", "up", netns=name)


def quiet_links(netns: str | None, links: Sequence[str]) -> None:
    """No IPv6 on these links (no router solicitations, no MLD reports into a
    switch): for links of a netns not made quiet, this host's own."""
    settings = [f"net.ipv6.conf.{l}.disable_ipv6=1" for l in links]
    if netns:
        _sysctl(netns, settings)
    else:
        run(["sysctl", "-q", "-e", "-w", *settings], check=False)


def del_netns(journal: Journal | None, name: str) -> bool:
    """Delete the namespace if it is there; whether it was."""
    there = name in netns_list()
    if there:
        # A process still inside would keep the namespace, and its links, alive
        # unnamed: it is gone (not only signalled) before the name goes.
        pids = netns_pids(name)
        signal_all(pids, signal.SIGKILL)
        wait_gone(pids, KILL_WAIT_S)
        ip("netns", "del", name)
    if journal is not None:
        journal.discard("netns", name)
    return there


def netns_pids(name: str) -> list[int]:
    try:
        return [int(p) for p in ip("netns", "pids", name).split()]
    except CommandFailed:
        return []


def links(netns: str | None = None) -> list[str]:
    return [l["ifname"] for l in json.loads(ip("-j", "link", "show", netns=netns) or "[]")]


def del_link(name: str, netns: str | None) -> bool:
    """Delete the link if it is there (a deleted namespace took its links along);
    whether it was."""
    if (netns and netns not in netns_list()) or name not in links(netns):
        return False
    ip("link", "del", name, netns=netns)
    return True


CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)
T = TypeVar("T")


def in_netns(netns: str, work: Callable[[], T]) -> T:
    """work() run in a thread that entered network namespace `netns` (setns
    changes only the calling thread's namespace, not the process's): its result,
    or its exception raised here."""
    result: dict = {}

    def run() -> None:
        try:
            fd = os.open(NETNS_DIR / netns, os.O_RDONLY | os.O_CLOEXEC)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns into netns {netns}: {os.strerror(err)}")
            finally:
                os.close(fd)
            result["value"] = work()
        except BaseException as e:     # handed to the caller
            result["error"] = e
    thread = threading.Thread(target=run, name=f"netns {netns}")
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


def _sysctl(netns: str, settings: list[str]) -> None:
    # -e: a kernel without IPv6 has no such keys, and that is fine.
    run(["ip", "netns", "exec", netns, "sysctl", "-q", "-e", "-w", *settings], check=False)


# -- NICs lent to a point ------------------------------------------------------------
# A wire's end (remote/inventory.py) is an interface of this host's own netns:
# for a point it goes into the netns of the node or switch that uses it, and
# comes back as it was. Journaled first ("nic"): deleting a netns gives a
# physical NIC back by itself, but destroys a virtual one (a veth), so cleanup
# gives it back before the netns goes (the journal is undone in reverse).

def link_flags(name: str, netns: str | None = None) -> list[str]:
    """The link's flags as `ip` says them (UP: set up; LOWER_UP: it has a carrier)."""
    return json.loads(ip("-j", "link", "show", "dev", name, netns=netns) or "[{}]")[0] \
        .get("flags", [])


def rx_queues(name: str) -> int:
    """The receive queues the link's device uses: its sysfs queues (`ip`'s
    num_rx_queues is what it could have; a veth has one per CPU there)."""
    return sum(1 for q in Path(f"/sys/class/net/{name}/queues").iterdir()
               if q.name.startswith("rx-"))


def nic_state(iface: str) -> dict[str, object]:
    """What lending changes, to give it back as it was: its MTU, promiscuity, state."""
    link = json.loads(ip("-d", "-j", "link", "show", "dev", iface) or "[{}]")[0]
    return {"mtu": link.get("mtu", 1500), "promisc": bool(link.get("promiscuity", 0)),
            "up": "UP" in link.get("flags", [])}


def lend_nic(journal: Journal, iface: str, netns: str | None, mtu: int) -> dict[str, object]:
    """Move the NIC into netns (None: leave it here), up, promiscuous (frames for
    the point's MACs, not its own), its MTU at least `mtu`; what give_back_nic
    needs (as journaled)."""
    state = nic_state(iface)
    info = {"netns": netns, **state}
    journal.add("nic", iface, **info)
    if netns:
        ip("link", "set", "dev", iface, "netns", netns)
    ip("link", "set", "dev", iface, "mtu", str(max(mtu, int(state["mtu"]))), "promisc", "on",
       "up", netns=netns)
    return info


def give_back_nic(journal: Journal | None, iface: str, info: dict) -> bool:
    """The NIC back in this host's netns as it was lent; False if it is not
    where it was lent to (its netns went: a physical NIC came back by itself)."""
    netns = info.get("netns")
    if (netns and netns not in netns_list()) or iface not in links(netns):
        # its netns went: a physical NIC came back by itself, as it was lent
        if iface in links():
            netns = None
        else:
            if journal is not None:
                journal.discard("nic", iface)
            return False
    ip("link", "set", "dev", iface, "nomaster", netns=netns)
    ip("link", "set", "dev", iface, "down", "promisc", "on" if info.get("promisc") else "off",
       "mtu", str(info.get("mtu", 1500)), netns=netns)
    if netns:
        # by pid: this process is in the host's own netns
        ip("link", "set", "dev", iface, "netns", str(os.getpid()), netns=netns)
    if info.get("up", True):
        ip("link", "set", "dev", iface, "up")
    if journal is not None:
        journal.discard("nic", iface)
    return True


def give_back_all(journal: Journal, lent: list[tuple[str, dict]]) -> None:
    """Every NIC of `lent` back, the last lent first, each even if one before
    failed (a NIC left in a netns that goes next is destroyed if virtual);
    `lent` is emptied; the first failure is raised once all were tried."""
    undo_each(lent, lambda iface, info: give_back_nic(journal, iface, info), "NICs")


def missing_ends(names: list[str]) -> list[str]:
    """Those of `names` (wire ends: interfaces, or PCI addresses with a colon)
    this host has no interface in its netns, or no PCI device, of."""
    return [name for name in names
            if not os.path.exists(f"/sys/bus/pci/devices/{name}" if ":" in name
                                  else f"/sys/class/net/{name}")]
