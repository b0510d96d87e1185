"""Pods on the test cluster as cnfperf makes them: from cnfperf's own image
imported into the node, with a data-plane interface Multus attaches (a
macvlan NetworkAttachmentDefinition), commands run in them through the API
server, and a Guaranteed pod on a core of its own (the static CPU manager)."""
from __future__ import annotations

import json
import signal
import subprocess

import pytest

from cnfperf.cluster import node
from cnfperf.runtimes.pod import images, pods
from cnfperf.runtimes.pod.pods import ClusterError
from cnfperf.runtimes.pod.process import Process
from cnfperf.runtimes import rootfs
from cnfperf.runtimes.images import FULL

pytestmark = [pytest.mark.e2e, pytest.mark.needs("ip")]
PARENT = "cnfpkv0"     # the macvlan's parent: a veth (this kernel has no dummy links)


@pytest.fixture(scope="module")
def full_image(cluster, engine):
    return images.load_image(cluster.containerd, rootfs.spec_for(FULL, engine))


@pytest.fixture
def parent():
    subprocess.run(["ip", "link", "add", PARENT, "type", "veth", "peer", "name", "cnfpkv1"],
                   check=True)
    try:
        for link in (PARENT, "cnfpkv1"):
            subprocess.run(["ip", "link", "set", link, "up"], check=True)
        yield PARENT
    finally:
        subprocess.run(["ip", "link", "del", PARENT], check=False)


def test_a_pod_gets_a_macvlan_attachment_and_runs_commands(api, namespace, full_image, parent,
                                                          engine):
    pods.attach(api, namespace, "mv", {
        "cniVersion": "0.3.1", "name": f"{node.NETWORK}-mv", "type": "macvlan",
        "master": parent, "mode": "bridge",
        "ipam": {"type": "static", "addresses": [{"address": "10.9.0.2/24"}]}})
    got = pods.start(api, namespace, pods.Pod("nf", full_image, networks=["mv"]))
    said = pods.attachments(got)
    assert [a["interface"] for a in said if "interface" in a][-1] == "net1", said
    assert said[-1]["ips"] == ["10.9.0.2"]
    shown = pods.run(api, namespace, "nf", ["ip", "-o", "addr", "show", "net1"], check=True)
    assert "10.9.0.2/24" in shown.stdout
    version = pods.run(api, namespace, "nf", [FULL.path, "--version"], check=True)
    assert "apis" in json.loads(version.stdout)
    failed = pods.run(api, namespace, "nf", ["sh", "-c", "echo no >&2; exit 7"])
    assert (failed.returncode, failed.stderr) == (7, "no\n")
    with pytest.raises(ClusterError, match="exited 7: no"):
        pods.run(api, namespace, "nf", ["sh", "-c", "echo no >&2; exit 7"], check=True)


def test_a_guaranteed_pod_has_a_core_of_its_own(api, namespace, full_image):
    """Core 0 is the system's (reservedSystemCPUs): the Guaranteed pod's
    whole core is 1, and a pod without a request shares what is left."""
    got = pods.start(api, namespace, pods.Pod("pinned", full_image, cpus=1))
    assert got.status.qos_class == "Guaranteed"
    shared = pods.start(api, namespace, pods.Pod("shared", full_image))
    assert shared.status.qos_class == "BestEffort"

    def cpus(pod: str) -> str:
        status = pods.run(api, namespace, pod, ["cat", "/proc/self/status"], check=True).stdout
        return next(line.split()[1] for line in status.splitlines()
                    if line.startswith("Cpus_allowed_list"))
    assert (cpus("pinned"), cpus("shared")) == ("1", "0")


def test_a_pod_that_cannot_start_says_why(api, namespace):
    with pytest.raises(ClusterError, match="ErrImageNeverPull|ErrImagePull|ImagePullBackOff"):
        pods.start(api, namespace, pods.Pod("nothing", images.reference("nothing", "0")),
                   timeout=30)


def test_a_process_in_a_pod_is_read_and_signalled_as_a_local_one(api, namespace, full_image,
                                                                   tmp_path):
    """Its stdout a pipe, its stderr where asked, its environment added to,
    a signal delivered by a second exec, its exit status that of the command,
    its stdin a pipe to the end of file."""
    pods.start(api, namespace, pods.Pod("p", full_image))
    waits = Process(api, namespace, "p", [
        "sh", "-c", 'trap "echo got INT; exit 3" INT; echo ready; while :; do sleep 0.1; done'])
    assert waits.inner > 1 and waits.pid == 0 and waits.poll() is None   # no host pid asked
    assert waits.stdout.readline() == b"ready\n"
    waits.send_signal(signal.SIGINT)
    assert waits.wait(30) == 3
    assert waits.stdout.read() == b"got INT\n"
    with open(tmp_path / "err", "wb") as err:
        said = Process(api, namespace, "p", ["sh", "-c", 'echo "$V"; echo no >&2; exit 4'],
                       stderr=err, env={"V": "it is set"})
        assert said.wait(30) == 4
    assert said.stdout.read() == b"it is set\n"
    assert (tmp_path / "err").read_bytes() == b"no\n"
    # its stdin a pipe, whose close is its end of file (an engine's --hold ends on it)
    echo = Process(api, namespace, "p", ["sh", "-c", "cat; echo end"], stdin=True)
    echo.stdin.write(b"line\n")
    echo.stdin.close()
    assert echo.wait(30) == 0 and echo.stdout.read() == b"line\nend\n"
