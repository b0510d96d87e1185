"""pod: a node's container is a pod on a Kubernetes cluster (nf_in or
endpoint_in = pod; the switch's with switch_in = pod), on the cluster's node
that is this machine.

The data plane makes a node's ports in its netns as for any container. The
pod takes them through Multus: each is a NetworkAttachmentDefinition, by
default host-device's (a link moved into the pod's netns with its name and
MAC), so every data plane whose ports are links serves pods unchanged; or,
with `cni`, made again by the macvlan or bridge plugin (ports.py). Once the
pod runs, the node's netns name is the pod's netns (`ip netns attach`): what
reads counters, makes a router of an NF or tears a port down finds it where
it looks for any node's.
When the pod goes, host-device gives the links back to this host's netns, and
they are deleted (a plugin's go with the pod).

A run's pods live in a namespace of its own (labelled cnfperf.run), made at the
first pod and journaled with its kubeconfig: `cnfperf cleanup` deletes it for a
killed run, and `cnfperf cleanup --cluster FILE` every such namespace there.
Pinned (a core each, no quota) a pod is Guaranteed with whole cores: exclusive
where the kubelet runs the static CPU manager, which picks them (guest_cpu maps
the planned cores to those). A quota is the pod's CPU request and limit. The
hugepages a DPDK process takes (Mount.hugepages_mb) are the pod's request of
the node's `hugepages-2Mi`, a hugetlbfs of its own (an emptyDir) where they
were, when the node accounts them; else the data plane's hugetlbfs is a
hostPath volume like the rest.
"""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from cnfperf.host import buckets, tools
from cnfperf.host.journal import RUN_DIR
from cnfperf.host.links import del_link, ip, quiet_netns
from cnfperf.host.system import run

from .. import rootfs
from ..base import (Container, ContainerError, ImageInfo, Journal, Mount, Nic, Quota, Runtime,
                    check_no_nics, check_request, cpu_list)
from ..images import FULL, Image
from . import images, pods, ports
from .pods import ClusterError
from .ports import HOST_DEVICE
from .process import Process

KIND = "pod-namespace"      # a run's namespace, journaled with its kubeconfig
LABEL = "cnfperf.run"       # on a run's namespaces: what `cleanup --cluster` deletes
# The test cluster's (`cnfperf cluster`: cluster/node.py keeps it there): a
# scenario without `cluster` uses it.
TEST_HOME = RUN_DIR / "cluster"
TEST_KUBECONFIG = TEST_HOME / "admin.kubeconfig"
TEST_CONTAINERD = TEST_HOME / "containerd.sock"
NODE_CONTAINERD = Path("/run/containerd/containerd.sock")   # a node's own containerd
STREAM_END_S = 10.0         # a command's exec stream, once its pod is gone


def holds_pods(s: Any) -> bool:
    """Whether a scenario puts a node in a pod: a tester's end, an NF or the switch."""
    return PodRuntime.place in (s.endpoint_in, s.switch_in, *s.nf_in.split("+"))


def kubeconfig_of(s: Any) -> Path:
    """The kubeconfig a scenario's pods go to: its `cluster`, else the test cluster's."""
    return Path(s.cluster) if getattr(s, "cluster", "") else TEST_KUBECONFIG


def containerd_of(kubeconfig: Path) -> Path:
    """The node's containerd, which cnfperf's images are imported into: the
    test cluster's own, else the node's usual socket."""
    return TEST_CONTAINERD if kubeconfig == TEST_KUBECONFIG else NODE_CONTAINERD


