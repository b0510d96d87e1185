"""A single-node Kubernetes on this machine: the test cluster (`cnfperf
cluster`, the tests' cluster). Its daemons are cnfperf's builds (cluster/
build.sh: etcd, the API server, controller manager, scheduler and kubelet of
one Kubernetes release, Multus' thin plugin), run as plain processes beside
a containerd of their own (Debian's), everything in one directory (HOME).

What is set and why (docs/kubernetes.md says it for users):
- containerd: its own root, state, socket and CNI folders, so it shares
  nothing with a containerd the machine runs; `restrict_oom_score_adj`
  (runc may not lower a process's oom_score_adj without CAP_SYS_RESOURCE,
  which a container's host may lack); the cgroupfs driver (PID 1 need not be
  systemd); pods' netns under its state folder; the pause image made here.
- kubelet: the static CPU manager with core 0 reserved for the system, so a
  Guaranteed pod's whole cores are its own, as on an operator's CNF node;
  cgroup v1 allowed; pods' cgroups under a root of their own (CGROUP); no
  iptables chains (no kube-proxy runs: pods reach nothing through Services).
- the pods' default network: a bridge (BRIDGE) with host-local addresses, no
  gateway and no masquerade (the data plane is what Multus attaches; the
  default network only makes the pod). Multus is the node's CNI plugin, its
  NetworkAttachmentDefinition CRD applied.
- an image registry (Debian's docker-registry, the distribution project's) on
  this host's loopback, which containerd pulls from over plain HTTP: where
  `registry` has cnfperf push its images (cnfperf imports them otherwise).
- one CA; cnfperf, the controller manager, the scheduler, Multus and the API
  server (towards the kubelet) present the administrator's certificate
  (system:masters): a test cluster, not a model of a production one.

Another host joins a cluster started here as a node of its own (member():
its certificates from this cluster's CA; joined(), run on that host by its
agent: a containerd and kubelet as here, its kubeconfig towards this API
server).

Everything made is journaled before it exists: `cnfperf cleanup` removes what
a killed cluster or node left (sweep()).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import yaml

from cnfperf.cluster import builds, pki
from cnfperf.runtimes.pod import images, pods, runtime as pod_runtime
from cnfperf.runtimes.pod.pods import ClusterError
from cnfperf.host import cgroups, hugepages, tools
from cnfperf.host.journal import RUN_DIR, Journal
from cnfperf.host.keeper import Keeper
from cnfperf.host.links import del_link
from cnfperf.host.system import KILL_WAIT_S, proc_stat, run, spawn, unmount_under

HOME = pod_runtime.TEST_HOME                # where a pod placement looks for it
KUBECONFIG = pod_runtime.TEST_KUBECONFIG
JOURNAL = RUN_DIR / "cluster.journal"
OWNER = RUN_DIR / "cluster.owner"
KEEPER = Keeper("a test cluster", OWNER, JOURNAL)
CONTAINERD_SOCK = pod_runtime.TEST_CONTAINERD
BRIDGE = "cnfpkube0"           # the pods' default network ("cnfp" + non-hex: no run's name)
POD_SUBNET = "10.253.0.0/24"
NETWORK = "cnfpkube"           # the default network's CNI name (and the prefix of cnfperf's)
CGROUP = "cnfperf-kube"        # the kubelet's cgroupRoot, in every hierarchy
# Ports of its own, on the loopback where a daemon allows it: beside a
# cluster the machine may run already. The kubelet listens on the node's
# address (the API server reaches it there for exec), the API server on
# every address (the nodes of other hosts reach it).
ETCD_PORT, ETCD_PEER_PORT = 23790, 23800
API_PORT = 16443
REGISTRY_PORT = 15000
# The cluster's image registry (plain HTTP, on this host only): what `registry`
# names to have cnfperf push its images there and the node pull them.
REGISTRY = f"http://127.0.0.1:{REGISTRY_PORT}/cnfperf"
KUBELET_PORT, KUBELET_HEALTHZ = 10350, 10348
PAUSE = images.reference("pause", "3.10")
# What the daemons make outside HOME whatever their settings (hard-coded
# paths): removed at the end when this cluster made them. The kubelet's
# socket for device plugins is one of its own where its folder was there.
OUTSIDE = (Path("/var/log/containers"), Path("/var/lib/kubelet"), Path("/var/lib/cni"),
           Path("/run/containerd"), Path("/var/lib/kubelet/device-plugins/kubelet.sock"))
CNI_RESULTS = Path("/var/lib/cni/results")
TOOLS = ("containerd", "ctr", "runc", "umount", "docker-registry")
STEP_S = 60.0                  # a daemon's start (the API server's first ready takes seconds)
CNI_PLUGINS = Path("/usr/lib/cni")   # Debian's containernetworking-plugins
# The cgroup v2 controllers a node's pods are held by (the kubelet's QoS
# and pod cgroups), enabled below a v2 root that has them; put back as they
# were when the node goes (the kubelet enables others too).
V2_CONTROLLERS = {"cpuset", "cpu", "memory", "pids", "hugetlb"}
# What the kubelet sets as it starts (its kernel tunables, unless
# protectKernelDefaults, which would refuse to start instead): put back as
# they were when the cluster goes.
SYSCTLS = ("vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
           "kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes")


def doctor() -> str:
    """`cnfperf doctor`'s line for pods: whether the test cluster can start
    here (its builds, tools, CNI plugins, cores) or runs, and what pushes
    images to a registry (`registry`)."""
    missing = problems()
    state = "runs (" + str(KUBECONFIG) + ")" if KUBECONFIG.exists() else \
        "; ".join(missing) if missing else "ready (start it: cnfperf cluster)"
    push = tools.problems("skopeo")
    return f"test cluster: {state}; registry pushes: {push[0] if push else 'skopeo'}"


def problems() -> list[str]:
    """What keeps a test cluster from starting here."""
    found = builds.problems() + tools.problems(*TOOLS)
    if not (CNI_PLUGINS / "bridge").is_file():
        found.append(f"no CNI plugins in {CNI_PLUGINS} (apt install containernetworking-plugins)")
    if len(os.sched_getaffinity(0)) < 2:
        found.append("one core: the static CPU manager reserves core 0, a pod needs another")
    return found


@dataclass
class Cluster:
    """A started test cluster: its admin kubeconfig, its node's name, its
    Kubernetes version, its folder and its containerd's socket (where
    images.load puts cnfperf's images)."""
    kubeconfig: Path
    node: str
    version: str
    home: Path
    containerd: Path
    registry: str = REGISTRY


