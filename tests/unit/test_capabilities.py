"""A data plane's capabilities (max_cores, max_rxq, max_size, floats,
rx_interrupts, its own rules) refuse a single run, and leave a study's points
out with the same words, so a sweep over data planes runs those that can."""
import pytest

from cnfperf.run import checks
from cnfperf.cli import main
from cnfperf.dataplanes import DATAPLANES

HOST = type("Host", (), {"engine": type("E", (), {"apis": []})()})()


@pytest.fixture
def host_without_problems(monkeypatch):
    monkeypatch.setattr(checks.host, "_problems", lambda *a: [])
    return HOST


def test_a_study_over_switches_leaves_out_those_beyond_their_capabilities(host_without_problems):
    swept = checks.plan({"switch": ["ovs", "vpp", "snabb", "click"], "api": "dpdk",
                         "switch_cores": 2}, host=host_without_problems)
    assert [s.switch for s in swept.scenarios] == ["ovs"]
    reasons = {params["switch"]: why for params, why in swept.plan.skipped}
    assert set(reasons) == {"vpp", "snabb", "click"}
    assert reasons["vpp"].startswith("vpp switch_cores=2: vpp has at most 1 poll core")
    assert reasons["click"].startswith("click switch_cores=2: click runs each link on one")
    swept = checks.plan({"switch": ["testpmd", "vpp", "vpp-memif"], "api": "dpdk",
                         "poll": "interrupt"}, host=host_without_problems)
    assert [s.switch for s in swept.scenarios] == ["testpmd", "vpp"]
    [(params, why)] = swept.plan.skipped
    assert params["switch"] == "vpp-memif" and "no Rx interrupts" in why


@pytest.mark.parametrize("flags,field", [
    (["--switch", "vpp", "--switch-cores", "2"], "switch_cores"),
    (["--switch", "snabb", "--switch-rxq", "2"], "switch_rxq"),
    (["--switch", "click", "--size", "9000"], "size"),
    (["--switch", "vpp", "--no-pin"], "pin"),
    (["--switch", "vpp-memif", "--poll", "interrupt"], "poll"),
    (["--switch", "click", "--switch-cores", "2"], "switch_cores"),   # one link: one thread
])
def test_a_run_beyond_a_capability_exits_2_naming_the_field(flags, field, tmp_path, monkeypatch,
                                                            capsys):
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path / "results"))
    code = main(["run", "--api", "dpdk", "--cpus", "0", *flags])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f"cnfperf: error: {field}: "), err
    assert not (tmp_path / "results").exists()


def test_only_switches_with_poll_threads_take_more_cores_or_queues():
    for name, dp in DATAPLANES.items():
        if not dp.poll_threads:
            assert dp.max_cores == 1 and dp.max_rxq == 1, name
