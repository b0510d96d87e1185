"""Snabb without root: the Lua program cnfperf generates, the counters it reads
from Snabb's shared memory (files laid out as Snabb lays them out), its
packet memory, and what a scenario may ask of it."""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from cnfperf import UserError
from cnfperf.dataplanes import DATAPLANES
from cnfperf.dataplanes.base import PortCounters
from cnfperf.dataplanes.snabb_app import (PACKET_BYTES, READY, Links, VhostPort, bridge_links,
                                          memory_mb, port_counters, program, read_counter,
                                          steps, wire_links)
from cnfperf.host.hugepages import PAGE_MB
from cnfperf.plan import place
from cnfperf.scenario import Scenario
from harness import scenarios

PORTS = [VhostPort("p0", "/run/cnfperf/x/sock/a.sock", "02:00:00:00:00:01"),
         VhostPort("p1", "/run/cnfperf/x/sock/b.sock", "02:00:00:00:00:0a")]


# --- the Lua program ------------------------------------------------------------------

def test_the_bridge_program_joins_every_port_as_a_vhost_user_client():
    lua = program(PORTS, busy=True, prealloc=3)
    for p in PORTS:
        assert (f'config.app(c, "{p.app}", VhostUser, {{socket_path = "{p.socket}", '
                'is_server = false})') in lua
    assert 'config.app(c, "bridge", bridge, {ports = {"p0", "p1"}})' in lua
    for link in ("p0.tx -> bridge.p0", "bridge.p0 -> p0.rx", "p1.tx -> bridge.p1",
                 "bridge.p1 -> p1.rx"):
        assert f'config.link(c, "{link}")' in lua
    # every port's MAC is in the bridge's table before the first frame, and stays
    assert 'macs["p1"] = ffi.new("uint8_t[8]", {0x02, 0x00, 0x00, 0x00, 0x00, 0x0a})' in lua
    assert lua.index("learn()") > lua.index("engine.configure(c)")
    assert '"cnfperf_learn", learn, 10000000000, "repeating"' in lua
    assert "for _ = 1, 3 do packet.preallocate_step() end" in lua
    assert "engine.busywait = true" in lua


def test_the_wire_program_has_no_bridge_and_wires_each_pair_both_ways():
    lua = program(PORTS, [("p0", "p1")], busy=False)
    assert "bridge" not in lua and "learn" not in lua
    assert 'config.link(c, "p0.tx -> p1.rx")' in lua and 'config.link(c, "p1.tx -> p0.rx")' in lua
    assert "engine.busywait = false" in lua   # Snabb's own back-off while idle


def test_the_program_says_when_it_is_ready_and_ends_with_its_stdin():
    lua = program(PORTS)
    lines = lua.splitlines()
    assert lines[-1] == "engine.main()"
    assert f'print("{READY}")' in lines and lines.index(f'print("{READY}")') > \
        lines.index("engine.configure(c)")
    assert 'if S.stdin:read(nil, 64) == "" then os.exit(0) end' in lua
    # locals only: Snabb runs scripts under lua strict mode
    assert not [l for l in lines if re.match(r"[a-z_]+ = ", l)]


def test_strings_are_quoted_for_lua():
    lua = program([VhostPort("p0", '/odd "dir"\\x.sock', "02:00:00:00:00:01")], [])
    assert r'socket_path = "/odd \"dir\"\\x.sock"' in lua


# --- packet memory ------------------------------------------------------------------------

@pytest.mark.parametrize("links,ports,want", [(2, 2, 2), (4, 2, 3), (8, 4, 4), (4, 4, 3)])
def test_preallocation_covers_every_link_full(links, ports, want):
    n = steps(links, ports)
    assert n == want
    packets = 1000 * (2**n - 1)
    assert packets >= links * 1023 + ports > 1000 * (2 ** (n - 1) - 1)
    mb = memory_mb(links, ports)
    assert mb % PAGE_MB == 0 and mb * 2**20 >= packets * PACKET_BYTES


def test_a_bridge_takes_twice_the_links_of_wires():
    p = place(Scenario(switch="snabb", api="dpdk", pairs=1), "00aa")
    bridge, wire = DATAPLANES["snabb"](None), DATAPLANES["snabb-wire"](None)
    bridge.point = wire.point = p
    assert bridge.switch_mb() == memory_mb(4, 2) == 76
    assert wire.switch_mb() == memory_mb(2, 2) == 34


# --- counters -------------------------------------------------------------------------------

def _counters(shm: Path, link: str, **values: int) -> None:
    d = shm / "links" / link
    d.mkdir(parents=True)
    for name in ("rxpackets", "txpackets", "txdrop", "rxbytes", "txbytes", "dtime"):
        (d / f"{name}.counter").write_bytes(values.get(name, 0).to_bytes(8, "little"))


def test_a_counter_is_a_little_endian_uint64(tmp_path):
    (tmp_path / "c").write_bytes((2**40 + 5).to_bytes(8, "little"))
    assert read_counter(tmp_path / "c") == 2**40 + 5
    (tmp_path / "short").write_bytes(b"\1\2")
    with pytest.raises(ValueError, match="not a counter"):
        read_counter(tmp_path / "short")


