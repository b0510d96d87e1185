"""`cnfperf run --api dpdk` over the DPDK data planes, as a user runs it: the
engine in runc containers, throughput and latency, 1 and 2 pairs, at low rates.
Zero loss, switch counters that add up, and nothing left behind.

One case per property: each switch in each mode and with 2 pairs once (the
rest of the grid is the same code on other numbers; each switch's ports with
testpmd ends: test_dpdk_switches.py; a kept switch, 1 pair, through the
engine: tests/e2e/orchestrator/test_kept_switch.py; combinations refused
before anything exists: tests/unit/test_scenario_validation.py)."""
from __future__ import annotations

import json
import subprocess

import pytest

import harness
import leak
from dpdk_leak import ours
from harness import REPO, cnfperf_argv, cnfperf_env

pytestmark = [pytest.mark.e2e, pytest.mark.needs("dpdk-testpmd", "runc")]

SHORT = ["--duration", "1", "--warmup", "0.3"]


def run(results, *args: str) -> tuple[dict, dict]:
    """(cnfperf's JSON, what the run left behind that carries its prefix)."""
    before = leak.snapshot()
    done = subprocess.run(cnfperf_argv("run", *args, "--json"), capture_output=True,
                          text=True, cwd=REPO, timeout=180, env=cnfperf_env(results),
                          stdin=subprocess.DEVNULL)
    harness.not_busy(done, "run")
    assert done.returncode == 0, f"cnfperf run {' '.join(args)}: {done.stderr}"
    out = json.loads(done.stdout)
    left = ours(leak.diff(before, leak.snapshot()), "cnfp" + out["outcome"]["run_id"])
    return out, left


# Each switch in each mode, and with 2 pairs, once; vhost's and memif's
# throughput with 1 pair: test_jumbo_frames… and the MLRsearch below; testpmd's
# and OVS's: test_kept_switch.py.
@pytest.mark.parametrize("switch, mode, pairs", [
    pytest.param("vhost", "latency", 2, marks=pytest.mark.smoke),
    ("memif", "latency", 2), pytest.param("testpmd", "throughput", 2, marks=pytest.mark.smoke),
    ("testpmd", "latency", 1), pytest.param("ovs", "throughput", 1, marks=pytest.mark.smoke),
    ("ovs", "latency", 2)])
def test_dpdk_run_has_zero_loss_and_leaves_nothing(results, switch, mode, pairs):
    rate = ["--rate", "5k"] if mode == "throughput" else []
    out, left = run(results, "--switch", switch, "--api", "dpdk", "--mode", mode,
                    "--pairs", str(pairs), "--tester", "split", *rate, *SHORT)
    assert out["outcome"]["status"] == "done", out["outcome"]
    assert out["outcome"]["left"] == [] and left == {}, (out["outcome"]["left"], left)
    point = out["run"]["points"][0]
    assert point["status"] == "done", point["error"]
    assert len(point["per_pair"]) == pairs
    for pair in point["per_pair"]:
        harness.assert_sent(point, pair, point["rate"] * point["duration"])
        assert pair["lost"] == 0 and pair["received"] == pair["sent"]
    counters = point["counters"]
    if switch in ("vhost", "memif"):
        assert counters == {}, "a direct link has no switch to count"
        assert point["switch_cost"] is None, "nor a switch to say what a packet cost it"
        return
    ports = {name for pair in point["placement"]
             for name in (pair["sender"]["name"], pair["receiver"]["name"])}
    assert set(counters) == ports
    # None: a count the switch does not keep (OVS's `?` for the rx side of a
    # port that only sends to its engine), never read as no drops
    for c in counters.values():
        assert c["rx_dropped"] in (0, None) and c["tx_dropped"] in (0, None), counters
    sent = {p["pair"]: p["sent"] for p in point["per_pair"]}
    for pair in point["placement"]:
        s, r = counters[pair["sender"]["name"]], counters[pair["receiver"]["name"]]
        assert s["rx_dropped"] == r["tx_dropped"] == 0, "the path's drops: kept, and none"
        # Warm-up frames cross the switch too; the engines' counts exclude them.
        assert s["rx_packets"] >= sent[pair["index"]]
        if mode == "throughput":
            assert r["tx_packets"] == s["rx_packets"], "what came in went out"
        else:
            assert s["tx_packets"] == r["rx_packets"] == s["rx_packets"], "every echo returned"
    # the switch's own per-packet cost, read back from it: begun once the
    # senders' window is known and read as they end, like the CPU meter
    # (test_cpu_usage.py), so about every frame of the measured window; on a
    # busy host a few at its edges are not in it (its rx rings still held
    # them, or the begin came late). A latency point's echoes cross it too,
    # but a late begin misses both ways: the requests alone are the floor.
    cost = point["switch_cost"]
    assert cost["source"] == {"ovs": "ovs-appctl dpif-netdev/pmd-stats-show",
                              "testpmd": "testpmd --record-core-cycles"}[switch]
    assert cost["packets"] >= 0.9 * sum(sent.values()), cost
    assert cost["cycles_per_packet"] > 0, cost
    if switch == "ovs":
        assert 0 < cost["busy_share"] <= 1 and cost["threads"], cost


