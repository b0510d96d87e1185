"""Other hosts without root: placement across hosts, what a tester on another
host than the switch may do, the wiring of a point, and the controller's
protocol with a host's agent (the agent of run/agent.py, served over pipes)."""
from __future__ import annotations

import os
import select
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

import harness

from cnfperf import SystemFailure, UserError
from cnfperf.plan import place
from cnfperf.remote import client, hosts, ssh
from cnfperf.remote.inventory import load
from cnfperf.run import agent as agent_mod, checks, survey
from cnfperf.remote.inventory import End, Wire
from cnfperf.scenario import validate


@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    path = harness.inventory(tmp_path, wires=4)
    checks.inventory_file.cache_clear()
    return path


def scenario(inventory: Path | None = None, **fields) -> object:
    raw = {"switch": "bridge", "api": "raw", "tester": "single", "dut_host": "dut",
           **({"hosts": str(inventory)} if inventory else {}), **fields}
    return validate(raw)


# -- placement ---------------------------------------------------------------------------

def test_a_point_across_hosts_wires_each_pairs_sender_then_receiver(inventory):
    point = place(scenario(inventory, pairs=2), "1a2b", host_cpus=(0, 1))
    assert point.spans_hosts
    assert [p.name for p in point.wired_ports()] == \
        ["cnfp1a2bp0s", "cnfp1a2bp0r", "cnfp1a2bp1s", "cnfp1a2bp1r"]
    # the tester's ends are the tester's host's, the NFs and switch the host under test's
    assert point.here("cnfp1a2bp0s") and point.host == "local"
    assert point.host_of("cnfp1a2bn000") == "dut"
    wiring = hosts.wiring(load(inventory), point)
    assert wiring["cnfp1a2bp1r"] == {"local": "tw3a", "dut": "tw3b"}


def test_shared_wires_carry_every_crossing_port_as_a_child_of_its_wire(inventory):
    """share_wires: 6 pairs' 12 crossing ports over the 4 wires in turn, each
    port an interface of its own (named for it) on both hosts, a child of the
    wire's NIC there; without it the point needs 12 wires."""
    s = scenario(inventory, pairs=6, share_wires=True)
    checks.check(s, (0, 1))
    point = place(s, "1a2b", host_cpus=(0, 1))
    wiring, shares = hosts.wiring(load(inventory), point), hosts.shares(load(inventory), point)
    ports = [p.name for p in point.wired_ports()]
    assert len(ports) == 12 and set(wiring) == set(shares) == set(ports)
    for n, port in enumerate(ports):
        assert wiring[port] == {"local": port + "w", "dut": port + "w"}
        assert shares[port] == {"local": f"tw{n % 4}a", "dut": f"tw{n % 4}b"}
    with pytest.raises(UserError, match="the point needs 12, .* or share_wires = true"):
        checks.check(scenario(inventory, pairs=6), (0, 1))


def test_without_share_wires_no_port_is_a_child(inventory):
    point = place(scenario(inventory), "1a2b", host_cpus=(0, 1))
    assert hosts.shares(load(inventory), point) == {}


def test_a_point_on_one_host_has_no_wires(inventory):
    point = place(scenario(inventory, tester_host="dut"), "1a2b", host_cpus=(0, 1))
    assert not point.spans_hosts and point.wired_ports() == []


# -- what is refused, with one line naming the field -------------------------------------

@pytest.mark.parametrize("fields, field, words", [
    ({}, "dut_host", "name the inventory"),
    ({"dut_host": "nope"}, "dut_host", "'nope'"),
    ({"switch": "veth"}, "switch", "takes no NIC"),
    ({"switch": "macvlan"}, "nfs", "not two NICs to each other"),
    ({"switch": "vhost", "api": "dpdk"}, "switch", "takes no NIC"),
    ({"api": "udp", "tester": "split"}, "api", "builds its own frames"),
    ({"pairs": 3}, "hosts", "4 wire(s) between local and dut; the point needs 6"),
])
def test_refused_before_anything_exists(inventory, fields, field, words):
    s = scenario(None if field == "dut_host" and not fields else inventory, **fields)
    with pytest.raises(UserError) as e:
        checks.check(s, (0, 1))
    assert e.value.field == field and words in e.value.why, e.value


