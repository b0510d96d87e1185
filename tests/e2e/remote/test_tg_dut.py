"""A tester's host and a host under test, driven over SSH (tests/sshhosts.py:
the host under test is a real sshd in namespaces of its own on this machine,
cabled to it by veth wires): TG–DUT through a kernel bridge and through
OVS-DPDK, testpmd, Click, Snabb and VPP, an l3 chain on the host under test,
counters on both hosts, the point's hosts in the store, and nothing left behind
on either host."""
from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

import harness
import leak
import sshhosts
from cnfperf.dataplanes import vpp_install

pytestmark = [pytest.mark.e2e, pytest.mark.needs("sshd", "ssh-keygen", "unshare", "nsenter")]

RATE = 5000
DURATION = 1.0
WIRES = [("local", "dut"), ("local", "dut")]
LIVE = 3.0   # s: a run scraped live has two samples or more (a second apart)


@pytest.fixture(scope="module")
def shared_lab(tmp_path_factory):
    """One host under test for the module: the tests only use it, and each
    leaves it as it found it (lab checks that after each)."""
    with leak.assert_no_leftovers():
        with sshhosts.hosts(tmp_path_factory.mktemp("lab"), ["dut"], wires=WIRES) as lab:
            yield lab
            assert lab.hosts["dut"].leftovers() == set()


@pytest.fixture
def lab(shared_lab, no_leftovers):
    """The module's lab; nothing left on either host after the test."""
    yield shared_lab
    assert shared_lab.hosts["dut"].leftovers() == set()


def point_args(lab, *flags: str) -> list[str]:
    return ["run", "--hosts", str(lab.inventory), "--dut-host", "dut", "--tester", "single",
            "--rate", str(RATE), "--duration", str(DURATION), "--warmup", "0.5", *flags, "--json"]


def run_point(cli, lab, *flags: str, timeout: float = 240) -> dict:
    done = cli(*point_args(lab, *flags), timeout=timeout)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def run_scraped(results: Path, lab, *flags: str, timeout: float = 240
                ) -> tuple[dict, dict[str, float]]:
    """run_point's run, its metrics served (--metrics-port) and scraped while
    it goes: its outcome, and the highest value each series showed."""
    port = harness.free_port()
    proc = subprocess.Popen(harness.cnfperf_argv(*point_args(lab, *flags), "--metrics-port",
                                                 f"127.0.0.1:{port}"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=harness.REPO, env=harness.cnfperf_env(results),
                            stdin=subprocess.DEVNULL)
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(proc.communicate()))
    reader.start()
    seen: dict[str, float] = {}
    stop = time.monotonic() + timeout
    while reader.is_alive() and time.monotonic() < stop:
        for series, value in harness.scrape(port).items():
            seen[series] = max(value, seen.get(series, value))
        time.sleep(0.1)
    if reader.is_alive():   # stopped as a user would: its teardown runs on both hosts
        proc.send_signal(signal.SIGINT)
        reader.join(60)
        if reader.is_alive():
            proc.kill()
    reader.join()
    out, err = said
    assert proc.returncode == 0, err
    return json.loads(out), seen


def stored_point(outcome: dict) -> dict:
    """The run's one point as stored (`run --json` prints the run as
    `results show --json` does)."""
    run = outcome["run"]
    assert run["status"] == "done"
    [point] = run["points"]
    return point


def assert_zero_loss(point: dict, paced: bool = True, duration: float = DURATION) -> None:
    """Every frame sent received (`paced`: see harness.assert_sent)."""
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * duration, paced)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
    assert pair["latency_kind"] == "one_way"     # one tester, one clock: the tester's host's


def assert_hosts_stored(point: dict, lab) -> None:
    assert (point["tester_host"], point["dut_host"]) == ("local", "dut")
    dut = point["hosts"]["dut"]
    assert dut["address"] == lab.hosts["dut"].address and dut["user"] == "root"
    assert dut["kernel"] and dut["cores"] >= 1 and dut["clock"]


