"""Placement for N pairs: names fit the kernel, addresses and ports never collide."""
from __future__ import annotations

import pytest

from cnfperf import nfs as nf_kinds
from cnfperf.run import checks
from cnfperf.plan import IFNAMSIZ, links_per_path, place
from harness import scenarios


def _point(run_id: str = "1a2b", host_cpus=(0, 1), **fields):
    [s] = scenarios(None, fields)
    return place(s, run_id, host_cpus=host_cpus, nf=nf_kinds.find(s.nf))


@pytest.mark.parametrize("pairs", [1, 2, 7, 250])
def test_every_endpoint_has_its_own_names_and_addresses(pairs):
    point = _point(pairs=pairs, flows=4)
    eps = point.endpoints
    assert len(eps) == 2 * pairs
    for attr in ("name", "mac", "ip"):
        values = [getattr(e, attr) for e in eps]
        assert len(set(values)) == len(values), f"duplicate {attr}"
    # A sender uses `flows` source ports; no two ranges overlap each other or a receiver's.
    ports = [p for pair in point.pairs for p in range(pair.sender.udp_port, pair.sender.udp_port + 4)]
    ports += [pair.receiver.udp_port for pair in point.pairs]
    assert len(set(ports)) == len(ports) and max(ports) <= 65535
    for e in eps:
        # Data planes add up to two characters (a bridge port's host side: "h").
        assert len(e.name) + 2 <= IFNAMSIZ, e.name
        assert e.name.startswith("cnfp1a2b")
        first = int(e.mac.split(":")[0], 16)
        assert first & 0x02 and not first & 0x01, "MAC must be locally administered unicast"


def test_pair_addresses_share_a_subnet_and_roles_follow_mode():
    point = _point(pairs=3, mode="latency")
    for pair in point.pairs:
        assert pair.sender.ip.rsplit(".", 1)[0] == pair.receiver.ip.rsplit(".", 1)[0]
        assert (pair.sender.role, pair.receiver.role) == ("client", "server")
    subnets = {p.sender.ip.rsplit(".", 1)[0] for p in point.pairs}
    assert len(subnets) == 3
    assert {(p.sender.role, p.receiver.role) for p in _point(pairs=2).pairs} == {("send", "recv")}


def test_run_ids_keep_runs_apart():
    a, b = _point("1a2b", pairs=2), _point("ffff", pairs=2)
    assert not {e.name for e in a.endpoints} & {e.name for e in b.endpoints}
    assert not {e.mac for e in a.endpoints} & {e.mac for e in b.endpoints}


def test_two_cores_give_each_side_of_a_pair_its_own_core():
    point = _point(pairs=2)
    for pair in point.pairs:
        assert pair.sender.cpu != pair.receiver.cpu
    assert point.warnings, "4 busy pollers on 2 cores must be recorded"
    assert "4 busy pollers share 2 cores" in point.warnings[0]
    assert not _point(pairs=1).warnings


def test_cores_come_from_the_scenario_when_given():
    point = _point(pairs=2, cpus="0")
    assert {e.cpu for e in point.endpoints} == {0}
    assert point.cpus == (0,)


def test_names_for_data_plane_resources_are_checked():
    point = _point()
    assert point.name("br") == "cnfp1a2bbr"
    with pytest.raises(ValueError):
        point.name("much-too-long")


def test_cleanup_recognises_every_planned_name_and_nothing_else():
    from cnfperf.run.cleanup import RUN_NAME

    point = _point("0bad", pairs=3)
    names = [e.name for e in point.endpoints] + [point.name("sw"), point.prefix + ".journal",
                                                 point.prefix + "-testpmd"]
    assert all(RUN_NAME.match(n) for n in names), names
    for foreign in ("cnfpA", "cnfph2a", "cnfpx0d0ca", "cnfp0badc0de", "eth0", "cnf1a2b"):
        assert not RUN_NAME.match(foreign), foreign


