"""A fault inside a trial and a neighbour of the user's, on real links and
containers: a port taken down mid-trial and up again, its outage measured by the
receiver from sequence numbers within one frame interval of how long it was down
(and the spread of the commands that took it down and up); a router NF whose
ports went down forwarding again once they are up, its routes put back; a
`cmd:` neighbour that runs exactly while the point sends, its whole process
group gone after; a graph of routers failing over on a carrier's loss, and
routing daemons (FRR) on a silent cut, a killed run of theirs cleaned up. (A
fault outside the measured window is refused before anything exists:
tests/unit/test_scenario_validation.py.)"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import harness
import leak

from cnfperf.nfs import frr
from cnfperf.scenario import parse_cpus

pytestmark = pytest.mark.e2e

DURATION = 2.0
WARMUP = 0.2
RATE = 500             # pps, one frame at a time: a frame every 2 ms
INTERVAL_NS = 1e9 / RATE
AT, DOWN_FOR = 0.6, 0.8
ROUTER_RATE = 5000     # pps: a frame every 0.2 ms, far below what a kernel router drops at


def _run(cli, *args: str) -> tuple[dict, Path]:
    done = cli("run", *args, "--duration", str(DURATION), "--warmup", str(WARMUP), "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    assert run["status"] == "done"
    [point] = run["points"]
    return point, Path(run["run_dir"]) / "point0"


@pytest.mark.parametrize("switch, target, nfs, at", [
    # the receiver's own interface: the NF's, its peer, loses its carrier and drops
    ("veth", "link:1", 1, "node"),
    ("bridge", "port:1", 1, "switch"),  # the bridge's port towards the receiver, past an NF
    ("macvlan", "nf:0", 1, "node"),     # both ports of the NF
])
def test_a_cut_mid_trial_is_the_outage_to_a_frame_interval(engine, cli, no_leftovers,
                                                             switch, target, nfs, at):
    point, directory = _run(
        cli, "--switch", switch, "--api", "raw", "--nfs", str(nfs), "--nf-api", "raw",
        "--rate", str(RATE),
        "--burst", "1", "--poll", "interrupt", "--tester", "split", "--fault", target,
        "--fault-at", str(AT), "--fault-duration", str(DOWN_FOR))
    fault = point["fault_facts"]
    assert fault["target"] == target and fault["at"] == at, fault
    assert abs(fault["down_ns"] - DOWN_FOR * 1e9) < 0.05e9, fault
    assert AT - 0.1 < fault["down_at_s"] < AT + 0.1, fault
    [pair] = point["per_pair"]
    # the receiver saw one gap as long as the port was down: to a frame interval,
    # and to how long the commands that took it down and up took
    assert abs(pair["outage_ns"] - fault["down_ns"]) <= INTERVAL_NS + fault["spread_ns"], \
        (pair, fault)
    assert abs(pair["outage_lost"] - fault["down_ns"] / INTERVAL_NS) <= \
        1 + fault["spread_ns"] / INTERVAL_NS, (pair, fault)
    assert pair["lost"] == pair["outage_lost"], "the cut was all the path lost"
    assert point["outage_ns"] == pair["outage_ns"] and point["fault_ns"] == fault["down_ns"]
    # the gap began at the cut (the sender stamps frames with the monotonic clock
    # the fault read): the last frame before it left within a frame of it
    [recv] = [e for e in point["endpoints"] if e["role"] == "recv"]
    before = recv["summary"]["outage_from_ns"]
    assert -INTERVAL_NS - fault["spread_ns"] <= fault["down_from_ns"] - before \
        <= INTERVAL_NS + fault["spread_ns"], (before, fault)
    # every port is up again (no_leftovers checks that nothing is left at all)
    shown = cli("results", "show", "latest", check=True).stdout
    assert "Faults" in shown and target in shown


def test_a_router_whose_ports_went_down_forwards_again_once_its_routes_are_back(
        engine, cli, no_leftovers):
    """Its ports down (nf:0) take its routes and neighbours with them in the
    kernel; the trial puts them back after the ups: the outage is the fault's
    length and that re-install, and every frame after it gets through."""
    point, _ = _run(cli, "--switch", "bridge", "--api", "raw", "--nfs", "1",
                    "--nf", "router", "--rate", str(ROUTER_RATE), "--burst", "1",
                    "--poll", "interrupt", "--tester", "split", "--fault", "nf:0",
                    "--fault-at", str(AT), "--fault-duration", str(DOWN_FOR))
    fault = point["fault_facts"]
    assert fault["target"] == "nf:0" and fault["at"] == "node", fault
    assert 0 < fault["restore_ns"] < 0.2e9, fault
    [pair] = point["per_pair"]
    interval = 1e9 / ROUTER_RATE
    # down for the fault's length, and until its routes were back
    expected = fault["down_ns"] + fault["restore_ns"]
    assert abs(pair["outage_ns"] - expected) <= 3 * interval + fault["spread_ns"] + 5e6, \
        (pair, fault)
    # the frames after it (a second past the ups) all got through: the path is whole again
    assert pair["lost"] == pair["outage_lost"], (pair, fault)
    assert pair["received"] >= (DURATION - DOWN_FOR - 0.1) * ROUTER_RATE, pair


@pytest.mark.parametrize("switch", [
    pytest.param("ovs", marks=pytest.mark.needs("ovsdb-server", "ovs-vsctl")),
    pytest.param("vpp", marks=pytest.mark.needs("vpp"))])
def test_a_dpdk_switch_port_down_is_the_outage_and_a_kept_switch_has_it_up_again(
        engine, cli, no_leftovers, switch):
    """The switch's own port (ovs-ofctl mod-port, VPP's interface state) down
    mid-trial; the next point, on the same kept switch, loses nothing."""
    done = cli("run", "--switch", switch, "--api", "dpdk", "--tester", "single", "--rate",
               str(RATE), "--burst", "1", "--fault", "port:0,none", "--fault-at", str(AT),
               "--fault-duration", str(DOWN_FOR), "--switch-keep", "yes",
               "--duration", str(DURATION), "--warmup", str(WARMUP), "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    cut, after = sorted(run["points"], key=lambda p: p["idx"])
    fault = cut["fault_facts"]
    assert fault["at"] == "switch" and abs(fault["down_ns"] - DOWN_FOR * 1e9) < 0.1e9, fault
    [pair] = cut["per_pair"]
    assert abs(pair["outage_ns"] - fault["down_ns"]) <= INTERVAL_NS + fault["spread_ns"], \
        (pair, fault)
    assert after["fault_facts"] is None and after["per_pair"][0]["lost"] == 0
    assert after["per_pair"][0]["outage_lost"] is None   # no fault: no outage


SCRIPT = ("trap 'echo stopped $(cat /proc/uptime); exit 0' TERM; "
          "echo started $(cat /proc/uptime); while :; do :; done")


def test_a_cmd_neighbour_runs_while_the_point_sends(engine, cli, no_leftovers):
    point, directory = _run(cli, "--switch", "veth", "--api", "raw", "--rate", "2000",
                            "--tester", "split", "--noise", f"cmd:{SCRIPT}", "--noise-on", "other")
    assert point["noise"] == f"cmd:{SCRIPT}" and point["per_pair"][0]["lost"] == 0
    lines = (directory / "noise.out").read_text().split("\n")
    started = float(lines[0].split()[1])
    stopped = float(lines[1].split()[1])
    # stopped at the senders' end, not at teardown: it ran for warm-up + duration
    # (and its senders' start: a container's first process)
    assert WARMUP + DURATION - 0.1 <= stopped - started <= WARMUP + DURATION + 2.0, lines
    facts = point["noise_facts"]
    assert facts["kind"] == "cmd" and facts["command"] == SCRIPT
    assert facts["tail"][-1].startswith("stopped") and facts["output"] == "noise.out"
    [row] = [r for r in point["cpu_usage"] if r["kind"] == "noise"]
    assert parse_cpus(row["cores"]) == tuple(facts["cores"])
    assert row["user_s"] + row["system_s"] > 0.3 * DURATION, row   # it spun on its core


DIAMOND = ("sender - in.a; in.b - top.a; in.c - bottom.a cost 2; top.b - out.a; "
           "bottom.b - out.b; out.c - receiver")


def test_a_graph_s_routers_move_the_traffic_to_the_other_path_when_a_link_loses_its_carrier(
        engine, cli, no_leftovers):
    """A diamond of kernel routers on veth (in, then top or bottom, then out;
    bottom costs more): top's port a down takes the carrier off in's port b,
    in's route that way is passed over for its backup through bottom, at once;
    after the ups the routes through top are back and preferred again. Frames
    follow that: the links' counts say how many took each path."""
    point, _ = _run(cli, "--switch", "veth", "--api", "raw", "--nf", "router",
                    "--graph", DIAMOND, "--rate", str(ROUTER_RATE), "--burst", "1",
                    "--poll", "interrupt", "--tester", "split", "--fault", "link:top.a",
                    "--fault-at", str(AT), "--fault-duration", str(DOWN_FOR))
    fault = point["fault_facts"]
    assert fault["target"] == "link:top.a" and fault["at"] == "node", fault
    assert fault["restore_ns"] > 0, fault          # top's own routes went with its port
    [pair] = point["per_pair"]
    interval = 1e9 / ROUTER_RATE
    # no outage beyond a few frames: the route moved as the carrier went
    assert pair["outage_ns"] < 5 * interval + fault["spread_ns"], (pair, fault)
    assert pair["lost"] <= 5, pair
    forwarded = {n["name"]: sum(p["tx_packets"] or 0 for p in n["ports"])
                 for n in point["nf_results"]}
    names = {n["label"]: n["name"] for n in point["placement"][0]["nfs"]}
    bottom = forwarded[names["bottom"]]
    # bottom carried the frames of the fault's length (and the warm-up's none)
    assert abs(bottom - fault["down_ns"] / interval) <= 0.1 * fault["down_ns"] / interval, \
        (forwarded, fault)
    assert forwarded[names["top"]] + bottom == forwarded[names["out"]], forwarded
    shown = cli("results", "show", "latest", check=True).stdout
    assert "link in.c – bottom.a" in shown and "nf 3 of 4: router bottom" in shown, shown


