"""End to end: the kernel-bypass apis (mmap, xdp, dpdk) through the engine's real roles.

Kernel interfaces: a veth pair between two `cnfp` namespaces. DPDK: its af_packet and
af_xdp PMDs on that veth (how paper 004 ran DPDK without a supported NIC), vhost-user
between two engine processes (net_vhost server in one, virtio_user in the other) and
memif. Every run is short and slow (20k pps, 1 s): these tests check accounting and
clean teardown, the benchmarks in bench/ check speed.
"""
from __future__ import annotations

import glob
import json
import os
import secrets
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import harness
import leak
from engines import engines, release_all

pytestmark = pytest.mark.e2e

RATE = "20k"
DURATION = "1"
HUGEPAGES = 128           # 2 MB pages for up to two DPDK processes at a time
EAL_MEMORY_MB = "64"


def need(engine: Path, api: str) -> None:
    harness.require_api(engine, api)


def held(argv: list) -> list:
    """argv with --hold, before the EAL arguments if there are any."""
    argv = [str(a) for a in argv]
    at = argv.index("--") if "--" in argv else len(argv)
    return argv[:at] + ["--hold"] + argv[at:]


def run_send_recv(start, recv_argv, send_argv, recv_ns=None, send_ns=None, recv_first=True):
    """recv first (--duration 0), then send; SIGINT the receiver once the sender is done.
    With recv_first=False the sender starts first (it is the vhost server and waits
    for its link) and the receiver, a virtio_user client, connects to it. Both
    hold their ports after their summaries until both have stopped polling."""
    if recv_first:
        rx = start(held(recv_argv), recv_ns)
        rx.ready()
        tx = start(held(send_argv), send_ns)
    else:
        tx = start(held(send_argv), send_ns)
        time.sleep(0.5)
        rx = start(held(recv_argv), recv_ns)
        rx.ready()
    sent = tx.summary()
    time.sleep(0.5)     # a TPACKET_V3 block retires on a timer: let the last one arrive
    received = rx.interrupt()
    release_all(tx, rx)
    return sent, received


def counts(summary: dict) -> str:
    """The summary without its histogram, for assertion messages."""
    return json.dumps({k: v for k, v in summary.items() if k != "latency"})


def assert_lossless(sent: dict, received: dict) -> None:
    """Every frame sent arrived once, intact; a paced sender sent its rate's
    frames (harness.assert_summary_sent), an unpaced one some."""
    if sent.get("offered_pps"):
        harness.assert_summary_sent(sent, sent["offered_pps"] * float(DURATION))
    else:
        assert sent["tx_packets"] > 0, counts(sent)
    assert received["rx_packets"] == sent["tx_packets"], f"sent {counts(sent)}\nreceived {counts(received)}"
    for key in ("lost", "bad", "corrupt", "reordered", "duplicate"):
        assert received[key] == 0, f"{key}: {counts(received)}"
    lat = received["latency"]
    assert lat["count"] == received["rx_packets"]
    assert 0 < lat["min_ns"] <= lat["p50_ns"] <= lat["p99_ns"] <= lat["max_ns"]


def flow(role: str, me: "End", peer: "End") -> list[str]:
    """Addresses of one endpoint: a sender aims at its peer, a receiver binds to itself."""
    args = ["--src-mac", me.mac, "--src-ip", me.ip, "--sport", "9000"]
    if role in ("send", "client"):
        args += ["--dst-mac", peer.mac, "--dst-ip", peer.ip, "--dport", "9000"]
    return args


def traffic(role: str) -> list[str]:
    if role in ("send", "client"):
        return ["--rate", RATE, "--duration", DURATION, "--interval", "0"]
    return ["--duration", "0", "--interval", "0"]


@dataclass
class End:
    netns: str
    iface: str
    mac: str
    ip: str


