"""Sweeps from the command line and scenario files: lists, ranges, TOML arrays,
repetitions and searches become the planned points; mistakes are one line, exit
code 2, and nothing is created. Nothing here starts a container."""
from __future__ import annotations

import pytest

from cnfperf import UserError
from cnfperf.cli import main
from cnfperf.results.store import Store
from cnfperf.run.checks import load_plan
from harness import scenarios


def _plan(*argv: str, capsys) -> list[str]:
    """The point lines `cnfperf run … --dry-run` prints."""
    assert main(["run", *argv, "--dry-run"]) == 0
    out = capsys.readouterr().out
    return [line.strip() for line in out.splitlines() if line.strip().startswith("[")]


def test_a_list_flag_is_one_point_per_value_in_the_order_given(capsys):
    lines = _plan("--size", "1500,64,128", capsys=capsys)
    assert [l.split("size=")[1].split()[0] for l in lines] == ["1500", "64", "128"]


def test_a_range_flag_is_min_step_max_inclusive(capsys):
    lines = _plan("--size", "64:64:512", capsys=capsys)
    assert [int(l.split("size=")[1].split()[0]) for l in lines] == list(range(64, 513, 64))


def test_flags_sweep_together_as_a_cartesian_product_data_plane_outermost(capsys):
    lines = _plan("--size", "64,1500", "--switch", "veth,bridge", "--rate", "1k:1k:2k",
                  capsys=capsys)
    got = [(l.split()[1], l.split("size=")[1].split()[0], l.split("rate=")[1].split()[0])
           for l in lines]
    assert got == [(sw, size, rate) for sw in ("veth", "bridge") for size in ("64", "1500")
                   for rate in ("1k", "2k")]


def test_toml_arrays_and_ranges_with_flags_winning(tmp_path):
    (tmp_path / "s.toml").write_text('switch = ["veth", "bridge"]\nsize = "64:64:192"\n'
                                     'burst = [4, 32]\nrate = "5k"\n')
    swept = load_plan(tmp_path / "s.toml", {"burst": "8", "repeat": "2"})
    s = swept.scenarios
    assert len(s) == 2 * 3 * 1 * 2
    assert {x.burst for x in s} == {8} and {x.rate.pps for x in s} == {5000.0}
    assert [p.rep for p in swept.plan.points[:2]] == [0, 1]          # repetitions innermost
    assert swept.plan.points[0].group == swept.plan.points[1].group
    assert len({p.key for p in swept.plan.points}) == len(s)


def test_keys_do_not_depend_on_spelling(tmp_path):
    a = load_plan(None, {"size": "64:64:128", "rate": "10000"})
    b = load_plan(None, {"rate": "10k", "size": "64,128", "duration": "10"})   # the default
    assert [p.key for p in a.plan.points] == [p.key for p in b.plan.points]
    c = load_plan(None, {"size": "64,128", "rate": "10k", "duration": "5"})
    assert not {p.key for p in a.plan.points} & {p.key for p in c.plan.points}


def test_searches_are_rates_that_keep_their_settings():
    [ndr] = scenarios(None, {"rate": "NDR", "precision": "0.02", "trial_duration": "1"})
    assert (ndr.rate.value(), ndr.precision, ndr.trial_duration) == ("ndr", 0.02, 1)
    [pdr] = scenarios(None, {"rate": "pdr:0.5%"})
    assert pdr.rate.value() == "pdr:0.5%" and pdr.describe().endswith("rate=pdr:0.5%")
    [fixed] = scenarios(None, {"rate": "2.5M", "limit": "20k"})
    assert (fixed.rate.pps, fixed.limit.pps) == (2.5e6, 20_000)
    # A fixed rate's key ignores search settings; a search's does not.
    plain = load_plan(None, {"rate": "1k"}).plan.points[0].key
    assert load_plan(None, {"rate": "1k", "precision": "0.05"}).plan.points[0].key == plain
    assert load_plan(None, {"rate": "ndr"}).plan.points[0].key != \
        load_plan(None, {"rate": "ndr", "precision": "0.05"}).plan.points[0].key


@pytest.mark.parametrize("fields, field", [
    ({"size": "64:0:512"}, "size"),
    ({"size": "1:1:5000"}, "size"),
    ({"rate": "pdr:x"}, "rate"),
    ({"repeat": "2,3"}, "repeat"),
    ({"rate": "ndr+pdr", "search": "bisect"}, "rate"),
    ({"rate": "ndr", "latency_at": "5%+max"}, "latency_at"),
    ({"limit": "10k", "switch": "macvlan", "api": "raw"}, "limit"),
    ({"limit": "10k", "switch": "vhost", "api": "dpdk"}, "limit"),
    ({"precision": "0.9", "rate": "ndr"}, "precision"),
])
def test_bad_sweeps_name_the_field(fields, field):
    with pytest.raises(UserError) as e:
        load_plan(None, fields)
    assert e.value.field == field


def test_a_limit_on_the_bridge_works_with_any_kernel_api():
    [s] = scenarios(None, {"switch": "bridge", "api": "raw", "limit": "1M"})
    assert s.limit.pps == 1e6