@pytest.mark.parametrize("fields", [
    {"switch": "ovs", "api": "dpdk", "switch_in": "container", "switch_quota": 50,
     "noise": "cpu", "noise_on": "same", "switch_rxq": 2},
    {"switch": "testpmd", "api": "dpdk", "switch_in": "container", "switch_rxq": 2},
    {"limit": "2k"},
    {"policer": "nft", "policer_rate": "2k"},
    {"shaper": "htb", "shaper_rate": "2k"},
])
def test_the_switch_s_settings_go_across_hosts(inventory, fields):
    """The switch on the host under test takes what it takes on one host: its
    container, quota and queues, a noisy neighbour beside it there, a limit,
    policer or shaper on its port towards the receiver's wire."""
    checks.check(scenario(inventory, **fields), (0, 1))


def _pci_ends(inventory: Path, *ends: tuple[str, str]) -> None:
    """The inventory's wire ends `end` named by PCI addresses instead."""
    text = inventory.read_text()
    for end, address in ends:
        text = text.replace(f'"{end}"', f'"{address}"')
    inventory.write_text(text)
    checks.inventory_file.cache_clear()


def test_a_shared_wire_s_ends_are_interfaces(inventory):
    _pci_ends(inventory, ("local:tw0a", "local:0000:03:00.0"))
    with pytest.raises(UserError) as e:
        checks.check(scenario(inventory, api="dpdk", runtime="netns", share_wires=True), (0, 1))
    assert e.value.field == "share_wires" and "is a PCI address" in e.value.why


def test_the_tester_s_pci_ends_are_its_engine_s_dpdk_nics(inventory):
    """Both tester ends on its host named by PCI address: the tester's DPDK
    opens them (netns runtime), the switch's ends stay interfaces."""
    _pci_ends(inventory, ("local:tw0a", "local:0000:03:00.0"), ("local:tw1a", "local:0000:03:00.1"))
    s = scenario(inventory, api="dpdk", runtime="netns")
    checks.check(s, (0, 1))
    point = place(s, "1a2b", host_cpus=(0, 1))
    wiring = hosts.wiring(load(inventory), point)
    assert wiring["cnfp1a2bp0s"] == {"local": "0000:03:00.0", "dut": "tw0b"}
    assert wiring["cnfp1a2bp0r"] == {"local": "0000:03:00.1", "dut": "tw1b"}


@pytest.mark.parametrize("ends, fields, field, words", [
    ([("dut:tw0b", "dut:0000:03:00.0")], {"api": "dpdk", "runtime": "netns"}, "hosts",
     "wire end dut:0000:03:00.0 is a PCI address: bridge on dut joins interfaces"),
    ([("local:tw0a", "local:0000:03:00.0")], {"api": "raw"}, "api",
     "needs api dpdk, not raw"),
    ([("local:tw0a", "local:0000:03:00.0"), ("local:tw1a", "local:0000:03:00.1")],
     {"api": "dpdk"}, "runtime", "runtime netns"),
    ([("local:tw0a", "local:0000:03:00.0")], {"api": "dpdk", "runtime": "netns"}, "hosts",
     "all interfaces or all PCI addresses"),
])
def test_a_pci_wire_end_the_point_cannot_open_is_refused(inventory, ends, fields, field, words):
    _pci_ends(inventory, *ends)
    with pytest.raises(UserError) as e:
        checks.check(scenario(inventory, **fields), (0, 1))
    assert e.value.field == field and words in e.value.why, e.value


def test_macvlan_takes_a_nic_as_the_parent_of_an_nfs_port(inventory):
    checks.check(scenario(inventory, switch="macvlan", nfs=1), (0, 1))