@pytest.mark.parametrize("pairs,nfs", [(1, 1), (2, 3), (250, 2), (1, 16)])
def test_a_path_runs_through_its_nfs_in_order(pairs, nfs):
    point = _point(pairs=pairs, nfs=nfs)
    ports = point.ports
    for attr in ("name", "mac"):
        values = [getattr(p, attr) for p in ports]
        assert len(set(values)) == len(values), f"duplicate {attr}"
    assert all(len(p.name) + 2 <= IFNAMSIZ for p in ports), max(ports, key=lambda p: len(p.name))
    for pair in point.pairs:
        links = pair.links
        assert len(links) == nfs + 1
        assert links[0].a == pair.sender.port and links[-1].b == pair.receiver.port
        # In at an NF's a port, out at its b port, into the next one's a port.
        for nf, before, after in zip(pair.nfs, links, links[1:]):
            assert (before.b, after.a) == nf.ports
        # The end of a link that starts first listens (vhost backend, memif server):
        # receivers, then NFs from the receiver's side, then the sender.
        assert all(link.first == link.b for link in links)


@pytest.mark.parametrize("tester", ["split", "single"])
def test_a_path_answers_by_port_what_lies_across_each_link(tester):
    """Users ask the stored links by port (link_of, peer, hops, first, last),
    never by position: what a graph's links will answer the same way."""
    point = _point(nfs=2, api="raw", tester=tester)
    [pair] = point.pairs
    links = pair.links
    assert pair.first == links[0] and pair.last == links[-1]
    assert pair.peer(pair.sender.port) == pair.nfs[0].ports[0]
    assert pair.peer(pair.receiver.port) == pair.nfs[1].ports[1]
    for nf in pair.nfs:
        assert pair.hops(nf) == tuple(pair.peer(p).mac for p in nf.ports)
        assert all(pair.link_of(p) in links for p in nf.ports)
    assert pair.hops(pair.nfs[0]) == (pair.sender.mac, pair.nfs[1].ports[0].mac)
    mirror = _point(nfs=1, nf="mirror", api="raw", tester="single").pairs[0]
    assert mirror.hops(mirror.nfs[0]) == () and mirror.last == mirror.links[-1]


def test_nfs_take_the_cores_after_the_ends():
    point = _point(pairs=1, nfs=3, host_cpus=(0, 1, 2, 3))
    assert [nf.cpu for nf in point.nfs] == [2, 3, 0]
    assert any("busy pollers" in w for w in point.warnings)   # 2 ends + 3 NFs > 4 cores


@pytest.mark.parametrize("joins,nfs,shape", [("switch", 0, "pair"), ("switch", 2, "chain"),
                                             ("link", 2, "pipeline")])
def test_the_path_says_its_shape(joins, nfs, shape):
    [s] = scenarios(None, {"nfs": nfs, "nf": "l3"})
    point = place(s, "1a2b", host_cpus=(0, 1), joins=joins, nf=nf_kinds.find(s.nf))
    assert point.shape == shape
    assert point.path() == ("send → recv" if not nfs else f"send → 2 × l3 ({shape}) → recv")


def test_a_single_tester_holds_both_ends_of_its_path():
    point = _point(pairs=2, nfs=1, api="raw", tester="single")
    for pair in point.pairs:
        assert pair.engines == (pair.sender,) and pair.sender.role == "tester"
        port1, port2 = pair.links[0].a, pair.links[-1].b
        assert port1.node == port2.node == pair.sender.name and (port1.slot, port2.slot) == (0, 1)
        # It starts after its NF: the NF listens on both links.
        assert [link.first for link in pair.links] == [pair.nfs[0].ports[0], pair.nfs[0].ports[1]]
    assert [e.cpu for e in point.engines] == [0, 1] and [nf.cpu for nf in point.nfs] == [0, 1]
    assert "4 busy pollers share 2 cores" in point.warnings[0]   # 2 testers, 2 NFs


def test_a_mirror_ends_the_path_at_its_one_port():
    point = _point(nfs=1, nf="mirror", api="raw", tester="single")
    [pair] = point.pairs
    [link] = pair.links
    assert (link.a, link.b) == (pair.sender.port, pair.nfs[0].ports[0]) and link.first == link.b
    assert len(pair.nfs[0].ports) == 1 and pair.receiver.port not in point.ports


@pytest.mark.parametrize("flags", [{}, {"nfs": 3}, {"nfs": 1, "nf": "mirror", "tester": "single",
                                                    "api": "raw"}])
def test_the_checks_count_the_links_the_plan_makes(flags):
    [s] = scenarios(None, flags)
    [pair] = place(s, "1a2b", host_cpus=(0, 1), nf=nf_kinds.find(s.nf)).pairs
    assert len(pair.links) == links_per_path(s.nfs, checks.nf_ports(s.nf))
