"""The tests' other hosts (tests/sshhosts.py): namespaces on this machine with an
sshd each, wired to it and to each other. Tests of cnfperf's remote hosts stand
on them, so what cnfperf needs of a host is checked here over real SSH."""
from __future__ import annotations

import json
import shutil
import socket
import sys
import time
import tomllib
from pathlib import Path

import paramiko
import pytest

import leak
import sshhosts
from cnfperf.host import tools
from harness import REPO

pytestmark = [pytest.mark.e2e,
              pytest.mark.needs("unshare", "nsenter", "sshd", "ssh-keygen", "runc", "busybox")]

FRAMES = 7
# A broadcast Ethernet frame of the local experimental EtherType (IEEE 802)
FRAME = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + b"\x88\xb5" + b"sshhosts".ljust(46, b"\0")
# The same from a Python inside a host: link, count
SEND = """import socket, sys
with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
    s.bind((sys.argv[1], 0))
    for _ in range(int(sys.argv[2])):
        s.send(%r)
""" % FRAME


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with leak.assert_no_leftovers():
        with sshhosts.hosts(tmp_path_factory.mktemp("lab"), ["dut", "tg"],
                            wires=[("local", "dut"), ("dut", "tg")]) as lab:
            yield lab
            assert {name: host.leftovers() for name, host in lab.hosts.items()} == \
                {"dut": set(), "tg": set()}


def ssh(lab, host: str, command: str, timeout: float = 60) -> tuple[int, str, str]:
    client = lab.connect(host)
    try:
        _, out, err = client.exec_command(command, timeout=timeout)
        stdout, stderr = out.read().decode(), err.read().decode()
        return out.channel.recv_exit_status(), stdout, stderr
    finally:
        client.close()


def test_root_logs_in_with_the_key_only(lab):
    assert ssh(lab, "dut", "id -u") == (0, "0\n", "")
    transport = paramiko.Transport((lab.hosts["tg"].address, 22))
    try:
        transport.start_client(timeout=10)
        with pytest.raises(paramiko.BadAuthenticationType) as refused:
            transport.auth_none("root")
        assert refused.value.allowed_types == ["publickey"]
    finally:
        transport.close()


def test_a_host_whose_key_is_not_known_is_refused(lab, tmp_path):
    unknown = tmp_path / "empty_known_hosts"
    unknown.write_text("")
    with pytest.raises(paramiko.SSHException, match="not found in known_hosts"):
        lab.connect("dut", known_hosts=unknown)
    # tg's key under dut's address: someone else answers there
    tg_key = lab.known_hosts.read_text().splitlines()[1].split(maxsplit=1)[1]
    other = tmp_path / "other_known_hosts"
    other.write_text(f"{lab.hosts['dut'].address} {tg_key}\n")
    with pytest.raises(paramiko.BadHostKeyException):
        lab.connect("dut", known_hosts=other)


def test_a_host_sees_its_wire_ends_and_none_of_the_machines_links(lab):
    ends = {name: {e.name for wire in lab.wires for e in wire if e.host == name}
            for name in lab.hosts}
    for name in lab.hosts:
        status, out, _ = ssh(lab, name, "ls /sys/class/net")
        assert status == 0
        assert set(out.split()) == {"lo", sshhosts.CONTROL_INSIDE} | ends[name]
        assert lab.hosts[name].links() == set(out.split())
    local_ends = {e.name for wire in lab.wires for e in wire if e.host == sshhosts.LOCAL}
    assert local_ends <= {p.name for p in Path("/sys/class/net").iterdir()}


def test_the_inventory_names_the_hosts_and_wires(lab):
    inventory = tomllib.loads(lab.inventory.read_text())
    assert [h["name"] for h in inventory["host"]] == ["dut", "tg"]
    dut = inventory["host"][0]
    assert dut == {"name": "dut", "address": lab.hosts["dut"].address, "user": "root",
                   "key": str(lab.key), "known_hosts": str(lab.known_hosts),
                   "cnfperf": str(REPO)}
    assert lab.key.stat().st_mode & 0o777 == 0o600
    assert inventory["wire"] == [{"a": str(a), "b": str(b)} for a, b in lab.wires]
    assert [(str(a), str(b)) for a, b in lab.wires] == \
        [(f"local:{lab.wires[0][0].name}", f"dut:{lab.wires[0][1].name}"),
         (f"dut:{lab.wires[1][0].name}", f"tg:{lab.wires[1][1].name}")]


@pytest.mark.parametrize("wire", [0, 1], ids=["local-dut", "dut-tg"])
def test_frames_sent_on_a_wire_arrive_at_its_other_end(lab, wire):
    a, b = lab.wires[wire]
    before = rx_packets(lab, b)
    send(lab, a, FRAMES)
    # veth counts a frame at its peer as it sends it; the hosts send nothing
    # of their own there (no addresses, no IPv6)
    assert rx_packets(lab, b) - before == FRAMES