class PodContainer(Container):
    """A pod of cnfperf's: exec() runs a command in it through the API server
    (process.Process, a Popen's surface); its cores are those the kubelet gave it."""

    def __init__(self, journal: Journal, name: str, cpus: tuple[int, ...], netns: str,
                 engine: str, cluster: "Cluster", attached: Mapping[str, str],
                 given: tuple[int, ...], host_pid: int | None, qos: str | None = None):
        super().__init__(journal, name, cpus, netns, engine)
        self.cluster = cluster
        self.attached = dict(attached)   # its ports that are links: the CNI plugin of each
        self.given = given          # the cores its processes may run on, as the kubelet set
        self._host_pid = host_pid
        self.qos = qos              # its QoS class: Guaranteed when pinned
        self.volumes: tuple[str, ...] = ()   # host paths mounted (hostPath volumes)
        self.hugepages_mb = 0       # the node's hugepages it asked for (0: none asked)
        self.image = ""             # its image's reference (imported, or in a registry)
        # its ports that come back, not deleted: NICs lent for the point, devices (a VF)
        self.kept: frozenset[str] = frozenset()

    def exec(self, argv: list[str], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
             stdin=subprocess.DEVNULL, env: Mapping[str, str] | None = None) -> Any:
        """argv in the pod's container: its stdout and stderr where Popen's
        would go (process.Process: a pipe, a file, a switch's terminal), its
        stdin a pipe when asked (else empty), signals by a second exec's kill."""
        if self._destroyed:
            raise ContainerError(f"exec in {self.name}: container was destroyed")
        proc = Process(self.cluster.api, self.cluster.namespace, self.name, argv,
                       stderr=stderr, env=dict(env or {}),
                       stdin=stdin == subprocess.PIPE, stdout=stdout,
                       on_host=lambda inner: _on_host(self._host_pid, inner))
        self._procs.append(proc)   # type: ignore[arg-type]
        return proc

    def _command(self, argv: list[str], env: dict[str, str]) -> list[str]:
        raise ContainerError("a pod's commands run through the API server (exec)")

    @property
    def pids(self) -> list[int]:
        return [self._host_pid] if self._host_pid else []

    @property
    def init_pid(self) -> int | None:
        """A process of the pod on this host: its cgroup is the pod's container's."""
        return self._host_pid

    def facts(self) -> dict[str, Any]:
        """Its node, QoS class, the cores it was given, its ports that are
        links with the CNI plugin that attached each, the host paths it
        mounts (sockets, hugepages: hostPath volumes), the node's hugepages it
        asked for and its image's reference."""
        return {"node": self.cluster.node, "qos": self.qos,
                "cpus": cpu_list(self.given) if self.given else None,
                "attached": dict(self.attached), "volumes": list(self.volumes),
                "hugepages_mb": self.hugepages_mb or None, "image": self.image}

    def guest_cpu(self, core: int) -> int:
        """The core the kubelet gave in place of planned core `core`: the
        planned ones in order onto the given ones (the same where they agree)."""
        if core in self.given or not self.given:
            return core
        planned = sorted(self.cpus)
        return sorted(self.given)[planned.index(core) % len(self.given)] \
            if core in planned else core

    def destroy(self) -> None:
        if self._destroyed:
            return
        self._destroyed = True
        try:
            self.cluster.delete(self.name)
            for link in self.attached:   # the next point's ports have these names again
                pods.detach(self.cluster.api, self.cluster.namespace, _nad(link))
        finally:
            # its commands ended with it: their streams close (a kill would
            # need the pod)
            for proc in self._procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(STREAM_END_S)
            for link, cni in self.attached.items():
                # host-device gave them back to this host's netns: a lent NIC
                # is given back from there as it was lent (links.give_back_nic),
                # a device (a VF) stays for its data plane
                if cni == HOST_DEVICE and link not in self.kept:
                    del_link(link, None)
                    self.journal.discard("link", link)


class Cluster:
    """A run's side of one cluster: its client, its node and its namespace
    (made at the first pod)."""

    def __init__(self, journal: Journal, kubeconfig: Path, namespace: str):
        self.journal = journal
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.api = pods.connect(kubeconfig)
        self.node = pods.local_node(self.api)
        self.hugepages_mb = pods.hugepages_mb(self.api, self.node)   # 0: the node accounts none
        self._made = False
        self._images: dict[tuple[str, str], str] = {}

    def ensure_namespace(self) -> None:
        if self._made:
            return
        self.journal.add(KIND, self.namespace, kubeconfig=str(self.kubeconfig))
        pods.create_namespace(self.api, self.namespace, {LABEL: self.namespace})
        self._made = True

    def image(self, spec: rootfs.ImageSpec, registry: str = "") -> str:
        """The image imported into the node's containerd, or pushed to the
        registry its nodes pull from (once per content and place)."""
        key = (registry, spec.digest())
        if key not in self._images:
            self._images[key] = images.push(registry, spec) if registry else \
                images.load_image(containerd_of(self.kubeconfig), spec)
        return self._images[key]

    def delete(self, pod: str) -> None:
        pods.delete(self.api, self.namespace, pod)

    def close(self) -> str | None:
        """The run's namespace deleted, with what is still in it; what it was."""
        if not self._made:
            return None
        pods.delete_namespace(self.api, self.namespace)
        self.journal.discard(KIND, self.namespace)
        self._made = False
        return f"namespace {self.namespace} of cluster {self.kubeconfig}"