def assert_counters_match(point: dict, lab, dut_ports: dict[str, str]) -> None:
    """Each wire's two ends saw the same frames: the tester's NIC here and the
    switch's port on the host under test (`dut_ports`: wire end -> its port's
    counter name there)."""
    counters = point["counters"]
    (tx_nic, tx_far), (rx_nic, rx_far) = lab.wires
    sent = counters[f"local:{tx_nic.name}"]["tx_packets"]
    got = counters[f"local:{rx_nic.name}"]["rx_packets"]
    assert sent >= RATE * DURATION * 0.9 and got == sent, counters
    assert counters[dut_ports[tx_far.name]]["rx_packets"] == sent, counters
    assert counters[dut_ports[rx_far.name]]["tx_packets"] == sent, counters


def test_bridge_on_the_host_under_test(engine, cli, lab):
    point = stored_point(run_point(cli, lab, "--switch", "bridge", "--api", "raw"))
    assert_zero_loss(point)
    assert_hosts_stored(point, lab)
    # the bridge's ports there are the wires' ends, named by host
    assert_counters_match(point, lab, {end.name: f"dut:{end.name}" for _, end in lab.wires})


@pytest.mark.parametrize("switch, driver", [
    pytest.param("ovs", "af_packet", marks=pytest.mark.needs("ovs-vswitchd-dpdk")),
    pytest.param("ovs", "af_xdp", marks=pytest.mark.needs("ovs-vswitchd-dpdk")),
    pytest.param("testpmd", "af_packet", marks=pytest.mark.needs("dpdk-testpmd")),
    pytest.param("testpmd", "af_xdp", marks=pytest.mark.needs("dpdk-testpmd")),
    pytest.param("click", "af_packet", marks=pytest.mark.needs("click-dpdk")),
    pytest.param("snabb", "af_packet", marks=pytest.mark.needs("snabb")),
    pytest.param("vpp", "af_packet", marks=pytest.mark.needs("vpp")),
])
def test_a_dpdk_switch_on_the_host_under_test(engine, cli, lab, switch, driver):
    """The tester's NICs through DPDK's af_packet or af_xdp PMD (nic_driver);
    the switch's the same (OVS-DPDK, testpmd, Click), Snabb's raw socket app or
    VPP's af_packet plugin."""
    if switch == "vpp" and (lacks := vpp_install.vpp_plugin_problems(vpp_install.AF_PACKET)):
        harness.missing(lacks[0])
    point = stored_point(run_point(cli, lab, "--switch", switch, "--api", "dpdk",
                                             "--nic-driver", driver))
    assert point["nic_driver"] == driver
    assert_zero_loss(point)
    assert_hosts_stored(point, lab)
    sender, receiver = _ends(point)
    (_, tx_far), (_, rx_far) = lab.wires
    assert_counters_match(point, lab, {tx_far.name: sender, rx_far.name: receiver})


@pytest.mark.needs("ovs-vswitchd-dpdk")
def test_ovs_on_the_host_under_test_by_port_rules_and_nic_descriptors(engine, cli, lab):
    """OVS there forwards wire to wire by its own rules, its NIC ports with the
    descriptors asked (Rx and Tx apart: no vhost-user ring), as its agent read
    them back from OVS and the point stored them here."""
    point = stored_point(run_point(cli, lab, "--switch", "ovs", "--api", "dpdk",
                                             "--forward", "port", "--switch-rxd", "256",
                                             "--switch-txd", "512"))
    assert_zero_loss(point)
    applied = point["switch_facts"]["applied"]
    assert applied["forward"] == "port"
    assert not any("NORMAL" in rule for rule in applied["rules"]), applied["rules"]
    assert sum("output:" in rule for rule in applied["rules"]) == 2
    for port in applied["ports"].values():
        assert port["type"] == "dpdk" and "ring" not in port, port
        assert (port["configured_rxq_descriptors"], port["configured_txq_descriptors"]) == \
            (256, 512), port


