"""What cnfperf asks of a cluster, through the official `kubernetes` client
(no kubectl): a namespace of its own, NetworkAttachmentDefinitions (Multus'),
pods from cnfperf's images, commands in them.

A pod is cnfperf's container on a cluster: its image one of cnfperf's
(imported into the node, images.py) or a user's, its data-plane interfaces
Multus' attachments (`networks`), its cores a Guaranteed pod's (`cpus`: whole
cores, exclusive where the kubelet runs the static CPU manager).
"""
from __future__ import annotations

import json
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream
from kubernetes.stream.ws_client import ERROR_CHANNEL
from kubernetes.utils.quantity import parse_quantity
from urllib3.exceptions import MaxRetryError

from cnfperf.host.system import run as host_run
from cnfperf.runtimes.base import ContainerError

NAD_GROUP, NAD_VERSION, NAD_PLURAL = "k8s.cni.cncf.io", "v1", "network-attachment-definitions"
NETWORKS = "k8s.v1.cni.cncf.io/networks"                # a pod's attachments, Multus reads
NETWORK_STATUS = "k8s.v1.cni.cncf.io/network-status"    # what Multus attached, it writes
HUGEPAGES = "hugepages-2Mi"       # the resource of a node's 2 MB pages
READY_S = 120.0           # a pod's start: its image is on the node, its attachments local
DELETE_S = 120.0


class ClusterError(ContainerError):
    """A cluster refused or failed what cnfperf asked (or cannot start here:
    the test cluster's): one line."""


def connect(kubeconfig: Path, retries: int | None = None) -> client.ApiClient:
    """A client of the cluster `kubeconfig` names (its current context);
    `retries`: of a request that finds no server (0: a check's, at once)."""
    if not Path(kubeconfig).is_file():
        raise ClusterError(f"kubeconfig {kubeconfig}: no such file")
    try:
        api = config.new_client_from_config(config_file=str(kubeconfig))
    except Exception as e:      # the client says what: a missing file, no context, bad YAML
        raise ClusterError(f"kubeconfig {kubeconfig}: {one_line(e)}") from None
    if retries is not None:
        api.configuration.retries = retries
        api.rest_client = type(api.rest_client)(api.configuration)
    return api


def one_line(e: Exception) -> str:
    """What went wrong, in one line: the API server's message, or that it
    does not answer."""
    if isinstance(e, MaxRetryError):
        why = str(e.reason).rsplit("] ", 1)[-1] if e.reason else "no answer"
        where = f"{e.pool.scheme}://{e.pool.host}:{e.pool.port}" if e.pool else "its address"
        return f"the API server at {where} does not answer ({why})"
    if isinstance(e, ApiException):
        try:
            return json.loads(e.body).get("message", e.reason)
        except (TypeError, ValueError):
            return f"{e.status} {e.reason}"
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def create_namespace(api: client.ApiClient, name: str, labels: dict[str, str]) -> None:
    """The namespace, once its default service account exists (a pod made
    before would be refused)."""
    core = client.CoreV1Api(api)
    try:   # a run's hosts share its namespace: one of them makes it
        core.create_namespace({"metadata": {"name": name, "labels": labels}})
    except ApiException as e:
        if e.status != 409:
            raise ClusterError(f"create_namespace: {one_line(e)}") from None
    _until(lambda: _exists(core.read_namespaced_service_account, "default", name),
           f"namespace {name}'s default service account", 60)


def delete_namespace(api: client.ApiClient, name: str, wait: bool = True) -> bool:
    """The namespace and all in it; False if it was gone. With `wait`, until
    its pods are gone: the kubelet deletes a pod's object once it has
    stopped its containers and undone its network. (The namespace's own end
    waits for the namespace controller's sweep of every API group: seconds,
    and nothing on a node.) Its pods go first, with one second's grace
    (0 would remove their objects before the kubelet stopped anything)."""
    core = client.CoreV1Api(api)
    try:
        core.delete_collection_namespaced_pod(name, grace_period_seconds=1)
        core.delete_namespace(name)
    except ApiException as e:
        if e.status == 404:
            return False
        raise ClusterError(f"deleting namespace {name}: {one_line(e)}") from None
    if wait:
        _until(lambda: not _call(core.list_namespaced_pod, name).items,
               f"namespace {name}'s pods' deletion", DELETE_S)
    return True


def namespaces(api: client.ApiClient, selector: str) -> list[str]:
    """The namespaces with that label, but those already going (Terminating:
    their pods are gone, the namespace controller sweeps the rest)."""
    return [n.metadata.name for n in
            _call(client.CoreV1Api(api).list_namespace, label_selector=selector).items
            if (n.status.phase or "Active") != "Terminating"]


