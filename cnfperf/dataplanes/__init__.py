"""Data planes by name: adding a switch is one file and one line here."""
from cnfperf.dataplanes.base import Attachment, DataPlane, PortCounters
from cnfperf.dataplanes.bridge import Bridge
from cnfperf.dataplanes.click import ClickSwitch
from cnfperf.dataplanes.macvlan import Macvlan
from cnfperf.dataplanes.memif import Memif
from cnfperf.dataplanes.ovs import OvsDpdk
from cnfperf.dataplanes.snabb import SnabbBridge, SnabbWire
from cnfperf.dataplanes.testpmd import TestPmdSwitch
from cnfperf.dataplanes.veth import Veth
from cnfperf.dataplanes.vhost import Vhost
from cnfperf.dataplanes.vpp import Vpp, VppMemif

DATAPLANES: dict[str, type[DataPlane]] = {
    "veth": Veth,
    "bridge": Bridge,
    "macvlan": Macvlan,
    "vhost": Vhost,
    "memif": Memif,
    "testpmd": TestPmdSwitch,
    "ovs": OvsDpdk,
    "vpp": Vpp,
    "vpp-memif": VppMemif,
    "click": ClickSwitch,
    "snabb": SnabbBridge,
    "snabb-wire": SnabbWire,
}

__all__ = ["DATAPLANES", "Attachment", "DataPlane", "PortCounters"]