def _ends(point: dict) -> tuple[str, str]:
    """The tester's two ends' names: OVS names its ports after the ports they face."""
    pair = point["placement"][0]
    return pair["sender"]["name"], pair["receiver"]["name"]


def test_l3_chain_on_the_host_under_test(engine, cli, lab):
    """Two l3 NFs in containers on the host under test, between the wires."""
    point = stored_point(run_point(cli, lab, "--switch", "bridge", "--api", "raw",
                                             "--nfs", "2", "--nf", "l3"))
    assert_zero_loss(point)
    assert point["shape"] == "chain" and len(point["nf_results"]) == 2
    for nf in point["nf_results"]:
        assert nf["ports"][0]["rx_packets"] >= RATE * DURATION * 0.9, nf
    # their CPU time is read on their host, by its agent, in this host's window
    cpu = {row["node"]: row for row in point["cpu_usage"]}
    assert {nf["name"] for nf in point["nf_results"]} <= set(cpu), cpu
    assert all(cpu[nf["name"]]["user_s"] > 0 for nf in point["nf_results"]), cpu
    assert all(cpu[nf["name"]]["packets"] >= RATE * DURATION * 0.9
               for nf in point["nf_results"]), cpu
    assert cpu[_ends(point)[0]]["user_s"] > 0, cpu     # the tester's, here


@pytest.mark.needs("ovs-vswitchd-dpdk", "stress-ng")
def test_ovs_in_a_container_under_a_quota_beside_a_neighbour_on_the_host_under_test(
        engine, results, lab):
    """Paper 000's testbed on two hosts: OVS-DPDK in a container of its own on
    the host under test, held to half a core, two Rx queues on each wire's NIC,
    a CPU stressor on its core there; its CPU time and the neighbour's are
    read on that host, in this one's window, and served live here too."""
    outcome, scraped = run_scraped(results, lab, "--switch", "ovs", "--api", "dpdk",
                                   "--switch-in", "container", "--switch-quota", "50",
                                   "--switch-rxq", "2", "--noise", "cpu", "--noise-on", "same",
                                   "--duration", str(LIVE))
    point = stored_point(outcome)
    assert_zero_loss(point, duration=LIVE)
    assert (point["switch_in"], point["switch_quota"], point["noise"]) == ("container", 50, "cpu")
    # both queues of each NIC port polled (OVS's pmd-rxq-show, read there)
    queues = {(q["port"], q["queue"]) for q in point["queues"]}
    assert queues == {(port, n) for port in _ends(point) for n in (0, 1)}, point["queues"]
    facts = point["noise_facts"]
    assert facts["kind"] == "cpu" and facts["bogo_ops"]["cpu"] > 0, facts
    # its output came back with it, into the trial's directory here
    out = harness.REPO / outcome["run"]["run_dir"] / "point0" / facts["output"]
    assert "stress-ng" in out.read_text(), out
    cpu = {row["kind"]: row for row in point["cpu_usage"]}
    switch, noise = cpu["switch"], cpu["noise"]
    assert switch["quota"] == 50 and switch["packets"] >= RATE * DURATION * 0.9, switch
    used = switch["user_s"] + switch["system_s"]
    # the quota holds: half of each 100 ms period, one period's slack
    assert 0 < used <= 0.5 * switch["wall_s"] + 0.1, switch
    assert noise["user_s"] > 0 and noise["cores"] == switch["cores"], (noise, switch)
    # Prometheus' view while it ran: the switch's CPU, read on the host under
    # test by its agent, within its quota (a sample's span is about a second)
    served = {re.search(r'node="([^"]+)"', k)[1]: v for k, v in scraped.items()
              if k.startswith("cnfperf_node_cpu_cores{")}
    assert 0 < served[switch["node"]] <= 0.5 + 0.15, served
    assert served[noise["node"]] > 0, served


