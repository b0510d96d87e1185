"""The router NF kind (nfs/router.py): its netns's commands, its rules, its
flows spread over prefixes; the kernel's counters it is read by
(host/kernel_drops.py) and what the loss table and the CPU rows make of them."""
from __future__ import annotations

import json

import pytest

from cnfperf import UserError, nfs as nf_kinds
from cnfperf.cli import main
from cnfperf.dataplanes.base import Attachment
from cnfperf.engine import argv
from cnfperf.host import kernel_drops, links, rps
from cnfperf.nfs import router
from cnfperf.plan import destinations, place, spread_address
from cnfperf.report import nfs
from cnfperf.results import model
from cnfperf.run import checks
from harness import scenarios
from test_nf_results import RUN, _by_name, _end, stored_run


def _point(**fields):
    [s] = scenarios(None, {"switch": "bridge", "api": "raw", "nfs": 1, "nf": "router", **fields})
    checks.check(s, (0, 1, 2, 3))
    return place(s, RUN, host_cpus=(0, 1, 2, 3), nf=nf_kinds.find(s.nf))


def _batch(point, index: int = 0) -> list[str]:
    pair = point.pairs[0]
    nf = pair.nfs[index]
    hops = (pair.links[index].a.mac, pair.links[index + 1].b.mac)
    return router.batch(nf, [p.name for p in nf.ports], hops, pair, point.scenario)


# --- the netns it makes ---------------------------------------------------------

def test_a_router_gets_an_address_per_port_and_a_route_and_neighbour_to_each_end():
    point = _point()
    pair = point.pairs[0]
    a, b = (p.name for p in pair.nfs[0].ports)
    assert _batch(point) == [
        f"address replace 10.77.0.16/32 dev {a}", f"address replace 10.77.0.17/32 dev {b}",
        f"neighbour replace 10.77.0.1 lladdr {pair.sender.mac} dev {a} nud permanent",
        f"route replace 10.77.0.1/32 dev {a}",
        f"neighbour replace 10.77.0.2 lladdr {pair.receiver.mac} dev {b} nud permanent",
        f"route replace 10.77.0.2/32 dev {b}"]


def test_in_a_chain_each_router_s_neighbours_are_its_next_hops():
    point = _point(nfs=2)
    pair = point.pairs[0]
    first, second = pair.nfs
    one, two = _batch(point, 0), _batch(point, 1)
    # the first router's next hop to the receiver is the second router's port a
    assert f"neighbour replace 10.77.0.2 lladdr {second.ports[0].mac} dev {first.ports[1].name} " \
           "nud permanent" in one
    assert f"neighbour replace 10.77.0.1 lladdr {first.ports[1].mac} dev {second.ports[0].name} " \
           "nud permanent" in two
    assert f"address replace 10.77.0.18/32 dev {second.ports[0].name}" in two


def test_routes_sub_interfaces_and_unrouted_prefixes():
    point = _point(nf_routes=3, nf_unrouted=2, flows=5, nf_interfaces=4)
    lines = _batch(point)
    b = point.pairs[0].nfs[0].ports[1].name
    assert [l for l in lines if "via" in l] == [
        f"route replace 10.128.0.{j}/32 via 10.77.0.2 dev {b}" for j in range(3)]
    assert "route replace 10.128.0.3/32" not in "\n".join(lines)   # the unrouted ones
    a = point.pairs[0].nfs[0].ports[0].name
    assert [l for l in lines if "sub" in l] == [
        f"link add sub1 link {a} type macvlan mode private",
        "address replace 172.16.0.1/32 dev sub1", "link set sub1 up",
        f"link add sub2 link {a} type macvlan mode private",
        "address replace 172.16.0.2/32 dev sub2", "link set sub2 up"]