def send(lab, end: sshhosts.End, count: int) -> None:
    if end.host == sshhosts.LOCAL:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
            s.bind((end.name, 0))
            for _ in range(count):
                s.send(FRAME)
    else:
        lab.hosts[end.host].run([sys.executable, "-c", SEND, end.name, str(count)], check=True)


def rx_packets(lab, end: sshhosts.End) -> int:
    path = f"/sys/class/net/{end.name}/statistics/rx_packets"
    if end.host == sshhosts.LOCAL:
        return int(Path(path).read_text())
    status, out, err = ssh(lab, end.host, f"cat {path}")
    assert status == 0, err
    return int(out)


def test_namespaces_and_links_are_made_inside(lab):
    status, out, err = ssh(lab, "dut", "ip netns add sshtest && ip netns list && "
                                       "ip netns del sshtest && "
                                       "ip link add sshtv0 type veth peer name sshtv1 && "
                                       "cat /sys/class/net/sshtv1/statistics/rx_packets && "
                                       "ip link del sshtv0")
    assert (status, err) == (0, "")
    assert [line.split()[0] for line in out.splitlines()] == ["sshtest", "0"]
    assert "sshtest" not in {p.name for p in Path("/run/netns").glob("*")}


def test_runc_runs_a_container_inside(lab):
    dut = lab.hosts["dut"]
    rootfs = dut.path("/tmp/bundle/rootfs/bin")
    rootfs.mkdir(parents=True)
    shutil.copy(tools.find("busybox"), rootfs / "busybox")
    status, out, err = ssh(lab, "dut", "runc --version && runc spec --bundle /tmp/bundle")
    assert status == 0, err
    config = dut.path("/tmp/bundle/config.json")
    spec = json.loads(config.read_text())
    spec["process"].update(terminal=False, args=["/bin/busybox", "echo", "inside"])
    config.write_text(json.dumps(spec))
    # its cgroups are made in the machine's hierarchy, which the host shares
    status, out, err = ssh(lab, "dut", "runc --root /run/sshtest-runc run --bundle /tmp/bundle "
                                       "sshtest && runc --root /run/sshtest-runc list -q")
    assert (status, out) == (0, "inside\n"), err


def test_cnfperf_doctor_runs_inside(lab):
    status, out, err = ssh(lab, "dut", f"{REPO}/.venv/bin/cnfperf doctor", timeout=120)
    assert status == 0, err
    lines = {line.split(maxsplit=1)[0]: line for line in out.splitlines()[1:] if line.strip()}
    assert lines["root"].split() == ["root", "yes"]
    assert "/sys/fs/cgroup/cpuset" in out, "the host does not see the machine's cgroups"


def test_leftovers_sees_what_cnfperf_would_leave(lab):
    tg = lab.hosts["tg"]
    engine = tg.path("/tmp/fake/cnfperf-engine")   # a process by the engine's name
    engine.parent.mkdir(parents=True)
    shutil.copy(shutil.which("sleep"), engine)
    try:
        status, _, err = ssh(lab, "tg", "ip netns add cnfpt-ns && "
                                        "ip link add cnfpt0 type veth peer name cnfpt1 && "
                                        "mkdir -p /run/cnfperf && touch /run/cnfperf/lock "
                                        "/run/cnfperf/journal-t && "
                                        "(/tmp/fake/cnfperf-engine 60 >/dev/null 2>&1 &)")
        assert status == 0, err
        left = wait_for(tg.leftovers, lambda found: any(f.startswith("process ") for f in found))
        assert {f for f in left if not f.startswith("process ")} == {
            "netns cnfpt-ns", "link cnfpt0", "link cnfpt1",
            f"file {tg.path('/run/cnfperf/journal-t')}"}
        assert [f.split(":")[-1] for f in left if f.startswith("process ")] == ["cnfperf-engine"]
    finally:
        pids = " ".join(f.split()[1].split(":")[0] for f in tg.leftovers()
                        if f.startswith("process "))
        ssh(lab, "tg", "ip netns del cnfpt-ns; ip link del cnfpt0; rm -rf /run/cnfperf /tmp/fake; "
                       f"kill {pids}")
    assert wait_for(tg.leftovers, lambda found: not found) == set()


def wait_for(probe, done, timeout: float = 5.0):
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if done(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_everything_goes_when_the_test_fails(tmp_path):
    with leak.assert_no_leftovers():
        with pytest.raises(RuntimeError, match="the test failed"):
            with sshhosts.hosts(tmp_path, ["h1"], wires=[("local", "h1"), ("h1", "h1")]) as lab:
                first = lab.hosts["h1"].pid
                assert ssh(lab, "h1", "echo up")[1] == "up\n"
                raise RuntimeError("the test failed")
        assert not Path(f"/proc/{first}").exists()