def node_name() -> str:
    return socket.gethostname().split(".")[0].lower() or "node"


def node_address(toward: str = "1.1.1.1") -> str:
    """This machine's address on its route to `toward` (by default its
    default route's: the kubelet's node IP; a host's: where that host
    reaches this one)."""
    out = run(["ip", "-o", "route", "get", toward], check=False, what="the node's address")
    words = out.split()
    if "src" in words:
        return words[words.index("src") + 1]
    return socket.gethostbyname(socket.gethostname())


@dataclass(frozen=True)
class Member:
    """What a host needs to join a test cluster started elsewhere as one of
    its nodes (joined()): its node's name and address, the API server's
    address as that host reaches it, and the PEMs of the cluster's CA and of
    the certificates issued for it (member())."""
    node: str
    address: str
    server: str
    pems: dict[str, str]
    hugepages_mb: int = 0      # its pool's, for its pods (_pool())


@contextlib.contextmanager
def _home(journal: Journal, home: Path) -> Iterator[contextlib.ExitStack]:
    """A node's folder made afresh, and what its daemons will change outside
    it journaled; on the way out, everything of it swept (sweep())."""
    made = [str(path) for path in OUTSIDE if not path.exists()]   # the daemons' to make
    tunables = {name: _sysctl(name) for name in SYSCTLS}
    enabled = _v2_enabled()
    journal.add("cluster", str(home), outside=made, sysctls=tunables, controllers=enabled)
    stack = contextlib.ExitStack()
    stack.callback(_swept, journal, home, made, tunables, enabled)
    with stack:
        shutil.rmtree(home, ignore_errors=True)
        for d in ("pki", "logs", "cni/bin", "cni/net.d", "ipam", "multus", "kubelet",
                  "containerd/root", "containerd/state", "containerd/opt", "etcd", "images",
                  "registry", f"certs.d/127.0.0.1:{REGISTRY_PORT}"):
            (home / d).mkdir(parents=True)
        yield stack


