"""cnfperf runs whose nodes are pods on the test cluster (nf_in, endpoint_in
or switch_in = pod): the data plane's ports moved into each pod by Multus
(host-device attachments) or made by its kind's plugin (bridge, macvlan),
commands through the API server, a chain of two NF pods over a bridge, a
kernel pair of tester pods over macvlan, a pinned NF pod
that is Guaranteed on the core the kubelet gave it, its image pulled from the
cluster's registry, a switch pod (testpmd,
VPP on memif, OVS-DPDK with an NF pod on its vhost-user ports), a run killed with its pods up
and `cnfperf cleanup --cluster --images`, and a cluster that cannot take pods refused
before anything exists."""
from __future__ import annotations

import json
import signal
import time
import urllib.request

import pytest
from kubernetes import client

import harness
import leak
from cnfperf.cluster import node
from cnfperf.runtimes.pod import images, pods

pytestmark = [pytest.mark.e2e, pytest.mark.needs("ip")]

RATE = 2000
DURATION = 1.0
TIMEOUT = 300


@pytest.fixture(scope="module", autouse=True)
def warm(cluster, api):
    """One pod made and deleted before the tests: what the node makes at its
    first (its default network's bridge, the shims' folders) is the
    cluster's, not a test's leftover."""
    pods.create_namespace(api, "cnfptest-warm", {"cnfperf.test": "yes"})
    try:
        pods.start(api, "cnfptest-warm", pods.Pod("warm", node.PAUSE))
    finally:
        pods.delete_namespace(api, "cnfptest-warm")


@pytest.fixture
def after_pods():
    """Nothing of a run is left (the kubelet's dead containers' logs aside:
    its garbage collection's, once a minute)."""
    with leak.assert_no_leftovers(kubelet_gc=True):
        yield


def _run(cli, cluster, *args: str) -> dict:
    [point] = _points(cli, cluster, *args)
    return point


