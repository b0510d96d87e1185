"""The tester's two ends on two hosts (tester_host = a+b), without root: the
parse, what is refused (the single tester: one engine, one host), where the
plan puts each end and which ports cross a wire, the receiver told its
sender's clock is another host's, and what the run's summary says of the
latency it has not."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import harness

from cnfperf import UserError
from cnfperf.cli import main
from cnfperf.engine import argv
from cnfperf.remote import hosts
from cnfperf.remote.inventory import load
from cnfperf.report.summary import two_clocks
from cnfperf.report.tables import run_table
from cnfperf.run import checks
from cnfperf.scenario import tester_hosts as ends_of, validate


@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    path = harness.inventory(tmp_path, wires=2)
    checks.inventory_file.cache_clear()
    yield path
    checks.inventory_file.cache_clear()


def scenario(inventory: Path | None, **fields):
    raw = {"switch": "bridge", "api": "raw", "tester": "split", "tester_host": "local+dut",
           "dut_host": "dut", **({"hosts": str(inventory)} if inventory else {}), **fields}
    return validate(raw)


# -- the parse: nf_host's + ---------------------------------------------------------------

@pytest.mark.parametrize("value, ends", [
    ("local", ("local", "local")), ("dut", ("dut", "dut")),
    ("local+dut", ("local", "dut")), ("dut+local", ("dut", "local")),
    ("dut+dut", ("dut", "dut")),
])
def test_one_host_holds_both_ends_and_two_split_them(value, ends):
    assert ends_of(validate({"tester_host": value})) == ends


@pytest.mark.parametrize("value", ["a+b+c", "local+", "+dut", "+"])
def test_more_than_two_hosts_or_an_empty_one_is_refused(inventory, value):
    with pytest.raises(UserError) as e:
        checks.check(scenario(inventory, tester_host=value), (0, 1))
    assert e.value.field == "tester_host" and "joined by +" in e.value.why, e.value


def test_each_end_host_must_be_the_inventorys(inventory):
    with pytest.raises(UserError) as e:
        checks.check(scenario(inventory, tester_host="local+nope"), (0, 1))
    assert e.value.field == "tester_host" and "'nope'" in e.value.why, e.value
    with pytest.raises(UserError, match="name the inventory"):
        checks.check(scenario(None), (0, 1))


# -- the single tester: one engine, one host ---------------------------------------------

def test_a_single_tester_on_two_hosts_is_refused(inventory):
    with pytest.raises(UserError) as e:
        checks.check(scenario(inventory, tester="single"), (0, 1))
    assert e.value.field == "tester" and "one host" in e.value.why and "split" in e.value.why


def test_a_single_tester_on_two_hosts_exits_2_with_one_line(inventory, tmp_path, monkeypatch,
                                                            capsys):
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path / "results"))
    code = main(["run", "--hosts", str(inventory), "--tester-host", "local+dut",
                 "--dut-host", "dut", "--switch", "bridge", "--api", "raw",
                 "--tester", "single"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("cnfperf: error: tester: "), err
    assert not (tmp_path / "results").exists()


def test_auto_takes_split_for_ends_on_two_hosts(inventory):
    s = scenario(inventory, tester="auto")
    checks.check(s, (0, 1))
    point = checks.place_point(s, "1a2b", cores=(0, 1))
    assert point.scenario.tester == "split"
    assert point.tester_why == "auto: ends on two hosts need split"


def test_ends_in_vms_on_two_hosts_have_no_tester(inventory):
    """Ends in VMs need single, ends on two hosts split: neither (and VMs on
    another host are not supported anyway)."""
    with pytest.raises(UserError, match="neither tester can run it|not supported"):
        checks.check(scenario(inventory, tester="auto", endpoint_in="vm"), (0, 1))


# -- placement and wires -----------------------------------------------------------------

def test_the_sender_crosses_a_wire_and_the_receiver_is_the_switchs_neighbour(inventory):
    s = scenario(inventory)
    checks.check(s, (0, 1))
    point = checks.place_point(s, "1a2b", cores=(0, 1))
    sender, receiver = point.pairs[0].endpoints
    assert (sender.role, sender.host, receiver.role, receiver.host) == \
        ("send", "local", "recv", "dut")
    assert [(p.name, p.host, at) for p, at in point.crossings()] == \
        [("cnfp1a2bp0s", "local", "dut")]
    assert point.hosts == ["local", "dut"]
    assert hosts.wiring(load(inventory), point) == \
        {"cnfp1a2bp0s": {"local": "tw0a", "dut": "tw0b"}}
    # here: the sender and its NIC; on dut: the receiver and the switch,
    # which joins the link (the wire's end standing for the sender's port)
    assert point.here(sender.name) and not point.here(receiver.name)
    assert [p.name for p in point.direct_ports()] == ["cnfp1a2bp0s"]
    assert point.links_joined_here() == []
    dut = replace(point, host="dut")
    assert dut.here(receiver.name) and dut.direct_ports() == []
    assert [p.name for p in dut.ports_joined_here()] == ["cnfp1a2bp0s", "cnfp1a2bp0r"]
    assert "tester on local+dut, switch on dut, 1 wire" in point.path()


def test_the_receiver_may_be_the_one_across_the_wire(inventory):
    s = scenario(inventory, tester_host="dut+local", pairs=2)
    checks.check(s, (0, 1))
    point = checks.place_point(s, "1a2b", cores=(0, 1))
    assert [(p.name, p.host) for p in point.wired_ports()] == \
        [("cnfp1a2bp0r", "local"), ("cnfp1a2bp1r", "local")]


def test_each_crossing_end_needs_its_wire(inventory):
    with pytest.raises(UserError) as e:
        checks.check(scenario(inventory, pairs=3), (0, 1))
    assert e.value.field == "hosts" and "2 wire(s) between local and dut; the point needs 3" \
        in e.value.why, e.value


def test_latency_puts_the_client_on_the_first_host_and_the_server_on_the_second(inventory):
    s = scenario(inventory, mode="latency")
    checks.check(s, (0, 1))
    client, server = checks.place_point(s, "1a2b", cores=(0, 1)).pairs[0].endpoints
    assert (client.role, client.host, server.role, server.host) == \
        ("client", "local", "server", "dut")


def test_each_host_is_asked_for_the_tester_api_of_its_end():
    s = validate({"switch": "ovs", "api": "dpdk", "tester": "split", "tester_host": "local+dut",
                  "dut_host": "dut", "hosts": "x.toml"})
    assert hosts.placed(s) == ["dut", "local"]
    from cnfperf.host.facts import EngineFacts, HostFacts, Hugepages
    facts = HostFacts(cores=2, usable_cpus=[0, 1], cpu_model="x", kernel="6.1", root=False,
                      iproute2=True, kernel_links={}, hugepages=Hugepages(0, 0, 2048, []),
                      runc=None, busybox_static=None, dpdk=None, testpmd=None,
                      libxdp=None, kvm=False, engine=EngineFacts(version="0.1.0", apis=["raw"]))
    for here in ("local", "dut"):
        problems = checks.host_problems(facts, here=here)(s)
        assert any("dpdk" in p for p in problems), (here, problems)


# -- the receiver's clock ----------------------------------------------------------------

def test_a_receiver_whose_sender_is_on_another_host_is_told_so(inventory):
    s = scenario(inventory)
    point = checks.place_point(s, "1a2b", cores=(0, 1))
    sender, receiver = point.pairs[0].endpoints
    recv = argv("engine", receiver, [_attached(receiver)], sender, sender.mac, s)
    assert recv[recv.index("--clock") + 1] == "other"
    assert "--clock" not in argv("engine", sender, [_attached(sender)], receiver, receiver.mac, s)
    one = checks.place_point(scenario(inventory, tester_host="dut"), "1a2b", cores=(0, 1))
    sender, receiver = one.pairs[0].endpoints
    assert "--clock" not in argv("engine", receiver, [_attached(receiver)], sender, sender.mac, s)


def test_a_server_keeps_no_clock_the_client_times_the_round_trip(inventory):
    s = scenario(inventory, mode="latency")
    client, server = checks.place_point(s, "1a2b", cores=(0, 1)).pairs[0].endpoints
    assert "--clock" not in argv("engine", server, [_attached(server)], client, client.mac, s)
    assert "--clock" not in argv("engine", client, [_attached(client)], server, server.mac, s)


def _attached(ep):
    from cnfperf.dataplanes.base import Attachment
    return Attachment(iface=ep.name, mac=ep.mac)


# -- what the summary says ---------------------------------------------------------------

def _stored(idx: int, mode: str, tester_host: str) -> dict:
    pair = {"pair": 0, "offered_pps": 1000.0, "tx_pps": 1000.0, "rx_pps": 1000.0, "sent": 1000,
            "received": 1000, "lost": 0, "loss_ratio": 0.0, "rx_bps": 512000.0}
    return {"idx": idx, "status": "done", "mode": mode, "switch": "bridge", "api": "raw",
            "tester": "split", "rate": 1000.0, "scenario": {"tester_host": tester_host},
            "per_pair": [pair], **pair}


def test_the_summary_says_why_there_is_no_one_way_latency():
    points = [_stored(0, "throughput", "local+dut"), _stored(1, "latency", "local+dut"),
              _stored(2, "throughput", "dut")]
    note = two_clocks(points)
    assert note.startswith("no one-way latency (point 1): the tester's ends are on two hosts' "
                           "clocks (tester_host local+dut)"), note
    assert note in run_table({"points": points})
    assert two_clocks([_stored(0, "throughput", "dut+dut")]) == ""
