"""The tester's two ends on two hosts (tester_host = local+dut; tests/sshhosts.py:
dut is a real sshd in namespaces of its own, one veth wire to this machine):
the sender here crosses the wire to the bridge on dut, the receiver there is
the bridge's neighbour. dut's CLOCK_MONOTONIC is a day ahead of this one's (a
time namespace), as another machine's would differ: the receiver learns its
sender's clock from the first frame, zero loss at a low rate, no one-way
latency (two clocks), and the summary says why; in latency mode the client's
round trip, on its own clock."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

import harness
import sshhosts

pytestmark = [pytest.mark.e2e, pytest.mark.needs("sshd", "ssh-keygen", "unshare", "nsenter")]

RATE = 5000
DURATION = 1.0
AHEAD_S = 86400


@pytest.fixture
def lab(tmp_path: Path, no_leftovers):
    with sshhosts.hosts(tmp_path / "lab", ["dut"], wires=[("local", "dut")],
                        ahead={"dut": AHEAD_S}) as lab:
        yield lab
        assert lab.hosts["dut"].leftovers() == set()


def clock_of(lab, host: str) -> float:
    """CLOCK_MONOTONIC as a process started over SSH on the host reads it."""
    client = lab.connect(host)
    try:
        _, out, _ = client.exec_command("python3 -c 'import time; print(time.monotonic())'")
        return float(out.read().decode())
    finally:
        client.close()


def run_point(cli, cli_json, lab, *flags: str) -> tuple[dict, str]:
    """(the stored point, the run's summary as printed)."""
    done = cli("run", "--hosts", str(lab.inventory), "--tester-host", "local+dut",
               "--dut-host", "dut", "--switch", "bridge", "--api", "raw", "--tester", "auto",
               "--duration", str(DURATION), "--warmup", "0.5", *flags, timeout=240)
    assert done.returncode == 0, done.stderr
    run_id = re.match(r"run (\S+)", done.stdout).group(1)
    run = cli_json("results", "show", run_id)
    assert run["status"] == "done"
    [point] = run["points"]
    return point, done.stdout


def test_throughput_with_the_sender_here_and_the_receiver_on_dut(engine, cli, cli_json, lab):
    assert clock_of(lab, "dut") - time.monotonic() > AHEAD_S - 60    # two clocks indeed
    point, summary = run_point(cli, cli_json, lab, "--rate", str(RATE))
    assert point["tester"] == "split"       # auto: one engine cannot span two hosts
    sender, receiver = point["placement"][0]["sender"], point["placement"][0]["receiver"]
    assert (sender["host"], receiver["host"]) == ("local", "dut")
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
    # the receiver took every frame (none bad: its sender's clock was learnt)...
    recv = next(e for e in point["endpoints"] if e["role"] == "recv")
    assert recv["summary"]["bad"] == 0 and recv["summary"]["rx_packets"] == pair["sent"], recv
    # ...and kept no latency: it would span two clocks
    assert pair["latency_kind"] is None and point["lat_p50_ns"] is None, pair
    assert "latency" not in recv["summary"], recv["summary"]
    assert "no one-way latency (point 1): the tester's ends are on two hosts' clocks " \
           "(tester_host local+dut)" in summary, summary
    # the one wire: the sender's NIC here, the bridge's port on dut
    [(near, far)] = lab.wires
    counters = point["counters"]
    assert counters[f"local:{near.name}"]["tx_packets"] >= pair["sent"], counters
    assert counters[f"dut:{far.name}"]["rx_packets"] == counters[f"local:{near.name}"]["tx_packets"]
    assert point["hosts"]["dut"]["clock"], point["hosts"]


def test_latency_across_the_two_hosts_is_the_round_trip(engine, cli, cli_json, lab):
    point, summary = run_point(cli, cli_json, lab, "--mode", "latency", "--rate", "1000")
    client, server = point["placement"][0]["sender"], point["placement"][0]["receiver"]
    assert (client["role"], client["host"], server["role"], server["host"]) == \
        ("client", "local", "server", "dut")
    [pair] = point["per_pair"]
    assert pair["sent"] >= 900 and pair["lost"] == 0, pair
    assert pair["latency_kind"] == "rtt" and point["lat_p50_ns"] > 0, pair
    assert "no one-way latency" not in summary, summary