def test_bridge_ports_count_their_own_links(tmp_path):
    _counters(tmp_path, "p0.tx -> bridge.p0", txpackets=1000, rxpackets=1000, txdrop=7)
    _counters(tmp_path, "bridge.p0 -> p0.rx")
    _counters(tmp_path, "p1.tx -> bridge.p1")
    # 1000 switched to p1: 990 left the link for its ring, 4 sit in it, 6 refused
    _counters(tmp_path, "bridge.p1 -> p1.rx", txpackets=994, rxpackets=990, txdrop=6)
    got = port_counters(tmp_path, {"s": bridge_links("p0"), "r": bridge_links("p1")})
    assert got == {"s": PortCounters(rx_packets=1007, rx_dropped=7),
                   "r": PortCounters(tx_packets=990, tx_dropped=6)}


def test_a_wire_link_drops_at_the_port_it_leads_to(tmp_path):
    _counters(tmp_path, "p0.tx -> p1.rx", txpackets=500, rxpackets=498, txdrop=3)
    _counters(tmp_path, "p1.tx -> p0.rx", txpackets=2, rxpackets=2)
    got = port_counters(tmp_path, {"s": wire_links("p0", "p1"), "r": wire_links("p1", "p0")})
    assert got["s"] == PortCounters(rx_packets=503, tx_packets=2)
    assert got["r"] == PortCounters(rx_packets=2, tx_packets=498, tx_dropped=3)


def test_links_of_each_port():
    assert bridge_links("p3") == Links("p3.tx -> bridge.p3", "bridge.p3 -> p3.rx")
    assert wire_links("p0", "p1") == Links("p0.tx -> p1.rx", "p1.tx -> p0.rx")


def test_the_data_plane_names_each_ports_links_and_apps():
    p = place(Scenario(switch="snabb-wire", api="dpdk", pairs=2), "00ab")
    dp = DATAPLANES["snabb-wire"](None)
    dp.point = p
    links = dp._links()
    assert set(links) == {port.name for port in p.ports}
    for link in p.links:   # each link's two ends are wired to each other
        assert links[link.a.name].ingress == links[link.b.name].egress
        assert links[link.a.name].egress == links[link.b.name].ingress


# --- registry and validation -------------------------------------------------------------

@pytest.mark.parametrize("name", ["snabb", "snabb-wire"])
def test_registered_as_one_polling_process_joining_dpdk_ports(name):
    dp = DATAPLANES[name]
    assert dp.name == name and dp.apis == frozenset({"dpdk"}) and dp.joins == "switch"
    assert dp.poll_threads == 1 and (dp.max_cores, dp.max_rxq) == (1, 1) and dp.processes
    assert dp.counter_view == "switch"


@pytest.mark.parametrize("field", ["switch_cores", "switch_rxq"])
def test_one_thread_and_one_queue_only(field):
    with pytest.raises(UserError) as err:
        scenarios(None, {"switch": "snabb", "api": "dpdk", field: 2})
    assert err.value.field == field and "snabb has at most 1 " in err.value.why


def test_in_a_container_of_its_own_from_its_image():
    from cnfperf.dataplanes.snabb import IMAGE
    s, = scenarios(None, {"switch": "snabb", "api": "dpdk", "switch_in": "container"})
    assert s.switch_in == "container" and DATAPLANES["snabb-wire"].image is IMAGE


def test_its_counters_are_in_the_directory_it_names_by_its_own_pid(tmp_path):
    """On the host its pid is ours; in a container its pid namespace's: the
    point's one numbered directory."""
    from types import SimpleNamespace
    from cnfperf.dataplanes.snabb_app import Snabb
    snabb = Snabb(Path("snabb"), tmp_path / "x.lua", tmp_path, "/hugepages", "e", launch=None)
    snabb.console = SimpleNamespace(pid=4242)
    (tmp_path / "links").mkdir()
    (tmp_path / "7").mkdir()
    assert snabb._shm() == tmp_path / "7"
    (tmp_path / "4242").mkdir()
    assert snabb._shm() == tmp_path / "4242"


@pytest.mark.parametrize("flags", [{"pairs": 2}, {"size": 9216}, {"nfs": 1},
                                   {"tester": "single"}, {"poll": "adaptive"}])
def test_what_it_takes(flags):
    s, = scenarios(None, {"switch": "snabb-wire", "api": "dpdk", **flags})
    assert s.switch == "snabb-wire"


def test_engines_are_the_virtio_user_servers():
    p = place(Scenario(switch="snabb", api="dpdk"), "00ac")
    dp = DATAPLANES["snabb"](None)
    dp.point, dp.dir = p, Path("/run/cnfperf/x")
    port = p.ports[0]
    assert dp.vdev(port) == (f"net_virtio_user0,path=/run/cnfperf/x/sock/{port.name}.sock,"
                             f"mac={port.mac},queues=1,server=1")


def test_a_missing_build_is_a_problem_naming_how_to_make_it(monkeypatch, tmp_path):
    monkeypatch.setenv("CNFPERF_SWITCHES", str(tmp_path / "none"))
    problems = DATAPLANES["snabb"].check(SimpleNamespace(root=True))   # only the build lacks
    assert any("snabb not built" in p and "switches/build.sh snabb" in p for p in problems)
