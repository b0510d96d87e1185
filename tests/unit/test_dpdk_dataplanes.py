"""The DPDK data planes without root: EAL arguments, placement, validation, and
the parsing of what testpmd and OVS print (samples recorded from real runs)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from cnfperf import UserError
from cnfperf.dataplanes import DATAPLANES, PortCounters, dpdk_args, procs
from cnfperf.dataplanes.dpdk_args import endpoint_mb
from cnfperf.dataplanes.dpdk_base import switch_cpus
from cnfperf.dataplanes.ovs import DropSampler
from cnfperf.dataplanes.ovsdb import (cpu_mask, parse_dump_ports, parse_flows, parse_map,
                                      parse_pmd_rxq_show)
from cnfperf.dataplanes.testpmd_app import (Stream, parse_fwd_stats, parse_port_stats,
                                            parse_streams)
from cnfperf.plan import place
from cnfperf.scenario import Scenario
from cnfperf.host.system import proc_stat
from harness import scenarios

DPDK_PLANES = ("vhost", "memif", "testpmd", "ovs")


# --- EAL arguments and vdevs -------------------------------------------------------

def test_every_process_gets_its_own_prefix_memory_limit_and_huge_dir():
    args = dpdk_args.eal_args("cnfp1a2bp0s", "/run/cnfperf/x/h", 64, ["net_null0"])
    joined = " ".join(args)
    assert "--file-prefix cnfp1a2bp0s" in joined and "--huge-dir /run/cnfperf/x/h" in joined
    assert "--socket-limit 64" in joined and "--socket-mem 64" in joined
    # memfd-backed memory dies with the process; one segment file lets vhost map it all
    assert "--in-memory" in args and "--single-file-segments" in args
    assert args[-2:] == ["--vdev", "net_null0"]
    assert "--lcores" not in args


def test_lcores_are_passed_when_placed():
    args = dpdk_args.eal_args("cnfp1a2btpmd", "/h", 64, lcores="0@(0,1),1@1")
    assert args[args.index("--lcores") + 1] == "0@(0,1),1@1"


def test_vdev_strings():
    assert dpdk_args.vhost(0, "/s/p0.sock") == "net_vhost0,iface=/s/p0.sock,queues=1"
    assert dpdk_args.vhost(3, "/s/a", client=True) == "net_vhost3,iface=/s/a,queues=1,client=1"
    assert dpdk_args.virtio_user(0, "/s/a", mac="02:00:00:00:00:01") == \
        "net_virtio_user0,path=/s/a,mac=02:00:00:00:00:01,queues=1"
    assert dpdk_args.virtio_user(0, "/s/a", server=True).endswith(",server=1")
    assert dpdk_args.memif(0, "/s/m", "server") == \
        "net_memif0,role=server,id=0,socket=/s/m,socket-abstract=no"
    with pytest.raises(ValueError, match="memif role"):
        dpdk_args.memif(0, "/s/m", "master")


def test_jumbo_frames_get_more_endpoint_memory():
    assert endpoint_mb(64) == endpoint_mb(1518) < endpoint_mb(9000)
    # the engine's rule: a 1925-byte frame and 128 to spare no longer fit 2 KB
    assert endpoint_mb(1924) < endpoint_mb(1925)


def test_jumbo_frames_get_pmd_buffers_that_hold_them():
    """A 2 KB buffer holds a 1518-byte frame: the vdev keeps the PMD's default
    below that and asks for a power of two that holds the frame above it."""
    assert "bsize" not in dpdk_args.memif(0, "/s/m", "client", frame_size=1518)
    assert dpdk_args.memif(0, "/s/m", "client", frame_size=9216).endswith(",bsize=9216")
    assert dpdk_args.memif(0, "/s/m", "client", frame_size=4000).endswith(",bsize=4096")
    assert dpdk_args.af_packet(0, "eth0") == "net_af_packet0,iface=eth0,qpairs=1"
    assert dpdk_args.af_packet(0, "eth0", 1519) == "net_af_packet0,iface=eth0,qpairs=1"
    assert dpdk_args.af_packet(0, "eth0", 1924) == "net_af_packet0,iface=eth0,qpairs=1"
    assert dpdk_args.af_packet(0, "eth0", 1925).endswith(",framesz=4096,blocksz=4096")
    assert dpdk_args.af_packet(0, "eth0", 9216).endswith(",framesz=12288,blocksz=12288")


# --- registry, validation, placement -----------------------------------------------

@pytest.mark.parametrize("name", DPDK_PLANES)
def test_registered_with_the_dpdk_api_only(name):
    dp = DATAPLANES[name]
    assert dp.name == name and dp.apis == frozenset({"dpdk"})


def test_switches_that_poll_say_so():
    assert {n: DATAPLANES[n].poll_threads for n in DPDK_PLANES} == \
        {"vhost": 0, "memif": 0, "testpmd": 1, "ovs": 1}


@pytest.mark.parametrize("switch,api", [("vhost", "udp"), ("memif", "raw"), ("testpmd", "mmap"),
                                        ("ovs", "xdp")])
def test_a_non_dpdk_api_is_refused_naming_the_field(switch, api):
    with pytest.raises(UserError) as err:
        scenarios(None, {"switch": switch, "api": api})
    assert err.value.field == "api" and "dpdk" in err.value.why


def test_testpmd_pairs_are_bounded_by_dpdk_ports():
    with pytest.raises(UserError) as err:
        scenarios(None, {"switch": "testpmd", "api": "dpdk", "pairs": 17})
    assert err.value.field == "pairs"
    assert scenarios(None, {"switch": "testpmd", "api": "dpdk", "pairs": 16})


@pytest.mark.parametrize("switch", DPDK_PLANES)
def test_every_dpdk_data_plane_takes_jumbo_frames(switch):
    s, = scenarios(None, {"switch": switch, "api": "dpdk", "size": 9216})
    assert s.size == 9216


@pytest.mark.parametrize("switch", DPDK_PLANES)
def test_two_pairs_are_accepted(switch):
    s, = scenarios(None, {"switch": switch, "api": "dpdk", "pairs": 2})
    assert s.pairs == 2


def test_switch_poll_core_prefers_a_free_core():
    p = place(Scenario(switch="ovs", api="dpdk", cpus=(0, 1, 2)), "00aa")
    used = {ep.cpu for ep in p.endpoints}
    assert switch_cpus(p, 1) == tuple(set(p.cpus) - used)


def test_switch_poll_core_shares_the_least_loaded_core_when_none_is_free():
    p = place(Scenario(switch="testpmd", api="dpdk", pairs=2, cpus=(0, 1), tester="split"), "00ab")
    cpu, = switch_cpus(p, 1)
    assert cpu in (0, 1)
    assert switch_cpus(p, 0) == ()
    assert any("busy pollers share 2 cores" in w for w in p.warnings)


def test_testpmd_ports_pair_the_ends_of_each_link():
    p = place(Scenario(switch="testpmd", api="dpdk", pairs=2, tester="split"), "00ac")
    dp = DATAPLANES["testpmd"](journal=None)
    dp.point = p
    ports = {(ep.pair, ep.role): dp.port(ep.port) for ep in p.endpoints}
    assert ports == {(0, "send"): 0, (0, "recv"): 1, (1, "send"): 2, (1, "recv"): 3}
    assert dp.switch_mb() >= 64 and dp.pages(p) == 4 * 32 + dp.switch_mb() // 2


def test_cpu_mask():
    assert cpu_mask([1]) == "0x2" and cpu_mask([0, 3]) == "0x9"


# --- what testpmd prints ------------------------------------------------------------

FWD_STATS = """
  ---------------------- Forward statistics for port 0  ----------------------
  RX-packets: 12000          RX-dropped: 0             RX-total: 12000
  TX-packets: 11800          TX-dropped: 200           TX-total: 12000
  ----------------------------------------------------------------------------

  ---------------------- Forward statistics for port 1  ----------------------
  RX-packets: 0              RX-dropped: 3             RX-total: 3
  TX-packets: 12000          TX-dropped: 0             TX-total: 12000
  ----------------------------------------------------------------------------

  +++++++++++++++ Accumulated forward statistics for all ports+++++++++++++++
  RX-packets: 12000          RX-dropped: 3             RX-total: 12003
  TX-packets: 23800          TX-dropped: 200           TX-total: 24000
  ++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