def test_the_tester_on_another_host_takes_the_nic_apis(inventory):
    checks.check(scenario(inventory, api="dpdk", switch="ovs"), (0, 1))   # af_packet PMD
    checks.check(scenario(inventory, api="dpdk", switch="vpp"), (0, 1))   # af_packet plugin
    checks.check(scenario(inventory, api="xdp"), (0, 1))


@pytest.mark.parametrize("fields, words", [
    ({"switch": "snabb", "api": "dpdk"}, "snabb opens a NIC with af_packet, not af_xdp"),
    ({"switch": "vpp", "api": "dpdk"}, "vpp opens a NIC with af_packet, not af_xdp"),
    ({"switch": "bridge", "api": "raw"}, "nothing opens a NIC with DPDK here"),
    ({"switch": "ovs", "api": "dpdk", "size": 4000}, "up to 1924 bytes"),
])
def test_af_xdp_is_refused_where_nothing_takes_it(inventory, fields, words):
    with pytest.raises(UserError) as e:
        checks.check(scenario(inventory, nic_driver="af_xdp", **fields), (0, 1))
    assert e.value.field == "nic_driver" and words in e.value.why, e.value


def test_af_xdp_opens_the_wires_nics(inventory):
    """The switch's DPDK, or the tester's (api = dpdk) beside a bridge."""
    checks.check(scenario(inventory, nic_driver="af_xdp", switch="testpmd", api="raw"), (0, 1))
    checks.check(scenario(inventory, nic_driver="af_xdp", switch="bridge", api="dpdk"), (0, 1))
    checks.check(scenario(inventory, nic_driver="af_xdp", switch="ovs", api="dpdk",
                          size=1924), (0, 1))


def test_nic_vdevs_follow_nic_driver():
    from cnfperf.dataplanes import dpdk_args
    assert dpdk_args.nic(2, "tw0a", "af_xdp", 64) == \
        "net_af_xdp2,iface=tw0a,start_queue=0,queue_count=1"
    assert dpdk_args.nic(2, "tw0a", "af_packet", 64) == "net_af_packet2,iface=tw0a,qpairs=1"


def test_a_switch_opens_a_wire_s_nic_with_its_rx_queues():
    """switch_rxq: af_packet's queue pairs (a fanout group spreads over any), or
    af_xdp's sockets, one per queue the interface has."""
    from cnfperf.dataplanes import dpdk_args
    assert dpdk_args.nic(1, "tw0b", "af_packet", 64, queues=2) == \
        "net_af_packet1,iface=tw0b,qpairs=2"
    assert dpdk_args.nic(1, "tw0b", "af_xdp", 64, queues=2) == \
        "net_af_xdp1,iface=tw0b,start_queue=0,queue_count=2"
    assert dpdk_args.xdp_queue_problem("tw0b", 2, 2) is None
    assert "tw0b has 1 receive queue(s)" in dpdk_args.xdp_queue_problem("tw0b", 1, 2)


def test_the_host_under_test_is_asked_for_its_part_only(monkeypatch):
    """The tester's host needs no switch; the switch's host no tester api. OVS
    is missing on both (whatever this machine has): only the switch's host says so."""
    from cnfperf.dataplanes.ovs import OvsPlane
    monkeypatch.setattr(OvsPlane, "check", classmethod(lambda cls, host: ["not built"]))
    s = validate({"switch": "ovs", "api": "raw", "tester": "single", "dut_host": "dut",
                  "hosts": "x.toml"})
    host = _facts(apis=["xdp"])          # nor has its engine the tester's api
    here = checks.host_problems(host, here="local")(s)
    assert not any(p.startswith("ovs:") for p in here), here
    assert any(p.startswith("api raw:") for p in here), here
    there = checks.host_problems(host, here="dut")(s)
    assert "ovs: not built" in there and not any(p.startswith("api ") for p in there), there
    assert checks.host_problems(host, here="other")(s) == []


def _facts(apis):
    from cnfperf.host.facts import EngineFacts, HostFacts, Hugepages
    return HostFacts(cores=2, usable_cpus=[0, 1], cpu_model="x", kernel="6.1", root=False,
                     iproute2=True, kernel_links={}, hugepages=Hugepages(0, 0, 2048, []),
                     runc=None, busybox_static=None, dpdk=None, testpmd=None,
                     libxdp=None, kvm=False, engine=EngineFacts(version="0.1.0", apis=apis))