class PodRuntime(Runtime):
    name = "pod"
    place = "pod"
    takes_ports = True

    def __init__(self, journal: Journal, state_dir: Path):
        super().__init__(journal, state_dir)
        self.specs: dict[Image, rootfs.ImageSpec] = {}
        self.cluster: Cluster | None = None
        self.pinned = False
        self.cni = HOST_DEVICE
        self.registry = ""

    @classmethod
    def check(cls) -> list[str]:
        return cls._needs("ip")

    @classmethod
    def scenario_problem(cls, s: Any) -> tuple[str, str] | None:
        """A `cni` the point's ports cannot take, a cluster that cannot take
        its pods (placement_problem): a run refuses them as bad input."""
        if (problem := cls._cni_problem(s)) is not None:
            return problem
        registry = getattr(s, "registry", "")
        if registry and holds_pods(s):
            if registry.split("://", 1)[0] not in ("http", "https", registry):
                return "registry", f"{registry}: [http://|https://]HOST[:PORT][/PATH]"
            if missing := tools.problems("skopeo"):
                return "registry", f"pushing images to {registry}: {missing[0]}"
        why = cls.placement_problem(s)
        return None if why is None else ("cluster", why)

    @classmethod
    def _cni_problem(cls, s: Any) -> tuple[str, str] | None:
        """A plugin other than host-device makes the ports of pods of its own
        switch's kind, and without what a kernel policer or shaper put on them."""
        cni = getattr(s, "cni", HOST_DEVICE)
        if cni == HOST_DEVICE:
            return None
        if cni != s.switch:
            return "cni", f"the {cni} plugin makes ports of switch = {cni}, not of {s.switch}"
        if cls.place not in (s.endpoint_in, *s.nf_in.split("+")):
            return "cni", (f"the {cni} plugin makes the ports of pods: set endpoint_in or "
                           "nf_in = pod")
        kernel = [f for f, on in (("policer", s.policer in buckets.POLICERS),
                                  ("shaper", s.shaper in buckets.SHAPERS),
                                  ("limit", bool(s.limit.pps))) if on]
        if kernel:
            return kernel[0], (f"{getattr(s, kernel[0])} on a kernel link with cni = {cni}: the "
                               "plugin makes the pod's ports again, without it (cni = "
                               "host-device keeps them)")
        return None

    @classmethod
    def placement_problem(cls, s: Any) -> str | None:
        """Why the cluster cannot take the scenario's pods: its kubeconfig,
        its API server, Multus' attachments; None where it can, or no node
        is a pod. Whether this host is one of its nodes is node_problem()'s:
        only a host that builds a pod must be."""
        if not holds_pods(s):
            return None
        return cls._cluster_problem(s, lambda api: None)

    @classmethod
    def node_problem(cls, s: Any) -> str | None:
        """Why this host's pods cannot go to the cluster: placement_problem(),
        or none of its nodes is this host."""
        if not holds_pods(s):
            return None
        return cls._cluster_problem(s, pods.local_node)

    @classmethod
    def _cluster_problem(cls, s: Any, then: Callable[[Any], object]) -> str | None:
        if not getattr(s, "cluster", "") and not TEST_KUBECONFIG.exists():
            return ("no cluster named, and the test cluster does not run (start it: cnfperf "
                    "cluster; or name a kubeconfig: cluster = FILE)")
        kubeconfig = kubeconfig_of(s)
        try:
            api = pods.connect(kubeconfig, retries=0)
            if not pods.has_attachments(api):
                return (f"{kubeconfig}: the cluster has no NetworkAttachmentDefinition "
                        "(k8s.cni.cncf.io/v1): is Multus installed?")
            then(api)
        except ClusterError as e:   # it names the file
            return str(e)
        except Exception as e:      # a refused connection: said in one line
            return f"{kubeconfig}: {pods.one_line(e)}"
        return None

    def prepare(self, engine: Path, image: Image = FULL) -> ImageInfo:
        """The image's content (as the other runtimes build it, with a shell:
        commands reach a pod through `sh`); imported at the first pod."""
        if image.user:
            raise ContainerError(f"image {image.name}: a user's image runs in podman")
        spec = rootfs.spec_for(replace(image, shell=True, idle=()) if not image.shell else image,
                               engine)
        self.specs[image] = spec
        info = rootfs.build(spec, rootfs.images_dir())
        return ImageInfo(name=image.name, path=info.path, size_bytes=info.size_bytes)

    def configure_for(self, s: Any) -> None:
        kubeconfig = kubeconfig_of(s)
        if self.cluster is None or self.cluster.kubeconfig != kubeconfig:
            if self.cluster is not None:
                self.cluster.close()
            # the run's name (its state folder's: cnfp and its id)
            self.cluster = Cluster(self.journal, kubeconfig, _nad(self.state_dir.name))
        self.pinned = bool(getattr(s, "pin", True))
        self.cni = getattr(s, "cni", HOST_DEVICE)
        self.registry = getattr(s, "registry", "")

    def create(self, name: str, cpus: Sequence[int], netns: str,
               mounts: Sequence[Mount] = (), image: Image = FULL,
               quota: Quota | None = None, nics: Sequence[Nic] = (),
               lazy: bool = False) -> PodContainer:
        check_no_nics(nics)
        if image not in self.specs:
            raise RuntimeError(f"PodRuntime.create(image={image.name!r}) before prepare()")
        if self.cluster is None:
            raise RuntimeError("PodRuntime.create before configure_for()")
        cpus, _ = check_request(name, cpus, netns, mounts, quota)
        cluster = self.cluster
        ref = cluster.image(self.specs[image], self.registry)
        cluster.ensure_namespace()
        taken = [ports.take(l, netns, self.cni) for l in _links(netns) if l != "lo"]
        links = [port.link for port in taken]
        # a wire's NIC in the node's netns (dataplanes/nic.py) is journaled as
        # lent, and comes back from this host's netns; a device (an SR-IOV
        # VF) cannot be deleted: its data plane takes it back
        kept = frozenset(e.name for e in self.journal.live() if e.kind == "nic") & set(links) | \
            frozenset(l for l in links if _is_device(l, netns))
        # the node's accounted hugepages in place of the data plane's hugetlbfs
        huge = [m for m in mounts if m.hugepages_mb] if cluster.hugepages_mb else []
        shared = [m for m in mounts if m not in huge]
        try:
            for port in taken:
                ports.give(port, netns, None if port.link in kept else self.journal)
                pods.attach(cluster.api, cluster.namespace, _nad(port.link),
                            {"cniVersion": "0.3.1", "name": f"cnfperf-{_nad(port.link)}",
                             **port.config})
            pod = pods.Pod(name.lower(), ref, networks=[{"name": _nad(l), "interface": l}
                                                        for l in links],
                           cpus=len(cpus) if self.pinned and quota is None else None,
                           cpu_limit=f"{round(quota.percent * 10)}m" if quota else None,
                           node=cluster.node, privileged=True,
                           host_paths={m.source: m.target for m in shared},
                           hugepages=[m.target for m in huge],
                           hugepages_mb=sum(m.hugepages_mb for m in huge),
                           labels={LABEL: cluster.namespace})
            got = pods.start(cluster.api, cluster.namespace, pod)
        except BaseException:
            with contextlib.suppress(Exception):
                cluster.delete(name.lower())
            for link in links:
                with contextlib.suppress(Exception):
                    pods.detach(cluster.api, cluster.namespace, _nad(link))
                if link in kept:
                    continue
                with contextlib.suppress(Exception):
                    del_link(link, None)
                self.journal.discard("link", link)
            raise
        pid = _pod_pid(got.metadata.uid)
        container = PodContainer(self.journal, name.lower(), cpus, netns, image.path, cluster,
                                 {port.link: port.cni for port in taken}, _cpus_of(pid), pid,
                                 got.status.qos_class)
        container.volumes = tuple(m.source for m in shared)
        container.hugepages_mb = sum(m.hugepages_mb for m in huge)
        container.image = ref
        container.kept = kept
        try:   # until it is returned, no teardown holds it: a failure here removes it
            if pid is None:
                raise ClusterError(f"pod {name}: none of its processes is on this host")
            # the node's netns is now the pod's: ip -n NAME reaches its ports
            run(["ip", "netns", "del", netns], what=f"netns {netns}")
            run(["ip", "netns", "attach", netns, str(pid)], what=f"netns {netns} of pod {name}")
            quiet_netns(netns, links)
            for port in taken:
                ports.settle(port, netns)
        except BaseException:
            container.destroy()
            raise
        return container

    def close(self) -> str | None:
        return self.cluster.close() if self.cluster is not None else None

    @classmethod
    def stored(cls, s: Any) -> dict[str, str]:
        """The cluster's facts: its Kubernetes version, this host's node and
        its kubelet's CPU manager policy (where this host is a node: a
        point's pods may all be on other hosts' nodes)."""
        facts: dict[str, str] = {}
        with contextlib.suppress(Exception):
            api = pods.connect(kubeconfig_of(s))
            facts["kubernetes"] = pods.version(api)
            node = pods.local_node(api)
            config = pods.kubelet_config(api, node)
            facts.update(node=node, cpu_manager=config.get("cpuManagerPolicy", "?"))
        return facts

    @classmethod
    def leftovers(cls, prefix: str) -> list[str]:
        return []   # a run's pods go with its namespace (UNDO)

    @classmethod
    def remove(cls, name: str) -> None:
        pass