"""

PORT_STATS = """
  ######################## NIC statistics for port 0  ########################
  RX-packets: 82688      RX-missed: 5          RX-bytes:  5292032
  RX-errors: 1
  RX-nombuf:  2
  TX-packets: 7          TX-errors: 0          TX-bytes:  448

  Throughput (since last show)
  Rx-pps:            0          Rx-bps:            0
  Tx-pps:            0          Tx-bps:            0
  ############################################################################
"""


def test_testpmd_forward_stats_per_port():
    assert parse_fwd_stats(FWD_STATS) == {
        0: {"rx_packets": 12000, "rx_dropped": 0, "tx_packets": 11800, "tx_dropped": 200},
        1: {"rx_packets": 0, "rx_dropped": 3, "tx_packets": 12000, "tx_dropped": 0}}


def test_testpmd_port_stats():
    assert parse_port_stats(PORT_STATS) == {0: {
        "rx_packets": 82688, "rx_missed": 5, "rx_errors": 1, "rx_nombuf": 2,
        "tx_packets": 7, "tx_errors": 0}}


# --- what OVS prints ----------------------------------------------------------------

DUMP_PORTS = """OFPST_PORT reply (xid=0x2): 3 ports
  port LOCAL: rx pkts=0, bytes=0, drop=0, errs=0, frame=0, over=0, crc=0
           tx pkts=0, bytes=0, drop=4877504, errs=0, coll=0
  port  1: rx pkts=2647936, bytes=169467904, drop=0, errs=?, frame=?, over=?, crc=?
           tx pkts=0, bytes=0, drop=0, errs=?, coll=?
  port  2: rx pkts=?, bytes=?, drop=?, errs=?, frame=?, over=?, crc=?
           tx pkts=32416, bytes=2074624, drop=2615520, errs=?, coll=?