# -- the agent's protocol ----------------------------------------------------------------

class _Container:
    """A host's container as the agent's testbed holds one: here processes run
    directly, which is all the protocol needs of it."""
    kind = "container"

    def exec(self, argv, stdout=None, stderr=None, stdin=None, env=None):
        return subprocess.Popen(argv, stdout=stdout, stderr=stderr, stdin=stdin)


class _Bed:
    def container(self, name):
        return _Container()


@pytest.fixture
def session():
    """A real agent (run/agent.py) and its controller's side, over two pipes."""
    to_agent_r, to_agent_w = os.pipe()
    to_ctl_r, to_ctl_w = os.pipe()
    err_r, err_w = os.pipe()
    server = agent_mod.Agent(os.fdopen(to_ctl_w, "wb"))
    server.bed = _Bed()
    thread = threading.Thread(target=server.serve, args=(os.fdopen(to_agent_r, "rb"),),
                              daemon=True)
    thread.start()
    ctl = client.Agent("dut", os.fdopen(to_agent_w, "wb"), os.fdopen(to_ctl_r, "rb"),
                       os.fdopen(err_r, "rb"))
    yield ctl, server
    ctl.close(timeout=5)
    os.close(err_w)
    thread.join(5)


def test_a_request_and_its_answer(session):
    ctl, _ = session
    assert ctl.call("interfaces", names=["lo", "tw404"]) == ["tw404"]


def test_an_unknown_request_fails_naming_the_host(session):
    ctl, _ = session
    with pytest.raises(SystemFailure, match="host dut: unknown request 'frobnicate'"):
        ctl.call("frobnicate")


def test_a_process_there_is_a_process_here(session, tmp_path):
    """Its lines arrive on stdout, its stderr in the file given, the end of its
    stdin and its exit code as a local process's."""
    ctl, _ = session
    with open(tmp_path / "err", "wb") as err:
        proc = ctl.exec("n", ["sh", "-c", "echo ready; echo oops >&2; read x; echo bye"],
                        stderr=err)
    assert proc.stdout.readline() == b"ready\n"
    assert proc.poll() is None
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0
    assert proc.stdout.read() == b"bye\n"
    assert (tmp_path / "err").read_bytes() == b"oops\n"
    with pytest.raises(subprocess.TimeoutExpired):
        ctl.exec("n", ["sleep", "5"]).wait(timeout=0.2)


def test_a_signal_reaches_the_process(session):
    ctl, _ = session
    proc = ctl.exec("n", ["sleep", "30"])
    time.sleep(0.2)
    proc.send_signal(2)
    assert proc.wait(timeout=10) == -2


def test_a_lost_connection_ends_its_processes_and_requests(session, tmp_path):
    ctl, server = session
    with open(tmp_path / "err", "wb") as err:
        proc = ctl.exec("n", ["sleep", "30"], stderr=err)
    server.out.close()     # the channel breaks
    assert proc.wait(timeout=10) == client.EXIT_LOST
    assert b"host dut: the connection was lost" in (tmp_path / "err").read_bytes()
    with pytest.raises(client.Lost, match="host dut"):
        ctl.call("interfaces", names=["lo"])


# -- small parts ---------------------------------------------------------------------------

def test_the_one_command_a_host_runs_is_the_agent():
    host = load_host(Path("/opt/cnf perf"))
    assert ssh.agent_command(host) == "'/opt/cnf perf/.venv/bin/cnfperf' agent"


def load_host(checkout: Path):
    from cnfperf.remote.inventory import Host
    return Host(name="dut", address="192.0.2.1", port=22, user="root", key=None, ssh_agent=True,
                known_hosts=Path("k"), trust_new=False, cnfperf=checkout)