def _pool(journal: Journal, mb: int, stack: contextlib.ExitStack,
          say: Callable[[str], None]) -> None:
    """`mb` of 2 MB hugepages added to this host's pool before its kubelet
    starts: a kubelet reads the pool once, and its node offers them to pods
    as `hugepages-2Mi`. Given back once the pods are gone (the stack's end)."""
    if mb <= 0:
        return
    pages = hugepages.pages_for(mb)
    say(f"{pages} hugepages of 2 MB for the node's pods")
    added = hugepages.reserve(pages, "cluster", journal)

    def give_back() -> None:
        hugepages.release(added)
        journal.discard("hugepages", "cluster")
    stack.callback(give_back)


@contextlib.contextmanager
def started(journal: Journal, say: Callable[[str], None] = lambda _l: None,
            home: Path = HOME, hugepages_mb: int = 0) -> Iterator[Cluster]:
    """A single-node cluster, ready (its node Ready, Multus' CRD applied),
    until the block ends; then nothing of it is left. Everything made is in
    `journal` before it exists. With `hugepages_mb`, its node offers that
    many MB of 2 MB hugepages to pods (_pool())."""
    with _home(journal, home) as stack:
        _pool(journal, hugepages_mb, stack, say)
        node, address = node_name(), node_address()
        say(f"certificates for node {node} ({address})")
        certs = _certificates(home / "pki", node, address)
        _kubeconfig(home / KUBECONFIG.name, certs["ca"], certs["admin"], "admin")
        _kubeconfig(home / "kubelet.kubeconfig", certs["ca"], certs["node"], f"system:node:{node}")
        _cni(home)
        daemons = _Daemons(home, journal, stack)
        say("containerd, etcd")
        _containerd(home, daemons, stack)
        daemons.start("etcd", _etcd_argv(home))
        daemons.start("registry", ["docker-registry", "serve", _registry_config(home)])
        daemons.wait("containerd", (home / CONTAINERD_SOCK.name).is_socket, "containerd's socket")
        _pause(home)
        daemons.wait("etcd", lambda: _http_ok(f"http://127.0.0.1:{ETCD_PORT}/health"),
                     "etcd's /health")
        daemons.wait("registry", lambda: _http_ok(f"http://127.0.0.1:{REGISTRY_PORT}/v2/"),
                     "the registry's /v2/")
        say("the API server")
        daemons.start("kube-apiserver", _apiserver_argv(home, certs, address))
        ctx = ssl.create_default_context(cafile=str(certs["ca"].cert))
        ctx.load_cert_chain(str(certs["admin"].cert), str(certs["admin"].key))
        daemons.wait("kube-apiserver", lambda: _http_ok(f"https://127.0.0.1:{API_PORT}/readyz",
                                                        ctx), "the API server's /readyz")
        say("the controller manager, the scheduler, the kubelet")
        daemons.start("kube-controller-manager", _controller_argv(home, certs))
        daemons.start("kube-scheduler", [str(builds.program("kubernetes", "bin/kube-scheduler")),
                                         f"--kubeconfig={home / KUBECONFIG.name}",
                                         "--leader-elect=false", "--secure-port=0"])
        _kubelet(home, daemons, node, address, certs)
        api = pods.connect(home / KUBECONFIG.name)
        _apply_crd(api, daemons)
        daemons.wait("kubelet", lambda: _node_ready(api, node), f"node {node} Ready")
        daemons.wait("kube-controller-manager", lambda: _default_account(api),
                     "the default service account")
        yield Cluster(home / KUBECONFIG.name, node, _version(api), home,
                      home / CONTAINERD_SOCK.name)


