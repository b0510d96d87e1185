"""The scenario's fields, each declared once: the one table that the CLI (flags
and --help), validation (scenario.Scenario), sweeps (order and value kinds),
the store (columns), the report (labels) and the CSV export read.

Adding a field is one row here plus its use (the engine argv, a data plane…).

Columns of a row:
  kind      how values are read: str, choice, int, float, bool, rate (a Rate;
            `search` rows also take ndr/pdr), cpus (a Linux cpulist)
  default   the value when none is given (mode-dependent defaults: scenario.py)
  help      for --help and the docs; `unit` follows the value in help
  axis      sweep order, outermost first: the data plane is outermost because
            starting a switch is the slowest step; rate innermost so that a
            received-vs-offered curve is measured on one switch instance
  column    SQL type of the field's own column in the store's points table
            (SQL can filter and group by it); "" = kept in the scenario JSON only
  label     how the field tells points apart in labels, tables and progress
            lines: "bare" (the value names itself: `vhost dpdk latency`),
            "named" (`size=64`) or "" (not shown)
  describe  shown in every point's one-line description
  search    only steers an ndr/pdr search: a fixed-rate point's key ignores it
  words     a value may be a command line (nf's cmd:TEMPLATE): its commas are its
            own, and it is shown by its first word
  switch_config  the switch is made for its value: two consecutive points that
            differ in it never share a kept switch (run/keep.py, switch_keep)
  traffic   only what the tester sends and how a trial or a search runs: a VM
            kept between points (run/keep.py) serves consecutive points that
            differ in nothing else, and share a kept switch (switch_config)
  late      added after runs were stored: a point's key leaves it out at its
            default, so a stored point keeps its key (and `--resume` its data)
Every field may take several values (a list or a range): a sweep.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from cnfperf import polls
from cnfperf import rate as rates

MODES = ("throughput", "latency")
APIS = ("udp", "raw", "mmap", "xdp", "dpdk")
NF_APIS = APIS[1:]   # a network function's: the L2 apis
# How an engine waits for packets (its --poll): polls.py, each mode with what
# it is, held to the engine's own table.
POLLS = polls.POLLS
# Sender and receiver in containers of their own, or one engine holding both ends;
# auto: split where its busy pollers fit on the point's cores, else single (testers.py).
TESTERS = ("split", "single")
AUTO = "auto"
# Where a DPDK switch's processes run: on the host, or in a container of
# their own, runc's or podman's (own cgroup; its sockets and hugepages shared
# by bind mounts).
SWITCH_IN = ("host", "container", "pod")
# Where a network function or a tester's end runs: in a container (of the
# scenario's runtime), in a QEMU virtual machine of its own, or in a pod on a
# Kubernetes cluster (`cluster`).
PLACES = ("container", "vm", "pod")
# The CNI plugin that gives a pod its kernel ports (Multus' attachments):
# the data plane's own link moved in, or made by the plugin of its kind.
CNIS = ("host-device", "macvlan", "bridge")
# The machine cnfperf runs on, as placements name it; other hosts are an
# inventory's (hosts = FILE: cnfperf/remote/inventory.py).
LOCAL = "local"
# How DPDK (a switch, or an engine with api = dpdk) opens a NIC that is a wire's
# end: an AF_PACKET socket (its TPACKET ring), or an AF_XDP socket (umem the
# kernel fills without that copy; frames that fit a 2 KB buffer).
NIC_DRIVERS = ("af_packet", "af_xdp")
# How a switch forwards a frame: by its destination MAC (a MAC table: OVS's
# NORMAL, VPP's bridge domain, a learning bridge), from each port to the other
# port of its link (a cross-connect: OVS rules in_port=A,actions=output:B, VPP's
# l2 xconnect, testpmd's paired ports), or back out of the port it came in on,
# its MACs swapped (reflect: BESS's MACSwap; the switch alone is the single
# tester's peer, paper 001's baseline: plan.reflect_links); auto: the data
# plane's own way.
FORWARDS = ("mac", "port", "reflect")
# Which poll thread polls each Rx queue of a switch's ports: the switch's own
# choice, or pinned to the switch's poll cores in turn (OVS pmd-rxq-affinity).
RXQ_AFFINITIES = (AUTO, "pinned")
# The descriptors of a switch port's ring (switch_rxd, switch_txd): DPDK's
# bounds for a ring OVS or a virtio front end takes, a power of two.
MIN_DESC, MAX_DESC = 64, 4096
# How QEMU runs a virtual machine: with the host's KVM, or emulated (TCG).
ACCELS = ("kvm", "tcg")
# A noisy neighbour during the measurement: a stress-ng stressor class in a
# container of its own, or a second, unmeasured traffic stream through the switch.
NOISES = ("none", "cpu", "cache", "memory", "io", "traffic")
# Where the noise runs, besides a CPU list: the cores of the switch's poll
# threads and the NFs ("same"), or the cores no node was placed on ("other").
NOISE_PLACES = ("same", "other")
# The quota fields, each a % of one core for one kind of node's containers.
QUOTAS = ("switch_quota", "nf_quota", "endpoint_quota")
# How a search (rate = ndr, pdr, ndr+pdr…) finds its rates: MLRsearch with the
# goals of FD.io CSIT (1 s trials, 21 s at a load, half of them may lose), of
# RFC 2544 (one 60 s trial) or of ETSI TST009 (a lossy 60 s trial is run once
# more), or the binary search with a verification trial (experiments/search.py).
SEARCHES = ("csit", "rfc2544", "tst009", "bisect")
# Where a token bucket holds a pair's frames to a rate: the policer drops what
# finds no token, the shaper queues it until one comes. engine: in each of the
# engine's network functions, before it forwards; nft, tc: at the netdev ingress
# of the kernel link into the receiver (nftables' limit, tc's police action);
# tbf, htb: tc's qdisc at that link's egress (host/buckets.py).
POLICERS = ("none", "engine", "nft", "tc")
SHAPERS = ("none", "engine", "tbf", "htb")
MAX_BUCKET = 1_000_000   # frames: the engine's own bounds, held to its --describe by a test
MAX_QUEUE = 65536
MAX_NFS = 16   # an NF's index is one hex digit of its interface names (plan.py)
# UDP ports: receivers listen on RX_PORT + pair, senders use a range from TX_PORT.
RX_PORT = 9000
TX_PORT = 10000
MAX_PORT = 65535
# The engine's --flows bound (its per-flow sequence tracking, engine/src/core/seq.h),
# held to its --describe by tests/unit/test_engine_describe.py.
MAX_FLOWS = 4096


@dataclass(frozen=True)
class Field:
    name: str
    kind: str
    default: Any
    help: str
    axis: int
    unit: str = ""
    choices: tuple[str, ...] = ()
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    column: str = ""
    label: str = ""
    describe: bool = False
    search: bool = False
    searchable: bool = False    # rate only: ndr/pdr allowed
    optional: bool = False      # None is a value (the default is computed)
    zero: str = ""              # rate only: what 0 means, as shown ("max", "none")
    unset: str = ""             # optional only: what None means, as the docs show it ("none")
    # A value may be a command line (a user's NF command): an item of a list that
    # holds a space makes the whole text one value, its commas its own; it is
    # shown by its first word.
    words: bool = False
    switch_config: bool = False
    traffic: bool = False
    late: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


FIELDS: list[Field] = [
    # its help goes on with the data planes' names (reference.help_text): they are
    # the registry's, above this table
    Field("switch", "str", "veth", "data plane", axis=0, column="TEXT", label="bare",
          describe=True, switch_config=True),
    # The next three name the data planes they concern (reference.help_text asks
    # the registry's capabilities: processes, max_cores, max_rxq).
    Field("switch_in", "choice", "host", "where the switch runs: host, container (a "
          "container of its own, with its own cgroup: runtime runc or podman), or pod (a "
          "privileged pod of its own on the cluster: see cluster)", axis=1,
          choices=SWITCH_IN, column="TEXT", label="named", switch_config=True),
    Field("switch_cores", "int", 1, "the switch's poll threads (PMD threads, forwarding cores), "
          "one core each", axis=2, ge=1,
          le=64, column="INTEGER", label="named", switch_config=True),
    Field("switch_rxq", "int", 1, "Rx queues per switch port, spread over the switch's poll "
          "threads (the engines offer them on their vhost-user ports but poll queue 0 only: more "
          "queues matter with several pairs and for the switch's queue scheduling)", axis=3,
          ge=1, le=16, column="INTEGER", label="named", switch_config=True),
    Field("forward", "choice", AUTO, "how the switch forwards: mac (by destination MAC, a "
          "MAC table: OVS NORMAL, VPP's bridge domain), port (each port to the other port of its "
          "link and back: OVS rules in_port=A,actions=output:B, VPP l2 xconnect), reflect (back "
          "out of the port it came in on, MACs swapped: the switch alone is the single tester's "
          "peer, nfs = 0; paper 001's baseline, BESS's MACSwap), auto (the data plane's own way: "
          "port where it has no MAC table)", axis=-6,
          choices=(AUTO, *FORWARDS), column="TEXT", label="named", switch_config=True,
          late=True),
    Field("rxq_affinity", "choice", AUTO, "which poll thread polls each Rx queue of the "
          "switch's ports: auto (the switch places them), pinned (each port's queues pinned in "
          "turn to the switch's poll cores, OVS other_config:pmd-rxq-affinity; the poll "
          "threads then poll those alone)", axis=-7, choices=RXQ_AFFINITIES, column="TEXT",
          label="named", switch_config=True, late=True),
    Field("switch_rxd", "int", None, "descriptors of each Rx queue of the switch's ports, a "
          "power of two: OVS options:n_rxq_desc on a DPDK port (a NIC), testpmd --rxd; a "
          "vhost-user port's ring is its front end's (the engine's virtio-user queue_size): "
          "one size both ways; default: each port's own", axis=-8, ge=MIN_DESC, le=MAX_DESC,
          column="INTEGER", label="named", optional=True, unset="each port's own",
          switch_config=True, late=True),
    Field("switch_txd", "int", None, "descriptors of each Tx queue of the switch's ports, a "
          "power of two: OVS options:n_txq_desc, testpmd --txd; on a vhost-user port as "
          "switch_rxd (equal to it where both are given); default: each port's own", axis=-9,
          ge=MIN_DESC, le=MAX_DESC, column="INTEGER", label="named", optional=True,
          unset="each port's own", switch_config=True, late=True),
    Field("switch_quota", "float", None, "CPU quota of the switch's container (switch_in = "
          "container or pod: a pod's CPU limit), in % of one core: 50 is half a core, 200 "
          "two; default: none", axis=4,
          unit="%", gt=0, column="REAL", label="named", optional=True, switch_config=True),
    Field("quota_period", "int", 100_000, "the CFS period over which quotas are enforced",
          axis=5, unit="µs", ge=1000, le=1_000_000, column="INTEGER", switch_config=True),
    Field("switch_keep", "bool", True, "keep the switch up between consecutive points of a "
          "run whose switch is made alike (its counters reset, its state checked); no: a "
          "fresh switch for every point", axis=45, column="", late=True),
    Field("engine_keep", "bool", True, "keep a point's engines up between its trials (a "
          "search's, latency at its loads): started once, each later trial's rate, duration "
          "and warm-up told over their stdin, where every node is an engine on this host (in "
          "a container or a VM) and no fault is injected; no: fresh engines for every trial", axis=61, column="", late=True,
          traffic=True),
    Field("pin", "bool", True, "pin the switch and the network functions to their planned "
          "cores; no: their cpuset is every usable core", axis=6, column="INTEGER",
          label="named", switch_config=True),
    Field("api", "choice", "udp", "engine packet I/O: " + ", ".join(APIS), axis=14,
          choices=APIS, column="TEXT", label="bare", describe=True),
    Field("mode", "choice", "throughput", "throughput (send/recv) or latency (client/server)",
          axis=18, choices=MODES, column="TEXT", label="bare", describe=True, traffic=True),
    Field("pairs", "int", 1, "sender/receiver (or client/server) pairs", axis=23, ge=1, le=250,
          column="INTEGER", label="named", describe=True),
    Field("nfs", "int", 0, "network functions in each pair's path (0: the ends meet through "
          "the data plane)", axis=20, ge=0, le=MAX_NFS, column="INTEGER", label="named"),
    Field("graph", "str", "", "each pair's path as a graph of network functions instead of a "
          "chain: links between ends, `sender - in.a; in.b - top.a cost 2; …` (one per line or "
          "separated by ;), an end being sender, receiver or an NF's port NAME.PORT (ports "
          "lettered a, b, c…); the NFs route between them (nf = router); sets nfs",
          axis=55, column="TEXT", switch_config=True, late=True),
    # Its kinds are cnfperf/nfs/'s: --help and the docs list them (reference.help_text).
    Field("nf", "str", "l2", "what each network function does", axis=19,
          column="TEXT", label="named", words=True),
    Field("nf_api", "choice", "mmap", "the network functions' packet I/O (an L2 api); default: "
          "dpdk when api is dpdk (as on every DPDK data plane), else mmap (raw for latency)",
          axis=15,
          choices=NF_APIS, column="TEXT"),
    Field("nf_cores", "int", 1, "cores per network function (testpmd forwards each direction "
          "on a core of its own; the engine's NFs poll a queue of each port per core, the "
          "tester's flows spread over them by hash; Click's runs one thread)", axis=21, ge=1, le=8, column="INTEGER", label="named"),
    Field("nf_routes", "int", 1, "nf = router: the prefixes toward the receiver's side each "
          "router has a route for; more than one: the tester's flows take turns over them, a "
          "/32 each, flow f to prefix f % (nf_routes + nf_unrouted) (flows at least as many)",
          axis=51, ge=1, le=4096, column="INTEGER", label="named", late=True),
    Field("nf_interfaces", "int", 2, "nf = router: each router's interfaces, its two ports and "
          "macvlan sub-interfaces of its first port up to the number, an address each",
          axis=52, ge=2, le=512, column="INTEGER", label="named", late=True),
    Field("nf_unrouted", "int", 0, "nf = router: prefixes the tester's flows also take turns "
          "over (after nf_routes') that no router has a route for: the kernel drops their frames "
          "for want of one (IpExt InNoRoutes, in the loss table)", axis=53, ge=0, le=4095,
          column="INTEGER", label="named", late=True),
    Field("bfd_interval", "int", 300, "nf = frr:bgp, frr:static: each BFD session's "
          "transmit and receive interval (ms); a peer is down after bfd_multiplier of them "
          "without a packet", axis=56, unit="ms", ge=10, le=60000, column="INTEGER", label="named",
          late=True),
    Field("bfd_multiplier", "int", 3, "nf = frr:bgp, frr:static: BFD's detect multiplier: the "
          "intervals without a packet that take a session down", axis=57, ge=2, le=255,
          column="INTEGER", label="named", late=True),
    Field("ospf_hello", "float", 10.0, "nf = frr:ospf: seconds between hellos on each link; "
          "below 1 (0.5, 0.25…) is OSPF's fast hello, 1/ospf_hello hellos a second with "
          "ospf_dead = 1", axis=58, unit="s", gt=0, le=65535, column="REAL", label="named",
          late=True),
    Field("ospf_dead", "int", 40, "nf = frr:ospf: seconds without a hello that take a "
          "neighbour down", axis=59, unit="s", ge=1, le=65535, column="INTEGER", label="named",
          late=True),
    Field("nf_quota", "float", None, "CPU quota of each network function's container, in % of "
          "one core; default: none", axis=22, unit="%", gt=0, column="REAL", label="named",
          optional=True),
    Field("endpoint_cores", "int", 1, "cores per tester end (tester = split, mode = throughput): "
          "its engine polls a queue of its port per core, the sender dealing its flows out to "
          "them (flow f on queue f mod endpoint_cores, flows at least as many, no onoff), the "
          "receiver taking each flow on one queue (api raw, mmap, xdp or dpdk)", axis=60, ge=1,
          le=8,
          column="INTEGER", label="named", late=True),
    Field("endpoint_quota", "float", None, "CPU quota of each tester end's container, in % of "
          "one core; default: none", axis=24, unit="%", gt=0, column="REAL", label="named",
          optional=True),
    Field("noise", "str", "none", "a noisy neighbour while the point is measured: cpu, cache, "
          "memory, io (stress-ng in a container of its own), traffic (a second, unmeasured "
          "stream through the same switch), or cmd:COMMAND (a command of yours, run by sh from "
          "the host's file system in a network namespace of its own, on noise_on's cores; its "
          "process group is stopped with the trial)", axis=25, column="TEXT", label="named",
          words=True),
    Field("noise_on", "str", "other", "the noise's cores: same (the switch's and the NFs'), "
          "other (cores no node was placed on; else the least loaded), or a CPU list",
          axis=26, column="TEXT"),
    Field("tester", "choice", AUTO, "split: sender and receiver in containers of their own; "
          "single: one engine holds both ends of each path; auto: split where its busy pollers, "
          "the data plane's and the network functions' fit on the point's cores, else single "
          "(and either where only it can run)", axis=13, choices=(AUTO, *TESTERS),
          column="TEXT", label="named", describe=True),
    Field("size", "int", 64, "Ethernet frame size with FCS (64…9216)", axis=31, unit="bytes",
          ge=64, le=9216, column="INTEGER", label="named", describe=True, switch_config=True,
          traffic=True),
    Field("burst", "int", 32, "packets per burst; default: 32 for throughput, 1 for latency",
          axis=32, ge=1, le=1024, column="INTEGER", label="named", switch_config=True,
          traffic=True),
    Field("rate", "rate", 0.0, "offered rate per pair: 1000, 500k, 2.5M; 0 = max; or a search: "
          "ndr, pdr, pdr:X%; default: max for throughput, 1000 for latency", axis=44, unit="pps",
          column="REAL", label="named", describe=True, searchable=True, zero="max", traffic=True),
    Field("duration", "float", 10.0, "measured seconds", axis=33, unit="s", gt=0, le=86400,
          column="REAL", traffic=True),
    Field("warmup", "float", 1.0, "seconds sent before measuring", axis=34, unit="s", ge=0,
          le=3600, column="REAL", traffic=True),
    Field("flows", "int", 1, "UDP source ports per pair", axis=28, ge=1, le=MAX_FLOWS,
          column="INTEGER", label="named", traffic=True),
    Field("touch", "bool", False, "write and verify every payload byte", axis=29,
          column="INTEGER", traffic=True),
    Field("mmsg", "bool", False, "sendmmsg/recvmmsg batching (udp, raw)", axis=16,
          column="INTEGER", label="named", traffic=True),
    Field("poll", "choice", "busy", "how engines wait for packets: busy (spin), adaptive (sleep "
          "until shortly before the next packet is due at the traffic's pace, then wait for it), "
          "interrupt (sleep until a packet arrives); "
          "default: interrupt for latency with udp or raw, else busy", axis=17, choices=POLLS,
          column="TEXT", label="named", switch_config=True, traffic=True),
    Field("runtime", "str", "runc", "container runtime: runc (an OCI bundle each, runc itself), "
          "podman (the same images in podman's store, podman's containers) or netns (no image "
          "nor cgroup: the host's binaries in the endpoint's netns)", axis=7, column="TEXT",
          switch_config=True),
    Field("nf_in", "str", "container", "where each network function runs: container (in the "
          "runtime's container), vm (a QEMU virtual machine of its own) or pod (a pod on "
          "the cluster, its ports attached by Multus); places joined "
          "by + give a path's NFs theirs in order, the last repeating (vm+container)",
          axis=8, column="TEXT", label="named"),
    Field("endpoint_in", "choice", "container", "where the tester's ends run: container, vm "
          "(a QEMU virtual machine each) or pod (a pod each on the cluster)", axis=9,
          choices=PLACES, column="TEXT", label="named"),
    Field("cluster", "str", "", "the Kubernetes cluster pods go to (nf_in, endpoint_in or "
          "switch_in = pod): its kubeconfig FILE, whose current context is used; cnfperf "
          "places its pods on the cluster's node that is this host. Default: the test "
          "cluster (`cnfperf cluster`)", axis=-23, switch_config=True, late=True),
    Field("cni", "choice", CNIS[0], "the CNI plugin Multus gives a pod its kernel data "
          "plane's ports with: host-device (the data plane's own link moved in: every kernel "
          "plane), macvlan or bridge (the plugin of the data plane's kind makes each port "
          "again, as a CNF's macvlan or bridge network does: a child of the data plane's "
          "parent, a veth on its bridge; switch = macvlan or bridge)", axis=-24, choices=CNIS,
          column="TEXT", label="named", switch_config=True, late=True),
    Field("registry", "str", "", "an image registry cnfperf pushes its images to (skopeo) "
          "and the cluster's nodes pull a pod's from: [http://]HOST[:PORT][/PATH], http:// for "
          "one without TLS (the test cluster's: http://127.0.0.1:15000/cnfperf). Default: "
          "none, the images imported into this node's containerd", axis=-25, late=True),
    Field("hosts", "str", "", "the inventory of other hosts (a hosts.toml file: their SSH "
          "addresses and the wires between them); needed when tester_host, dut_host or "
          "nf_host names one",
          axis=-3, switch_config=True),
    Field("tester_host", "str", LOCAL, "the host the tester's ends run on: local, or a host of "
          "the inventory (hosts); on another host than dut_host its ports are NICs wired to "
          "the switch's host. Two joined by + put the sender (client) on the first, the "
          "receiver (server) on the second (tester = split): no one-way latency then, two "
          "clocks", axis=-1, column="TEXT", label="named", switch_config=True),
    Field("dut_host", "str", LOCAL, "the host under test: where the switch and the network "
          "functions run (local, or a host of the inventory)", axis=-2, column="TEXT",
          label="named", switch_config=True),
    Field("nf_host", "str", "", "the host each network function runs on, if not dut_host: "
          "hosts joined by + give a path's NFs theirs in order, the last repeating (dut+dut2: "
          "a chain across two hosts, each with its switch, wired)", axis=-4, column="TEXT",
          label="named", switch_config=True),
    Field("nic_driver", "choice", "af_packet", "how DPDK opens a NIC that is a wire's end "
          "(a port of a node on another host): af_packet (an AF_PACKET socket's ring) or af_xdp "
          "(an AF_XDP socket; frames up to 1924 bytes); the switches that open NICs with DPDK "
          "and the tester or NFs with api = dpdk use it", axis=-5, choices=NIC_DRIVERS,
          column="TEXT", label="named", switch_config=True),
    Field("share_wires", "bool", False, "ports crossing between two hosts share the wires "
          "there, as a switch's port carries many MACs: each port a macvlan child of its "
          "wire's NIC on both hosts (on its node's, with the port's MAC; on the switch's, "
          "taking the frames from that MAC), the ports spread over the wires in turn; no: a "
          "wire per port", axis=-26, column="INTEGER", label="named", switch_config=True),
    Field("sriov_pf", "str", AUTO, "the NIC (its physical function) whose SR-IOV virtual "
          "functions are switch = sriov's ports, on the host under test: auto (the host's one "
          "NIC with SR-IOV) or its interface name", axis=-18, column="TEXT", label="named",
          switch_config=True),
    Field("sriov_vlan", "int", 0, "the VLAN the PF puts every virtual function of "
          "switch = sriov on (the NIC tags what a VF sends and strips what it receives; "
          "0: none)", axis=-19, ge=0, le=4094, column="INTEGER", label="named",
          switch_config=True),
    Field("sriov_spoofchk", "bool", False, "the PF's spoof check on each virtual function of "
          "switch = sriov: a VF sends from its own MAC only (a network function forwarding "
          "the tester's frames is then dropped by the NIC)", axis=-20, column="INTEGER",
          label="named", switch_config=True),
    Field("sriov_trust", "bool", True, "the PF trusts each virtual function of switch = sriov "
          "(it may go promiscuous and change its MAC)", axis=-21, column="INTEGER",
          label="named", switch_config=True),
    Field("sriov_max_tx_rate", "int", 0, "the NIC's own limit on what each virtual function "
          "of switch = sriov sends (its max_tx_rate; a policer no tenant bypasses; 0: none)",
          axis=-22, unit="Mbit/s", ge=0, le=400000, column="INTEGER", label="named",
          switch_config=True),
    Field("accel", "choice", AUTO, "how virtual machines run: kvm (hardware virtualisation), "
          "tcg (QEMU's emulation: slow, results marked emulated), or auto (kvm where the "
          "host's KVM boots the guest, else tcg)", axis=10, choices=(AUTO, *ACCELS),
          column="TEXT"),
    Field("vm_memory", "int", 512, "each virtual machine's memory (one with DPDK NICs holds "
          "256 MB of hugepages in it)", axis=11, unit="MB", ge=160, le=65536, column="INTEGER"),
    Field("vm_keep", "bool", True, "keep the virtual machines up between consecutive points "
          "of a run, with the switch their NICs are on (switch_keep), where the points differ "
          "only in their traffic (rate, duration, the search's fields…): each booted once, "
          "its engines started anew in it for every point; no: fresh VMs for every point",
          axis=62, column="", late=True),
    Field("vm_image", "str", "host", "the root file system a virtual machine runs your own "
          "commands in (cmd:, testpmd): host (the host's own, read-only), or a disk image of "
          "yours (qcow2 or raw, its root file system ext4), never written to; the engine "
          "always runs from the host's", axis=12, column="TEXT"),
    Field("cpus", "cpus", None, "host CPUs to place endpoints on, e.g. 0-3 or 2,3", axis=27,
          column="TEXT", optional=True, unset="every usable CPU"),
    Field("limit", "rate", 0.0, "shape what each receiver gets to this rate: tbf on the link "
          "into it (as shaper = tbf), a bucket of 10 ms or five bursts, a queue of 64 "
          "frames; 0 = none",
          axis=30, unit="pps", column="REAL", label="named", zero="none"),
    Field("policer", "choice", "none", "a token-bucket policer on each pair's frames, dropping "
          "what finds no token: engine (in each of the engine's network functions, before it "
          "forwards), nft (nftables' netdev ingress of the kernel link into the receiver), tc "
          "(tc's police action there, where the kernel has it); none", axis=-10,
          choices=POLICERS, column="TEXT", label="named", late=True),
    Field("policer_rate", "rate", 0.0, "the policer's rate (its tokens a second)", axis=-11,
          unit="pps", column="REAL", label="named", zero="none", late=True),
    Field("policer_bucket", "int", 32, "the policer's bucket: frames that may pass back to "
          "back", axis=-12, unit="frames", ge=1, le=MAX_BUCKET, column="INTEGER",
          label="named", late=True),
    Field("shaper", "choice", "none", "a token-bucket shaper on each pair's frames, queueing "
          "what finds no token until one comes: engine (in each of the engine's network "
          "functions, before it forwards), tbf or htb (tc's qdisc at the egress of the kernel "
          "link into the receiver); none", axis=-13, choices=SHAPERS, column="TEXT",
          label="named", late=True),
    Field("shaper_rate", "rate", 0.0, "the shaper's rate (its tokens a second)", axis=-14,
          unit="pps", column="REAL", label="named", zero="none", late=True),
    Field("shaper_bucket", "int", 32, "the shaper's bucket: frames that may leave back to back",
          axis=-15, unit="frames", ge=1, le=MAX_BUCKET, column="INTEGER", label="named",
          late=True),
    Field("shaper_queue", "int", 1000, "the shaper's queue: frames it holds; more are dropped",
          axis=-16, unit="frames", ge=1, le=MAX_QUEUE, column="INTEGER", label="named",
          late=True),
    Field("onoff", "int", 0, "an on/off source: each sender sends this many frames back to back, "
          "then nothing, at the point's rate on average; 0: a steady pace", axis=-17,
          unit="frames", ge=0, le=MAX_BUCKET, column="INTEGER", label="named", late=True,
          traffic=True),
    Field("soak", "float", 0.0, "seconds of traffic in one long trial at the point's rate "
          "(after a search: soak_at of the rate it found), its loss and latency stored every "
          "second as a time series, kept when the run is interrupted and continued by --resume; "
          "0: no soak", axis=46, unit="s", ge=0, le=7 * 86400, column="REAL", late=True,
          traffic=True),
    Field("fault", "str", "none", "a fault during the measurement: what goes down on every "
          "measured path, at fault_at for fault_duration, then up again: link:K (the path's "
          "link K, 0 leaving the sender, nfs reaching the receiver: taken down at its end "
          "towards the receiver, the node's interface where it has one, else the switch's "
          "port for it), "
          "port:K (the switch's port at that end of link K), nf:K (network function K, 0 next "
          "to the sender: every port of it); in a graph K counts its links and NFs, and names "
          "address them: nf:NAME, link:NAME.PORT (that port, at its node), port:NAME.PORT; "
          "@P after any: on pair P's path alone (nf:0@1); "
          "none: no fault", axis=48, column="TEXT",
          label="named", late=True),
    Field("fault_at", "float", 1.0, "fault: seconds into the measured window when its target "
          "goes down", axis=49, unit="s", gt=0, le=86400, column="REAL", late=True),
    Field("fault_duration", "float", 0.5, "fault: seconds its target stays down (it is up "
          "again before the measured window ends: fault_at + fault_duration < duration)",
          axis=50, unit="s", gt=0, le=86400, column="REAL", late=True),
    Field("soak_at", "str", "90%", "search: the load of a soak after a search, a percentage "
          "of the rate found for the last goal (the PDR)", axis=47, search=True, late=True,
          traffic=True),
    Field("search", "choice", "csit", "search: how the rates are found: MLRsearch with the goals "
          "of csit (FD.io CSIT's: 1 s trials, 21 s at a load, half of it may see loss), "
          "rfc2544 (one 60 s trial at a load) or tst009 (a 60 s trial, repeated once when it "
          "lost), or bisect (binary search, then a verification trial)", axis=35,
          choices=SEARCHES, search=True, late=True, traffic=True),
    Field("precision", "float", None, "search: the goal width: stop when the lower and upper "
          "bounds are closer than this fraction (csit, rfc2544, tst009: 0.005; bisect: 0.01)",
          axis=42, gt=0, lt=0.5, search=True, optional=True, unset="the search's", traffic=True),
    Field("trial_duration", "float", None, "search: measured seconds of a trial (MLRsearch: "
          "of the final trials; default: the search's, 1 for csit, 60 for rfc2544 and tst009, "
          "duration for bisect)", axis=36, unit="s", gt=0, le=3600, search=True,
          optional=True, unset="the search's", traffic=True),
    Field("initial_trial_duration", "float", None, "search: seconds of MLRsearch's first, "
          "shortest trials (default: 1, or trial_duration if shorter)", axis=37, unit="s",
          gt=0, le=3600, search=True, optional=True, late=True, unset="1 s", traffic=True),
    Field("duration_sum", "float", None, "search: MLRsearch's trial seconds at a load before "
          "it is a bound (default: 21 × trial_duration for csit, 1 × for rfc2544, 2 × for "
          "tst009)", axis=38, unit="s", gt=0, le=86400, search=True, optional=True, late=True,
          unset="the search's", traffic=True),
    Field("exceed_ratio", "float", None, "search: the share of a load's trial seconds that may "
          "see more loss than the goal while the load still counts as good (default: 0.5 for "
          "csit and tst009, 0 for rfc2544)", axis=39, ge=0, lt=1, search=True, optional=True,
          late=True, unset="the search's", traffic=True),
    Field("generator_tolerance", "float", 0.01, "search: the share of a trial's frames its "
          "senders may fail to send on their own (beyond one burst and the frames their ports "
          "refused, which are the device's loss) before the trial is invalid: it did not offer "
          "its load", axis=40, ge=0, lt=1,
          search=True, late=True, traffic=True),
    Field("latency_at", "str", "min+10%+50%+90%", "search: loads at which a latency trial "
          "follows the search, joined by +: min (the search's lowest load) or a percentage of "
          "the rate found for the last goal (the PDR); none: no latency trials", axis=41,
          search=True, late=True, traffic=True),
    Field("generator_baseline", "bool", False, "before the run's points, measure the "
          "tester's own limit: an unpaced trial through the lightest link the api allows "
          "(veth for the kernel apis; with dpdk a memif link, or testpmd for a single tester, "
          "whose two ports no direct link joins), at each throughput point's api, size, "
          "burst, tester, pairs and cores; each throughput point then says its received rate "
          "as a share of it (% of gen)", axis=54, column="", late=True, traffic=True),
    Field("search_max", "rate", 0.0, "search: highest rate tried (default: what an unpaced "
          "trial sends)", axis=43, unit="pps", search=True, zero="auto", traffic=True),
]

# Defaults that changed, with the value each had before: a run stored before the
# change (its spec has no `defaults`) is resumed with the old ones, so that its
# plan and its points' keys are rebuilt as they were (checks.replan).
CHANGED_DEFAULTS = {"tester": "split", "search": "bisect", "precision": 0.01, "latency_at": "none"}

# A pair's profile: a scenario gives one pair values of its own ([pair.N] tables,
# --pair N.FIELD=VALUES: scenario.py), so that pairs differ (an aggressor beside a
# victim). These are the fields a pair may set; the rest are the point's (the
# switch, its links and NFs, the api, one trial's duration are shared).
PROFILE = "pair"
PER_PAIR = ("mode", "rate", "size", "burst", "flows", "poll", "touch", "mmsg", "limit",
            "endpoint_quota", "nf_quota")

# Not scenario fields: they shape the sweep itself and take one value.
# The views below are computed once: the table is complete before anything reads it.
SWEEP_SETTINGS = {"repeat": "int"}
# Nor is this: a point's expectations (results/expect.py), lines a CI job holds
# its results to. A list taken whole, never swept, nor part of a point's key; a
# [[part]]'s and [quick]'s add to the top level's.
EXPECT = "expect"


def profiled(name: str) -> tuple[int, str] | None:
    """`pair.1.rate` (a pair's own value of a field, as sweeps and labels name
    it): (1, "rate"); None for any other name."""
    head, _, rest = name.partition(".")
    index, _, field = rest.partition(".")
    if head != PROFILE or not index.isdigit() or not field:
        return None
    return int(index), field


def show(name: str, value: Any) -> str:
    """A field's value as people read it: rates as 500k or 2.5M, 0 as what it means,
    yes or no (as the flags take them; the store keeps 1 and 0), a user's NF
    command by its program (the whole template is in the run's records)."""
    if (own := profiled(name)) is not None:
        name = own[1]
    f = by_name().get(name)
    if f is not None and f.optional and value is None:
        return "default"   # left to its computed default (the docs say which: `unset`)
    if f is not None and f.words and isinstance(value, str) and " " in value.strip():
        return value.split()[0] + "…"
    if f is not None and f.kind == "bool" and value in (True, False):
        return "yes" if value else "no"
    if name == "graph" and isinstance(value, str):   # one line: its links' text, by ;
        return "; ".join(part.strip() for line in value.strip().splitlines()
                         for part in line.split(";") if part.strip())
    if f is None or f.kind != "rate" or isinstance(value, bool):
        return str(value)
    if isinstance(value, rates.Rate):
        value = value.value()
    return f.zero if value == 0 and f.zero else rates.show(value)


def undescribed(label: str, also: tuple[str, ...] = ()) -> list[str]:
    """The parts of a point's label (`size=64 rep=2/3`) that describe() does not
    already show, nor the fields in `also`: what a progress line adds to it."""
    hidden = {f.name for f in described()} | set(also)
    return [part for part in label.split() if part.split("=", 1)[0] not in hidden]


@cache
def by_name() -> dict[str, Field]:
    return {f.name: f for f in FIELDS}


@cache
def names() -> tuple[str, ...]:
    return tuple(f.name for f in FIELDS)


@cache
def kinds() -> dict[str, str]:
    """How sweep.parse_values reads each field's (and setting's) values."""
    return {**{f.name: f.kind for f in FIELDS}, **SWEEP_SETTINGS}


def kind_of(name: str) -> str:
    """A field's kind, a pair's own value's (pair.1.rate) its field's."""
    own = profiled(name)
    return kinds().get(own[1] if own else name, "str")


@cache
def axis_order() -> tuple[str, ...]:
    return tuple(f.name for f in sorted(FIELDS, key=lambda f: f.axis))


@cache
def stored() -> tuple[Field, ...]:
    """Fields with a column of their own in the store, in table order."""
    return tuple(f for f in FIELDS if f.column)


@cache
def switch_config() -> tuple[str, ...]:
    """The fields a switch is made for (run/keep.py's switch_key)."""
    return tuple(f.name for f in FIELDS if f.switch_config)


@cache
def traffic() -> tuple[str, ...]:
    """The fields a kept VM does not depend on (run/keep.py's guest_key)."""
    return tuple(f.name for f in FIELDS if f.traffic)


@cache
def late() -> tuple[Field, ...]:
    return tuple(f for f in FIELDS if f.late)


@cache
def search_only() -> tuple[str, ...]:
    return tuple(f.name for f in FIELDS if f.search)


@cache
def labelled() -> tuple[Field, ...]:
    """Fields that tell points apart, in sweep order, those whose value names
    itself first: `vhost dpdk latency pairs=2 size=64`."""
    shown = sorted((f for f in FIELDS if f.label), key=lambda f: f.axis)
    return tuple(sorted(shown, key=lambda f: f.label != "bare"))


@cache
def described() -> tuple[Field, ...]:
    return tuple(f for f in labelled() if f.describe)