def test_after_a_fault_its_neighbours_and_routes_through_the_ports_that_were_down_go_back():
    """What the kernel drops with an interface that goes down (its addresses
    stay), in the batch's order: a route via the receiver after its host route."""
    point = _point(nf_routes=2, flows=2, nf_interfaces=3)
    lines = _batch(point)
    a, b = (p.name for p in point.pairs[0].nfs[0].ports)
    assert router.restore_lines(lines, [b]) == [
        f"neighbour replace 10.77.0.2 lladdr {point.pairs[0].receiver.mac} dev {b} nud permanent",
        f"route replace 10.77.0.2/32 dev {b}",
        f"route replace 10.128.0.0/32 via 10.77.0.2 dev {b}",
        f"route replace 10.128.0.1/32 via 10.77.0.2 dev {b}"]
    assert router.restore_lines(lines, [a]) == [
        f"neighbour replace 10.77.0.1 lladdr {point.pairs[0].sender.mac} dev {a} nud permanent",
        f"route replace 10.77.0.1/32 dev {a}"]
    both = router.restore_lines(lines, [a, b])
    assert len(both) == 6 and not any(l.startswith(("address", "link")) for l in both)


def test_a_quota_on_a_router_container_is_said_to_limit_nothing():
    [warning] = [w for w in _point(nf_quota=50).warnings if "nf_quota" in w]
    assert "does not slow the router" in warning
    assert not [w for w in _point().warnings if "nf_quota" in w]


def test_a_pair_s_prefixes_are_its_own():
    assert spread_address(0) == "10.128.0.0" and spread_address(0, 4095) == "10.128.15.255"
    assert spread_address(1) == "10.128.16.0" and spread_address(249, 4095) == "10.143.159.255"


def test_forwarding_on_and_its_rps_map_on_its_cores():
    assert router.sysctls(["a"]) == ["net.ipv4.ip_forward=1", "net.ipv4.conf.all.send_redirects=0",
                                     "net.ipv4.conf.a.send_redirects=0",
                                     "net.ipv4.conf.a.arp_ignore=1"]
    assert rps.rps_mask([0, 1]) == "00000003"
    assert rps.rps_mask([33]) == "00000002,00000000"
    assert rps.rps_mask([]) == "00000000"      # no steering (a kept parent's map undone)
    assert rps.rps_script(["a", "b"], [2]) == (
        "for q in /sys/class/net/a/queues/rx-*; do echo 00000004 > $q/rps_cpus; done; "
        "for q in /sys/class/net/b/queues/rx-*; do echo 00000004 > $q/rps_cpus; done")


def test_a_guest_is_made_a_router_by_one_script_that_stops_at_a_failure():
    script = router.guest_script(["a", "b"], ["route replace 10.77.0.2/32 dev b"], [1])
    assert script == (
        "set -e\n"
        f"sysctl -q -w {' '.join(router.sysctls(['a', 'b']))}\n"
        "ip -batch - <<'EOF'\nroute replace 10.77.0.2/32 dev b\nEOF\n"
        f"{rps.rps_script(['a', 'b'], [1])}\n")
    assert "rps_cpus" not in router.guest_script(["a", "b"], [], [])


def test_a_guest_s_counters_come_in_one_snapshot():
    text = kernel_drops.SEPARATOR.join([LINKS, SNMP, NETSTAT, SOFTNET, QDISCS])
    assert kernel_drops.parse_snapshot(text, [A, B]) == _reading()
    with pytest.raises(ValueError):
        kernel_drops.parse_snapshot(LINKS, [A, B])
    assert kernel_drops.SNAPSHOT.count(kernel_drops.SEPARATOR) == 4


def test_its_process_forwards_nothing_and_no_poller_is_counted():
    kind = nf_kinds.kind("router")
    assert kind.kernel and not kind.records and kind.settle_s == 0
    point = _point()
    assert point.pollers == 2   # the tester's two ends only
    nf = point.pairs[0].nfs[0]
    command = kind.command("/bin/cnfperf-engine", nf, [], (), point.pairs[0], point.scenario, ())
    assert command.argv == ["/bin/cnfperf-engine", "--idle"] and not command.records