def member(cluster: Cluster, node: str, address: str, server: str,
           hugepages_mb: int = 0) -> Member:
    """Certificates for host `node` (its kubelet serving at `address`),
    signed by the running cluster's CA, to join it (joined()) reaching the
    API server at `server`, its node offering `hugepages_mb` to pods."""
    ca = pki.Authority(cluster.home / "pki", load=True)
    issued = _node_certificates(ca, node, address, stem=f"member-{node}-")
    admin = pki.Pair(cluster.home / "pki/admin.crt", cluster.home / "pki/admin.key")
    pairs = {"ca": ca.pair, "admin": admin, **issued}
    pems = {f"{name}.{part}": getattr(pair, part).read_text()
            for name, pair in pairs.items() for part in ("cert", "key")}
    return Member(node, address, server, pems, hugepages_mb)


@contextlib.contextmanager
def joined(journal: Journal, joining: Member, say: Callable[[str], None] = lambda _l: None,
           home: Path = HOME) -> Iterator[Path]:
    """This host a node of a test cluster started on another (member()),
    until the block ends: its containerd, CNI (Multus) and kubelet as
    started() runs them, its kubeconfig (home's, where a pod placement looks
    for the test cluster's) the administrator's towards that API server.
    Yields that kubeconfig. Everything made is in `journal` before it exists."""
    with _home(journal, home) as stack:
        _pool(journal, joining.hugepages_mb, stack, say)
        certs: dict[str, pki.Pair] = {}
        for name in ("ca", "admin", "node", "kubelet"):
            certs[name] = pki.Pair(home / "pki" / f"{name}.crt", home / "pki" / f"{name}.key")
            certs[name].cert.write_text(joining.pems[f"{name}.cert"])
            certs[name].key.touch(mode=0o600)
            certs[name].key.write_text(joining.pems[f"{name}.key"])
        # the API server's certificate names localhost, not the address
        # this host reaches it at
        _kubeconfig(home / KUBECONFIG.name, certs["ca"], certs["admin"], "admin",
                    joining.server, "localhost")
        _kubeconfig(home / "kubelet.kubeconfig", certs["ca"], certs["node"],
                    f"system:node:{joining.node}", joining.server, "localhost")
        _cni(home)
        daemons = _Daemons(home, journal, stack)
        say("containerd")
        _containerd(home, daemons, stack)
        daemons.wait("containerd", (home / CONTAINERD_SOCK.name).is_socket, "containerd's socket")
        _pause(home)
        say(f"the kubelet of node {joining.node} ({joining.address})")
        api = pods.connect(home / KUBECONFIG.name)
        stack.callback(_forget, api, joining.node)    # once its kubelet is stopped
        _kubelet(home, daemons, joining.node, joining.address, certs)
        daemons.wait("kubelet", lambda: _node_ready(api, joining.node),
                     f"node {joining.node} Ready")
        yield home / KUBECONFIG.name


def _forget(api, node: str) -> None:
    """The node's object deleted from the cluster it leaves, its kubelet
    stopped (one running would put it back); a cluster that stopped first
    took it along, and nothing answers."""
    from kubernetes import client
    with contextlib.suppress(Exception):
        client.CoreV1Api(api).delete_node(node, _request_timeout=10)


def _containerd(home: Path, daemons: "_Daemons", stack: contextlib.ExitStack) -> None:
    daemons.start("containerd", ["containerd", "--config", _containerd_config(home)])
    # the last step before containerd stops: the kubelet is gone, so no pod comes back
    stack.callback(_remove_pods, home)


def _kubelet(home: Path, daemons: "_Daemons", node: str, address: str,
             certs: dict[str, pki.Pair]) -> None:
    """The kubelet, under its cgroupRoot in every hierarchy (on a cgroup v2
    host, with the controllers its pods are held by enabled below the root)."""
    for hierarchy in cgroups.hierarchies():
        root = Path(hierarchy.point)
        if (root / "cgroup.subtree_control").exists():
            wanted = set((root / "cgroup.controllers").read_text().split()) & V2_CONTROLLERS
            if wanted:
                (root / "cgroup.subtree_control").write_text(
                    " ".join(f"+{c}" for c in sorted(wanted)))
        (root / CGROUP).mkdir(exist_ok=True)
    daemons.start("kubelet", _kubelet_argv(home, node, address, certs))