def delete_namespace(name: str, info: Mapping[str, Any]) -> None:
    """A killed run's namespace (its journal's KIND line): deleted with its
    pods. A test cluster stopped since took it along (its kubeconfig went
    with it)."""
    kubeconfig = Path(info["kubeconfig"])
    if kubeconfig == TEST_KUBECONFIG and not kubeconfig.exists():
        return
    pods.delete_namespace(pods.connect(kubeconfig), name)


PodRuntime.undo = {KIND: delete_namespace}


def runs_on(kubeconfig: Path) -> tuple[Any, list[str]]:
    """The cluster's client and the namespaces of cnfperf's runs there (by
    their label): what `cnfperf cleanup --cluster` deletes."""
    api = pods.connect(kubeconfig)
    return api, pods.namespaces(api, LABEL)


def _nad(link: str) -> str:
    """A NetworkAttachmentDefinition's name for a link (a DNS label)."""
    return link.lower().replace("_", "-").replace(".", "-")


def _is_device(link: str, netns: str) -> bool:
    """Whether the link in `netns` is a device's (a NIC, a VF: on a bus, of
    no virtual kind), not a link cnfperf made and may delete."""
    out = ip("-d", "-j", "link", "show", "dev", link, netns=netns)
    info = json.loads(out)[0] if out.strip() else {}
    return "linkinfo" not in info and info.get("parentbus") is not None


