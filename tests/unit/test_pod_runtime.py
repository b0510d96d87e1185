"""The pod runtime's parts that need no cluster: the pod it asks for (Multus'
selections keep each port's name, a Guaranteed pod when pinned, a quota as
its CPU request and limit, mounts as hostPath volumes), the cores the kubelet
gave in place of the planned ones, a scenario without pods asks nothing of a
cluster, a switch pod's checks, a command's pid on this host."""
from __future__ import annotations

import json
import os
import subprocess
from types import SimpleNamespace

import pytest

from cnfperf import UserError
from cnfperf.cli import main
from cnfperf.runtimes.pod import pods
from cnfperf.runtimes.pod.runtime import (TEST_KUBECONFIG, PodContainer, PodRuntime, _cpu_list,
                                          _nad, _on_host, kubeconfig_of)
from cnfperf.runtimes.pod.process import copy_to
from harness import scenarios


def test_selections_keep_each_port_s_name_and_a_pinned_pod_is_guaranteed(tmp_path):
    pod = pods.Pod("cnfp1a2bn0", "localhost/cnfperf/full:0",
                   networks=[{"name": "cnfp1a2bn0a", "interface": "cnfp1a2bn0a"}], cpus=2,
                   host_paths={str(tmp_path): "/sockets"}, labels={"cnfperf.run": "cnfp1a2b"})
    made = pod.manifest()
    said = json.loads(made["metadata"]["annotations"][pods.NETWORKS])
    assert said == [{"name": "cnfp1a2bn0a", "interface": "cnfp1a2bn0a"}]
    [main] = made["spec"]["containers"]
    assert main["resources"]["requests"] == main["resources"]["limits"] == \
        {"cpu": "2", "memory": "256Mi"}
    assert made["spec"]["volumes"] == [{"name": "host0", "hostPath": {
        "path": str(tmp_path), "type": "DirectoryOrCreate"}}]
    assert main["volumeMounts"] == [{"name": "host0", "mountPath": "/sockets"}]
    assert made["metadata"]["labels"] == {"cnfperf.run": "cnfp1a2b"}


def test_names_alone_stay_multus_short_form_and_a_quota_is_a_cpu_limit(tmp_path):
    sock = tmp_path / "s.sock"
    sock.write_text("")
    made = pods.Pod("p", "i", networks=["a", "b"], cpu_limit="500m",
                    host_paths={str(sock): "/run/s.sock"}).manifest()
    assert made["metadata"]["annotations"][pods.NETWORKS] == "a,b"
    assert made["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "500m"},
                                                          "requests": {"cpu": "500m"}}
    whole = pods.Pod("p", "i", cpu_limit="1000m").manifest()["spec"]["containers"][0]
    assert "memory" not in whole["resources"]["limits"]   # Burstable: no exclusive core
    assert made["spec"]["volumes"][0]["hostPath"]["type"] == ""


def test_hugepages_the_node_accounts_are_the_pod_s_request_and_a_hugetlbfs_of_its_own():
    """A DPDK process's pages as hugepages-2Mi, its request equal to its
    limit (rounded up to whole pages), an emptyDir of medium HugePages where
    the data plane's hugetlbfs was; a pod of no cores asks for memory too
    (Kubernetes refuses hugepages alone)."""
    pinned = pods.Pod("p", "i", cpus=1, hugepages=["/run/cnfperf/x/huge"], hugepages_mb=129)
    [main] = pinned.manifest()["spec"]["containers"]
    assert main["resources"]["requests"] == main["resources"]["limits"] == \
        {"cpu": "1", "memory": "256Mi", pods.HUGEPAGES: "130Mi"}
    made = pods.Pod("p", "i", hugepages=["/h"], hugepages_mb=64).manifest()
    [main] = made["spec"]["containers"]
    assert main["resources"] == {"limits": {pods.HUGEPAGES: "64Mi"},
                                 "requests": {"memory": "256Mi", pods.HUGEPAGES: "64Mi"}}
    assert made["spec"]["volumes"] == [{"name": "huge0", "emptyDir": {"medium": "HugePages-2Mi"}}]
    assert main["volumeMounts"] == [{"name": "huge0", "mountPath": "/h"}]
    quota = pods.Pod("p", "i", cpu_limit="500m", hugepages=["/h"], hugepages_mb=64).manifest()
    assert quota["spec"]["containers"][0]["resources"]["limits"] == \
        {"cpu": "500m", pods.HUGEPAGES: "64Mi"}