def _remove_pods(home: Path) -> None:
    """Every pod sandbox stopped and removed through the CRI, so that the
    CNI plugins undo what they attached (their DEL); sweep() takes whatever
    this leaves."""
    with contextlib.suppress(Exception):
        run([builds.program("crictl"), "--runtime-endpoint",
             f"unix://{home / CONTAINERD_SOCK.name}", "rmp", "--all", "--force"],
            timeout=60, check=False)


class _Daemons:
    """The cluster's processes, started in order and stopped in reverse
    (kubelet first: it would restart what is stopped under it)."""

    def __init__(self, home: Path, journal: Journal, stack: contextlib.ExitStack):
        self.home, self.journal, self.stack = home, journal, stack
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str]) -> None:
        log = open(self.home / "logs" / f"{name}.log", "ab")
        env = {**os.environ, "PATH": f"{self.home / 'cni/bin'}:{os.environ.get('PATH', '')}"}
        proc = spawn(argv, what=f"starting {name}", stdout=log, stderr=subprocess.STDOUT,
                     stdin=subprocess.DEVNULL, env=env)
        log.close()
        stat = proc_stat(proc.pid)
        self.journal.add("process", f"{name}:{proc.pid}", pid=proc.pid,
                         start=stat.start_time if stat else None)
        self.stack.callback(self._stop, name, proc)
        self.procs[name] = proc
        time.sleep(0.2)
        if proc.poll() is not None:
            raise ClusterError(f"{name} exited {proc.returncode} as it started: "
                               f"{_last_line(self.home / 'logs' / f'{name}.log')}")

    def wait(self, name: str, ready: Callable[[], bool], what: str,
             timeout: float = STEP_S) -> None:
        """Until `ready`; else ClusterError with the last line daemon `name`
        logged (its log goes with the cluster's folder), at once if it exited."""
        deadline = time.monotonic() + timeout
        proc = self.procs[name]
        while True:
            with contextlib.suppress(Exception):
                if ready():
                    return
            if proc.poll() is not None or time.monotonic() > deadline:
                how = f"{name} exited {proc.returncode}" if proc.poll() is not None else \
                    f"not within {timeout:g} s; {name}"
                raise ClusterError(f"{what}: {how}, its last words: "
                                   f"{_last_line(self.home / 'logs' / f'{name}.log')}")
            time.sleep(0.25)

    def _stop(self, name: str, proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(KILL_WAIT_S)
        self.journal.discard("process", f"{name}:{proc.pid}")


def sweep(home: Path = HOME, outside: Sequence[str] = (),
          sysctls: dict[str, str] | None = None,
          controllers: dict[str, list[str]] | None = None) -> None:
    """Everything of a cluster whose daemons are gone (or going) removed: the
    pods' processes (their shims, and what is in the pods' cgroups), mounts
    under `home`, the pods' cgroups, the default network's bridge, CNI's
    cached results of cnfperf's networks, `home`, and what of OUTSIDE the
    cluster made (`outside`; /var/lib/cni only where nothing but empty
    folders is left: other CNI users keep theirs there), and the kernel's
    tunables the kubelet set, as `sysctls` says they were, and the cgroup v2
    controllers it enabled below a root, as `controllers` says. Idempotent: it is
    both the end of every cluster and `cnfperf cleanup`'s for a killed one."""
    for name, value in (sysctls or {}).items():
        if value and _sysctl(name) != value:
            _sysctl(name, value)
    sock = str(home / CONTAINERD_SOCK.name)
    for pid in _pids_with(sock):                   # the shims of this containerd
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    groups = [g for h in cgroups.hierarchies() for g in cgroups.tree(Path(h.point) / CGROUP)]
    errors = cgroups.remove(groups)
    for root, before in (controllers or {}).items():   # its groups gone: no child holds one
        _v2_restore(Path(root), before)
    unmount_under(home, lazy=True)     # the kubelet's and the pods' (busy ones too)
    with contextlib.suppress(Exception):
        del_link(BRIDGE, None)
    for result in _results():
        result.unlink(missing_ok=True)
    shutil.rmtree(home, ignore_errors=True)
    for made in map(Path, outside):
        if made == CNI_RESULTS.parent:
            for d, _, _ in os.walk(made, topdown=False):
                with contextlib.suppress(OSError):
                    os.rmdir(d)
        elif made.is_dir():
            shutil.rmtree(made, ignore_errors=True)
        else:
            made.unlink(missing_ok=True)
    if errors:
        raise ClusterError("; ".join(errors))


def _v2_enabled() -> dict[str, list[str]]:
    """The controllers enabled below each cgroup v2 root (its
    subtree_control), which the kubelet widens as it starts."""
    found = {}
    for hierarchy in cgroups.hierarchies():
        control = Path(hierarchy.point) / "cgroup.subtree_control"
        if hierarchy.fstype == "cgroup2" and control.exists():
            found[hierarchy.point] = control.read_text().split()
    return found


def _v2_restore(root: Path, before: Sequence[str]) -> None:
    """The controllers enabled below `root` that were not before, disabled
    (one a group outside the cluster's has taken to stays)."""
    control = root / "cgroup.subtree_control"
    with contextlib.suppress(OSError):
        for name in set(control.read_text().split()) - set(before):
            with contextlib.suppress(OSError):
                control.write_text(f"-{name}")


def _swept(journal: Journal, home: Path, outside: Sequence[str],
           sysctls: dict[str, str], controllers: dict[str, list[str]]) -> None:
    sweep(home, outside, sysctls, controllers)
    journal.discard("cluster", str(home))


UNDO = {"cluster": lambda name, info: sweep(Path(name), info.get("outside", []),
                                            info.get("sysctls"),
                                            info.get("controllers")) or True}


def _sysctl(name: str, value: str | None = None) -> str:
    """A kernel tunable's value ("" where this kernel has none), or set."""
    path = Path("/proc/sys") / name.replace(".", "/")
    if value is not None:
        path.write_text(value)
        return value
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _results() -> list[Path]:
    """CNI's cached results (libcni keeps them in CNI_RESULTS whatever the
    conf says) of this cluster's pods: its networks' (named NETWORK…, and
    cnfperf's attachments), and the loopback's of the same sandboxes."""
    ours = [r for r in CNI_RESULTS.glob("*") if r.name.startswith(NETWORK)]
    sandboxes = {word for r in ours for word in r.name.split("-") if len(word) == 64}
    return ours + [r for r in CNI_RESULTS.glob("cni-loopback-*")
                   if any(s in r.name for s in sandboxes)]


def _pids_with(text: str) -> list[int]:
    """Processes whose command line holds `text` (the shims name their containerd's socket)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def _certificates(directory: Path, node: str, address: str) -> dict[str, pki.Pair]:
    ca = pki.Authority(directory)
    return {
        "ca": ca.pair,
        "apiserver": ca.issue("apiserver", "kube-apiserver", server=True, hosts=(
            "127.0.0.1", address, "10.96.0.1", "localhost", "kubernetes", "kubernetes.default",
            "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")),
        "admin": ca.issue("admin", "cnfperf-admin", "system:masters", client=True),
        **_node_certificates(ca, node, address),
        "sa": pki.signing_key(directory),
    }


def _node_certificates(ca: pki.Authority, node: str, address: str,
                       stem: str = "") -> dict[str, pki.Pair]:
    """A node's: its kubelet's client certificate (system:node:NAME, which
    the API server's Node authorizer takes) and its serving one."""
    return {"node": ca.issue(f"{stem}node", f"system:node:{node}", "system:nodes", client=True),
            "kubelet": ca.issue(f"{stem}kubelet", node, server=True,
                                hosts=(node, address, "127.0.0.1"))}


def _kubeconfig(path: Path, ca: pki.Pair, client: pki.Pair, user: str,
                server: str = f"https://127.0.0.1:{API_PORT}", tls_name: str = "") -> Path:
    cluster = {"server": server, "certificate-authority": str(ca.cert)}
    if tls_name:
        cluster["tls-server-name"] = tls_name
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "cnfperf",
        "clusters": [{"name": "cnfperf", "cluster": cluster}],
        "users": [{"name": user, "user": {"client-certificate": str(client.cert),
                                         "client-key": str(client.key)}}],
        "contexts": [{"name": "cnfperf", "context": {"cluster": "cnfperf", "user": user}}]}))
    return path