def running(api: client.ApiClient, namespace: str) -> list[str]:
    """The namespace's pods that run."""
    return [p.metadata.name for p in _call(client.CoreV1Api(api).list_namespaced_pod,
                                           namespace).items if p.status.phase == "Running"]


def attach(api: client.ApiClient, namespace: str, name: str, cni: dict[str, Any]) -> None:
    """A NetworkAttachmentDefinition `name` whose CNI config is `cni`."""
    body = {"apiVersion": f"{NAD_GROUP}/{NAD_VERSION}", "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": name}, "spec": {"config": json.dumps(cni)}}
    try:
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            NAD_GROUP, NAD_VERSION, namespace, NAD_PLURAL, body)
    except ApiException as e:
        if e.status == 404:
            raise ClusterError("the cluster has no NetworkAttachmentDefinition "
                               "(k8s.cni.cncf.io/v1): is Multus installed?") from None
        raise ClusterError(f"NetworkAttachmentDefinition {name}: {one_line(e)}") from None


def detach(api: client.ApiClient, namespace: str, name: str) -> bool:
    """The NetworkAttachmentDefinition `name` deleted; False if it was gone."""
    try:
        client.CustomObjectsApi(api).delete_namespaced_custom_object(
            NAD_GROUP, NAD_VERSION, namespace, NAD_PLURAL, name)
    except ApiException as e:
        if e.status == 404:
            return False
        raise ClusterError(f"deleting NetworkAttachmentDefinition {name}: {one_line(e)}") from None
    return True