"""

DUMP_FLOWS = """NXST_FLOW reply (xid=0x4):
 cookie=0x10001, duration=9.517s, table=0, n_packets=15904, n_bytes=1017856, idle_age=6, priority=10,in_port=1 actions=resubmit(,1)
 cookie=0x10002, duration=9.517s, table=0, n_packets=0, n_bytes=0, idle_age=9, priority=10,in_port=2 actions=resubmit(,1)
 cookie=0x0, duration=9.593s, table=0, n_packets=4, n_bytes=0, idle_age=9, priority=0 actions=NORMAL
 cookie=0x20001, duration=9.517s, table=1, n_packets=0, n_bytes=0, idle_age=9, priority=10,dl_dst=02:c7:5e:c8:00:01 actions=NORMAL
 cookie=0x20002, duration=9.517s, table=1, n_packets=15904, n_bytes=1017856, idle_age=6, priority=10,dl_dst=02:c7:5e:c8:00:02 actions=NORMAL
 cookie=0x0, duration=9.517s, table=1, n_packets=1, n_bytes=0, idle_age=9, priority=0 actions=NORMAL
"""  # noqa: E501


def test_ovs_port_counters_skip_local_and_read_unknown_as_unknown():
    """OVS's `?` (a count the port does not keep) is None, never 0: 0 would
    read as "no drops"."""
    assert parse_dump_ports(DUMP_PORTS) == {
        1: {"rx_packets": 2647936, "rx_dropped": 0, "tx_packets": 0, "tx_dropped": 0},
        2: {"rx_packets": None, "rx_dropped": None, "tx_packets": 32416,
            "tx_dropped": 2615520}}


def test_ovs_flow_counters_by_cookie():
    assert parse_flows(DUMP_FLOWS) == {0x10001: 15904, 0x10002: 0, 0x20001: 0,
                                       0x20002: 15904, 0: 5}


def test_ovs_map_column():
    assert parse_map('{features="0x0000000950008000", mode=client, status=connected}') == \
        {"features": "0x0000000950008000", "mode": "client", "status": "connected"}


def test_drops_are_summed_across_the_resets_a_disconnect_causes():
    readings = iter([
        {1: {"rx_dropped": 0, "tx_dropped": 10}},
        {1: {"rx_dropped": 0, "tx_dropped": 25}},
        {1: {"rx_dropped": 0, "tx_dropped": 0}},     # peer gone: counters vanish
        {1: {"rx_dropped": 2, "tx_dropped": 4}},     # peer back: counting from zero
    ])
    sampler = DropSampler(lambda: next(readings))
    for _ in range(4):
        sampler.sample()
    assert sampler.totals() == {1: {"rx_dropped": 2, "tx_dropped": 29}}


def test_a_drop_count_a_live_ovs_port_never_gave_stays_unknown():
    """A live port's `?` for one count (it gives others): unknown (None) in
    the totals, never 0; a count it gave keeps what it counted across the
    peer's leaving (every count `?`: no device) and return."""
    gone = {"rx_packets": None, "rx_dropped": None, "tx_packets": None, "tx_dropped": None}
    readings = iter([
        {1: gone},                                                     # not connected yet
        {1: {"rx_packets": 5, "rx_dropped": None, "tx_packets": 9, "tx_dropped": 10}},
        {1: gone},                                                     # peer gone
        {1: {"rx_packets": 1, "rx_dropped": None, "tx_packets": 2, "tx_dropped": 3}},
    ])
    sampler = DropSampler(lambda: next(readings))
    sampler.rebase()
    assert sampler.totals() == {1: {"rx_dropped": 0, "tx_dropped": 0}}   # nothing counted yet
    for _ in range(3):
        sampler.sample()
    assert sampler.totals() == {1: {"rx_dropped": None, "tx_dropped": 13}}


