"""A DPDK switch in a container of its own (switch_in = container): OVS-DPDK,
testpmd and the switches built from source (VPP, Snabb, Click: each from an
image of its own) forward between two engines as they do on the host, zero loss at a
low rate, their counters agreeing with the engines'; the switch's processes are
in its cgroup and netns, on its cpuset, held to its quota; the queue map says
which core polls which queue; nothing is left (cgroups included)."""
from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

import pytest

import harness
import leak
from cnfperf.dataplanes import DATAPLANES, ovsdb, testpmd_app, vpp_app
from cnfperf.dataplanes.procs import find
from cnfperf.host.journal import Journal
from cnfperf.plan import place
from cnfperf.runtimes import Quota, RuncRuntime
from cnfperf.scenario import Scenario
from cnfperf.run.testbed import Namespaces, SwitchHome
from dpdk_leak import no_leftovers
from harness import ENGINE, engine
from test_dpdk_runs import SHORT, run

pytestmark = [pytest.mark.e2e, pytest.mark.needs("dpdk-testpmd", "runc")]

RATE = ["--rate", "10k"]
CONTAINER = ["--api", "dpdk", "--switch-in", "container"]
COMMS = {"testpmd": (testpmd_app.BINARY,), "ovs": ovsdb.COMMS, "vpp": vpp_app.COMMS}
OVS = pytest.mark.needs("ovsdb-server", "ovs-vsctl")
SWITCHES = [pytest.param("ovs", marks=OVS), "testpmd",
            pytest.param("vpp", marks=pytest.mark.needs("vpp")),
            pytest.param("snabb", marks=pytest.mark.needs("snabb")),
            pytest.param("click", marks=pytest.mark.needs("click-dpdk")),
            pytest.param("bess", marks=pytest.mark.needs("bess"))]


def _zero_loss_and_counted(point: dict) -> None:
    assert point["status"] == "done", point["error"]
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, point["rate"] * point["duration"])
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
    [placed] = point["placement"]
    s, r = (point["counters"][placed[end]["name"]] for end in ("sender", "receiver"))
    # warm-up frames cross the switch too
    assert s["rx_packets"] >= pair["sent"] and r["tx_packets"] == s["rx_packets"]
    assert s["rx_dropped"] == r["tx_dropped"] == 0


@pytest.mark.parametrize("switch", SWITCHES)
def test_a_switch_in_its_container_forwards_every_frame(results, switch):
    out, left = run(results, "--switch", switch, *CONTAINER, "--switch-quota", "90", *RATE,
                    *SHORT)
    assert out["outcome"]["status"] == "done", out["outcome"]
    assert out["outcome"]["left"] == [] and left == {}, (out["outcome"]["left"], left)
    [point] = out["run"]["points"]
    assert (point["switch_in"], point["switch_quota"]) == ("container", 90)
    _zero_loss_and_counted(point)
    ports = {port for pair in point["placement"] for port in
             (pair["sender"]["name"], pair["receiver"]["name"])}
    assert {q["port"] for q in point["queues"]} == ports
    assert all(q["queue"] == 0 and q["core"] in os.sched_getaffinity(0) for q in point["queues"])


def test_testpmd_with_two_cores_forwards_on_both(results):
    """One pair, two forwarding lcores: each direction's stream on a core of its
    own (a single tester leaves the host's two cores one poller to spare)."""
    out, left = run(results, "--switch", "testpmd", *CONTAINER, "--switch-cores", "2",
                    "--tester", "single", *RATE, *SHORT)
    assert out["outcome"]["status"] == "done" and left == {}, (out["outcome"], left)
    [point] = out["run"]["points"]
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, point["rate"] * point["duration"])
    assert pair["lost"] == 0 and pair["received"] == pair["sent"]
    cores = {q["core"] for q in point["queues"]}
    assert len(point["queues"]) == 2 and len(cores) == 2, point["queues"]


@pytest.mark.parametrize("switch", [SWITCHES[0], "testpmd", SWITCHES[2]])
def test_the_switchs_processes_are_in_its_cgroup_netns_and_cpuset(switch, tmp_path):
    engine()
    p = place(Scenario(switch=switch, api="dpdk", switch_in="container", switch_quota=50,
                       tester="split"),
              secrets.token_hex(2))
    journal = Journal(tmp_path / "run.journal")
    runtime = RuncRuntime(journal, Path("/run/cnfperf") / f"{p.prefix}-state")
    with no_leftovers(p.prefix):
        try:
            plane = DATAPLANES[switch]
            runtime.prepare(ENGINE, plane.image)
            home = SwitchHome(runtime, plane.image, Quota(50, 100_000), Namespaces(), journal)
            dataplane = plane(journal, home=home)
            try:
                dataplane.start(p)
                c = dataplane.container
                assert c.name == c.netns == p.name("sw") and c.cpus == dataplane.cpus
                pids = find(p.prefix, COMMS[switch])
                assert pids
                host_netns = os.stat("/proc/self/ns/net").st_ino
                for pid in pids:
                    assert f"/{c.name}\n" in Path(f"/proc/{pid}/cgroup").read_text()
                    assert os.stat(f"/proc/{pid}/ns/net").st_ino != host_netns
                    assert set(os.sched_getaffinity(pid)) <= set(c.cpus)
                assert _quota(c.name) == 50_000
                assert dataplane.queues()
            finally:
                dataplane.stop()
        finally:
            shutil.rmtree(runtime.state_dir, ignore_errors=True)
    assert journal.live() == []


def _quota(name: str) -> int:
    """The container's CFS quota, as runc wrote it (cgroup v1 or v2)."""
    for path in map(Path, leak.cgroups()):
        if path.name != name:
            continue
        if (path / "cpu.cfs_quota_us").exists():
            return int((path / "cpu.cfs_quota_us").read_text())
        if (path / "cpu.max").exists():
            return int((path / "cpu.max").read_text().split()[0])
    raise AssertionError(f"no cgroup of {name} with a CPU quota")
