"""Data planes by name: adding a switch is one file and its entry here (its import
and its row in DATAPLANES)."""
from cnfperf.dataplanes.base import Attachment, DataPlane, PortCounters
from cnfperf.dataplanes.bess import BessPlane
from cnfperf.dataplanes.bridge import BridgePlane
from cnfperf.dataplanes.click import ClickPlane
from cnfperf.dataplanes.macvlan import MacvlanPlane
from cnfperf.dataplanes.memif import MemifPlane
from cnfperf.dataplanes.netkit import NetkitPlane
from cnfperf.dataplanes.ovs import OvsPlane
from cnfperf.dataplanes.ovs_kernel import OvsKernelPlane
from cnfperf.dataplanes.snabb import SnabbPlane, SnabbWirePlane
from cnfperf.dataplanes.sriov import SriovPlane
from cnfperf.dataplanes.testpmd import TestPmdPlane
from cnfperf.dataplanes.veth import VethPlane
from cnfperf.dataplanes.vhost import VhostPlane
from cnfperf.dataplanes.vpp import VppMemifPlane, VppPlane

DATAPLANES: dict[str, type[DataPlane]] = {
    "veth": VethPlane,
    "bridge": BridgePlane,
    "macvlan": MacvlanPlane,
    "vhost": VhostPlane,
    "memif": MemifPlane,
    "testpmd": TestPmdPlane,
    "ovs": OvsPlane,
    "vpp": VppPlane,
    "vpp-memif": VppMemifPlane,
    "click": ClickPlane,
    "bess": BessPlane,
    "snabb": SnabbPlane,
    "snabb-wire": SnabbWirePlane,
    "sriov": SriovPlane,
    "netkit": NetkitPlane,
    "ovs-kernel": OvsKernelPlane,
}

__all__ = ["DATAPLANES", "Attachment", "DataPlane", "PortCounters"]