def test_a_wire_frame_heard_elsewhere_means_crossed_wires():
    a, b = End("local", "tw0a"), End("dut", "tw0b")
    assert survey._verdict(a, b, "t1", {"dut:tw0b": {"t1"}}, {}) == ""
    assert "the wires are crossed" in survey._verdict(a, b, "t1", {"dut:tw1b": {"t1"}}, {})
    assert "did not arrive at dut:tw0b" in survey._verdict(a, b, "t1", {}, {})
    assert survey._verdict(a, b, "t1", {}, {"local:tw0a": "tw0a is down"}) == "tw0a is down"


def test_a_chain_across_two_hosts_crosses_three_wires(tmp_path):
    """tester here, the first NF on dut, the second on dut2: each host's switch
    joins the links into its NFs, and a wire carries each port in between."""
    key = tmp_path / "key"
    key.write_text("x\n")
    key.chmod(0o600)
    (tmp_path / "kh").write_text("")
    hosts_text = "".join(f'[[host]]\nname = "{h}"\naddress = "192.0.2.{i}"\nkey = "{key}"\n'
                         f'known_hosts = "{tmp_path / "kh"}"\n\n'
                         for i, h in enumerate(("dut", "dut2"), 1))
    wires = ('[[wire]]\na = "local:tw0a"\nb = "dut:tw0b"\n\n'
             '[[wire]]\na = "dut:tw1a"\nb = "dut2:tw1b"\n\n'
             '[[wire]]\na = "dut2:tw2a"\nb = "local:tw2b"\n')
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(hosts_text + wires)
    checks.inventory_file.cache_clear()
    s = scenario(inventory, nfs=2, nf="l3", nf_host="dut+dut2")
    checks.check(s, (0, 1))
    point = checks.place_point(s, "1a2b", cores=(0, 1))
    assert [(p.name, p.host, at) for p, at in point.crossings()] == [
        ("cnfp1a2bp0s", "local", "dut"), ("cnfp1a2bn000b", "dut", "dut2"),
        ("cnfp1a2bp0r", "local", "dut2")]
    assert point.hosts == ["local", "dut", "dut2"]
    # each NF on its host's first core: the hosts' cores are their own
    assert [nf.cores for nf in point.nfs] == [(0,), (0,)]
    wiring = hosts.wiring(load(inventory), point)
    assert wiring == {"cnfp1a2bp0s": {"local": "tw0a", "dut": "tw0b"},
                      "cnfp1a2bn000b": {"dut": "tw1a", "dut2": "tw1b"},
                      "cnfp1a2bp0r": {"local": "tw2b", "dut2": "tw2a"}}
    # on dut: its switch joins the first link; NF 1's port b is a NIC itself
    dut = replace(point, host="dut")
    assert [p.name for p in dut.ports_joined_here()] == ["cnfp1a2bp0s", "cnfp1a2bn000a"]
    assert [p.name for p in dut.direct_ports()] == ["cnfp1a2bn000b"]
    checks.inventory_file.cache_clear()
    with pytest.raises(UserError, match="0 wire.s. between dut and dut2"):
        inventory.write_text(hosts_text + wires.split("[[wire]]\na = \"dut:")[0])
        checks.check(s, (0, 1))