@pytest.mark.parametrize("flags, dropped_at", [
    (("--limit", "2000"), "tx"),
    (("--shaper", "htb", "--shaper-rate", "2000"), "tx"),
    (("--policer", "nft", "--policer-rate", "2000"), "rx"),
], ids=["limit", "htb", "nft"])
def test_the_bridge_shapes_and_polices_at_its_port_on_a_wire(engine, cli, lab, flags, dropped_at):
    """The bridge's shaper (limit, shaper) sits on its port towards the
    receiver's wire, its policer on the port from the sender's: what each
    drops counts there."""
    point = stored_point(run_point(cli, lab, "--switch", "bridge", "--api", "raw", *flags))
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    # its rate over the window, give or take a bucket (32 frames at most here)
    assert abs(pair["received"] - 2000 * point["duration"]) <= 2000 * point["duration"] * 0.1, \
        pair
    (_, tx_far), (_, rx_far) = lab.wires
    port = f"dut:{(rx_far if dropped_at == 'tx' else tx_far).name}"
    assert point["counters"][port][f"{dropped_at}_dropped"] > 0, point["counters"]


def one_wire(lab, tmp_path: Path) -> Path:
    """The lab's inventory with its first wire only."""
    text = lab.inventory.read_text()
    head, _, wires = text.partition("[[wire]]")
    path = tmp_path / "one-wire.toml"
    path.write_text(head + "[[wire]]" + wires.split("[[wire]]")[0])
    return path


@pytest.mark.parametrize("switch, api", [
    ("bridge", "raw"),
    pytest.param("ovs", "dpdk", marks=pytest.mark.needs("ovs-vswitchd-dpdk")),
])
def test_two_pairs_share_one_wire(engine, cli, lab, tmp_path, switch, api):
    """share_wires: two pairs' four ports over one cable, each a macvlan child
    of its NIC on both hosts, told apart by MAC; every frame arrives."""
    inventory = one_wire(lab, tmp_path)
    done = cli("run", "--hosts", str(inventory), "--dut-host", "dut", "--tester", "single",
               "--rate", str(RATE), "--duration", str(DURATION), "--warmup", "0.5",
               "--switch", switch, "--api", api, "--pairs", "2", "--share-wires", "--json")
    assert done.returncode == 0, done.stderr
    point = stored_point(json.loads(done.stdout))
    assert point["share_wires"]
    for pair in point["per_pair"][:2]:
        harness.assert_sent(point, pair, RATE * DURATION)
        assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
    ports = [end["name"] for pair in point["placement"] for end in (pair["sender"], pair["receiver"])]
    counters = point["counters"]
    assert all(f"local:{port}w" in counters for port in ports), counters
    # without it, the point is refused before anything exists: it needs four wires
    refused = cli("run", "--hosts", str(inventory), "--dut-host", "dut", "--switch", switch,
                  "--api", api, "--pairs", "2", "--duration", "0.1")
    assert refused.returncode == 2 and "or share_wires = true" in refused.stderr, refused.stderr


def test_macvlan_children_of_the_wires_nics(engine, cli, lab):
    """An NF's two ports on the host under test are macvlan children of the two
    wires' NICs there (a container's macvlan network on a host's NIC)."""
    point = stored_point(run_point(cli, lab, "--switch", "macvlan", "--api", "raw",
                                             "--nfs", "1"))
    assert_zero_loss(point)
    [nf] = point["nf_results"]
    assert [p["rx_packets"] for p in nf["ports"]][0] >= RATE * DURATION * 0.9, nf
    # each wire's NIC there, the parent, carried the frames its child did
    (tx_nic, tx_far), (rx_nic, rx_far) = lab.wires
    counters = point["counters"]
    sent = counters[f"local:{tx_nic.name}"]["tx_packets"]
    assert counters[f"dut:{tx_far.name}"]["rx_packets"] == sent, counters
    assert counters[f"dut:{rx_far.name}"]["tx_packets"] == sent, counters