def _points(cli, cluster, *args: str, rates: str = str(RATE)) -> list[dict]:
    done = cli("run", *args, "--cluster", str(cluster.kubeconfig), "--rate", rates,
               "--duration", str(DURATION), "--warmup", "0.3", "--json", timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    assert run["status"] == "done", run
    return run["points"]


def _zero_loss(point: dict) -> None:
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair


def _pods_of(point: dict, cluster) -> dict:
    facts = point["cluster_facts"]
    assert facts["kubernetes"] == cluster.version and facts["node"] == cluster.node, facts
    assert facts["cpu_manager"] == "static", facts
    return facts["pods"]


def _accounts_hugepages(api, cluster) -> bool:
    """Whether the node offers hugepages (the conftest's cluster does where
    the host held some): DPDK pods then ask for theirs, else mount the data
    plane's from the host."""
    return pods.hugepages_mb(api, cluster.node) > 0


def _hugepages_of(pod: dict, accounted: bool) -> None:
    """A DPDK pod's hugepages: the node's (asked for; no hostPath of them)
    where it accounts them, else the data plane's hugetlbfs as a hostPath."""
    assert bool(pod["hugepages_mb"]) == accounted, pod
    assert any(v.endswith(".hugepages") for v in pod["volumes"]) != accounted, pod


def _no_run_namespaces(api) -> None:
    assert pods.namespaces(api, "cnfperf.run") == []


def test_a_chain_of_two_nf_pods_over_a_bridge_attachment(cluster, api, cli, after_pods):
    """The bridge plugin makes the NFs' ports (cni = bridge) on the data
    plane's bridge, its side of each veth renamed as the data plane's port of
    the bridge, which counts the chain's frames. Unpinned (two Guaranteed
    pods need more than this host's one core beside the system's): both
    BestEffort, on the kubelet's shared cores."""
    point = _run(cli, cluster, "--switch", "bridge", "--cni", "bridge", "--api", "raw",
                 "--nfs", "2", "--nf-api", "raw", "--nf-in", "pod", "--pin", "no")
    _zero_loss(point)
    placed = _pods_of(point, cluster)
    assert sorted(placed) == sorted(nf["name"] for p in point["placement"] for nf in p["nfs"])
    assert {f["qos"] for f in placed.values()} == {"BestEffort"}, placed
    assert {cni for f in placed.values() for cni in f["attached"].values()} == {"bridge"}
    [pair] = point["per_pair"]
    bridge_sides = [point["counters"][f"{port}h"] for f in placed.values()
                    for port in f["attached"]]
    assert len(bridge_sides) == 4
    assert sum(c["tx_packets"] + c["rx_packets"] for c in bridge_sides) >= 4 * pair["received"]
    _no_run_namespaces(api)


def test_tester_ends_in_pods_over_a_macvlan_attachment(cluster, api, cli, after_pods):
    """The macvlan plugin makes the ends' ports (cni = macvlan), on udp: the
    data plane's addresses and neighbours made again in the pods. Two points
    of one run: the second's pods and attachments take the names the first's
    had, in the run's one namespace."""
    points = _points(cli, cluster, "--switch", "macvlan", "--cni", "macvlan", "--api", "udp",
                     "--endpoint-in", "pod", "--pin", "no", "--tester", "split",
                     "--size", "64,1500")
    assert [p["size"] for p in points] == [64, 1500]
    for point in points:
        _zero_loss(point)
        placed = _pods_of(point, cluster)
        assert [list(f["attached"].values()) for f in placed.values()] == [["macvlan"]] * 2
    _no_run_namespaces(api)


def test_a_pinned_nf_pod_is_guaranteed_on_the_core_the_kubelet_gave(cluster, api, cli,
                                                                     after_pods):
    """The static CPU manager gives the pod core 1 (core 0 is the system's):
    the NF's engine runs there, whatever core the plan had. Its image is
    pushed to the cluster's registry (skopeo), and the node pulls it."""
    point = _run(cli, cluster, "--switch", "veth", "--api", "raw", "--nfs", "1",
                 "--nf-api", "raw", "--nf-in", "pod", "--tester", "single",
                 "--registry", cluster.registry)
    _zero_loss(point)
    [(name, facts)] = _pods_of(point, cluster).items()
    assert (facts["qos"], facts["cpus"]) == ("Guaranteed", "1"), facts
    assert sorted(facts["attached"]) == sorted(f"{name}{side}" for side in "ab"), facts
    repository, _, tag = facts["image"].rpartition(":")
    assert repository.startswith(cluster.registry.split("://")[1] + "/"), facts
    address = cluster.registry.split("/")[2]
    with urllib.request.urlopen(f"http://{address}/v2/{repository.split('/', 1)[1]}/tags/list",
                                timeout=10) as said:
        assert tag in json.load(said)["tags"]
    _no_run_namespaces(api)


def test_a_dpdk_pair_of_pods_over_memif_sockets_in_volumes(cluster, api, cli, after_pods):
    """The tester's ends as pods, on DPDK over memif: the socket's folder is
    a hostPath volume of each pod, and so are the run's hugepages where the
    node accounts none."""
    point = _run(cli, cluster, "--switch", "memif", "--api", "dpdk", "--endpoint-in", "pod",
                 "--pin", "no", "--tester", "split")
    _zero_loss(point)
    placed = _pods_of(point, cluster)
    assert len(placed) == 2 and not any(f["attached"] for f in placed.values()), placed
    for pod in placed.values():
        assert pod["volumes"], pod             # the socket's folder
        _hugepages_of(pod, _accounts_hugepages(api, cluster))
    _no_run_namespaces(api)


def test_a_testpmd_switch_pod_kept_between_points(cluster, api, cli, after_pods):
    """The switch in a pod of its own (switch_in = pod), Guaranteed on the
    core the kubelet gave (its poll thread's), kept from the first point to
    the second, gone before the run's namespace."""
    points = _points(cli, cluster, "--switch", "testpmd", "--api", "dpdk", "--switch-in", "pod",
                     "--tester", "split", rates=f"{RATE // 2},{RATE}")
    assert len(points) == 2
    for point in points:
        [pair] = point["per_pair"]
        assert pair["lost"] == 0 and pair["received"] == pair["sent"] > 0, pair
        [(name, facts)] = _pods_of(point, cluster).items()
        assert name.endswith("sw") and (facts["qos"], facts["cpus"]) == ("Guaranteed", "1"), facts
    _no_run_namespaces(api)


@pytest.mark.needs("vpp")
def test_a_vpp_switch_pod_on_memif(cluster, api, cli, after_pods):
    """CSIT's container path with VPP itself in a pod: VPP's own image (its
    build's program and plugins), Guaranteed on the core the kubelet gave
    (its main thread's: VPP pins it there), memif sockets in its hostPath
    run directory, its CLI read from the host."""
    point = _run(cli, cluster, "--switch", "vpp-memif", "--api", "dpdk", "--switch-in", "pod",
                 "--tester", "single")
    _zero_loss(point)
    [(name, facts)] = _pods_of(point, cluster).items()
    assert name.endswith("sw") and (facts["qos"], facts["cpus"]) == ("Guaranteed", "1"), facts
    assert "/switch-vpp:" in facts["image"], facts
    assert {q["core"] for q in point["queues"]} == {1}, point["queues"]
    _no_run_namespaces(api)


def test_an_nf_pod_behind_an_ovs_dpdk_switch_pod(cluster, api, cli, after_pods):
    """The DPDK path of a CNF: OVS-DPDK in a pod, an NF pod on its vhost-user
    sockets (a hostPath volume, with the run's hugepages where the node
    accounts none); unpinned, both on the kubelet's shared cores."""
    point = _run(cli, cluster, "--switch", "ovs", "--api", "dpdk", "--switch-in", "pod",
                 "--nfs", "1", "--nf-api", "dpdk", "--nf-in", "pod", "--pin", "no",
                 "--tester", "split")
    _zero_loss(point)
    placed = _pods_of(point, cluster)
    accounted = _accounts_hugepages(api, cluster)
    # a pod of hugepages asks for its memory too: Burstable
    assert {f["qos"] for f in placed.values()} == {"Burstable" if accounted else "BestEffort"}, \
        placed
    switch = next(name for name in placed if name.endswith("sw"))
    assert placed.pop(switch)["volumes"], placed
    [nf] = placed.values()
    # the sockets' folder, and the hugepages' where the node accounts none
    assert not nf["attached"] and len(nf["volumes"]) == 2 - accounted, nf
    _hugepages_of(nf, accounted)
    _no_run_namespaces(api)


def test_a_killed_run_s_pods_go_with_cleanup_cluster(cluster, api, start_cli, cli,
                                                      after_pods):
    proc = start_cli("run", "--switch", "veth", "--api", "raw", "--nfs", "1", "--nf-api", "raw",
                     "--nf-in", "pod", "--pin", "no", "--cluster", str(cluster.kubeconfig),
                     "--rate", str(RATE), "--duration", "60")
    try:
        deadline = time.monotonic() + TIMEOUT
        while not any(p for ns in pods.namespaces(api, "cnfperf.run")
                      for p in pods.running(api, ns)):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no pod ran"
            time.sleep(0.5)
        time.sleep(2)     # the trial's engines started in it
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    done = cli("cleanup", "--cluster", str(cluster.kubeconfig), "--images", timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert "namespace cnfp" in done.stdout, done.stdout
    _no_run_namespaces(api)
    # its images too (--images): none of cnfperf's is left in the node but the sandbox's
    assert f"image {images.REGISTRY}/minimal:" in done.stdout, done.stdout
    left = images.ctr(cluster.containerd, "images", "ls", "-q").split()
    assert [r for r in left if r.startswith(images.REGISTRY)] == [node.PAUSE], left


DEAD = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def _refused(cli, kubeconfig, said: str) -> None:
    done = cli("run", "--nfs", "1", "--nf-in", "pod", "--cluster", str(kubeconfig),
               "--duration", "1")
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert f"cluster: {kubeconfig}" in line or f"cluster: kubeconfig {kubeconfig}" in line, line
    assert said in line, line


def test_a_cluster_that_cannot_take_pods_is_refused_in_one_line(cluster, api, cli, tmp_path):
    """A kubeconfig that does not load, a file that is not there, an API
    server that does not answer, a cluster without Multus (its CRD deleted
    for the test, put back after): exit 2, one line, nothing made."""
    bad = tmp_path / "kubeconfig"
    bad.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    dead = tmp_path / "dead"
    dead.write_text(DEAD)
    _refused(cli, bad, "current-context")
    _refused(cli, tmp_path / "missing", "no such file")
    _refused(cli, dead, "does not answer (Connection refused)")
    done = cli("cleanup", "--cluster", str(bad))
    assert done.returncode == 2 and "--cluster" in done.stderr, done.stderr
    crds = client.ApiextensionsV1Api(api)
    name = f"{pods.NAD_PLURAL}.{pods.NAD_GROUP}"
    crd = api.sanitize_for_serialization(crds.read_custom_resource_definition(name))
    crds.delete_custom_resource_definition(name)
    try:
        while pods.has_attachments(api):
            time.sleep(0.2)
        _refused(cli, cluster.kubeconfig, "is Multus installed?")
    finally:
        crd["metadata"] = {"name": name}
        crd.pop("status", None)
        crds.create_custom_resource_definition(crd)