@dataclass
class Pair:
    a: End
    b: End

    def xdp_programs(self) -> list[str]:
        found = []
        for end in (self.a, self.b):
            out = subprocess.run(["ip", "-n", end.netns, "-o", "link", "show", end.iface],
                                 capture_output=True, text=True, check=True).stdout
            if " xdp" in out:
                found.append(out.strip())
        return found


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def veth(no_leftovers):
    """Two namespaces joined by a veth pair, IPv6 off so nothing but our frames flows."""
    tag = secrets.token_hex(2)
    pair = Pair(End(f"cnfpx{tag}a", f"cnfpx{tag}a", "02:00:5e:01:00:0a", "10.99.0.1"),
                End(f"cnfpx{tag}b", f"cnfpx{tag}b", "02:00:5e:01:00:0b", "10.99.0.2"))
    made: list[str] = []
    try:
        for end in (pair.a, pair.b):
            _ip("netns", "add", end.netns)
            made.append(end.netns)
            subprocess.run(["ip", "netns", "exec", end.netns, "sysctl", "-qw",
                            "net.ipv6.conf.all.disable_ipv6=1"], check=True)
        _ip("link", "add", pair.a.iface, "netns", pair.a.netns, "address", pair.a.mac, "type", "veth",
            "peer", "name", pair.b.iface, "netns", pair.b.netns, "address", pair.b.mac)
        for end in (pair.a, pair.b):
            _ip("-n", end.netns, "link", "set", end.iface, "up")
        yield pair
        assert not pair.xdp_programs(), "XDP program left attached"
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


# ---------------------------------------------------------------- kernel interfaces

def test_mmap_send_recv(engine, veth):
    need(engine, "mmap")
    a, b = veth.a, veth.b
    with engines() as start:
        sent, received = run_send_recv(
            start,
            [engine, "recv", "--api", "mmap", "--iface", b.iface, *flow("recv", b, a), *traffic("recv")],
            [engine, "send", "--api", "mmap", "--iface", a.iface, *flow("send", a, b), *traffic("send")],
            recv_ns=b.netns, send_ns=a.netns)
    assert_lossless(sent, received)
    assert sent["api"] == received["api"] == "mmap"


@pytest.mark.parametrize("mode", ["copy", "skb"])
def test_xdp_send_recv(engine, veth, mode):
    need(engine, "xdp")
    a, b = veth.a, veth.b
    xdp = ["--api", "xdp", "--xdp-mode", mode]
    with engines() as start:
        rx = start([engine, "recv", *xdp, "--iface", b.iface, *flow("recv", b, a), *traffic("recv")], b.netns)
        rx.ready()
        attached = veth.xdp_programs()
        assert len(attached) == 1 and b.iface in attached[0], attached   # the sender needs none
        assert ("xdpgeneric" in attached[0]) == (mode == "skb"), attached
        tx = start([engine, "send", *xdp, "--iface", a.iface, *flow("send", a, b), *traffic("send")], a.netns)
        sent = tx.summary()
        time.sleep(0.3)
        received = rx.interrupt()
    assert_lossless(sent, received)
    assert not veth.xdp_programs()


def test_xdp_client_server(engine, veth):
    """Frames the server receives go back out of the same umem without a copy."""
    need(engine, "xdp")
    a, b = veth.a, veth.b
    xdp = ["--api", "xdp", "--xdp-mode", "copy"]
    with engines() as start:
        srv = start([engine, "server", *xdp, "--iface", b.iface, *flow("server", b, a), *traffic("server")],
                    b.netns)
        srv.ready()
        cli = start([engine, "client", *xdp, "--iface", a.iface, *flow("client", a, b), "--rate", "5k",
                     "--duration", DURATION, "--interval", "0"], a.netns)
        rtt = cli.summary()
        served = srv.interrupt()
    harness.assert_summary_sent(rtt, 5000 * float(DURATION))     # --rate 5k
    assert rtt["rx_packets"] == rtt["tx_packets"] == served["rx_packets"], f"{counts(rtt)}\n{counts(served)}"
    assert rtt["lost"] == 0 and rtt["latency"]["kind"] == "rtt"
    assert 0 < rtt["latency"]["p50_ns"] <= rtt["latency"]["max_ns"]