def _cni(home: Path) -> None:
    """The node's CNI folders: Debian's plugins and Multus in bin/, and one
    conf, Multus', whose delegate is the default network."""
    bin_dir = home / "cni/bin"
    for plugin in CNI_PLUGINS.iterdir():
        (bin_dir / plugin.name).symlink_to(plugin)
    (bin_dir / "multus").symlink_to(builds.program("multus"))
    default = {"cniVersion": "0.3.1", "name": NETWORK, "plugins": [
        {"type": "bridge", "bridge": BRIDGE, "isGateway": False, "ipMasq": False,
         "ipam": {"type": "host-local", "dataDir": str(home / "ipam"),
                  "ranges": [[{"subnet": POD_SUBNET}]]}}]}
    multus = {"cniVersion": "0.3.1", "name": f"{NETWORK}-multus", "type": "multus",
              "kubeconfig": str(home / KUBECONFIG.name), "cniDir": str(home / "multus"),
              "binDir": str(bin_dir), "logFile": str(home / "logs/multus.log"),
              "logLevel": "error", "delegates": [default]}
    (home / "cni/net.d/00-multus.conf").write_text(json.dumps(multus, indent=1))


def _registry_config(home: Path) -> str:
    """The distribution registry's: its blobs in the cluster's folder, on
    this host's loopback; containerd pulls from it over plain HTTP (its
    hosts.toml, under the CRI's config_path)."""
    address = f"127.0.0.1:{REGISTRY_PORT}"
    (home / "certs.d" / address / "hosts.toml").write_text(
        f'server = "http://{address}"\n[host."http://{address}"]\n'
        '  capabilities = ["pull", "resolve"]\n')
    path = home / "registry.yml"
    path.write_text(f"""version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: {home / "registry"}
http:
  addr: {address}
""")
    return str(path)