def test_drops_counted_from_before_a_peer_connected_are_known():
    """The trial's first read comes before the engines connect (OVS: every
    count `?`): nothing counted then, so what the port counts once live is
    the trial's."""
    gone = {"rx_packets": None, "rx_dropped": None, "tx_packets": None, "tx_dropped": None}
    readings = iter([{1: gone}, {1: gone},
                     {1: {"rx_packets": 7, "rx_dropped": 2, "tx_packets": 0, "tx_dropped": 0}}])
    sampler = DropSampler(lambda: next(readings))
    sampler.rebase()
    sampler.sample()
    before = sampler.totals()
    sampler.sample()
    assert before == {1: {"rx_dropped": 0, "tx_dropped": 0}}
    assert sampler.totals() == {1: {"rx_dropped": 2, "tx_dropped": 0}}


def test_port_counters_keep_an_unknown_count_unknown_through_a_difference():
    after = PortCounters(rx_packets=10, tx_packets=None, rx_dropped=None, tx_dropped=4)
    before = PortCounters(rx_packets=4, tx_packets=2, rx_dropped=None, tx_dropped=1)
    assert after - before == PortCounters(rx_packets=6, tx_packets=None, rx_dropped=None,
                                          tx_dropped=3)


def test_no_drop_sample_runs_while_a_window_is_open():
    """Each sample is an ovs-ofctl run on some core: none inside a trial's window."""
    import threading
    reads = []
    sampled = threading.Event()

    def read():
        reads.append(1)
        sampled.set()
        return {}
    sampler = DropSampler(read, interval=0.01)
    sampler.hold(True)
    sampler.start()
    try:
        time.sleep(0.1)
        assert reads == []                  # ten intervals, held
        sampler.hold(False)
        assert sampled.wait(2)              # sampling again once the window closed
    finally:
        sampler.stop()


# --- the terminal testpmd is driven through -----------------------------------------

PROMPT_SCRIPT = r"""
import sys
sys.stdout.write("x" * 300000 + "\n")        # more than a terminal buffers
sys.stdout.write("ready> "); sys.stdout.flush()
for line in sys.stdin:
    sys.stdout.write("got " + line.strip() + "\n" + "ready> "); sys.stdout.flush()
"""


def test_console_reads_to_the_prompt_however_much_comes_before():
    console = procs.Console([sys.executable, "-c", PROMPT_SCRIPT], "prompt")
    try:
        assert console.read_until("ready> ", timeout=20).endswith("x\nready> ")
        console.send("show")
        assert console.read_until("ready> ", timeout=20) == "got show\nready> "
    finally:
        assert console.close(timeout=5) == 0


def test_console_reports_a_child_that_exits_before_its_prompt():
    console = procs.Console([sys.executable, "-c", "print('EAL: no hugepages'); exit(1)"],
                            "doomed")
    with pytest.raises(procs.ProcessError, match="exited with code 1: EAL: no hugepages"):
        console.read_until("testpmd> ", timeout=20)
    console.close()


def test_processes_are_found_again_by_a_token_in_their_command_line():
    token = f"cnfpunit{time.monotonic_ns()}"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", token])
    try:
        # Until the child has exec'd, /proc shows the parent's command line.
        for _ in range(500):
            with open(f"/proc/{child.pid}/cmdline", "rb") as f:
                if token.encode() in f.read():
                    break
            time.sleep(0.01)
        comm = open(f"/proc/{child.pid}/comm").read().strip()
        assert proc_stat(child.pid).running
        assert procs.find(token, (comm,)) == [child.pid]
        assert procs.find(token, ("dpdk-testpmd",)) == [], "only the named programs"
        assert procs.kill_all(token, (comm,)) == [child.pid]
        assert child.wait(5) != 0
        assert procs.find(token, (comm,)) == []
    finally:
        child.kill()
        child.wait()