@pytest.mark.needs("vtysh")
@pytest.mark.parametrize("nf, timers, detect_ms, early_ms, sessions", [
    # eBGP with BFD at 002's timers: a peer is down after 2 × 100 ms without a
    # packet; in has a BGP and a BFD session to each of top and bottom
    ("frr:bgp", ("--bfd-interval", "100", "--bfd-multiplier", "2"), 200, 100, 4),
    # OSPF's fast hello: a neighbour is dead 1 s after its last hello (4 a second)
    ("frr:ospf", ("--ospf-hello", "0.25", "--ospf-dead", "1"), 1000, 250, 2),
    # static routes watched by BFD (FRR 10.3's, built), 002's third variant:
    # in's BFD session to each of top and bottom
    pytest.param("frr:static", ("--bfd-interval", "100", "--bfd-multiplier", "2"), 200, 100, 2,
                 marks=pytest.mark.needs("frr")),
])
def test_routing_daemons_move_the_traffic_when_they_notice_a_cut_the_switch_hides(
        engine, cli, no_leftovers, nf, timers, detect_ms, early_ms, sessions):
    """The diamond's routers on a bridge, their routes FRR's: the bridge stops
    forwarding on top's port a (port:top.a) and every interface keeps its
    carrier, so only the protocol notices, in its detection time (less what
    had passed since the last packet before the cut); the traffic goes
    through bottom from then until top is back, and the outage is that
    detection and the route's move. The daemons are gone after."""
    down_for = 1.2
    point, _ = _run(cli, "--switch", "bridge", "--api", "raw", "--nf", nf, *timers,
                    "--graph", DIAMOND, "--rate", str(ROUTER_RATE), "--burst", "1",
                    "--poll", "interrupt", "--tester", "split", "--fault", "port:top.a",
                    "--fault-at", str(AT), "--fault-duration", str(down_for))
    fault = point["fault_facts"]
    # in or top: the cut is silent to both ends of the link
    assert fault["at"] == "switch" and fault["noticed"].startswith(("in: ", "top: ")), fault
    assert detect_ms - early_ms - 50 <= fault["noticed_ms"] <= detect_ms + 300, fault
    [pair] = point["per_pair"]
    # the route moves once in noticed (give or take its log's and the gap's
    # own stamps), and within a few hundred ms of it
    assert (fault["noticed_ms"] - 50) * 1e6 <= pair["outage_ns"] <= \
        (fault["noticed_ms"] + 400) * 1e6, (pair, fault)
    forwarded = {n["name"]: sum(p["tx_packets"] or 0 for p in n["ports"])
                 for n in point["nf_results"]}
    names = {n["label"]: n["name"] for n in point["placement"][0]["nfs"]}
    moved = (fault["down_ns"] - pair["outage_ns"]) / 1e9 * ROUTER_RATE
    assert forwarded[names["bottom"]] >= 0.8 * moved, (forwarded, fault, pair)
    # in's sessions to top went down with the cut (and came back after it)
    routing = {e["endpoint"]: e["summary"]["routing"] for e in point["endpoints"]
               if (e.get("summary") or {}).get("routing")}
    mine = routing[names["in"]]
    assert mine["sessions"] == sessions and mine["downs"] >= 1, mine
    assert 0 < mine["down_s"] <= mine["sessions"] * mine["seconds"], mine
    shown = cli("results", "show", "latest", check=True).stdout
    assert "noticed ms" in shown and "routing daemons' packets too" in shown, shown
    assert "Routing sessions during each trial" in shown, shown


@pytest.mark.needs("frr")
def test_a_killed_run_s_routing_daemons_go_with_cleanup(engine, tmp_path):
    """SIGKILL while the routers' daemons run (FRR 10.3's for static routes
    with BFD): zebra, mgmtd, staticd, bfdd, their files and the links to them
    from the build's state directory stay, and `cnfperf cleanup` removes them
    with the rest."""
    before = leak.snapshot()

    def measuring() -> None:
        assert any(p.endswith((":staticd", ":mgmtd")) for p in leak.snapshot()["processes"])
        assert len(list(frr.STATE.iterdir())) == 2     # a link per router
    harness.killed_while_measuring(
        tmp_path / "results", ["--switch", "bridge", "--api", "raw", "--nfs", "2", "--nf",
                               "frr:static", "--poll", "interrupt", "--rate", "1000",
                               "--duration", "60"], measuring, timeout=120)
    assert not leak.diff(before, leak.snapshot()), "cleanup left something of the run's"