def _containerd_config(home: Path) -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    path = home / "containerd.toml"
    path.write_text(f"""version = 2
root = "{home}/containerd/root"
state = "{home}/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "{home / CONTAINERD_SOCK.name}"
[ttrpc]
  address = "{home / CONTAINERD_SOCK.name}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{home}/containerd/opt"
[{cri}]
  sandbox_image = "{PAUSE}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [{cri}.registry]
    config_path = "{home}/certs.d"
  [{cri}.cni]
    bin_dir = "{home}/cni/bin"
    conf_dir = "{home}/cni/net.d"
    max_conf_num = 1
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
""")
    return str(path)


def _etcd_argv(home: Path) -> list[str]:
    return [str(builds.program("etcd")), "--name=cnfperf", f"--data-dir={home}/etcd",
            f"--listen-client-urls=http://127.0.0.1:{ETCD_PORT}",
            f"--advertise-client-urls=http://127.0.0.1:{ETCD_PORT}",
            f"--listen-peer-urls=http://127.0.0.1:{ETCD_PEER_PORT}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{ETCD_PEER_PORT}",
            f"--initial-cluster=cnfperf=http://127.0.0.1:{ETCD_PEER_PORT}",
            "--listen-metrics-urls=", "--log-level=warn", "--unsafe-no-fsync"]


def _apiserver_argv(home: Path, certs: dict[str, pki.Pair], address: str) -> list[str]:
    return [str(builds.program("kubernetes", "bin/kube-apiserver")),
            f"--etcd-servers=http://127.0.0.1:{ETCD_PORT}",
            # every address: the nodes of other hosts reach it (member()); a
            # client shows a certificate of the cluster's CA, or is refused
            "--bind-address=0.0.0.0", f"--secure-port={API_PORT}", "--anonymous-auth=false",
            f"--advertise-address={address}",
            f"--tls-cert-file={certs['apiserver'].cert}",
            f"--tls-private-key-file={certs['apiserver'].key}",
            f"--client-ca-file={certs['ca'].cert}",
            f"--kubelet-client-certificate={certs['admin'].cert}",
            f"--kubelet-client-key={certs['admin'].key}",
            f"--kubelet-certificate-authority={certs['ca'].cert}",
            "--kubelet-preferred-address-types=InternalIP",   # the node's name may be loopback's
            f"--service-account-key-file={certs['sa'].cert}",
            f"--service-account-signing-key-file={certs['sa'].key}",
            "--service-account-issuer=https://kubernetes.default.svc",
            "--service-cluster-ip-range=10.96.0.0/24",
            "--authorization-mode=Node,RBAC", "--allow-privileged=true",
            "--enable-priority-and-fairness=false", "--profiling=false",
            "--endpoint-reconciler-type=none"]