# --- queue-to-core affinity ----------------------------------------------------------

# testpmd's answer to `start`, one pair, --nb-cores=2 --rxq=2 (recorded; the
# port configuration it prints after the streams cut short).
TESTPMD_STREAMS = """start\r
io packet forwarding - ports=2 - cores=2 - streams=4 - NUMA support enabled, MP allocation mode: native
Logical Core 1 (socket 0) forwards packets on 2 streams:
  RX P=0/Q=0 (socket 0) -> TX P=1/Q=0 (socket 0) peer=02:00:00:00:00:01
  RX P=1/Q=0 (socket 0) -> TX P=0/Q=0 (socket 0) peer=02:00:00:00:00:00
Logical Core 2 (socket 0) forwards packets on 2 streams:
  RX P=0/Q=1 (socket 0) -> TX P=1/Q=1 (socket 0) peer=02:00:00:00:00:01
  RX P=1/Q=1 (socket 0) -> TX P=0/Q=1 (socket 0) peer=02:00:00:00:00:00

  io packet forwarding packets/burst=32
  nb forwarding cores=2 - nb forwarding ports=2
  port 0: RX queue number: 2 Tx queue number: 2
"""

# `ovs-appctl dpif-netdev/pmd-rxq-show` of a switch container, one pair (recorded).
PMD_RXQ_SHOW = """Displaying last 60 seconds pmd usage %
pmd thread numa_id 0 core_id 1:
  isolated : false
  port: cnfp6839p0r       queue-id:  0 (enabled)   pmd usage: NOT AVAIL
  port: cnfp6839p0s       queue-id:  0 (enabled)   pmd usage: NOT AVAIL
  overhead: NOT AVAIL
"""


def test_testpmd_streams_give_each_lcores_port_and_queue():
    assert parse_streams(TESTPMD_STREAMS) == [
        Stream(1, 0, 0), Stream(1, 1, 0), Stream(2, 0, 1), Stream(2, 1, 1)]


def test_testpmd_queue_map_names_ports_and_the_cores_lcores_are_on():
    p = place(Scenario(switch="testpmd", api="dpdk", switch_cores=2, switch_rxq=2), "00ad")
    dp = DATAPLANES["testpmd"](journal=None)
    dp.point, dp.cpus, dp.streams = p, (0, 1), parse_streams(TESTPMD_STREAMS)
    send, recv = p.pairs[0].sender.name, p.pairs[0].receiver.name
    assert dp.queues() == [{"port": send, "queue": 0, "core": 0},
                           {"port": recv, "queue": 0, "core": 0},
                           {"port": send, "queue": 1, "core": 1},
                           {"port": recv, "queue": 1, "core": 1}]
    unpinned = place(Scenario(switch="testpmd", api="dpdk", pin=False, cpus=(0, 1)), "00ad")
    dp.point, dp.cpus, dp.streams = unpinned, (1,), parse_streams(TESTPMD_STREAMS)[:2]
    assert {q["core"] for q in dp.queues()} == {None}   # lcores float over the point's cores


def test_ovs_pmd_rxq_show_gives_each_queue_its_pmd_core():
    assert parse_pmd_rxq_show(PMD_RXQ_SHOW) == [
        {"port": "cnfp6839p0r", "queue": 0, "core": 1},
        {"port": "cnfp6839p0s", "queue": 0, "core": 1}]
    assert parse_pmd_rxq_show("") == []


def test_lcores_pin_workers_to_their_cores_or_let_all_float():
    assert dpdk_args.lcores((1,)) == "0@1,1@1"
    assert dpdk_args.lcores((0, 1)) == "0@0,1@0,2@1"
    assert dpdk_args.lcores((1,), (0, 1)) == "0@(0,1),1@(0,1)"
    # unpinned on every core is still unpinned
    assert dpdk_args.lcores((0, 1), (0, 1)) == "0@(0,1),1@(0,1),2@(0,1)"
    assert dpdk_args.lcore_cpus((0, 1)) == {1: 0, 2: 1}
    assert dpdk_args.lcore_cpus((1,), (0, 1)) == {1: None}