def test_the_ends_address_the_flows_to_the_prefixes_in_turn():
    point = _point(nf_routes=2, nf_unrouted=1, flows=3)
    s, pair = point.scenario, point.pairs[0]
    assert destinations(s) == 3
    port = [Attachment(mac=pair.sender.mac, iface="x")]
    send = argv("e", pair.sender, port, pair.receiver, "hop", s)
    recv = argv("e", pair.receiver, port, pair.sender, "hop", s)
    assert send[send.index("--dst-ip") + 1] == "10.128.0.0" and "10.77.0.1" in send
    assert recv[recv.index("--src-ip") + 1] == "10.128.0.0"
    assert send[send.index("--ip-span") + 1] == recv[recv.index("--ip-span") + 1] == "3"
    plain = _point()
    send = argv("e", plain.pairs[0].sender, port, plain.pairs[0].receiver, "hop", plain.scenario)
    assert "--ip-span" not in send and send[send.index("--dst-ip") + 1] == "10.77.0.2"


# --- its rules: one line, exit 2, nothing created ---------------------------------

@pytest.mark.parametrize("flags, field, words", [
    ({"switch": "memif", "api": "dpdk"}, "nf", "needs kernel interfaces"),
    ({"nf_api": "dpdk", "api": "dpdk"}, "nf_api", "not on DPDK ports"),
    ({"nf_host": "dut"}, "nf_host", "on this host only"),
    ({"nf_routes": 4, "flows": 2}, "flows", "flows ≥ 4"),
    ({"nf_routes": 4096, "nf_unrouted": 1, "flows": 4096}, "nf_unrouted", "at most 4096"),
    ({"nf_routes": 2, "flows": 2, "api": "udp"}, "api", "not by udp's sockets"),
])
def test_what_a_router_cannot_do_is_refused(flags, field, words):
    with pytest.raises(UserError) as e:
        scenarios(None, {"switch": "bridge", "api": "raw", "nfs": 1, "nf": "router", **flags})
    assert e.value.field == field and words in e.value.why, e.value.why


@pytest.mark.parametrize("field, value", [("nf_routes", 2), ("nf_interfaces", 4),
                                          ("nf_unrouted", 1)])
def test_its_fields_mean_nothing_without_router_nfs(field, value):
    for nf in ({"nfs": 0}, {"nfs": 1, "nf": "l3"}):
        with pytest.raises(UserError) as e:
            scenarios(None, {"switch": "bridge", "api": "raw", field: value, "flows": 4, **nf})
        assert e.value.field == field and "router" in e.value.why


@pytest.mark.parametrize("argv_, line", [
    (["--nf-routes", "0"], "cnfperf: error: nf_routes: Input should be greater than or equal to 1"),
    (["--nf-interfaces", "513"], "cnfperf: error: nf_interfaces: Input should be less than or "
                                 "equal to 512"),
    (["--switch", "memif", "--api", "dpdk"], "cnfperf: error: nf: router is the kernel's "
                                             "forwarding"),
])
def test_bad_values_exit_2_with_one_line(argv_, line, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path / "results"))
    assert main(["run", "--switch", "bridge", "--api", "raw", "--nfs", "1", "--nf", "router",
                 *argv_, "--dry-run"]) == 2
    [err] = capsys.readouterr().err.strip().splitlines()
    assert err.startswith(line), err
    assert not (tmp_path / "results").exists()


# --- the kernel's counters --------------------------------------------------------

def _link(name: str, rx: int, rx_dropped: int, tx: int, tx_dropped: int) -> dict:
    return {"ifname": name, "stats64": {"rx": {"bytes": 64 * rx, "packets": rx,
                                               "dropped": rx_dropped},
                                        "tx": {"bytes": 64 * tx, "packets": tx,
                                               "dropped": tx_dropped}}}


LINKS = json.dumps([_link("lo", 0, 0, 0, 0), _link("cnfp1a2bn000a", 11000, 5, 20, 0),
                    _link("cnfp1a2bn000b", 2, 0, 10000, 3)])
SNMP = """Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams InUnknownProtos InDiscards InDelivers OutRequests OutDiscards OutNoRoutes
Ip: 1 64 11000 0 0 10000 0 0 0 20 0 0
Icmp: InMsgs InErrors
Icmp: 0 0
"""
NETSTAT = """TcpExt: SyncookiesSent
TcpExt: 0
IpExt: InNoRoutes InTruncatedPkts InMcastPkts
IpExt: 995 0 0
"""
SOFTNET = ("00002af8 00000000 00000003 00000000 00000000 00000000 00000000 00000000 00000000 "
           "00000000 00000000 00000000 00000000 00000000 00000000\n"
           "00000100 0000000a 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
           "00000000 00000000 00000000 00000001 00000000 00000000\n")
