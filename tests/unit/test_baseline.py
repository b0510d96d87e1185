"""The generator baseline (generator_baseline): which point measures the
tester's limit, where, and how a point's share of it is computed."""
from __future__ import annotations

import pytest

from cnfperf import UserError, testers
from cnfperf.results.model import baseline_share
from cnfperf.run import baseline
from cnfperf.run.checks import load_plan, place_point
from cnfperf.scenario import Scenario


def scenario(**values):
    return Scenario.model_validate({"generator_baseline": True, "tester": "split", **values})


def test_the_share_is_the_received_rate_over_the_baselines():
    assert baseline_share(10_000.0, 20_000.0) == 0.5
    assert baseline_share(30_000.0, 20_000.0) == 1.5    # above the generator alone: said so
    assert baseline_share(10_000.0, None) is None        # no baseline
    assert baseline_share(10_000.0, 0.0) is None         # a baseline that moved nothing
    assert baseline_share(None, 20_000.0) is None


@pytest.mark.parametrize("switch, api, tester, link", [
    ("bridge", "udp", "split", "veth"), ("macvlan", "raw", "single", "veth"),
    ("ovs", "dpdk", "split", "memif"), ("ovs", "dpdk", "single", "testpmd")])
def test_the_baseline_goes_through_the_lightest_link_of_the_api(switch, api, tester, link):
    s = scenario(switch=switch, api=api, tester=tester, size=512, burst=16, pairs=2,
                 rate="200k", nfs=1, mmsg=api in ("udp", "raw"))
    b = testers.baseline(s)
    assert (b.switch, b.api, b.tester, b.size, b.burst, b.pairs, b.mmsg) == \
        (link, api, tester, 512, 16, 2, s.mmsg)
    assert b.rate.pps == 0 and b.mode == "throughput" and b.nfs == 0     # unpaced, no NFs
    assert not b.generator_baseline and not b.switch_keep


def test_latency_points_and_points_without_it_ask_none():
    assert testers.baseline(scenario(mode="latency")) is None
    assert testers.baseline(scenario(generator_baseline=False)) is None
    assert baseline.key(scenario(mode="latency")) is None


def test_points_alike_in_their_generator_share_one_baseline():
    points = [place_point(scenario(switch=sw, api="udp", size=size))
              for sw in ("veth", "bridge") for size in (64, 64, 1500)]
    planned = baseline.plan(points, "beef")
    assert [(p.scenario.switch, p.scenario.size) for _, p in planned] == [("veth", 64),
                                                                           ("veth", 1500)]
    assert [k for k, _ in planned] == [baseline.key(points[0].scenario),
                                       baseline.key(points[2].scenario)]
    assert all(p.label == baseline.LABEL for _, p in planned)
    assert len(baseline.scenarios([p.scenario for p in points])) == 2


def test_a_baseline_is_refused_where_it_cannot_run():
    with pytest.raises(UserError, match="generator_baseline: the tester's ends run in "
                                        "virtual machines"):
        load_plan(None, {"switch": "bridge", "api": "raw", "endpoint_in": "vm",
                         "generator_baseline": "yes"})
    from cnfperf.run import checks
    s = scenario(switch="bridge", api="udp", tester_host="dut")
    with pytest.raises(UserError, match="generator_baseline: the tester runs on dut"):
        checks.input._check_baseline(s, (0, 1))


def test_a_run_asks_the_host_about_the_baselines_of_its_points_as_placed():
    # tester = auto: each point's baseline follows the tester placing chooses
    auto = [Scenario.model_validate({"switch": sw, "api": "dpdk", "generator_baseline": True})
            for sw in ("vhost", "testpmd")]
    found = baseline.scenarios(auto, (0, 1))
    assert [(b.switch, b.tester) for b in found] == [("memif", "split"), ("testpmd", "single")]
    with pytest.raises(ValueError, match="not chosen yet"):
        testers.baseline(auto[0])


def test_the_report_lists_the_baselines_and_each_points_share(tmp_path):
    from cnfperf.report import baselines as report_baselines, build, summary
    pair = {"pair": 0, "tx_pps": 10e3, "rx_pps": 10e3, "steady_rx_pps": None, "sent": 10_000,
            "received": 10_000, "loss_ratio": 0.0, "rx_bps": 5.1e6}
    points = [{"idx": i, "status": "done", "switch": sw, "api": "udp", "mode": "throughput",
               "pairs": 1, "size": 64, "rate": 10e3, "tester": "split", **pair,
               "baseline_pps": 20e3, "baseline_share": share, "per_pair": [pair]}
              for i, (sw, share) in enumerate((("veth", 0.5), ("bridge", None)))]
    run = {"id": "b45e", "started": 0, "status": "done", "planned": 2, "points": points,
           "baselines": [{"switch": "veth", "api": "udp", "size": 64, "burst": 32,
                          "tester": "split", "pairs": 1, "tx_pps": 20.5e3, "rx_pps": 20e3,
                          "loss_ratio": 0.0, "status": "done", "error": None},
                         {"switch": "veth", "api": "udp", "size": 1500, "burst": 32,
                          "tester": "split", "pairs": 1, "tx_pps": None, "rx_pps": None,
                          "loss_ratio": None, "status": "failed", "error": "engine failed"}]}
    _, headers, rows = summary.throughput(run)
    assert headers[-1] == "% of gen"
    assert [r[-1] for r in rows] == [50.0, None]         # none: printed as –, never 0
    title, headers, rows = report_baselines.table(run)
    assert title == "Generator baselines"
    assert [(r[0], r[2], r[7], r[-1]) for r in rows] == [("veth", 64, 20.0, "done"),
                                                          ("veth", 1500, None,
                                                           "failed: engine failed")]
    page = build.write(run, tmp_path).read_text()
    assert "Generator baselines" in page and "% of gen" in page
    from cnfperf.report import export
    assert [(r["switch"], r["pair"], r["baseline_pps"], r["baseline_share"])
            for r in export.rows(run)] == [("veth", 0, 20e3, 0.5), ("veth", "all", 20e3, 0.5),
                                           ("bridge", 0, 20e3, None),
                                           ("bridge", "all", 20e3, None)]