def test_a_cut_connection_leaves_nothing_on_either_host(engine, results, lab):
    """The SSH session dies mid-trial: the point fails and says so, the host
    under test undoes its part by itself, and this host its own."""
    proc = start_long_run(lab, results)
    dut = lab.hosts["dut"]
    with interrupted_if_left(proc):
        # the session's own sshd process, not the listener: the connection drops
        dut.run(["pkill", "-KILL", "-f", "^sshd: root"])
        out, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, err
    assert "connection was lost" in err, err
    assert "nothing was left behind" in err, err
    nothing_left_on(dut)


def start_long_run(lab, results: Path) -> subprocess.Popen:
    """A point that measures for a while, an NF on the host under test; back
    once the NF runs there."""
    argv = harness.cnfperf_argv("run", "--hosts", str(lab.inventory), "--dut-host", "dut",
                                "--switch", "bridge", "--api", "raw", "--tester", "single",
                                "--rate", str(RATE), "--duration", "60", "--nfs", "1")
    proc = subprocess.Popen(argv, cwd=harness.REPO, env=harness.cnfperf_env(results),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    # the NF's engine, not the `cnfperf-engine --version` the agent's hello runs:
    # a connection cut during the hello fails before anything exists
    while not lab.hosts["dut"].run(["pgrep", "-f", "cnfperf-engine[-a-z]* nf "]).stdout:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.5)
    time.sleep(1)
    return proc


@contextlib.contextmanager
def interrupted_if_left(proc: subprocess.Popen):
    """A failing test does not leave its run going: SIGINT, and its teardown."""
    try:
        yield
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=120)


def nothing_left_on(host, within: float = 60) -> None:
    deadline = time.monotonic() + within
    while host.leftovers() and time.monotonic() < deadline:
        time.sleep(1)
    assert host.leftovers() == set()


def test_a_cable_cut_mid_trial_leaves_nothing_on_either_host(engine, results, lab):
    """The control network goes silent (no FIN, no RST: a cut cable): the
    controller's pings go unanswered, the agent hears none; it undoes its
    part, the point fails and says why, and once the host is back the
    controller checks that it is clean."""
    proc = start_long_run(lab, results)
    dut = lab.hosts["dut"]
    with interrupted_if_left(proc):
        try:
            dut.run(["ip", "link", "set", "ctl", "down"], check=True)
            nothing_left_on(dut, within=40)      # the agent, alone, undid its part
        finally:
            dut.run(["ip", "link", "set", "ctl", "up"])
        out, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, err
    assert "no answer for" in err, err
    assert "nothing was left behind" in err, err
    nothing_left_on(dut)