QDISCS = ('[{"kind":"noqueue","handle":"0:","dev":"cnfp1a2bn000a","root":true,"bytes":0,'
          '"packets":0,"drops":0,"overlimits":0,"requeues":0},'
          '{"kind":"tbf","handle":"8001:","dev":"cnfp1a2bn000b","root":true,"bytes":0,'
          '"packets":0,"drops":4,"overlimits":9,"requeues":0},'
          '{"kind":"noqueue","handle":"0:","dev":"lo","drops":7}]')
A, B = "cnfp1a2bn000a", "cnfp1a2bn000b"


def test_the_counters_are_parsed():
    assert links.parse_link_stats(LINKS)[A] == {"rx_packets": 11000, "rx_dropped": 5,
                                              "tx_packets": 20, "tx_dropped": 0}
    assert links.parse_link_stats(LINKS)[B]["tx_dropped"] == 3
    assert kernel_drops.parse_ip(SNMP, NETSTAT) == {
        "forwarded": 10000, "in_hdr_errors": 0, "in_addr_errors": 0, "in_discards": 0,
        "out_discards": 0, "out_no_routes": 0, "in_no_routes": 995}
    assert kernel_drops.parse_softnet(SOFTNET) == {
        0: {"processed": 11000, "dropped": 0, "time_squeeze": 3},
        1: {"processed": 256, "dropped": 10, "time_squeeze": 0}}
    assert kernel_drops.parse_softnet("00000001 00000002 00000003\n") == {
        0: {"processed": 1, "dropped": 2, "time_squeeze": 3}}   # no CPU column: its place
    assert kernel_drops.parse_qdiscs(QDISCS, [A, B]) == {
        A: {"drops": 0, "overlimits": 0, "requeues": 0},
        B: {"drops": 4, "overlimits": 9, "requeues": 0}}


def _reading(**over) -> dict:
    dev = links.parse_link_stats(LINKS)
    return {"interfaces": {A: dev[A], B: dev[B]},
            "qdiscs": kernel_drops.parse_qdiscs(QDISCS, [A, B]),
            "ip": kernel_drops.parse_ip(SNMP, NETSTAT),
            "softnet": kernel_drops.parse_softnet(SOFTNET), **over}


def _zero(d):
    return {k: _zero(v) for k, v in d.items()} if isinstance(d, dict) else 0


def test_the_trial_s_counters_are_what_grew():
    before = _zero(_reading())
    grew = kernel_drops.delta(before, _reading())
    assert grew["interfaces"][A]["rx_packets"] == 11000 and grew["ip"]["in_no_routes"] == 995
    # softnet: only the CPUs that dropped or squeezed, keyed as JSON keys them
    assert grew["softnet"] == {"0": {"dropped": 0, "time_squeeze": 3},
                               "1": {"dropped": 10, "time_squeeze": 0}}
    # and apart, what each CPU's backlog took: where an RPS map spread the work
    assert grew["processed"] == {"0": 11000, "1": 256}
    assert kernel_drops.delta(None, _reading()) is None
    assert kernel_drops.delta(_reading(), _reading())["softnet"] == {}
    assert kernel_drops.delta(_reading(), _reading())["processed"] == {}


def test_a_router_s_summary_is_its_ports_as_the_kernel_counted_them():
    grew = kernel_drops.delta(_zero(_reading()), _reading())
    summary = kernel_drops.summary("router", grew)
    assert summary["ports"] == [
        {"port": 1, "rx_packets": 11000, "tx_packets": 20, "tx_refused": 0,
         "dropped": {"other": 0, "no_route": 995}},
        {"port": 2, "rx_packets": 2, "tx_packets": 10000, "tx_refused": 3 + 4,
         "dropped": {"other": 0}}]
    assert summary["kernel"] is grew
    # port 1's 5 rx drops were refused before it received them (a full backlog):
    # the link's loss, not the router's; what the kernel took in and discarded is
    grew["ip"].update(in_discards=2, out_no_routes=1)
    assert kernel_drops.summary("router", grew)["ports"][0]["dropped"] == {"other": 3,
                                                                            "no_route": 995}
    assert kernel_drops.summary("router", None) == {"nf": "router", "ports": [], "kernel": None}
    # the loss table names what that `other` was, once
    assert kernel_drops.describe(grew, ported=True)[0] == (
        "other: no route on the way out 1, discarded on the way in 2")


