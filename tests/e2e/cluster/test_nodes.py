"""A host of an inventory joins the test cluster as a node of its own (the
lab's TCG host, `cnfperf cluster --hosts`'s run/cluster.members()): its
agent starts a containerd and a kubelet there with certificates of the
cluster's CA, and the API server is reached over the lab's control network.
A point's pods go to the node of the host that builds them: the tester's
sender in a pod on this host's node, on the wire's NIC here; its receiver in
a pod on the lab host's node, on a port of the bridge there; and both ends
on the lab host's node, each on a virtual function of its emulated SR-IOV
NIC (host-device). When the host leaves, its node is deleted and nothing of
it is left in the guest."""
from __future__ import annotations

import json

import pytest
from kubernetes import client

import harness
import vmhost
from cnfperf.remote import inventory
from cnfperf.run.cluster import members
from cnfperf.runtimes.pod import pods

pytestmark = [pytest.mark.e2e,
              pytest.mark.needs("ip", "sshd", "ssh-keygen", "qemu-system-x86_64")]

RATE = 1000
DURATION = 1.0
TIMEOUT = 600        # the lab host's agent starts under TCG, its pods too


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with vmhost.hosts(tmp_path_factory.mktemp("lab"), ["dut"], wires=[("local", "dut")],
                      sriov={"dut": 1}) as lab:
        yield lab


# What a node writes outside its folder, as the guest sees it: its /var/lib
# (in memory over this machine's, whose own cluster's folders show through),
# its cgroup root's controllers, its /run/cnfperf, its hugepage pool
OUTSIDE = ("find /var/lib/kubelet /var/lib/cni /var/log/containers /run/cnfperf -mindepth 1 "
           "! -name lock 2>/dev/null; cat /sys/fs/cgroup/cgroup.subtree_control; "
           "ls /sys/fs/cgroup; cat /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages; true")
HUGEPAGES_MB = 32    # dut's node offers them to pods (cnfperf cluster --hugepages)


@pytest.fixture(scope="module")
def joined(cluster, api, lab):
    """dut a node of the cluster while the module's tests run; afterwards
    its node gone from the cluster, and the guest as it was before."""
    dut = lab.hosts["dut"]
    before = dut.run(["sh", "-c", OUTSIDE], check=True).stdout
    with members(cluster, inventory.load(lab.inventory), ["dut"],
                 hugepages_mb=HUGEPAGES_MB) as at:
        yield at
    assert "dut" not in {n.metadata.name for n in client.CoreV1Api(api).list_node().items}
    assert dut.leftovers() == set()
    assert dut.run(["sh", "-c", OUTSIDE], check=True).stdout == before


def test_a_lab_host_joins_as_a_node(cluster, api, lab, joined):
    assert joined == {"dut": "10.252.0.2"}
    dut = client.CoreV1Api(api).read_node("dut")
    assert any(c.type == "Ready" and c.status == "True" for c in dut.status.conditions), dut
    assert {a.address for a in dut.status.addresses} >= {"10.252.0.2"}
    assert dut.status.node_info.kubelet_version == cluster.version
    assert pods.hugepages_mb(api, "dut") == HUGEPAGES_MB
    # the guest's own containerd and kubelet, under its cgroup v2 root
    said = lab.hosts["dut"].run(["sh", "-c", "cat /sys/fs/cgroup/cgroup.subtree_control; "
                                 "ls /run/cnfperf/cluster"], check=True).stdout
    assert {"cpuset", "cpu", "memory"} <= set(said.split()), said
    assert "containerd.sock" in said.split(), said


def test_the_tester_ends_are_pods_on_two_nodes(cluster, api, lab, joined, cli):
    """The sender here (this host's node), the receiver on dut (dut's node),
    the bridge on dut between them, one wire. The receiver runs under TCG:
    frames arrive, how many is the emulator's (no loss is asserted)."""
    done = cli("run", "--hosts", str(lab.inventory), "--tester-host", "local+dut",
               "--dut-host", "dut", "--switch", "bridge", "--api", "raw",
               "--endpoint-in", "pod", "--pin", "no", "--rate", str(RATE),
               "--duration", str(DURATION), "--warmup", "0.5", "--json", timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    assert run["status"] == "done", run
    [point] = run["points"]
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["received"] > 0, pair
    placed = point["cluster_facts"]["pods"]
    ends = point["placement"][0]
    assert placed[ends["sender"]["name"]]["node"] == cluster.node, placed
    assert placed[ends["receiver"]["name"]]["node"] == "dut", placed
    assert {cni for f in placed.values() for cni in f["attached"].values()} == {"host-device"}
    # the wire: the sender's NIC here, the bridge's port on dut
    [(near, far)] = lab.wires
    counters = point["counters"]
    assert counters[f"dut:{far.name}"]["rx_packets"] >= pair["received"], counters
    assert pods.namespaces(api, "cnfperf.run") == []


def test_tester_pods_on_the_lab_node_take_virtual_functions(lab, joined, cli, api):
    """switch = sriov on dut, both tester ends in pods on dut's node: each
    end's port a VF of the guest's igb, moved into its pod by host-device;
    the VFs gone again afterwards."""
    done = cli("run", "--hosts", str(lab.inventory), "--tester-host", "dut", "--dut-host", "dut",
               "--switch", "sriov", "--sriov-pf", "pf0", "--api", "raw", "--endpoint-in", "pod",
               "--pin", "no", "--rate", str(RATE), "--duration", str(DURATION), "--json",
               timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    [point] = run["points"]
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["received"] > 0, pair
    placed = point["cluster_facts"]["pods"]
    assert {f["node"] for f in placed.values()} == {"dut"}, placed
    assert [cni for f in placed.values() for cni in f["attached"].values()] == \
        ["host-device"] * 2, placed
    assert pods.namespaces(api, "cnfperf.run") == []
    said = lab.hosts["dut"].run(["cat", "/sys/class/net/pf0/device/sriov_numvfs"], check=True)
    assert said.stdout.strip() == "0", said.stdout
