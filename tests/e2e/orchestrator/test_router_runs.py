"""The kernel as the NF (nf = router), in real runc containers: a chain of two
routers over a bridge and over macvlan forwards every frame of flows spread
over the routes it was given; frames to a prefix it has no route for are
counted where the kernel counts them (IpExt InNoRoutes) and pinned on it in the
loss table; udp ends through a router on a veth pipeline. Low rates, nothing
left behind."""
from __future__ import annotations

import json
import os

import pytest

import harness

pytestmark = pytest.mark.e2e

RATE = 2000        # pps per pair: far below what a kernel router drops at
DURATION = 1.0
WARMUP = 0.2


def _run(cli, *args: str) -> tuple[dict, dict]:
    done = cli("run", *args, "--rate", str(RATE), "--duration", str(DURATION),
               "--warmup", str(WARMUP), "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    assert run["status"] == "done"
    [point] = run["points"]
    return run, point


def _routers(point: dict) -> list[dict]:
    return sorted((e for e in point["endpoints"] if e["role"] == "nf"), key=lambda e: e["endpoint"])


def _sent(point: dict) -> int:
    """Every frame the sender put on its link: the routers count the warm-up's too."""
    [sender] = [e for e in point["endpoints"] if e["role"] == "send"]
    return sender["summary"]["tx_packets"] + sender["summary"]["warmup_tx_packets"]


@pytest.mark.parametrize("switch", ["bridge", "macvlan"])
def test_a_chain_of_routers_forwards_every_frame_over_its_routes(engine, cli, no_leftovers, switch):
    run, point = _run(cli, "--switch", switch, "--api", "raw", "--nfs", "2",
                      "--nf", "router", "--nf-routes", "4", "--flows", "4",
                      "--nf-interfaces", "6", "--tester", "split")
    assert (point["nf"], point["nf_routes"], point["nf_interfaces"]) == ("router", 4, 6)
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
    [receiver] = [e for e in point["endpoints"] if e["role"] == "recv"]
    assert receiver["summary"]["flows_seen"] == 4          # one flow per route, all through
    sent = _sent(point)
    for nf in _routers(point):
        port1, port2 = nf["summary"]["ports"]
        assert port1["rx_packets"] == port2["tx_packets"] == sent, nf["summary"]
        kernel = nf["summary"]["kernel"]
        assert kernel["ip"]["forwarded"] == sent and kernel["ip"]["in_no_routes"] == 0
        assert not any(c["rx_dropped"] or c["tx_dropped"] for c in kernel["interfaces"].values())
    # a CPU row per router, its frames counted (its cycles are its cores' softirq's)
    rows = {r["node"]: r for r in point["cpu_usage"]}
    for nf in _routers(point):
        row = rows[nf["endpoint"]]
        assert row["kind"] == "nf" and row["packets"] > 0 and row["cycles_per_packet"] is not None


def test_frames_to_an_unrouted_prefix_are_counted_where_the_kernel_drops_them(
        engine, cli, no_leftovers):
    """Two flows, one to a routed prefix and one to an unrouted one, in turn by
    burst: the second's frames are the router's InNoRoutes, every one."""
    run, point = _run(cli, "--switch", "bridge", "--api", "raw", "--nfs", "1",
                      "--nf", "router", "--nf-unrouted", "1", "--flows", "2", "--burst", "1",
                      "--tester", "split")
    [pair] = point["per_pair"]
    [router] = _routers(point)
    port1, port2 = router["summary"]["ports"]
    no_route = router["summary"]["kernel"]["ip"]["in_no_routes"]
    sent = _sent(point)
    assert port1["rx_packets"] == sent
    assert no_route == port1["dropped"]["no_route"] == sent - port2["tx_packets"]
    # every other frame (a send the socket refused would shift the turn by one)
    assert abs(no_route - sent / 2) <= 0.02 * sent
    [receiver] = [e for e in point["endpoints"] if e["role"] == "recv"]
    assert receiver["summary"]["flows_seen"] == 1
    assert pair["lost"] == pair["sent"] - pair["received"] > 0
    # the loss table pins them on the router, as the kernel's
    table = cli("results", "show", run["id"], check=True).stdout
    assert "Loss along each path" in table and "no_route" in table, table


def test_udp_ends_through_a_router_on_a_veth_pipeline(engine, cli, no_leftovers):
    """The kernel forwards the ends' datagrams with the checksums their kernels
    left to the device, as it would between two hosts: the receiver gets all."""
    _, point = _run(cli, "--switch", "veth", "--api", "udp", "--nfs", "1",
                    "--nf", "router", "--tester", "split")
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
    [receiver] = [e for e in point["endpoints"] if e["role"] == "recv"]
    assert not receiver["udp_in_errors"]


@pytest.mark.parametrize("switch,nf_cores", [("veth", 1), ("veth", 2), ("macvlan", 2)])
def test_a_router_s_rps_map_spreads_its_flows_over_its_cores(engine, cli, no_leftovers,
                                                              switch, nf_cores):
    """A pinned router's ports steer what they receive to its cores (RPS; on
    macvlan the children's shared parent, whose map decides there): on one
    core every frame is taken there; on two, 32 flows hashed over both, each
    core's backlog takes a share (softnet's processed: the host's, so the
    other core's count is what the rest of the host did meanwhile)."""
    _, point = _run(cli, "--switch", switch, "--api", "raw", "--nfs", "1", "--nf", "router",
                    "--nf-cores", str(nf_cores), "--flows", "32", "--tester", "split")
    [pair] = point["per_pair"]
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
    [nf] = point["placement"][0]["nfs"]
    assert len(nf["cores"]) == nf_cores, nf
    [router] = _routers(point)
    processed = router["summary"]["kernel"]["processed"]
    sent = _sent(point)
    share = {c: int(processed.get(str(c), 0)) for c in range(os.cpu_count() or 1)}
    for core, took in share.items():
        if core in nf["cores"]:
            assert took >= sent // 10, (share, sent)   # into the router, and on to the receiver
        else:
            assert took < sent // 10, (share, sent)