def _controller_argv(home: Path, certs: dict[str, pki.Pair]) -> list[str]:
    return [str(builds.program("kubernetes", "bin/kube-controller-manager")),
            f"--kubeconfig={home / KUBECONFIG.name}", "--leader-elect=false",
            "--secure-port=0", "--use-service-account-credentials=false",
            f"--service-account-private-key-file={certs['sa'].key}",
            f"--root-ca-file={certs['ca'].cert}",
            "--controllers=*,-nodeipam,-service,-route,-cloud-node-lifecycle"]


def _kubelet_argv(home: Path, node: str, address: str, certs: dict[str, pki.Pair]) -> list[str]:
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": str(certs["ca"].cert)}},
        "authorization": {"mode": "Webhook"},
        "address": address, "port": KUBELET_PORT, "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1", "healthzPort": KUBELET_HEALTHZ,
        "tlsCertFile": str(certs["kubelet"].cert), "tlsPrivateKeyFile": str(certs["kubelet"].key),
        "containerRuntimeEndpoint": f"unix://{home / CONTAINERD_SOCK.name}",
        "cgroupDriver": "cgroupfs", "cgroupRoot": f"/{CGROUP}", "failCgroupV1": False,
        "failSwapOn": False, "makeIPTablesUtilChains": False,
        "cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
        "podLogsDir": str(home / "logs/pods"),
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%",
                         "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False, "registerNode": True,
        "resolvConf": "", "enableServer": True,
    }
    path = home / "kubelet.yaml"
    path.write_text(yaml.safe_dump(config))
    return [str(builds.program("kubernetes", "bin/kubelet")), f"--config={path}",
            f"--kubeconfig={home / 'kubelet.kubeconfig'}", f"--root-dir={home / 'kubelet'}",
            f"--hostname-override={node}", f"--node-ip={address}"]


def _http_ok(url: str, ctx: ssl.SSLContext | None = None) -> bool:
    with urllib.request.urlopen(url, timeout=2, context=ctx) as response:
        return response.status == 200


def _pause(home: Path) -> None:
    """The pods' sandbox image (PAUSE): Kubernetes' pause program alone."""
    root = home / "images" / "pause"
    root.mkdir()
    shutil.copy2(builds.program("kubernetes", "bin/pause"), root / "pause")
    images.load(home / CONTAINERD_SOCK.name, PAUSE, root, ["/pause"])


def _apply_crd(api, daemons: _Daemons) -> None:
    """Multus' NetworkAttachmentDefinition CRD, from its build's deployment."""
    from kubernetes import client
    manifest = builds.program("multus", "share/multus-daemonset.yml").read_text()
    crd = next(d for d in yaml.safe_load_all(manifest)
               if d and d.get("kind") == "CustomResourceDefinition")
    client.ApiextensionsV1Api(api).create_custom_resource_definition(crd)

    def established() -> bool:
        got = client.ApiextensionsV1Api(api).read_custom_resource_definition(
            crd["metadata"]["name"])
        return any(c.type == "Established" and c.status == "True"
                   for c in got.status.conditions or [])
    daemons.wait("kube-apiserver", established, "the NetworkAttachmentDefinition CRD")


def _node_ready(api, node: str) -> bool:
    from kubernetes import client
    got = client.CoreV1Api(api).read_node(node)
    return any(c.type == "Ready" and c.status == "True" for c in got.status.conditions or [])


def _default_account(api) -> bool:
    from kubernetes import client
    client.CoreV1Api(api).read_namespaced_service_account("default", "default")
    return True


def _version(api) -> str:
    from kubernetes import client
    return client.VersionApi(api).get_code().git_version


def _last_line(log: Path) -> str:
    try:
        lines = [l for l in log.read_text(errors="replace").splitlines() if l.strip()]
    except OSError:
        return "(no log)"
    return lines[-1][:300] if lines else "(nothing in its log)"