@pytest.mark.parametrize("api", ["mmap", "xdp"])
def test_open_failure_is_one_clear_line(engine, api):
    need(engine, api)
    done = subprocess.run([str(engine), "recv", "--api", api, "--iface", "cnfpx-nosuch", "--duration", "1"],
                          capture_output=True, text=True, timeout=20)
    assert done.returncode == 1, done
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{api}: ") and "cnfpx-nosuch" in lines[0], lines


@pytest.mark.parametrize("api", ["mmap", "xdp"])
def test_frames_over_the_mtu_are_refused_at_open(engine, veth, api):
    """The kernel would drop them after the api accepted them: refuse up front."""
    need(engine, api)
    a, b = veth.a, veth.b
    done = subprocess.run(["ip", "netns", "exec", a.netns, str(engine), "send", "--api", api, "--iface", a.iface,
                           *flow("send", a, b), "--size", "1600", "--duration", "1"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 1, done
    assert done.stderr.strip() == f"{api}: 1600-byte frames do not fit the MTU 1500 of {a.iface}"


def test_xdp_zerocopy_on_veth_says_how_to_fix(engine, veth, no_leftovers):
    need(engine, "xdp")
    done = subprocess.run(["ip", "netns", "exec", veth.b.netns, str(engine), "recv", "--api", "xdp",
                           "--xdp-mode", "zerocopy", "--iface", veth.b.iface, "--duration", "1"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 1, done
    assert "zerocopy" in done.stderr and "--xdp-mode copy" in done.stderr, done.stderr


def macvlan(on: End) -> End:
    """A macvlan on `on`'s interface, in its namespace (a driver without native XDP)."""
    mv = End(on.netns, f"{on.iface}m", "02:00:5e:01:00:0c", "10.99.0.3")
    _ip("-n", on.netns, "link", "add", mv.iface, "link", on.iface, "address", mv.mac, "type", "macvlan",
        "mode", "bridge")
    _ip("-n", on.netns, "link", "set", mv.iface, "up")
    return mv


def test_xdp_auto_mode_falls_back_to_skb_where_the_driver_has_no_native_xdp(engine, veth):
    """libxdp gives up on macvlan in native mode: auto takes generic XDP (the
    program is attached as xdpgeneric) and receives everything."""
    need(engine, "xdp")
    a, mv = veth.a, macvlan(veth.b)
    with engines() as start:
        rx = start([engine, "recv", "--api", "xdp", "--iface", mv.iface, *flow("recv", mv, a),
                    *traffic("recv")], mv.netns)
        rx.ready()
        link = subprocess.run(["ip", "-n", mv.netns, "-o", "link", "show", mv.iface],
                              capture_output=True, text=True, check=True).stdout
        tx = start([engine, "send", "--api", "raw", "--iface", a.iface, *flow("send", a, mv),
                    *traffic("send")], a.netns)
        sent = tx.summary()
        time.sleep(0.3)
        received = rx.interrupt()
    assert "xdpgeneric" in link, link
    assert_lossless(sent, received)


def test_xdp_says_once_that_frames_larger_than_a_umem_frame_are_dropped(engine, veth):
    """Generic XDP takes a 9000-byte MTU, and drops what a 4 KB frame of umem
    cannot hold with nothing said but the socket's counters: the engine says
    so at open."""
    need(engine, "xdp")
    a, b = veth.a, veth.b
    for end in (a, b):
        _ip("-n", end.netns, "link", "set", end.iface, "mtu", "9000")
    with engines() as start:
        rx = start([engine, "recv", "--api", "xdp", "--xdp-mode", "skb", "--iface", b.iface,
                    *flow("recv", b, a), *traffic("recv")], b.netns)
        rx.ready()
        tx = start([engine, "send", "--api", "raw", "--iface", a.iface, *flow("send", a, b),
                    "--size", "5000", "--rate", "1k", "--duration", "0.2", "--interval", "0"], a.netns)
        sent = tx.summary()
        time.sleep(0.3)
        received = rx.interrupt()
    warned = [line for line in rx.stderr.splitlines() if "do not fit a frame of umem" in line]
    assert warned == [f"xdp: {b.iface} carries frames of up to 9018 bytes (MTU 9000): those over 3840 "
                      "bytes do not fit a frame of umem and are dropped (api_rx_dropped)"], rx.stderr
    assert sent["tx_packets"] > 0 and received["rx_packets"] == 0, counts(received)
    assert received["api_rx_dropped"] >= sent["tx_packets"], counts(received)


# ---------------------------------------------------------------- DPDK

def _meminfo(key: str) -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


@pytest.fixture(scope="module")
def hugepages():
    """Adds HUGEPAGES 2 MB pages to the pool (others may be using theirs) and mounts
    hugetlbfs at /dev/hugepages if nothing is mounted there; undoes both."""
    if not leak.is_root():
        pytest.skip("end-to-end: needs root")
    nr = Path("/proc/sys/vm/nr_hugepages")
    before = int(nr.read_text())
    nr.write_text(str(before + HUGEPAGES))
    mounted = made_dir = False
    try:
        if int(nr.read_text()) < before + HUGEPAGES:
            pytest.skip(f"the kernel could not reserve {HUGEPAGES} more 2 MB hugepages")
        with open("/proc/mounts") as f:
            mounts = [line.split() for line in f]
        if not any(m[1] == "/dev/hugepages" and m[2] == "hugetlbfs" for m in mounts):
            made_dir = not os.path.isdir("/dev/hugepages")
            os.makedirs("/dev/hugepages", exist_ok=True)
            subprocess.run(["mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "nodev", "/dev/hugepages"],
                           check=True)
            mounted = True
        yield
    finally:
        if mounted:
            subprocess.run(["umount", "/dev/hugepages"], check=False)
            if made_dir:
                os.rmdir("/dev/hugepages")
        # Give back only what we added: another user may have changed the count meanwhile.
        nr.write_text(str(max(0, int(nr.read_text()) - HUGEPAGES)))


@pytest.fixture
def dpdk(engine, hugepages, tmp_path, no_leftovers):
    """EAL arguments per process: its own file prefix, small memory, no PCI scan,
    memory in memfds (--in-memory: no hugepage files, nothing under /var/run/dpdk)."""
    need(engine, "dpdk")
    tag = secrets.token_hex(2)
    sockets = tmp_path / "sockets"
    sockets.mkdir()

    def eal(name: str, *vdevs: str) -> list[str]:
        args = ["--", "--file-prefix", f"cnfpx{tag}{name}", "-m", EAL_MEMORY_MB, "--no-pci",
                "--in-memory", "--single-file-segments"]
        for v in vdevs:
            args += ["--vdev", v]
        return args

    yield eal, sockets
    assert not glob.glob(f"/var/run/dpdk/cnfpx{tag}*"), "DPDK runtime directory left"
    assert not list(sockets.iterdir()), f"sockets left: {list(sockets.iterdir())}"


# virtio_user rings default to 256 descriptors: a few ms at 20k pps, less than one
# scheduler slice when the test shares its cores with other busy pollers.
QUEUE_SIZE = "queue_size=1024"
VHOST = End("", "", "02:00:5e:02:00:01", "10.99.1.1")
VIRTIO = End("", "", "02:00:5e:02:00:02", "10.99.1.2")


@pytest.mark.parametrize("vhost_role", ["recv", "send"])
def test_dpdk_vhost_virtio_send_recv(engine, dpdk, vhost_role):
    """Both directions: the vhost-user server may be the receiver or the sender."""
    eal, sockets = dpdk
    sock = sockets / "vhost0.sock"
    vhost = eal("vh", f"net_vhost0,iface={sock},queues=1")
    virtio = eal("vu", f"net_virtio_user0,path={sock},queues=1,{QUEUE_SIZE},mac={VIRTIO.mac}")
    if vhost_role == "recv":
        recv_argv = [engine, "recv", "--api", "dpdk", *flow("recv", VHOST, VIRTIO), *traffic("recv"), *vhost]
        send_argv = [engine, "send", "--api", "dpdk", *flow("send", VIRTIO, VHOST), *traffic("send"), *virtio]
    else:
        recv_argv = [engine, "recv", "--api", "dpdk", *flow("recv", VIRTIO, VHOST), *traffic("recv"), *virtio]
        send_argv = [engine, "send", "--api", "dpdk", *flow("send", VHOST, VIRTIO), *traffic("send"), *vhost]
    with engines() as start:
        sent, received = run_send_recv(start, recv_argv, send_argv, recv_first=vhost_role == "recv")
    assert_lossless(sent, received)


def test_dpdk_vhost_virtio_client_server(engine, dpdk):
    eal, sockets = dpdk
    sock = sockets / "vhost0.sock"
    with engines() as start:
        srv = start(held([engine, "server", "--api", "dpdk", *flow("server", VHOST, VIRTIO),
                          *traffic("server"), *eal("vh", f"net_vhost0,iface={sock},queues=1")]))
        srv.ready()
        cli = start(held([engine, "client", "--api", "dpdk", *flow("client", VIRTIO, VHOST), "--rate", "5k",
                          "--duration", DURATION, "--interval", "0",
                          *eal("vu", f"net_virtio_user0,path={sock},queues=1,{QUEUE_SIZE},mac={VIRTIO.mac}")]))
        rtt = cli.summary()
        served = srv.interrupt()
        release_all(cli, srv)
    harness.assert_summary_sent(rtt, 5000 * float(DURATION))     # --rate 5k
    assert rtt["rx_packets"] == rtt["tx_packets"] == served["rx_packets"], f"{counts(rtt)}\n{counts(served)}"
    assert rtt["lost"] == 0 and rtt["latency"]["kind"] == "rtt"
    assert 0 < rtt["latency"]["min_ns"] <= rtt["latency"]["p99_ns"] <= rtt["latency"]["max_ns"]


def test_dpdk_nf_between_two_vhost_ports_both_ways(engine, dpdk):
    """client -> vhost0 | nf | vhost1 -> server, and the echoes back: one nf
    process, two ports, one EAL, both directions in one thread, mbufs moved
    between the ports without a copy, and waiting on both ports' Rx interrupts."""
    eal, sockets = dpdk
    s_in, s_out = sockets / "in.sock", sockets / "out.sock"
    srv_end = End("", "", "02:00:5e:03:00:02", "10.99.2.2")
    cli_end = End("", "", "02:00:5e:03:00:01", "10.99.2.1")
    nf_mac = "02:00:5e:03:00:0f"       # vhost ports take any destination: the client's next hop
    with engines() as start:
        nf = start(held([engine, "nf", "--api", "dpdk", "--port", "0", "--port2", "1",
                         "--dst-mac", cli_end.mac, "--dst-mac2", srv_end.mac, "--poll", "interrupt",
                         "--duration", "0", "--interval", "0",
                         *eal("nf", f"net_vhost0,iface={s_in},queues=1",
                              f"net_vhost1,iface={s_out},queues=1")]))
        nf.ready()
        srv = start(held([engine, "server", "--api", "dpdk", *flow("server", srv_end, cli_end), *traffic("server"),
                          *eal("sv", f"net_virtio_user0,path={s_out},queues=1,{QUEUE_SIZE},mac={srv_end.mac}")]))
        srv.ready()
        cli = start(held([engine, "client", "--api", "dpdk", *flow("client", cli_end, End("", "", nf_mac, srv_end.ip)),
                          "--rate", "5k", "--duration", DURATION, "--interval", "0", "--drain", "0.3",
                          *eal("cl", f"net_virtio_user0,path={s_in},queues=1,{QUEUE_SIZE},mac={cli_end.mac}")]))
        rtt = cli.summary()
        served = srv.interrupt()
        fwd = nf.interrupt()
        release_all(cli, nf, srv)
    harness.assert_summary_sent(rtt, 5000 * float(DURATION))     # --rate 5k
    assert rtt["rx_packets"] == rtt["tx_packets"] == served["rx_packets"] == served["tx_packets"], \
        f"{counts(rtt)}\n{counts(served)}"
    assert rtt["lost"] == 0 and rtt["bad"] == 0 and served["bad"] == 0
    p1, p2 = fwd["ports"]
    assert (p1["port"], p2["port"]) == (1, 2)
    assert p1["rx_packets"] == p2["tx_packets"] == rtt["tx_packets"], counts(fwd)
    assert p2["rx_packets"] == p1["tx_packets"] == served["tx_packets"], counts(fwd)
    assert fwd["tx_refused"] == 0 and fwd["other"] == 0 and fwd["nf"] == "l2"
    assert fwd["poll"]["mode"] == "interrupt" and fwd["poll"]["waits"] > 0, counts(fwd)


@pytest.mark.parametrize("mode", ["adaptive", "interrupt"])
def test_dpdk_poll_modes_over_vhost(engine, dpdk, mode):
    """net_vhost has Rx interrupts (so has virtio_user): a receiver that waits
    for them (interrupt) still takes every frame, and at 20k pps mostly waits;
    adaptive sleeps beside a DPDK port instead (its peer may never signal) and
    takes every frame too."""
    eal, sockets = dpdk
    sock = sockets / "vhost0.sock"
    poll = ["--poll", mode]
    with engines() as start:
        sent, received = run_send_recv(
            start,
            [engine, "recv", "--api", "dpdk", *flow("recv", VHOST, VIRTIO), *traffic("recv"), *poll,
             *eal("vh", f"net_vhost0,iface={sock},queues=1")],
            [engine, "send", "--api", "dpdk", *flow("send", VIRTIO, VHOST), *traffic("send"), *poll,
             *eal("vu", f"net_virtio_user0,path={sock},queues=1,{QUEUE_SIZE},mac={VIRTIO.mac}")])
    assert_lossless(sent, received)
    rp = received["poll"]
    assert rp["mode"] == mode and rp["polls"] > rp["empty_polls"] > 0, counts(received)
    if mode == "interrupt":
        assert rp["waits"] > 0, counts(received)
    else:
        assert rp["waits"] == 0 and rp["sleeps"] > 0, counts(received)
    assert sent["poll"]["sleeps"] > 0, counts(sent)


def test_dpdk_poll_interrupt_without_rx_interrupts_fails_at_open(engine, dpdk):
    """memif (like af_packet and af_xdp) has no Rx interrupts in DPDK 22.11."""
    eal, sockets = dpdk
    done = subprocess.run([str(engine), "recv", "--api", "dpdk", "--poll", "interrupt", "--duration", "1",
                           *eal("mi", f"net_memif0,role=server,socket={sockets / 'memif0.sock'}")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done
    assert done.stdout == ""
    ours = [line for line in done.stderr.splitlines() if line.startswith("dpdk: ")]
    assert ours == ["dpdk: --poll interrupt: port 0 (net_memif) has no Rx interrupts"], done.stderr


@pytest.mark.parametrize("threads", [1, 2])
def test_dpdk_memif(engine, dpdk, threads):
    """memif role=server listens (opened first, as receivers are), role=client
    connects. With --threads 2 at each end the port's queue 0 instance sets it
    up with two queue pairs and a memif queue reaches the same queue of its
    peer, so each flow stays on one queue: lossless, in order, both queues used."""
    eal, sockets = dpdk
    sock = sockets / "memif0.sock"
    many = ["--threads", str(threads)] if threads > 1 else []
    with engines() as start:
        sent, received = run_send_recv(
            start,
            [engine, "recv", "--api", "dpdk", *flow("recv", VHOST, VIRTIO), *traffic("recv"),
             *many, *eal("ms", f"net_memif0,role=server,socket={sock}")],
            [engine, "send", "--api", "dpdk", *flow("send", VIRTIO, VHOST), *traffic("send"),
             *many, "--flows", "4", *eal("mc", f"net_memif0,role=client,socket={sock}")])
    assert_lossless(sent, received)
    assert received["flows_seen"] == 4, counts(received)
    if threads == 1:
        return
    assert received["split_flows"] == 0, counts(received)
    for summary, key in ((sent, "tx_packets"), (received, "rx_packets")):
        queues = summary["queues"]
        assert [q["queue"] for q in queues] == [0, 1] and all(q[key] > 0 for q in queues), queues
        assert sum(q[key] for q in queues) == summary[key], counts(summary)


@pytest.mark.parametrize("pmd", ["af_packet", "af_xdp"])
def test_dpdk_kernel_pmd_on_veth(engine, dpdk, veth, pmd):
    eal, _ = dpdk
    a, b = veth.a, veth.b

    def vdev(end: End) -> str:
        if pmd == "af_packet":
            return f"net_af_packet0,iface={end.iface},qpairs=1"
        return f"net_af_xdp0,iface={end.iface},start_queue=0,queue_count=1"
    with engines() as start:
        sent, received = run_send_recv(
            start,
            [engine, "recv", "--api", "dpdk", *flow("recv", b, a), *traffic("recv"), *eal("r", vdev(b))],
            [engine, "send", "--api", "dpdk", *flow("send", a, b), *traffic("send"), *eal("s", vdev(a))],
            recv_ns=b.netns, send_ns=a.netns)
    assert_lossless(sent, received)


def test_dpdk_without_a_port_fails_clearly(engine, dpdk):
    eal, _ = dpdk
    done = subprocess.run([str(engine), "recv", "--api", "dpdk", "--duration", "1", *eal("np")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done
    assert done.stdout == ""
    ours = [line for line in done.stderr.splitlines() if line.startswith("dpdk: ")]
    assert len(ours) == 1 and "port 0 not found" in ours[0] and "--vdev" in ours[0], done.stderr


def test_dpdk_nf_on_two_threads_polls_a_queue_each(engine, dpdk, loop2q):
    """nf --threads 2 over DPDK's af_packet PMD with two queue pairs (a
    PACKET_FANOUT group): the port's first queue's instance sets it up with
    both, each thread polls one, and the tester's 8 flows cross both
    threads, every frame arrives. (DPDK 22.11's af_xdp PMD counts a veth's
    queues as its `combined` channels, which veth does not report: one.)"""
    eal, _ = dpdk
    t1, t2, f1, f2 = loop2q

    def vdev(i: int, end) -> str:
        return f"net_af_packet{i},iface={end.iface},qpairs=2"
    with engines() as start:
        nf = start(held([engine, "nf", "--api", "dpdk", "--port", "0", "--port2", "1", "--nf", "l3",
                         "--route", f"{t2.ip}/32,2", "--route", f"{t1.ip}/32,1", "--threads", "2",
                         "--dst-mac", t1.mac, "--dst-mac2", t2.mac, "--duration", "0", "--interval", "0",
                         *eal("nf", vdev(0, f1), vdev(1, f2))]), f1.netns)
        nf.ready()
        t = start([engine, "tester", "--api", "raw", "--iface", t1.iface, "--iface2", t2.iface,
                   "--src-ip", t1.ip, "--dst-ip", t2.ip, "--dst-mac", f1.mac, "--dport", "9000",
                   "--flows", "8", "--rate", "20k", "--duration", DURATION, "--interval", "0",
                   "--drain", "0.3"], t1.netns)
        t.ready()
        tested = t.summary()
        fwd = nf.interrupt()
        release_all(nf)
    assert 0 < tested["rx_packets"] == tested["tx_packets"] and tested["lost"] == 0, counts(tested)
    queues = fwd["queues"]
    assert [q["queue"] for q in queues] == [0, 1], fwd
    assert all(q["rx_packets"] > 0 and q["tx_packets"] > 0 for q in queues), queues
    assert sum(q["tx_packets"] for q in queues) == fwd["tx_packets"] >= tested["tx_packets"], fwd