# Each api over each kernel data plane once, each api in each mode once.
@pytest.mark.parametrize("switch, api, mode", [
    ("veth", "xdp", "throughput"), ("bridge", "xdp", "latency"),
    ("veth", "mmap", "latency"), ("bridge", "mmap", "throughput"),
    ("veth", "dpdk", "throughput"), ("bridge", "dpdk", "latency"),
    ("macvlan", "dpdk", "throughput"),
])
def test_bypass_apis_over_kernel_data_planes(results, switch, api, mode):
    rate = ["--rate", "5k"] if mode == "throughput" else []
    out, left = run(results, "--switch", switch, "--api", api, "--mode", mode, *rate, *SHORT)
    assert out["outcome"]["status"] == "done", out["outcome"]
    assert out["outcome"]["left"] == [] and left == {}, (out["outcome"]["left"], left)
    point = out["run"]["points"][0]
    pair, = point["per_pair"]
    harness.assert_sent(point, pair, point["rate"] * point["duration"])
    assert pair["received"] == pair["sent"] and pair["lost"] == 0


@pytest.mark.parametrize("switch", ["vhost", "memif", "testpmd", "ovs", "bridge"])
def test_jumbo_frames_cross_every_data_plane_over_dpdk(results, switch):
    """Just above a standard frame and the largest one: whole frames arrive, one
    mbuf each (the engine's receivers would count a cut frame as bad)."""
    out, left = run(results, "--switch", switch, "--api", "dpdk", "--size", "1519,9216",
                    "--rate", "2k", *SHORT)
    assert out["outcome"]["status"] == "done", out["outcome"]
    assert out["outcome"]["left"] == [] and left == {}, (out["outcome"]["left"], left)
    for point in out["run"]["points"]:
        pair, = point["per_pair"]
        harness.assert_sent(point, pair, point["rate"] * point["duration"])
        assert pair["received"] == pair["sent"] and pair["lost"] == 0
        bits_per_frame = pair["rx_bps"] / pair["rx_pps"]
        assert bits_per_frame == pytest.approx(point["size"] * 8, rel=0.01), point["size"]


def test_busy_pollers_beyond_cores_are_warned_and_recorded(results):
    out, _ = run(results, "--switch", "testpmd", "--api", "dpdk", "--cpus", "0",
                 "--rate", "2k", *SHORT)
    point = out["run"]["points"][0]
    assert any("busy pollers share 1 core:" in w for w in point["warnings"])
    assert point["per_pair"][0]["lost"] == 0


def test_mlrsearch_over_memif_then_latency_at_fractions(results):
    """NDR and PDR from one MLRsearch over memif (engine to engine, DPDK),
    capped at 20 kpps so that short trials stay low-rate, then latency trials."""
    out, left = run(results, "--switch", "memif", "--api", "dpdk", "--tester", "split",
                    "--rate", "ndr+pdr", "--search-max", "20k", "--trial-duration", "0.5",
                    "--duration-sum", "1", "--precision", "0.05", "--warmup", "0.3",
                    "--latency-at", "min+50%+90%")
    assert out["outcome"]["status"] == "done" and left == {}, (out["outcome"], left)
    point = out["run"]["points"][0]
    ndr, pdr = point["goals"]
    for g in (ndr, pdr):   # memif carries 20 kpps without loss: the top is the bound
        assert g["lower_pps"] == pytest.approx(20_000, rel=0.001), point["trials"]
        assert g["conditional_pps"] == pytest.approx(20_000, rel=0.01)
    latency = [t for t in point["trials"] if t["phase"] == "latency"]
    assert [t["fraction"] for t in latency] == [0, 0.5, 0.9]
    assert [t["offered_pps"] for t in latency[1:]] == pytest.approx(
        [0.5 * pdr["conditional_pps"], 0.9 * pdr["conditional_pps"]])
    for t in latency:
        assert t["loss_ratio"] == 0 and t["latency_samples"] > 0 and t["lat_p99_ns"] > 0