def test_dry_run_prints_plan_cores_and_time_and_creates_nothing(tmp_path, monkeypatch, capsys):
    results = tmp_path / "results"
    monkeypatch.setenv("CNFPERF_RESULTS", str(results))
    assert main(["run", "--pairs", "1,2", "--mode", "throughput,latency", "--repeat", "2",
                 "--duration", "1", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("8 points (4 x 2 repetitions)")
    assert "pairs: 1, 2" in out and "mode: throughput, latency" in out
    assert "cores send:1 recv:0" in out and "client:" in out and "rep=2" in out
    assert "data planes: veth" in out
    assert not results.exists()


def _one_error_line(capsys, field: str) -> None:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"cnfperf: error: {field}: "), err


def test_unknown_study_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path / "results"))
    assert main(["study", "no-such-study"]) == 2
    _one_error_line(capsys, "NAME")
    assert not (tmp_path / "results").exists()


def test_studies_are_listed_with_what_they_reproduce(capsys):
    assert main(["study"]) == 0
    out = capsys.readouterr().out
    assert "shootout" in out and "fig5_1_rx_vs_offered" in out and "Fig. 5.1" in out


@pytest.mark.parametrize("argv, field", [
    (["report", "beef"], "RUN"),
    (["results", "show", "beef"], "RUN"),
    (["results", "export", "beef", "--csv"], "RUN"),
    (["compare", "latest", "beef"], "RUN_B"),
    (["run", "--resume", "beef"], "--resume"),
    (["results", "export", "latest"], "--csv"),      # the format is named
])
def test_unknown_runs_are_one_line(tmp_path, monkeypatch, capsys, argv, field):
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path))
    store = Store(tmp_path)
    store.begin_run("1a2b", ["cnfperf", "run"], 1, tmp_path / "runs" / "1a2b", {}, "0.1.0")
    store.close()
    assert main(argv) == 2
    _one_error_line(capsys, field)


def test_latest_needs_a_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path))
    Store(tmp_path).close()
    assert main(["report", "latest"]) == 2
    _one_error_line(capsys, "RUN")


def test_a_study_names_each_data_plane_it_leaves_out_once(capsys, monkeypatch):
    from cnfperf.host import tools
    found = tools.find
    monkeypatch.setattr(tools, "find", lambda name, *table:
                        None if name == "dpdk-testpmd" else found(name, *table))
    assert main(["study", "shootout", "--quick", "--dry-run"]) == 0
    lines = [l.strip() for l in capsys.readouterr().out.splitlines()]
    notes = [l for l in lines if l.startswith("skipped testpmd:")]
    assert len(notes) == 1 and notes[0].endswith(
        "dpdk-testpmd not found (Debian package dpdk-dev)"), lines
    assert not any(" testpmd " in l for l in lines if l.startswith("[")), "a testpmd point"


def test_run_and_study_dry_runs_say_alike_why_a_switch_cannot_run_here(tmp_path, monkeypatch,
                                                                       capsys):
    """A switch not built: the study leaves its points out, the run flags them
    (its preflight would refuse them), both with checks.host_problems' words."""
    from cnfperf.host import builds
    monkeypatch.setenv(builds.PREFIX_ENV, str(tmp_path / "none"))
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path / "results"))
    assert main(["run", "--switch", "vpp", "--api", "dpdk", "--size", "64,128", "--dry-run"]) == 0
    captured = capsys.readouterr()
    flagged = [l.strip() for l in captured.out.splitlines() if "cannot run here" in l]
    assert len(flagged) == 2 and flagged[0].startswith("cannot run here: vpp: vpp not built")
    assert "make switches" in flagged[0]
    assert "this host cannot run 2 of 2 points" in captured.err
    assert main(["study", "shootout", "--quick", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"skipped {flagged[0].removeprefix('cannot run here: ')}" in out
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("command", [["run", "--switch", "bridge"],
                                     ["study", "shootout", "--quick"]])
def test_dry_runs_say_when_the_engine_is_missing(tmp_path, monkeypatch, capsys, command):
    """The engine is every point's: a dry-run says the run would stop for it,
    in the words of the run's preflight."""
    monkeypatch.setenv("CNFPERF_ENGINE", str(tmp_path / "cnfperf-engine"))
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path / "results"))
    assert main([*command, "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "cnfperf: this host cannot run any point (engine: engine not built (make build)): " \
        "the run would stop before it starts" in err
    assert not (tmp_path / "results").exists()


def test_a_study_runs_on_the_host_its_flags_name(tmp_path, monkeypatch, capsys):
    """--tester-host and --dut-host win over the study's every point: a study
    whose data plane this host lacks (kernel OVS) is planned whole on another
    host of the inventory (the lab's), where its points then run."""
    from cnfperf.run import checks
    key = tmp_path / "key"
    key.write_text("x\n")
    key.chmod(0o600)
    (tmp_path / "kh").write_text("")
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(f'[[host]]\nname = "dut"\naddress = "192.0.2.1"\nkey = "{key}"\n'
                         f'known_hosts = "{tmp_path / "kh"}"\n')
    checks.inventory_file.cache_clear()
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path / "results"))
    assert main(["study", "nf000_fig8_kernel_ovs", "--quick", "--dry-run", "--hosts",
                 str(inventory), "--tester-host", "dut", "--dut-host", "dut"]) == 0
    out = capsys.readouterr().out
    assert "dut_host=dut tester_host=dut" in out, out
    lines = [l for l in out.splitlines() if l.strip().startswith("[")]
    assert len(lines) == 16 and all("ovs-kernel" in l for l in lines), lines
    assert {l.split("switch_in=")[1].split()[0] for l in lines} == {"host", "container"}
    assert main(["study", "nf000_fig8_kernel_ovs", "--quick", "--dry-run", "--hosts",
                 str(inventory), "--dut-host", "nowhere"]) == 2
    assert "nowhere" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()