def test_an_agent_whose_controller_falls_silent_ends():
    """A cut cable ends no session: the agent, hearing nothing (no ping) for its
    silence, undoes its part and closes its side."""
    to_agent_r, to_agent_w = os.pipe()
    to_ctl_r, to_ctl_w = os.pipe()
    server = agent_mod.Agent(os.fdopen(to_ctl_w, "wb"))
    start = time.monotonic()
    thread = threading.Thread(target=server.serve, args=(os.fdopen(to_agent_r, "rb"), 1.0),
                              daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive() and 1.0 <= time.monotonic() - start < 10
    assert os.read(to_ctl_r, 100) == b""      # its side is closed
    os.close(to_agent_w)
    os.close(to_ctl_r)


def test_a_ping_is_answered_while_a_request_runs(session):
    """The controller's pings are answered by the reading thread, a long
    request in the main one notwithstanding."""
    ctl, server = session
    server.op_nap = lambda seconds: time.sleep(seconds)
    slow = threading.Thread(target=ctl.call, args=("nap",), kwargs={"seconds": 2})
    slow.start()
    time.sleep(0.2)
    started = time.monotonic()
    assert ctl.call("ping", timeout=1) is None
    assert time.monotonic() - started < 1
    slow.join(5)


def test_a_starting_agent_is_not_pinged_until_it_speaks(monkeypatch):
    """An agent still importing (an emulated host takes tens of seconds) reads
    no line: no ping is sent, nor counted unanswered, before its first word;
    after it, a silence of LOST_S is a lost connection."""
    monkeypatch.setattr(client, "PING_S", 0.05)
    monkeypatch.setattr(client, "LOST_S", 0.2)
    to_agent_r, to_agent_w = os.pipe()
    to_ctl_r, to_ctl_w = os.pipe()
    err_r, err_w = os.pipe()
    ctl = client.Agent("dut", os.fdopen(to_agent_w, "wb"), os.fdopen(to_ctl_r, "rb"),
                       os.fdopen(err_r, "rb"))
    try:
        time.sleep(1.0)
        assert ctl.lost is None
        assert not select.select([to_agent_r], [], [], 0)[0]     # nothing was sent
        os.write(to_ctl_w, b'{"id": 99, "ok": null}\n')        # its first word
        deadline = time.monotonic() + 5
        while ctl.lost is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ctl.lost == "no answer for 0.2 s"
    finally:
        ctl.close(timeout=1)
        for fd in (to_agent_r, to_ctl_w, err_w):
            os.close(fd)


def test_doctor_says_which_driver_a_pci_end_has_and_which_a_run_binds():
    """A wire's PCI end here: its driver now and DPDK's for a run (no frame
    crosses before a run binds it); a device this host lacks is a problem."""
    present = sorted(os.listdir("/sys/bus/pci/devices"))[0]
    wire = Wire(End("local", pci=present), End("dut", iface="tw0b"))
    found = survey._pci_wire(None, wire)
    assert found.ok and f"local:{present}: driver " in found.note, found
    assert "a run binds it to uio_pci_generic (no IOMMU)" in found.note or \
        "a run binds it to vfio-pci (behind an IOMMU)" in found.note, found
    gone = survey._pci_wire(None, Wire(End("local", pci="0000:7f:1f.7"), End("dut", iface="x")))
    assert gone.problem == "local:0000:7f:1f.7: no such PCI device on its host", gone


def test_af_xdp_queues_are_asked_of_the_switch_s_host(inventory):
    """switch_rxq with af_xdp: each wire's NIC on the host under test must have
    that many Rx queues (one AF_XDP socket each), asked before anything exists;
    the tester's host, and af_packet, are not asked."""
    h = hosts.Hosts(load(inventory))
    asked: list[list[str]] = []

    def queues(has: int):
        return lambda ends: asked.append(ends) or {end: has for end in ends}
    s = scenario(inventory, switch="testpmd", api="dpdk", nic_driver="af_xdp", switch_rxq=2)
    h._xdp_queues("dut", [s], queues(2))
    assert asked == [["tw0b", "tw1b", "tw2b", "tw3b"]]
    # a wire to a host the scenario does not name is not its concern
    h.inventory = replace(h.inventory, wires=(*h.inventory.wires, Wire(
        End("dut", "tw9b"), End("elsewhere", "tw9a"))))
    asked.clear()
    h._xdp_queues("dut", [s], queues(2))
    assert asked == [["tw0b", "tw1b", "tw2b", "tw3b"]]
    with pytest.raises(UserError) as e:
        h._xdp_queues("dut", [s], queues(1))
    assert e.value.field == "switch_rxq" and "dut:tw0b has 1 receive queue(s)" in e.value.why
    asked.clear()
    h._xdp_queues("local", [s], queues(1))
    h._xdp_queues("dut", [scenario(inventory, switch="testpmd", api="dpdk", switch_rxq=2)],
                  queues(1))
    assert asked == []
