"""Wires that several ports share (share_wires): each port crossing between two
hosts is a macvlan child of its wire's NIC on both of them, told apart by MAC
as a switch's port tells the stations behind it apart.

- On the host of the port's node the child has the port's MAC, in vepa mode:
  it takes the frames addressed to that MAC, and everything it sends leaves by
  the wire (never to a sibling on the same NIC, which bridge mode would do).
- On the host whose switch joins the port's link the child is in source mode:
  it takes the frames that come from the port's MAC, whatever their
  destination, and sends onto the wire.

The point's planes then lend each child as they lend a wire's NIC (a node's
port, the switch's port: host/links.py lend_nic); the NIC itself stays in the
host's netns, up and promiscuous for the point (lent to no netns), and is given
back as it was. Each child is journaled before it exists and deleted with the
point; one in a netns that went is gone with it.
"""
from __future__ import annotations

from cnfperf.dataplanes.kernel import mtu_for
from cnfperf.host.journal import Journal
from cnfperf.host.links import del_link, give_back_nic, ip, lend_nic
from cnfperf.plan import TestPoint
from cnfperf.run.teardown import Teardown


def share(journal: Journal, point: TestPoint, teardown: Teardown) -> None:
    """This host's children of the shared wires' NICs (TestPoint.shared), each
    undone on `teardown`."""
    mtu = mtu_for(point.scenario.size)
    lent: set[str] = set()
    ports = {port.name: port for port in point.ports}
    for name, nic in point.shared:
        if nic not in lent:
            lent.add(nic)
            teardown.push(f"NIC {nic}", _give_back(journal, nic, lend_nic(journal, nic, None, mtu)))
        child = point.nic(name)
        assert child is not None, f"{name}: shared, but no interface carries it"
        port = ports[name]
        journal.add("link", child)
        teardown.push(f"link {child}", lambda child=child: _delete(journal, child))
        if port.host == point.host:   # the node's side: its MAC
            ip("link", "add", child, "link", nic, "address", port.mac, "mtu", str(mtu),
               "type", "macvlan", "mode", "vepa")
        else:                          # the switch's side: what comes from that MAC
            ip("link", "add", child, "link", nic, "mtu", str(mtu), "type", "macvlan",
               "mode", "source")
            ip("link", "set", "link", "dev", child, "type", "macvlan", "macaddr", "add",
               port.mac)


def _give_back(journal: Journal, nic: str, info: dict):
    return lambda: give_back_nic(journal, nic, info)


def _delete(journal: Journal, child: str) -> None:
    del_link(child, None)   # gone already if its netns went
    journal.discard("link", child)
