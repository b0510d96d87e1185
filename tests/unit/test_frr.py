"""FRR's routers (nfs/frr.py): what cnfperf makes of their netns, the daemons'
configurations it writes, the rules it holds a scenario to, and what it reads
back from their answers and their log (the e2e runs them:
tests/e2e/orchestrator/test_faults.py)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from cnfperf import nfs as nf_kinds
from cnfperf.cli import main
from cnfperf.nfs import frr
from cnfperf.plan import place
from cnfperf.run import checks
from harness import scenarios
from test_graph import DIAMOND
from test_nf_results import RUN

HOME = Path("/run/x")


def _point(nf: str = "frr:ospf", **fields):
    [s] = scenarios(None, {"switch": "bridge", "api": "raw", "nf": nf, "graph": DIAMOND,
                           **fields})
    checks.check(s, (0, 1))
    return place(s, RUN, host_cpus=(0, 1), nf=nf_kinds.find(s.nf))


def _configs(point, index: int = 0) -> dict[str, str]:
    pair = point.pairs[0]
    nf = pair.nfs[index]
    return frr.configs(frr.FrrKind(point.scenario.nf).protocol, nf, [p.name for p in nf.ports],
                       pair, point.scenario, HOME)


def test_a_router_s_links_get_a_31_each_and_the_port_to_an_end_the_end_s_31():
    point = _point()
    pair = point.pairs[0]
    first, top = pair.nfs[0], pair.nfs[1]
    a, b, c = (p.name for p in first.ports)
    assert frr.batch(first, [a, b, c], pair.hops(first), pair, point.scenario) == [
        f"address replace 10.77.0.0/31 dev {a}",      # the sender is 10.77.0.1
        f"neighbour replace 10.77.0.1 lladdr {pair.sender.mac} dev {a} nud permanent",
        f"address replace 10.78.0.2/31 dev {b}",   # link 1 (in.b - top.a): .2 and .3
        f"neighbour replace 10.78.0.3 lladdr {top.ports[0].mac} dev {b} nud permanent",
        f"address replace 10.78.0.4/31 dev {c}",
        f"neighbour replace 10.78.0.5 lladdr {pair.nfs[2].ports[0].mac} dev {c} nud permanent"]
    # top's side of link 1 is its other end
    lines = frr.batch(top, [p.name for p in top.ports], pair.hops(top), pair, point.scenario)
    assert f"address replace 10.78.0.3/31 dev {top.ports[0].name}" in lines
    assert frr.end_side("10.77.0.2") == "10.77.0.3/31"     # the receiver's /31 is another


def test_ospf_runs_on_the_links_between_routers_at_their_costs_and_timers():
    confs = _configs(_point(ospf_hello=2, ospf_dead=8))
    assert set(confs) == {"zebra", "ospfd"}
    ospf = confs["ospfd"]
    # the links, and the port to the sender a passive stub (its /31: intra-area)
    assert ospf.count("ip ospf area 0") == 3 and ospf.count(" ip ospf passive") == 1
    assert ospf.count(" ip ospf network point-to-point") == 2
    assert " ip ospf cost 2" in ospf and " ip ospf hello-interval 2" in ospf
    assert " ip ospf dead-interval 8" in ospf and "redistribute" not in ospf
    assert " timers throttle lsa all 0" in ospf and f"log file {HOME / 'frr.log'}" in ospf
    fast = _configs(_point(ospf_hello=0.25, ospf_dead=1))["ospfd"]
    assert " ip ospf dead-interval minimal hello-multiplier 4" in fast


def test_bgp_peers_on_each_link_with_bfd_and_a_dearer_link_prepends():
    confs = _configs(_point("frr:bgp", bfd_interval=100, bfd_multiplier=2))
    assert set(confs) == {"zebra", "bgpd", "bfdd"}
    bgp, bfd = confs["bgpd"], confs["bfdd"]
    assert "router bgp 64512" in bgp and "  redistribute connected" in bgp
    assert " neighbor 10.78.0.3 remote-as 64513" in bgp      # top
    assert " neighbor 10.78.0.5 remote-as 64514" in bgp      # bottom, over a link of cost 2
    assert "  neighbor 10.78.0.5 route-map cnfperf-prepend-1 out" in bgp
    assert "route-map cnfperf-prepend-1 permit 10\n set as-path prepend 64512\n" in bgp
    assert bgp.count(" bfd\n") == 2
    assert bfd.count(" peer ") == 2 and "  transmit-interval 100" in bfd
    assert "  detect-multiplier 2" in bfd


def test_static_routes_take_every_way_to_an_end_at_its_cost_watched_by_bfd():
    confs = _configs(_point("frr:static", bfd_interval=100, bfd_multiplier=2))
    assert set(confs) == {"zebra", "bfdd", "staticd"}
    bfd, routes = confs["bfdd"], confs["staticd"].splitlines()
    assert " profile cnfperf\n  transmit-interval 100\n  receive-interval 100\n" \
        "  detect-multiplier 2" in bfd and " peer " not in bfd
    # in reaches the receiver by top (3 hops of cost 1) and by bottom (its link
    # costs 2); the sender is next to it: connected, no route
    assert routes == ["ip route 10.77.0.2/32 10.78.0.3 cnfp1a2bn000b 3 bfd profile cnfperf",
                      "ip route 10.77.0.2/32 10.78.0.5 cnfp1a2bn000c 4 bfd profile cnfperf"]
    top = _configs(_point("frr:static"), 1)["staticd"].splitlines()
    assert top == ["ip route 10.77.0.1/32 10.78.0.2 cnfp1a2bn001a 2 bfd profile cnfperf",
                   "ip route 10.77.0.2/32 10.78.0.7 cnfp1a2bn001b 2 bfd profile cnfperf"]


def test_a_daemon_keeps_its_files_in_its_home_and_no_vty_on_tcp():
    argv = frr.argv("bgp", "bfdd", HOME)
    assert argv[0] == "/usr/lib/frr/bfdd" and argv[argv.index("-P") + 1] == "0"
    assert argv[argv.index("--bfdctl") + 1] == str(HOME / "bfdd.sock")
    assert argv[argv.index("-z") + 1] == str(HOME / "zserv.api")
    assert "-N" not in argv


def test_the_built_frr_runs_in_a_pathspace_whose_state_is_its_home(monkeypatch, tmp_path):
    monkeypatch.setenv("CNFPERF_SWITCHES", str(tmp_path))
    mgmtd = frr.argv("static", "mgmtd", HOME)
    assert mgmtd[0] == str(tmp_path / "frr" / "sbin" / "mgmtd") and "-f" not in mgmtd
    assert mgmtd[mgmtd.index("-N") + 1] == "cnfperf-x"
    assert mgmtd[mgmtd.index("--log") + 1] == f"file:{HOME / 'frr.log'}"
    bfdd = frr.argv("static", "bfdd", HOME)
    assert bfdd[bfdd.index("-f") + 1] == str(HOME / "bfdd.conf") and "--log" not in bfdd
    kind = frr.FrrKind("frr:static")
    assert kind.links(HOME) == [Path("/run/cnfperf/routing/lib/frr/cnfperf-x")]
    assert kind.configure_argv(HOME) == [str(tmp_path / "frr" / "bin" / "vtysh"), "--vty_socket",
                                         str(HOME), "--config_dir", str(HOME), "-f",
                                         str(HOME / "staticd.conf")]
    bgp = frr.FrrKind("frr:bgp")
    assert bgp.links(HOME) == [] and bgp.configure_argv(HOME) is None
    # not built: the point is refused naming the command that builds it
    assert "make switches" in frr.FrrKind("frr:static").problems(None, None)[0]


def test_a_chain_of_frr_routers_is_routed_as_its_graph():
    [s] = scenarios(None, {"switch": "veth", "api": "raw", "nf": "frr:ospf", "nfs": 2})
    assert str(frr.graph_of(s)) == "sender - nf0.a; nf0.b - nf1.a; nf1.b - receiver"


@pytest.mark.parametrize("flags, field, words", [
    ({"nf": "frr:ospf", "ospf_hello": 0.5}, "ospf_dead", "ospf_dead = 1"),
    ({"nf": "frr:ospf", "ospf_hello": 50}, "ospf_hello", "below ospf_dead"),
    ({"nf": "frr:ospf", "nf_in": "vm"}, "nf_in", "nf_in = container"),
    ({"nf": "frr:bgp", "nf_routes": 2, "flows": 2}, "nf_routes", "is for router in a chain"),
    ({"nf": "router", "bfd_interval": 50}, "bfd_interval",
     "it concerns frr:ospf or frr:bgp or frr:static NFs"),
    ({"nf": "frr:rip"}, "nf", "is not a network function"),
])
def test_what_frr_cannot_do_is_one_line_and_exit_2(flags, field, words, capsys, tmp_path,
                                                   monkeypatch):
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path / "results"))
    argv = ["run", "--switch", "bridge", "--api", "raw", "--nfs", "1", "--duration", "3"]
    for name, value in flags.items():
        argv += [f"--{name.replace('_', '-')}", str(value)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"cnfperf: error: {field}: ") and words in err[0]


def test_sessions_are_read_from_the_daemons_answers(monkeypatch):
    answers = {
        "show ip ospf neighbor json": {"neighbors": {"10.79.0.2": [{"nbrState": "Full/-"}],
                                                     "10.79.0.3": [{"nbrState": "Init/-"}]}},
        "show bgp ipv4 unicast summary json": {"peers": {"10.78.0.3": {"state": "Established"}}},
        "show bfd peers json": [{"peer": "10.78.0.3", "status": "up"},
                                {"peer": "10.78.0.5", "status": "down"}]}
    monkeypatch.setattr(frr, "vtysh", lambda protocol, home, daemon, command: answers[command])
    assert frr.sessions("ospf", HOME) == [("10.79.0.2", True), ("10.79.0.3", False)]
    assert frr.sessions("bgp", HOME) == [("bgp 10.78.0.3", True), ("bfd 10.78.0.3", True),
                                         ("bfd 10.78.0.5", False)]
    assert frr.sessions("static", HOME) == [("bfd 10.78.0.3", True), ("bfd 10.78.0.5", False)]


def test_the_first_session_down_after_the_cut_is_when_they_noticed(tmp_path):
    base = time.mktime(time.strptime("2026/12/04 20:00:00", "%Y/%m/%d %H:%M:%S"))
    (tmp_path / frr.LOG).write_text(
        "2026/12/04 20:00:00.100000 OSPF: [Y05P2-YJVXY] AdjChg: Nbr 10.79.0.2 on x: "
        "Full -> Deleted (KillNbr)\n"
        "2026/12/04 20:00:01.000000 BFD: [J1C6V-VMRW5] state-change: [mhop:no peer:10.78.0.3] "
        "init -> up\n"
        "2026/12/04 20:00:01.250000 BFD: [J1C6V-VMRW5] state-change: [mhop:no peer:10.78.0.3] "
        "up -> down reason:control-expired\n")
    when, line = frr.noticed(tmp_path, base + 0.5)
    assert when == pytest.approx(base + 1.25)
    assert line == "BFD: state-change: [mhop:no peer:10.78.0.3] up -> down reason:control-expired"
    assert frr.noticed(tmp_path, base + 2) is None
    assert frr.noticed(tmp_path / "none", base) is None


def test_a_failover_is_drawn_per_configuration_and_read_as_the_paper_s_metrics(tmp_path):
    from cnfperf.experiments import reference
    from cnfperf.report import plots

    def row(nf, interval, outage_ms, noticed_ms=None):
        facts = {"target": "link:top.a"}
        if noticed_ms is not None:
            facts["noticed_ms"] = noticed_ms
        return {"switch": f"bridge 4×{nf}", "dataplane": "bridge", "mode": "throughput",
                "nf": nf, "bfd_interval": interval, "rx_pps": 4000.0, "tx_pps": 5000.0,
                "size": 64, "pairs": 1, "rate": 5000, "outage_ns": outage_ms * 1e6,
                "fault_facts": facts, "point": f"{nf}{interval}{outage_ms}"}
    rows = [row("frr:bgp", 100, 210, 150), row("frr:bgp", 100, 230, 160),
            row("frr:bgp", 50, 180, 120), row("frr:ospf", 300, 1010, 950)]
    made = {p.name for p in plots.make_all(rows, tmp_path)}
    assert "failover" in made and (tmp_path / "failover.png").stat().st_size > 0
    point = {"outage_ns": 2.1e8, "fault_facts": {"noticed_ms": 150.5}, "pairs": 1}
    assert reference.point_value(point, "outage_ms") == pytest.approx(210)
    assert reference.point_value(point, "noticed_ms") == 150.5
    assert reference.point_value({"pairs": 1}, "noticed_ms") is None


def test_a_trial_s_sessions_are_counted_from_the_log_downs_and_time_down(tmp_path):
    base = time.mktime(time.strptime("2026/12/04 20:00:00", "%Y/%m/%d %H:%M:%S"))
    (tmp_path / frr.LOG).write_text("\n".join([
        "2026/12/04 20:00:00.100000 BFD: [J1C6V-VMRW5] state-change: [mhop:no peer:10.78.0.3 "
        "local:10.78.0.2 vrf:default ifname:x] init -> up",
        "2026/12/04 20:00:00.200000 BFD: [J1C6V-VMRW5] state-change: [mhop:no peer:10.78.0.5 "
        "local:10.78.0.4 vrf:default ifname:y] down -> up",
        "2026/12/04 20:00:00.300000 BGP: [M7Q4P-46WDR] %ADJCHANGE: neighbor 10.78.0.3(Unknown) "
        "in vrf default Up",
        # in the trial (from 1 s): a flap of 0.5 s, then one still down at its end (at 3 s)
        "2026/12/04 20:00:01.500000 BFD: [J1C6V-VMRW5] state-change: [mhop:no peer:10.78.0.3 "
        "local:10.78.0.2 vrf:default ifname:x] up -> down reason:control-expired",
        "2026/12/04 20:00:02.000000 BFD: [J1C6V-VMRW5] state-change: [mhop:no peer:10.78.0.3 "
        "local:10.78.0.2 vrf:default ifname:x] down -> up",
        "2026/12/04 20:00:02.500000 BFD: [J1C6V-VMRW5] state-change: [mhop:no peer:10.78.0.5 "
        "local:10.78.0.4 vrf:default ifname:y] up -> down reason:control-expired",
        "2026/12/04 20:00:02.600000 OSPF: [Y05P2-YJVXY] AdjChg: Nbr 10.79.0.2, NbrIP 10.78.0.3 "
        "(default) on x:10.78.0.2: Exchange -> Loading (ExchangeDone)",
        "2026/12/04 20:00:09.000000 BFD: [J1C6V-VMRW5] state-change: [mhop:no peer:10.78.0.5 "
        "local:10.78.0.4 vrf:default ifname:y] down -> up"]) + "\n")
    facts = frr.routing(tmp_path, base + 1, base + 3)
    assert facts == {"sessions": 3, "up": 2, "downs": 2, "down_s": pytest.approx(1.0),
                     "seconds": 2.0}
    assert frr.changes(tmp_path)[2][:3] == (pytest.approx(base + 0.3), "bgp 10.78.0.3", True)