def test_a_killed_controller_is_cleaned_up_with_cleanup_hosts(engine, results, lab, cli):
    """SIGKILL to cnfperf mid-trial: its session ends with it, so the host
    under test undoes its part by itself; `cnfperf cleanup --hosts` removes
    what this host kept, and finds the other clean."""
    proc = start_long_run(lab, results)
    proc.kill()
    proc.communicate(timeout=30)
    nothing_left_on(lab.hosts["dut"])
    done = cli("cleanup", "--hosts", str(lab.inventory), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^removed netns cnfp\w+p0s$", done.stdout, re.M), done.stdout
    assert "on host dut" not in done.stdout    # nothing was left there


def test_doctor_checks_hosts_and_wires(cli, lab):
    done = cli("doctor", "--hosts", str(lab.inventory), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    hosts = done.stdout.split("\nhosts\n", 1)[1]
    assert re.search(r"^  dut +root@\S+ +ok ", hosts, re.M), hosts
    for a, b in lab.wires:
        assert re.search(rf"^  local:{a.name} - dut:{b.name} +ok$", hosts, re.M), hosts


def test_doctor_finds_crossed_wires(cli, lab, tmp_path):
    """The inventory says the wires the other way round: each frame arrives
    at the other wire's end, and doctor says the wires are crossed."""
    (a0, b0), (a1, b1) = lab.wires
    text = lab.inventory.read_text()
    crossed = text.replace(f'b = "dut:{b0.name}"', 'b = "dut:SWAP"') \
        .replace(f'b = "dut:{b1.name}"', f'b = "dut:{b0.name}"') \
        .replace('b = "dut:SWAP"', f'b = "dut:{b1.name}"')
    assert crossed != text
    inventory = tmp_path / "crossed.toml"
    inventory.write_text(crossed)
    done = cli("doctor", "--hosts", str(inventory), timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    wires = done.stdout.split("\nwires\n", 1)[1]
    assert f"arrived at dut:{b0.name}, not at dut:{b1.name}: the wires are crossed" in wires


def test_bad_inventories_exit_2_before_anything_exists(cli, lab, tmp_path):
    """What is found by trying the host: a port nothing answers on, a wire's end
    it lacks (an unknown host, one named twice: tests/unit/test_inventory.py),
    a wire's NIC with fewer Rx queues than af_xdp's switch_rxq opens there."""
    text = lab.inventory.read_text()
    (a0, b0), _ = lab.wires

    def refused(inventory_text: str, *flags: str) -> str:
        path = tmp_path / "bad.toml"
        path.write_text(inventory_text)
        done = cli("run", "--hosts", str(path),
                   "--switch", "bridge", "--api", "raw", "--tester", "single",
                   "--duration", "1", *flags, timeout=120)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("cnfperf: error: "), done.stderr
        return lines[0]

    unreachable = text.replace("port = 22\n", "") \
        .replace('address = "', 'port = 2222\naddress = "', 1)
    assert "2222" in refused(unreachable, "--dut-host", "dut")
    nowhere = text.replace(f'"dut:{b0.name}"', '"dut:tw404"')
    assert "tw404" in refused(nowhere, "--dut-host", "dut")
    # a veth wire has one queue: af_xdp's second socket would have none
    assert f"switch_rxq: dut:{b0.name} has 1 receive queue(s)" in refused(
        text, "--dut-host", "dut", "--switch", "testpmd", "--api", "dpdk",
        "--nic-driver", "af_xdp", "--switch-rxq", "2")


def test_an_l3_chain_across_two_hosts(engine, cli, tmp_path, no_leftovers):
    """004's Fig. 7: a router on each of two hosts. The tester here; each host's
    bridge joins the links into its router; three wires: here to dut, dut to
    dut2, dut2 back here."""
    wires = [("local", "dut"), ("dut", "dut2"), ("dut2", "local")]
    with sshhosts.hosts(tmp_path / "lab", ["dut", "dut2"], wires=wires) as lab:
        done = cli("run", "--hosts", str(lab.inventory), "--dut-host", "dut",
                   "--nf-host", "dut+dut2", "--nfs", "2", "--nf", "l3", "--switch", "bridge",
                   "--api", "raw", "--tester", "single", "--rate", str(RATE),
                   "--duration", str(DURATION), "--warmup", "0.5", "--json", timeout=300)
        assert done.returncode == 0, done.stderr
        point = stored_point(json.loads(done.stdout))
        assert_zero_loss(point)
        assert set(point["hosts"]) == {"dut", "dut2"}
        assert [nf["ports"][0]["rx_packets"] >= RATE * DURATION * 0.9
                for nf in point["nf_results"]] == [True, True]
        # the middle wire: NF 1's port b, a NIC on dut, into dut2's bridge
        (_, _), (mid_a, mid_b), (_, _) = lab.wires
        assert point["counters"][f"dut2:{mid_b.name}"]["rx_packets"] >= RATE * DURATION * 0.9
        for name in ("dut", "dut2"):
            assert lab.hosts[name].leftovers() == set()
