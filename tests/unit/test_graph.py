"""Graphs of network functions (graph.py): the text parsed and refused, the
routes each NF takes to the ends, the placed links and ports, the routers'
netns lines, faults by name and the loss table per link."""
from __future__ import annotations

import pytest

from cnfperf import UserError, graph, nfs as nf_kinds
from cnfperf.cli import main
from cnfperf.nfs import router
from cnfperf.plan import place, port_host
from cnfperf.run import checks, fault
from cnfperf.scenario import validate
from harness import scenarios
from test_nf_results import RUN

DIAMOND = """
sender - in.a
in.b - top.a
in.c - bottom.a cost 2
top.b - out.a
bottom.b - out.b
out.c - receiver
"""


def _point(**fields):
    [s] = scenarios(None, {"switch": "veth", "api": "raw", "nf": "router", "graph": DIAMOND,
                           **fields})
    checks.check(s, (0, 1))
    return place(s, RUN, host_cpus=(0, 1), nf=nf_kinds.find(s.nf))


# --- the text ---------------------------------------------------------------------

def test_a_graph_is_its_links_in_order_and_its_nfs_as_they_first_appear():
    g = graph.parse(DIAMOND)
    assert g.nfs == ("in", "top", "bottom", "out")
    assert [g.ports(n) for n in g.nfs] == [3, 2, 2, 3]
    assert str(g) == ("sender - in.a; in.b - top.a; in.c - bottom.a cost 2; top.b - out.a; "
                      "bottom.b - out.b; out.c - receiver")
    assert graph.parse(str(g)) == g          # the canonical text reads back the same
    # the tester's ends are put where frames flow from and to, whichever way written
    assert str(graph.parse("in.a - sender; receiver - in.b")) == "sender - in.a; in.b - receiver"


@pytest.mark.parametrize("text, words", [
    ("", "no links"),
    ("sender in.a", "not a link"),
    ("sender - In.a; In.b - receiver", "is not sender, receiver, nor NAME.PORT"),
    ("sender - in.z; in.b - receiver", "is not sender, receiver"),
    ("sender - in.a; in.b - receiver cost 0", "cost from 1 to 65535"),
    ("sender - in.a; in.b - in.c; in.d - receiver", "links a node to itself"),
    ("sender - in.a; in.a - receiver", "in.a is linked twice"),
    ("sender - in.a; in.c - receiver", "lettered from a without a gap (in.b is on no link)"),
    ("sender - in.a; in.b - x.a; in.c - receiver", "x has one port"),
    ("sender - receiver", "linked directly"),
    ("sender - in.a; in.b - in2.a; in2.b - in.c", "the receiver is on no link"),
    ("sender - in.a; in.b - receiver; x.a - y.a; x.b - y.b", "no path from the sender reaches x"),
])
def test_a_wrong_graph_says_what_is_wrong(text, words):
    with pytest.raises(ValueError, match=None) as e:
        graph.parse(text)
    assert words in str(e.value)


def test_a_graph_sets_nfs_and_refuses_another_count():
    s = validate({"graph": DIAMOND, "nf": "router"})
    assert s.nfs == 4 and s.graph.startswith("sender - in.a; ")
    with pytest.raises(UserError, match="the graph has 4 network functions"):
        validate({"graph": DIAMOND, "nf": "router", "nfs": 2})


# --- the routes -------------------------------------------------------------------

def test_each_nf_routes_by_the_cheapest_way_and_keeps_loop_free_alternates():
    g = graph.parse(DIAMOND)
    to = {n: [(r.end, r.slot, r.metric) for r in g.routes(n)] for n in g.nfs}
    # in: the receiver through top (3), then through bottom (2 + 2)
    assert to["in"] == [("sender", 0, 1), ("receiver", 1, 3), ("receiver", 2, 4)]
    # out's way back through bottom is a loop-free alternate; top's through out
    # is not (out's own way to the sender goes through top)
    assert to["out"] == [("sender", 0, 3), ("sender", 1, 4), ("receiver", 2, 1)]
    assert to["top"] == [("sender", 0, 2), ("receiver", 1, 2)]


def test_a_graph_s_routers_get_a_route_per_way_with_its_metric_and_neighbour():
    point = _point()
    pair = point.pairs[0]
    first = pair.nfs[0]
    ifaces = [p.name for p in first.ports]
    lines = router.batch(first, ifaces, pair.hops(first), pair, point.scenario)
    top, bottom = pair.nfs[1], pair.nfs[2]
    assert f"address replace 10.77.0.{port_host(0, 2)}/32 dev {ifaces[2]}" in lines
    assert lines[-4:] == [
        f"neighbour replace 10.77.0.2 lladdr {top.ports[0].mac} dev {ifaces[1]} nud permanent",
        f"route replace 10.77.0.2/32 dev {ifaces[1]} metric 3",
        f"neighbour replace 10.77.0.2 lladdr {bottom.ports[0].mac} dev {ifaces[2]} nud permanent",
        f"route replace 10.77.0.2/32 dev {ifaces[2]} metric 4"]
    # after a fault, the routes through the port that was down go back, metric and all
    assert router.restore_lines(lines, [ifaces[2]]) == lines[-2:]
    said = router.sysctls(ifaces, graph=True)
    assert "net.ipv4.conf.all.ignore_routes_with_linkdown=1" in said
    assert f"net.ipv4.conf.{ifaces[2]}.rp_filter=0" in said
    assert not any("linkdown" in line or "rp_filter" in line for line in router.sysctls(ifaces))