def _offered_mb(node: client.V1Node) -> int:
    """The MB of 2 MB hugepages a node's pods may ask for (its allocatable):
    its host's whole pool when its kubelet started, 0 where it found none."""
    return int(parse_quantity((node.status.allocatable or {}).get(HUGEPAGES, "0")) // 2**20)


def hugepages_mb(api: client.ApiClient, node: str) -> int:
    """_offered_mb() of one node."""
    return _offered_mb(_call(client.CoreV1Api(api).read_node, node))


def hugepages_by_node(api: client.ApiClient) -> dict[str, int]:
    """_offered_mb() of every node, by name."""
    return {n.metadata.name: _offered_mb(n) for n in _call(client.CoreV1Api(api).list_node).items}


def has_attachments(api: client.ApiClient) -> bool:
    """Whether the cluster knows NetworkAttachmentDefinitions (Multus' CRD)."""
    return _exists(client.ApiextensionsV1Api(api).read_custom_resource_definition,
                   f"{NAD_PLURAL}.{NAD_GROUP}")


@dataclass
class Pod:
    """What cnfperf asks of a pod."""
    name: str
    image: str
    command: Sequence[str] = ()        # its entrypoint's place (empty: the image's)
    # attachments by name, in order (net1, net2…); or Multus' selections,
    # {"name": NAD, "interface": its name inside}
    networks: Sequence[str | dict[str, str]] = ()
    cpus: int | None = None            # whole cores, a Guaranteed pod's; None: no request
    memory: str = "256Mi"              # its limit where `cpus` makes it Guaranteed
    node: str | None = None            # the node it must run on
    privileged: bool = False
    host_paths: dict[str, str] = field(default_factory=dict)   # host path -> its path inside
    cpu_limit: str | None = None       # a CPU quota ("1500m"): its request and limit, Burstable
    labels: dict[str, str] = field(default_factory=dict)
    # paths inside that are hugetlbfs of the node's accounted 2 MB pages
    # (emptyDir volumes), and how many MB of them it asks for
    hugepages: Sequence[str] = ()
    hugepages_mb: int = 0

    def manifest(self) -> dict[str, Any]:
        container: dict[str, Any] = {"name": "main", "image": self.image,
                                     "imagePullPolicy": "IfNotPresent"}
        if self.command:
            container["command"] = list(self.command)
        if self.cpu_limit is not None:
            # no memory limit: Burstable, so a whole-core quota ("1000m") gets
            # no exclusive core from a static CPU manager (a quota shares)
            amount = {"cpu": self.cpu_limit}
            container["resources"] = {"limits": amount, "requests": amount}
        elif self.cpus is not None:
            amount = {"cpu": str(self.cpus), "memory": self.memory}
            container["resources"] = {"limits": amount, "requests": amount}
        if self.hugepages_mb:
            # a request equal to its limit; Kubernetes asks a pod of
            # hugepages for CPU or memory too: memory, where it names neither
            huge = {HUGEPAGES: f"{-(-self.hugepages_mb // 2) * 2}Mi"}
            resources = container.setdefault("resources", {"limits": {},
                                                           "requests": {"memory": self.memory}})
            resources["limits"] = {**resources["limits"], **huge}
            resources["requests"] = {**resources["requests"], **huge}
        if self.privileged:
            container["securityContext"] = {"privileged": True}
        volumes, mounts = [], []
        for i, (host, inside) in enumerate(sorted(self.host_paths.items())):
            # a folder made if missing; a file or socket as it is
            kind = "DirectoryOrCreate" if Path(host).is_dir() or not Path(host).exists() else ""
            volumes.append({"name": f"host{i}", "hostPath": {"path": host, "type": kind}})
            mounts.append({"name": f"host{i}", "mountPath": inside})
        for i, inside in enumerate(self.hugepages):
            volumes.append({"name": f"huge{i}", "emptyDir": {"medium": "HugePages-2Mi"}})
            mounts.append({"name": f"huge{i}", "mountPath": inside})
        if mounts:
            container["volumeMounts"] = mounts
        spec: dict[str, Any] = {"containers": [container], "restartPolicy": "Never",
                                "automountServiceAccountToken": False,
                                "terminationGracePeriodSeconds": 1, "enableServiceLinks": False}
        if volumes:
            spec["volumes"] = volumes
        if self.node:
            spec["nodeName"] = self.node
        meta: dict[str, Any] = {"name": self.name}
        if self.labels:
            meta["labels"] = dict(self.labels)
        if self.networks:
            named = all(isinstance(n, str) for n in self.networks)
            meta["annotations"] = {NETWORKS: ",".join(self.networks) if named else  # type: ignore[arg-type]
                                   json.dumps([{"name": n} if isinstance(n, str) else n
                                               for n in self.networks])}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def start(api: client.ApiClient, namespace: str, pod: Pod, timeout: float = READY_S
          ) -> client.V1Pod:
    """The pod made and Running; ClusterError with the reason it is not."""
    core = client.CoreV1Api(api)
    _call(core.create_namespaced_pod, namespace, pod.manifest())
    deadline = time.monotonic() + timeout
    while True:
        got = _call(core.read_namespaced_pod, pod.name, namespace)
        if got.status.phase == "Running":
            return got
        if got.status.phase in ("Failed", "Succeeded") or _stuck(got) or \
                time.monotonic() > deadline:
            why = _why(core, namespace, got)
            if "OutOfhugepages" in why:   # what the node offers is its pool at its start
                why += ("; a kubelet offers the hugepages its host's pool held when it "
                        "started: reserve more there before it starts (the test cluster: "
                        "cnfperf cluster --hugepages MB)")
            raise ClusterError(f"pod {pod.name} is {got.status.phase}, not Running: {why}")
        time.sleep(0.2)


# A container waiting for one of these waits for something no retry brings.
STUCK = ("ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName",
         "CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff",
         "RunContainerError")


def _stuck(got: client.V1Pod) -> bool:
    """Waiting for what no retry brings, or no node can take it (a
    Guaranteed pod's whole cores that no node has free)."""
    return any(s.state.waiting and s.state.waiting.reason in STUCK
               for s in got.status.container_statuses or []) or \
        any(c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
            for c in got.status.conditions or [])


def _why(core: client.CoreV1Api, namespace: str, got: client.V1Pod) -> str:
    """The telling reason a pod is not running: its container's waiting or
    terminated reason, else its newest warning event, else its condition."""
    for status in got.status.container_statuses or []:
        state = status.state
        if state.waiting and state.waiting.reason not in (None, "ContainerCreating"):
            return f"{state.waiting.reason}: {state.waiting.message or ''}".strip(": ")
        if state.terminated:
            return f"exited {state.terminated.exit_code} ({state.terminated.reason})"
    events = core.list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={got.metadata.name}").items
    warnings = [e for e in events if e.type == "Warning"]
    if warnings:
        last = max(warnings, key=lambda e: e.last_timestamp or e.event_time or 0)
        return f"{last.reason}: {last.message}"
    for c in got.status.conditions or []:
        if c.status != "True" and c.message:
            return c.message
    return "no reason given yet"


def delete(api: client.ApiClient, namespace: str, name: str, timeout: float = DELETE_S) -> bool:
    """The pod deleted (one second's grace) and gone: the kubelet removes its
    object once its containers stopped and its network was undone (CNI's
    DEL); False if it was gone."""
    core = client.CoreV1Api(api)
    try:
        core.delete_namespaced_pod(name, namespace, grace_period_seconds=1)
    except ApiException as e:
        if e.status == 404:
            return False
        raise ClusterError(f"deleting pod {name}: {one_line(e)}") from None
    _until(lambda: not _exists(core.read_namespaced_pod, name, namespace),
           f"pod {name}'s deletion", timeout)
    return True


def local_node(api: client.ApiClient) -> str:
    """The cluster's node that is this machine (its name is this host's, or
    one of its addresses is one of this host's): where cnfperf's pods go, as
    their links are this host's."""
    here = {socket.gethostname().lower(), socket.gethostname().split(".")[0].lower()}
    addresses = set(_host_addresses())
    nodes = _call(client.CoreV1Api(api).list_node).items
    # an address first: the node of another host (cnfperf cluster --hosts)
    # may bear this host's name, never its address
    for n in nodes:
        if {a.address.lower() for a in n.status.addresses or []} & addresses:
            return n.metadata.name
    for n in nodes:
        said = {a.address.lower() for a in n.status.addresses or []}
        if n.metadata.name.lower() in here or said & here:
            return n.metadata.name
    names = ", ".join(n.metadata.name for n in nodes) or "none"
    raise ClusterError(f"no node of the cluster is this host (nodes: {names}): cnfperf "
                       "places pods on the node it runs on")


def _host_addresses() -> list[str]:
    out = host_run(["ip", "-o", "addr", "show"], check=False, what="this host's addresses")
    return [w.split("/")[0] for line in out.splitlines()
            for i, w in enumerate(line.split()) if i > 0 and line.split()[i - 1] in ("inet", "inet6")]


def version(api: client.ApiClient) -> str:
    return _call(client.VersionApi(api).get_code).git_version


def kubelet_config(api: client.ApiClient, node: str) -> dict[str, Any]:
    """The node's kubelet's running configuration (its configz, through the
    API server's node proxy); {} where it is not readable."""
    try:
        raw = client.CoreV1Api(api).connect_get_node_proxy_with_path(
            node, "configz", _preload_content=False)
        return json.loads(raw.data).get("kubeletconfig", {})
    except (ApiException, ValueError):
        return {}


def attachments(got: client.V1Pod) -> list[dict[str, Any]]:
    """What Multus attached (its network-status annotation), the default network first."""
    return json.loads((got.metadata.annotations or {}).get(NETWORK_STATUS, "[]"))


def run(api: client.ApiClient, namespace: str, pod: str, argv: Sequence[str],
        timeout: float = 60, check: bool = False) -> subprocess.CompletedProcess:
    """`argv` in the pod's container, to its end: its exit status and output."""
    ws = stream(client.CoreV1Api(api).connect_get_namespaced_pod_exec, pod, namespace,
                command=list(argv), stdin=False, stdout=True, stderr=True, tty=False,
                _preload_content=False)
    out: list[str] = []
    err: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while ws.is_open():
            if time.monotonic() > deadline:
                raise ClusterError(f"`{' '.join(argv)}` in pod {pod}: not done in {timeout:g} s")
            ws.update(timeout=min(1.0, timeout))
            out.append(ws.read_stdout() if ws.peek_stdout() else "")
            err.append(ws.read_stderr() if ws.peek_stderr() else "")
        status = ws.read_channel(ERROR_CHANNEL)
    finally:
        ws.close()
    code = exit_code(status)
    done = subprocess.CompletedProcess(list(argv), code, "".join(out), "".join(err))
    if check and code != 0:
        raise ClusterError(f"`{' '.join(argv)}` in pod {pod} exited {code}: "
                           f"{(done.stderr or done.stdout).strip()[:300]}")
    return done


def exit_code(status: str) -> int:
    """The exit status the API server's error channel says: {"status":
    "Success"}, or a NonZeroExitCode failure with the code as its cause;
    another failure (the command could not start) is 126 with the message."""
    if not status:
        return 0
    said = json.loads(status)
    if said.get("status") == "Success":
        return 0
    for cause in (said.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            return int(cause["message"])
    raise ClusterError(said.get("message", status))


def _call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except ApiException as e:
        raise ClusterError(f"{fn.__name__}: {one_line(e)}") from None


def _exists(fn, *args) -> bool:
    try:
        fn(*args)
        return True
    except ApiException as e:
        if e.status == 404:
            return False
        raise


def _until(ready, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise ClusterError(f"{what}: not within {timeout:g} s")
        time.sleep(0.2)