def test_a_node_s_mounts_are_each_once_and_its_ports_hugepages_summed():
    """Each port names the sockets and the hugepages (its engine's pool):
    one mount each, the hugepages the sum of the ports' (the engine's -m)."""
    from cnfperf.runtimes import Mount, gathered
    sock, huge = Mount("/s", "/s"), Mount("/h", "/h", hugepages_mb=64)
    assert gathered([sock, huge, sock, huge]) == (sock, Mount("/h", "/h", hugepages_mb=128))
    assert gathered([sock, sock]) == (sock,)


def test_the_planned_cores_map_onto_those_the_kubelet_gave():
    c = PodContainer(journal=None, name="p", cpus=(0, 1), netns="p", engine="/bin/e",
                     cluster=None, attached={}, given=(2, 3), host_pid=None)
    assert [c.guest_cpu(core) for core in (0, 1)] == [2, 3]
    assert c.guest_cpu(3) == 3            # one it was given is its own
    on = SimpleNamespace(node="dut")      # the run's side of the cluster: its node
    same = PodContainer(journal=None, name="p", cpus=(0,), netns="p", engine="/bin/e",
                        cluster=on, attached={}, given=(0, 1), host_pid=None, qos="BestEffort")
    assert same.guest_cpu(0) == 0
    assert same.facts() == {"node": "dut", "qos": "BestEffort", "cpus": "0-1", "attached": {},
                            "volumes": [], "hugepages_mb": None, "image": ""}


def test_the_kernel_s_cpu_lists_and_names_kubernetes_takes():
    assert _cpu_list("0,2-4,7") == (0, 2, 3, 4, 7) and _cpu_list("") == ()
    assert _nad("cnfp1A2b_n0.a") == "cnfp1a2b-n0-a"


def test_a_scenario_without_pods_asks_nothing_of_a_cluster():
    plain = SimpleNamespace(endpoint_in="container", nf_in="vm+container", switch_in="container",
                            cluster="/nowhere")
    assert PodRuntime.scenario_problem(plain) is None
    assert kubeconfig_of(SimpleNamespace(cluster="")) == TEST_KUBECONFIG
    for pods_at in ({"nf_in": "pod"}, {"switch_in": "pod"}, {"endpoint_in": "pod"}):
        missing = SimpleNamespace(**{**vars(plain), "cluster": "/nowhere/kc", **pods_at})
        field, why = PodRuntime.scenario_problem(missing)
        assert field == "cluster" and "/nowhere/kc" in why
        assert PodRuntime.placement_problem(missing) == why


def test_every_node_s_container_says_its_facts():
    """The testbed asks every node's container (Testbed.facts): one on
    another host too, which holds no pod."""
    from cnfperf.remote.parts import RemoteContainer
    assert RemoteContainer(agent=None, name="n", engine="e").facts() == {}


def test_a_switch_pod_takes_a_switch_with_processes_and_may_have_a_quota():
    with pytest.raises(UserError, match="bridge does not run in a pod of its own; testpmd") as e:
        scenarios(None, {"switch": "bridge", "switch_in": "pod"})
    assert e.value.field == "switch_in"
    with pytest.raises(UserError, match="set switch_in = container or pod") as e:
        scenarios(None, {"switch": "testpmd", "api": "dpdk", "switch_quota": 50})
    assert e.value.field == "switch_quota"