# --- the placed point -------------------------------------------------------------

def test_a_graph_is_placed_as_its_links_each_port_once_macs_apart():
    point = _point()
    pair = point.pairs[0]
    assert point.shape == "graph" and [n.label for n in pair.nfs] == ["in", "top", "bottom", "out"]
    assert [len(n.ports) for n in pair.nfs] == [3, 2, 2, 3]
    assert [(link.a.name[-4:], link.b.name[-4:]) for link in pair.links] == [
        ("bp0s", "000a"), ("000b", "001a"), ("000c", "002a"), ("001b", "003a"),
        ("002b", "003b"), ("003c", "bp0r")]
    ports = [p for link in pair.links for p in (link.a, link.b)]
    assert len({p.mac for p in ports}) == len(ports) == 12
    assert pair.first.a == pair.sender.port and pair.last.b == pair.receiver.port
    assert "send → 4 × router (graph) → recv" in point.path()
    assert port_host(15, 7) == 0xff and port_host(15, 1) < port_host(0, 2)


@pytest.mark.parametrize("flags, field, words", [
    ({"nf": "l2"}, "graph", "a graph's NFs route between their ports (nf = router)"),
    ({"nf_routes": 2, "flows": 2}, "nf_routes", "is for router in a chain"),
    ({"fault": "nf:side"}, "fault", "the graph has no NF side (in, top, bottom, out)"),
    ({"fault": "link:top.c"}, "fault", "top has ports top.a to top.b"),
    ({"fault": "link:in.a"}, "fault", "takes the carrier off the sender's own"),
    ({"fault": "nf:in"}, "fault", "takes the carrier off the sender's own"),
])
def test_what_a_graph_cannot_do_is_one_line_and_exit_2(flags, field, words, capsys, tmp_path,
                                                       monkeypatch):
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path / "results"))
    argv = ["run", "--switch", "veth", "--api", "raw", "--nf", "router", "--graph", DIAMOND,
            "--duration", "3"]
    for name, value in flags.items():
        argv += [f"--{name.replace('_', '-')}", str(value)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"cnfperf: error: {field}: ") and words in err[0]
    assert not (tmp_path / "results").exists()


def test_a_fault_by_name_takes_down_the_port_or_nf_it_names():
    assert fault.parse("link:top.a") == fault.Target("link", "top.a")
    assert fault.parse("nf:top@1") == fault.Target("nf", "top", 1)
    for bad in ("nf:top.a", "link:top", "link:Top.a", "port:top.z"):
        with pytest.raises(ValueError, match="NAME.PORT"):
            fault.parse(bad)
    point = _point(fault="link:top.a", duration=3)
    pair = point.pairs[0]
    assert fault.ports(point, fault.parse("link:top.a")) == [pair.nfs[1].ports[0]]
    assert fault.ports(point, fault.parse("nf:out")) == list(pair.nfs[3].ports)
    assert fault.ports(point, fault.parse("link:2")) == [pair.nfs[2].ports[0]]   # bottom.a
    with pytest.raises(UserError, match="a name is a graph's"):
        [s] = scenarios(None, {"switch": "veth", "api": "raw", "nfs": 1, "fault": "nf:top",
                               "duration": 3})


# --- the loss table -----------------------------------------------------------------

def test_the_loss_table_follows_a_graph_s_echoes_over_every_link_both_ways():
    from dataclasses import asdict

    from cnfperf.report import nfs as report

    point = _point(mode="latency")
    pair = point.pairs[0]
    # (rx, tx) per port: 10 frames sent, top lost 2 of them, 8 echoed back by top
    went = {"in": [(10, 8), (8, 10), (0, 0)], "top": [(10, 8), (8, 8)],
            "bottom": [(0, 0), (0, 0)], "out": [(8, 8), (0, 0), (8, 8)]}
    nf_results = [{"name": nf.name, "pair": 0, "idx": i, "kind": "router", "ports": [
        {"port": slot + 1, "rx_packets": rx, "tx_packets": tx}
        for slot, (rx, tx) in enumerate(went[nf.label])]} for i, nf in enumerate(pair.nfs)]
    stored = {"shape": "graph", "placement": [asdict(pair)], "nf_results": nf_results,
              "endpoints": [
                  {"endpoint": pair.sender.name, "pair": 0, "role": "client",
                   "tx_packets": 10, "rx_packets": 8, "warmup_packets": 0,
                   "summary": {"warmup_tx_packets": 0}},
                  {"endpoint": pair.receiver.name, "pair": 0, "role": "server",
                   "tx_packets": 8, "rx_packets": 8, "warmup_packets": 0}]}
    rows = {h.name: (h.rx, h.tx, h.lost) for h in report.hops(stored, 0)}
    assert rows["link send – in.a"] == (10 + 8, 10 + 8, 0)   # the echoes come back over it
    assert rows["link out.c – recv"] == (8 + 8, 8 + 8, 0)    # the server's echoes too
    assert rows["link in.c – bottom.a"] == (0, 0, 0)
    assert rows["nf 2 of 4: router top"] == (18, 16, 2)
    assert rows["end to end"][2] == 2