def _links(netns: str) -> list[str]:
    return [line.split(":")[1].strip().split("@")[0]
            for line in ip("-o", "link", "show", netns=netns).splitlines() if ":" in line]


def _pod_pid(uid: str) -> int | None:
    """A process of the pod on this host, found by its cgroup (the kubelet
    names a pod's cgroup for its uid, with cgroupfs `pod<uid>`, with systemd
    `pod<uid with _>.slice`)."""
    marks = (f"pod{uid}", f"pod{uid.replace('-', '_')}")
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            text = (entry / "cgroup").read_text()
            if any(m in text for m in marks):
                found.append((((entry / "comm").read_text().strip() == "pause"), int(entry.name)))
    # the pod's container's process (its cgroup is what runs there), else its sandbox's
    return min(found)[1] if found else None


def _on_host(pod_pid: int | None, inner: int) -> int:
    """The pid on this host of the process whose pid is `inner` in the pod
    whose process `pod_pid` is (in its pid namespace: NSpid's last); 0 if
    none. A journal keeps host pids (`cnfperf cleanup` kills them): a pod's
    own would name another process here."""
    if not pod_pid:
        return 0
    with contextlib.suppress(OSError):
        ns = os.readlink(f"/proc/{pod_pid}/ns/pid")
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                if os.readlink(entry / "ns" / "pid") != ns:
                    continue
                for line in (entry / "status").read_text().splitlines():
                    if line.startswith("NSpid:") and int(line.split()[-1]) == inner:
                        return int(entry.name)
    return 0


def _cpu_list(text: str) -> tuple[int, ...]:
    """The kernel's list format ('0,2-3') as cores."""
    cores: list[int] = []
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        cores.extend(range(int(low), int(high or low) + 1))
    return tuple(cores)


def _cpus_of(pid: int | None) -> tuple[int, ...]:
    if pid is None:
        return ()
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return _cpu_list(line.split(":", 1)[1].strip())
    return ()