def test_a_command_s_pid_in_its_pod_is_found_on_this_host_and_its_streams_are_files():
    """A journal keeps host pids (`cnfperf cleanup` kills them): a pod's own
    would name another process here. Here: this process, in this host's pid
    namespace, whose pid is its own."""
    me = os.getpid()
    assert _on_host(me, me) == me
    assert _on_host(None, me) == 0 and _on_host(me, 2 ** 22 + 1) == 0
    # its streams go where Popen's would: none of the caller's descriptors is kept
    read, write = os.pipe()
    assert [copy_to(x) for x in (subprocess.PIPE, None)] == [None, None]
    for given in (write, os.fdopen(os.dup(write), "wb"), subprocess.DEVNULL):
        mine = copy_to(given)
        assert mine not in (None, write) and os.fstat(mine) and os.close(mine) is None
    os.close(read), os.close(write)


def test_cni_names_the_plugin_of_the_switch_s_kind_for_pods_ports():
    with pytest.raises(UserError, match="makes ports of switch = macvlan, not of bridge") as e:
        scenarios(None, {"switch": "bridge", "cni": "macvlan", "endpoint_in": "pod"})
    assert e.value.field == "cni"
    with pytest.raises(UserError, match="makes the ports of pods: set endpoint_in or nf_in"):
        scenarios(None, {"switch": "macvlan", "cni": "macvlan"})
    with pytest.raises(UserError, match="plugin makes the pod's ports again") as e:
        scenarios(None, {"switch": "bridge", "cni": "bridge", "endpoint_in": "pod",
                         "shaper": "tbf", "shaper_rate": "1k"})
    assert e.value.field == "shaper"


def test_a_registry_is_a_host_with_http_or_https():
    with pytest.raises(UserError, match=r"ftp://r: \[http://\|https://\]HOST") as e:
        scenarios(None, {"nfs": 1, "nf_in": "pod", "registry": "ftp://r"})
    assert e.value.field == "registry"


def test_cleanup_images_names_the_cluster_whose_node_holds_them(capsys):
    if os.geteuid() != 0:
        pytest.skip("cnfperf cleanup needs root (it says so first)")
    assert main(["cleanup", "--images"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "--images" in line and "--cluster FILE" in line


def test_the_hosts_whose_part_has_a_pod_check_their_own_node():
    """Each host places its own pods on its node (run/checks/host.py
    pod_hosts): the tester's ends' hosts, the switch's, the NFs'."""
    from cnfperf.run.checks.host import pod_hosts
    from cnfperf.scenario import validate
    ends = validate({"switch": "bridge", "api": "raw", "endpoint_in": "pod", "pin": False,
                     "tester_host": "local+dut", "dut_host": "dut"})
    assert pod_hosts(ends) == {"local", "dut"}
    switch = validate({"switch": "testpmd", "api": "dpdk", "switch_in": "pod", "dut_host": "dut"})
    assert pod_hosts(switch) == {"dut"}
    assert pod_hosts(validate({"switch": "bridge", "api": "raw", "dut_host": "dut"})) == set()


def test_a_controller_whose_point_has_all_its_pods_elsewhere_need_be_no_node(monkeypatch):
    """Only a host that builds a pod must be a node of the cluster: the
    controller of a point whose pods are all on dut is asked nothing of its
    own node, dut is (the cluster itself answers)."""
    from cnfperf.run.checks import host
    from cnfperf.scenario import validate
    asked = []
    monkeypatch.setattr(PodRuntime, "node_problem",
                        classmethod(lambda cls, s: asked.append(s) or "no node here"))
    on_dut = validate({"switch": "bridge", "api": "raw", "endpoint_in": "pod", "pin": False,
                       "tester_host": "dut", "dut_host": "dut", "cluster": "/kc"})
    assert host.host_refusals([on_dut]) == [] and asked == []
    assert host.host_refusals([on_dut], here="dut") == [("cluster", "no node here")]
    here = validate({"switch": "bridge", "api": "raw", "endpoint_in": "pod", "pin": False,
                     "tester_host": "local+dut", "dut_host": "dut", "cluster": "/kc"})
    assert host.host_refusals([here]) == [("cluster", "no node here")]