def test_switch_rxq_sets_the_queues_both_ends_of_a_switch_port_offer():
    p = place(Scenario(switch="testpmd", api="dpdk", switch_rxq=3), "00ae")
    for switch in ("testpmd", "ovs"):
        dp = DATAPLANES[switch](journal=None)
        dp.point, dp.dir = p, Path("/run/cnfperf/x")
        assert "queues=3" in dp.vdev(p.pairs[0].sender.port)


def test_a_kept_ovs_counts_drops_from_its_reset_across_a_reconnect():
    reads = iter([{1: {"rx_dropped": 7, "tx_dropped": 3}},    # the point before's, at reset
                  {1: {"rx_dropped": 0, "tx_dropped": 1}},    # reconnected: counting anew
                  {1: {"rx_dropped": 2, "tx_dropped": 1}}])
    sampler = DropSampler(lambda: next(reads))
    sampler.rebase()
    assert sampler.totals() == {1: {"rx_dropped": 0, "tx_dropped": 0}}
    sampler.sample()
    sampler.sample()
    assert sampler.totals() == {1: {"rx_dropped": 2, "tx_dropped": 1}}


def test_ovs_vswitchd_alone_starts_with_the_vhost_retry_library(monkeypatch, tmp_path):
    """ovs-vswitchd is preloaded with the engine build's libcnfperf-vhost-retry.so
    (its vhost-user client ports retry every 10 ms); ovsdb-server is not."""
    from cnfperf.dataplanes import ovsdb
    monkeypatch.setattr(ovsdb, "vhost_retry", lambda: "/build/libcnfperf-vhost-retry.so")
    started = {}

    def launch(argv, *, what, env=None, **popen):
        started[argv[0]] = env
        return subprocess.Popen(["true"])
    ovs = ovsdb.Ovs(tmp_path, "p", str(tmp_path), 64, (0,), launch=launch)
    ovs._spawn("ovsdb-server", ["ovsdb-server"])
    ovs._spawn("ovs-vswitchd", ["ovs-vswitchd"])
    assert started["ovs-vswitchd"]["LD_PRELOAD"] == "/build/libcnfperf-vhost-retry.so"
    assert "LD_PRELOAD" not in started["ovsdb-server"]
    assert started["ovsdb-server"]["OVS_RUNDIR"] == str(tmp_path)
    for proc in ovs._procs.values():
        proc.wait()


def test_a_process_in_the_switch_container_keeps_line_buffering_beside_its_own_preload():
    from cnfperf.runtimes.rootfs import LIBSTDBUF
    seen = {}

    class Container:
        def exec(self, argv, env=None, **popen):
            seen.update(env)
    procs.inside(Container())(["ovs-vswitchd"], what="start", env={"LD_PRELOAD": "/x.so", "A": "1"})
    assert seen["LD_PRELOAD"].split() == [LIBSTDBUF, "/x.so"]
    assert seen["_STDBUF_O"] == "L" and seen["A"] == "1"
    seen.clear()
    procs.inside(Container())(["testpmd"], what="start")
    assert seen["LD_PRELOAD"] == LIBSTDBUF


def test_a_switch_whose_daemon_exited_says_which_with_its_log(tmp_path):
    """An engine that fails on a dead switch's socket is reported with the
    switch's own last words (trial._failed asks a switch that keeps)."""
    from cnfperf.dataplanes import ovsdb
    ovs = ovsdb.Ovs(tmp_path, "cnfp1ovs", "", 0, pmd_cpus=())
    assert ovs.gone() == "not started"
    (tmp_path / "ovs-vswitchd.log").write_text(
        "2026-12-02T13:33:38.180Z|00001|dpdk|ERR|VHOST_CONFIG: failed to alloc queue\n")
    ovs._procs = {"ovsdb-server": subprocess.Popen(["sleep", "30"]),
                  "ovs-vswitchd": subprocess.Popen(["sh", "-c", "exit 3"])}
    try:
        ovs._procs["ovs-vswitchd"].wait()
        assert ovs.gone() == ("ovs-vswitchd exited with code 3: VHOST_CONFIG: "
                              "failed to alloc queue")
        assert not ovs.alive()
    finally:
        ovs._procs["ovsdb-server"].kill()
        ovs._procs["ovsdb-server"].wait()