def test_the_words_name_each_counter_and_say_softnet_is_the_host_s():
    grew = kernel_drops.delta(_zero(_reading()), _reading())
    assert kernel_drops.describe(grew, ["port 1", "port 2"]) == [
        "no route 995 (IpExt InNoRoutes)", "port 1 rx dropped 5", "port 2 tx dropped 3",
        "port 2 qdisc dropped 4", "backlog full 10 on CPU 0,1 (softnet, the host's: any netns)",
        "time squeezes 3 on CPU 0,1 (softnet, the host's)"]
    # what its ports' counts say already is left to them
    assert kernel_drops.describe(grew, ported=True) == [
        "backlog full 10 on CPU 0,1 (softnet, the host's: any netns)",
        "time squeezes 3 on CPU 0,1 (softnet, the host's)"]
    assert kernel_drops.describe(None) == []


def test_unreadable_counters_are_unknown_not_a_failure():
    assert kernel_drops.read("cnfp-no-such-netns", ["a", "b"]) is None


def test_the_loss_table_pins_unrouted_frames_on_the_router(tmp_path):
    """1,000 frames sent to an unrouted prefix: the router took them in and
    the kernel counted them as without a route; the host's softnet said more."""
    point = _point(nf_routes=1, nf_unrouted=1, flows=2)
    pair = point.pairs[0]
    nf = pair.nfs[0]
    dev = {nf.ports[0].name: {"rx_packets": 3000, "rx_dropped": 0, "tx_packets": 0,
                              "tx_dropped": 0},
           nf.ports[1].name: {"rx_packets": 0, "rx_dropped": 0, "tx_packets": 2000,
                              "tx_dropped": 0}}
    kernel = {"interfaces": dev, "qdiscs": {}, "ip": {"in_no_routes": 1000, "forwarded": 2000},
              "softnet": {"1": {"dropped": 0, "time_squeeze": 2}}}
    summary = {"type": "summary", "role": "nf", **kernel_drops.summary("router", kernel)}
    result_nf = model.nf_result(nf.name, 0, 0, nf.cpu, summary, None, None, None)
    metrics_nf = model.endpoint_metrics(0, nf.name, "nf", nf.cpu, summary)
    sender = _end(0, pair.sender.name, "send", tx=2000, warmup=0, warmup_tx=1000)
    receiver = _end(0, pair.receiver.name, "recv", rx=1500, warmup=500)
    pairs = [model.pair_result(0, sender, receiver, "throughput")]
    result = model.PointResult(pairs=pairs, total=model.total(pairs),
                               endpoints=[sender, receiver, metrics_nf], counters={},
                               nfs=[result_nf])
    [stored] = stored_run(tmp_path, (point, result, {}))["points"]
    hop = _by_name(nfs.hops(stored, 0))[f"nf 1 of 1: router {nf.name[len('cnfp' + RUN):]}"]
    assert (hop.rx, hop.tx, hop.lost) == (3000, 2000, 1000)
    assert hop.why == ["no_route 1,000", "time squeezes 2 on CPU 1 (softnet, the host's)"]


def test_a_pinned_router_s_cycles_count_its_cores_softirq():
    usage = model.CpuUsage(node="n", kind="nf", cores="0", quota=None, user_s=0.0,
                           system_s=0.01, softirq_s=0.99, wall_s=1.0, packets=1_000_000,
                           tsc_hz=2e9, tsc_source="engine calibration")
    assert usage.cycles_per_packet == pytest.approx(20)
    usage.softirq_counts = True
    assert usage.cycles_per_packet == pytest.approx(2000)
