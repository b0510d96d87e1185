"""Bad input: one line naming the field, exit code 2, nothing created."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cnfperf import UserError
from cnfperf.host.journal import RUN_DIR
from cnfperf.run.cleanup import RUN_NAME
from cnfperf.run.checks import load_plan
from cnfperf.cli import main
from cnfperf.rate import parse as parse_rate
from harness import scenarios


def _netns() -> set[str]:
    """Namespaces named like a run's, and a run's files (journal, lock…) where
    runs keep them (others may share the host meanwhile)."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    files = {f"{RUN_DIR}/{p.name}" for p in RUN_DIR.glob("*")} if RUN_DIR.is_dir() else set()
    return {n for n in (line.split()[0] for line in out.splitlines() if line.strip())
            if RUN_NAME.match(n)} | {f for f in files if RUN_NAME.search(f)}


BAD_FLAGS = [
    (["--pairs", "0"], "pairs"),
    (["--pairs", "x"], "--pairs"),
    (["--pairs", "251"], "pairs"),
    (["--pairs", "1.5"], "--pairs"),
    (["--mode", "fast"], "mode"),
    (["--switch", "nope"], "switch"),
    (["--switch", "veth,nope"], "switch"),
    (["--api", "carrier-pigeon"], "api"),
    (["--switch", "vhost", "--api", "udp"], "api"),   # vhost offers dpdk only
    (["--size", "63"], "size"),
    (["--size", "10000"], "size"),
    (["--burst", "0"], "burst"),
    (["--burst", "4096"], "burst"),
    (["--rate", "-5"], "--rate"),                    # syntax: the flag is named
    (["--rate", "1X"], "--rate"),
    (["--rate", "fast"], "--rate"),
    (["--size", "64:0:512"], "--size"),
    (["--size", "64,,128"], "--size"),
    (["--rate", "pdr:150%"], "--rate"),
    (["--repeat", "0"], "repeat"),
    (["--rate", "ndr+pdr", "--search", "bisect"], "rate"),  # bisect finds one goal
    (["--rate", "ndr", "--trial-duration", "2", "--duration-sum", "1"], "duration_sum"),
    (["--limit", "10k", "--api", "raw"], "limit"),     # raw bypasses the veth's qdisc
    (["--limit", "ndr"], "--limit"),                # a limit is a rate, not a search
    (["--resume", "beef", "--size", "64"], "--resume"),
    (["--duration", "0"], "duration"),
    (["--duration", "abc"], "--duration"),
    (["--warmup", "-1"], "warmup"),
    (["--flows", "0"], "flows"),
    (["--pairs", "250", "--flows", "300"], "flows"),  # source ports would run out
    (["--runtime", "docker"], "runtime"),
    (["--cpus", "4096"], "cpus"),
    (["--cpus", "a-b"], "cpus"),
    (["--api", "mmap", "--mmsg"], "mmsg"),
    (["--poll", "sometimes"], "poll"),
    (["--nfs", "17"], "nfs"),
    (["--tester", "single"], "tester"),
    (["--switch", "memif", "--api", "dpdk", "--poll", "interrupt"], "poll"),
    (["--switch", "veth", "--api", "raw", "--nfs", "1", "--nf-api", "dpdk", "--poll", "interrupt"],
     "poll"),
    (["--nfs", "2", "--nf", "mirror", "--api", "raw", "--tester", "single"], "nf"),
    (["--nfs", "1", "--nf", "mirror", "--api", "raw", "--tester", "split"], "nf"),
    (["--nfs", "1", "--nf", "mirror"], "nf"),        # auto: udp keeps single out, mirror split
    (["--tester", "single", "--switch", "memif", "--api", "dpdk"], "tester"),
    (["--nfs", "2", "--nf", "firewall"], "nf"),
    (["--nfs", "1", "--switch", "memif", "--api", "dpdk", "--nf-api", "raw"], "nf_api"),
    (["--switch", "testpmd", "--api", "dpdk", "--pairs", "5", "--nfs", "3"], "nfs"),
    (["--switch", "memif", "--api", "dpdk", "--nfs", "2", "--nf", "testpmd"], "nfs"),
    (["--api", "raw", "--nfs", "1", "--nf", "cmd:my-nf {port1}"], "nf"),
    (["--api", "raw", "--nfs", "1", "--nf", "cmd:my-nf {cpu:q}"], "nf"),
    # the udp ends' unfinished checksums: testpmd and Click send them on as they are
    (["--nfs", "1", "--nf", "testpmd", "--nf-api", "dpdk"], "nf"),
    (["--switch", "bridge", "--nfs", "2", "--nf", "click:strip-encap"], "nf"),
    (["--endpoint-quota", "0"], "endpoint_quota"),
    (["--endpoint-quota", "101"], "endpoint_quota"),          # one core: at most 100 %
    (["--nfs", "1", "--nf-quota", "25", "--runtime", "netns"], "nf_quota"),   # no cgroup
    (["--nf-quota", "25"], "nf_quota"),                       # no NF to limit
    (["--nfs", "1", "--nf-cores", "2", "--cpus", "0"], "nf_cores"),
    # the engine's threads: a queue each, which a vhost-user peer without hashing,
    # a macvlan's one queue under AF_XDP, or one bucket cannot give them
    (["--nfs", "1", "--nf", "l3", "--nf-cores", "2", "--switch", "testpmd", "--api", "dpdk"],
     "nf_cores"),
    (["--nfs", "1", "--nf", "l3", "--nf-cores", "2", "--switch", "macvlan", "--nf-api", "xdp"],
     "nf_cores"),
    (["--nfs", "1", "--nf", "l3", "--nf-cores", "2", "--switch", "bridge", "--nf-api", "xdp",
      "--nf-in", "pod"], "nf_cores"),
    (["--nfs", "1", "--nf", "l3", "--nf-cores", "2", "--policer", "engine", "--policer-rate", "10k"],
     "nf_cores"),
    # the tester's ends on several cores: a queue each, which only the sender and
    # receiver poll, on an api and data plane with queues, a flow a queue at least
    (["--api", "raw", "--flows", "2", "--endpoint-cores", "3", "--cpus", "0-1"], "endpoint_cores"),
    (["--api", "raw", "--flows", "1", "--endpoint-cores", "2"], "endpoint_cores"),
    (["--api", "udp", "--flows", "2", "--endpoint-cores", "2"], "endpoint_cores"),
    (["--api", "raw", "--flows", "2", "--endpoint-cores", "2", "--rate", "10k", "--onoff", "8"],
     "endpoint_cores"),
    (["--api", "raw", "--flows", "2", "--endpoint-cores", "2", "--mode", "latency"],
     "endpoint_cores"),
    (["--api", "raw", "--flows", "2", "--endpoint-cores", "2", "--tester", "single",
      "--nfs", "1"], "endpoint_cores"),
    (["--api", "raw", "--flows", "2", "--endpoint-cores", "2", "--switch", "bridge",
      "--policer", "tc", "--policer-rate", "10k"], "endpoint_cores"),
    (["--api", "xdp", "--flows", "2", "--endpoint-cores", "2", "--switch", "veth"],
     "endpoint_cores"),                                       # a veth's one queue
    (["--api", "dpdk", "--flows", "2", "--endpoint-cores", "2", "--switch", "memif", "--nfs", "1"],
     "endpoint_cores"),
    (["--api", "dpdk", "--flows", "2", "--endpoint-cores", "2", "--switch", "ovs"],
     "endpoint_cores"),
    (["--api", "raw", "--flows", "2", "--endpoint-cores", "2", "--endpoint-in", "vm",
      "--tester", "single"], "endpoint_cores"),
    (["--quota-period", "10"], "quota_period"),
    (["--nfs", "1", "--nf-quota", "0.5"], "nf_quota"),        # 500 µs a period: below 1 ms
    (["--nf-cores", "2", "--cpus", "0-1"], "nf_cores"),       # no NF to give them to
    (["--switch", "vhost", "--api", "dpdk", "--nfs", "1", "--nf", "testpmd", "--nf-cores", "3"],
     "nf_cores"),                                             # two directions, two cores
    (["--switch", "testpmd", "--api", "dpdk", "--pairs", "16", "--noise", "traffic"], "pairs"),
    (["--switch", "bridge", "--flows", "55535", "--noise", "traffic"], "flows"),  # 1 pair fits
    (["--noise", "loud"], "noise"),
    (["--noise", "cpu", "--noise-on", "elsewhere"], "noise_on"),
    (["--noise", "cpu", "--noise-on", "4095"], "noise_on"),
    (["--noise", "traffic", "--switch", "veth"], "noise"),    # no switch to share
    # where the switch runs, its cores, queues and quota
    (["--switch", "bridge", "--switch-in", "container"], "switch_in"),
    (["--switch", "vhost", "--api", "dpdk", "--switch-in", "container"], "switch_in"),
    (["--switch", "ovs", "--api", "dpdk", "--switch-in", "container", "--runtime", "netns"],
     "switch_in"),
    (["--switch", "ovs", "--api", "dpdk", "--switch-quota", "50"], "switch_quota"),
    (["--switch", "memif", "--api", "dpdk", "--switch-cores", "2"], "switch_cores"),
    (["--switch", "veth", "--switch-rxq", "2"], "switch_rxq"),
    (["--switch", "testpmd", "--api", "dpdk", "--cpus", "0", "--switch-cores", "2"],
     "switch_cores"),
    (["--switch", "ovs", "--api", "dpdk", "--switch-in", "container", "--switch-quota", "150"],
     "switch_quota"),   # its one poll core gives at most 100 %
    # a fault outside the measured window, or on a link that is not there
    (["--switch", "veth", "--api", "udp", "--duration", "2", "--fault", "link:0",
      "--fault-at", "1.5", "--fault-duration", "0.5"], "fault_at"),
    (["--switch", "veth", "--api", "udp", "--duration", "2", "--fault", "link:0",
      "--fault-at", "0"], "fault_at"),
    (["--switch", "veth", "--api", "udp", "--duration", "2", "--fault", "link:3"], "fault"),
    (["--switch", "veth", "--api", "raw", "--duration", "2", "--fault", "link:0"],
     "fault"),                                      # the sender's own link, on veth
    # DPDK data planes: what each offers
    (["--switch", "memif", "--api", "xdp"], "api"),
    (["--switch", "ovs", "--api", "raw"], "api"),
    (["--switch", "testpmd", "--api", "dpdk", "--pairs", "17"], "pairs"),
    (["--switch", "memif", "--api", "dpdk", "--size", "9217"], "size"),
    (["--frobnicate"], "--frobnicate"),
    (["/nonexistent/scenario.toml"], "scenario"),
    (["--pin", "maybe"], "--pin"),                   # a yes/no flag takes yes, no or both
]

BAD_FILES = [
    ('speed = 1\n', "speed"),
    ('pairs = "two"\n', "pairs"),
    ('pairs = 2.5\n', "pairs"),
    ('touch = "maybe"\n', "touch"),
    ('rate = true\n', "rate"),
    ('switch = []\n', "switch"),
    ('mode = ["throughput", "sideways"]\n', "mode"),
    ('cpus = "1-"\n', "cpus"),
    ('duration = -1\n', "duration"),
    ('pairs = \n', "scenario"),                      # not TOML
    ('[study]\ntitle = 3\n', "study.title"),          # a run file's [study] is checked too
    ('[study]\ntitle = "t"\nplot = ["latency_cdf"]\n', "study.plot"),
    ('[study]\nplots = "latency_cdf"\n', "study.plots"),
    ('[study]\nplots = ["latency_cfd"]\n', "study.plots"),
    ('study = "mine"\n', "study"),
    ('[[part]]\nsize = 64\nquick = 1\n', "part.quick"),
]


def _check(code: int, err: str, field: str, results: Path, before: set[str]) -> None:
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1, f"expected one line, got: {err!r}"
    assert lines[0].startswith(f"cnfperf: error: {field}: "), lines[0]
    assert not results.exists(), "results directory created for bad input"
    assert _netns() == before, "network namespace or run file created for bad input"


@pytest.mark.parametrize("flags, field", BAD_FLAGS, ids=[" ".join(f) for f, _ in BAD_FLAGS])
def test_bad_flag(flags, field, tmp_path, monkeypatch, capsys):
    results = tmp_path / "results"
    monkeypatch.setenv("CNFPERF_RESULTS", str(results))
    before = _netns()
    code = main(["run", *flags])
    _check(code, capsys.readouterr().err, field, results, before)


@pytest.mark.parametrize("text, field", BAD_FILES, ids=[t.strip() for t, _ in BAD_FILES])
def test_bad_file(text, field, tmp_path, monkeypatch, capsys):
    results = tmp_path / "results"
    monkeypatch.setenv("CNFPERF_RESULTS", str(results))
    scenario = tmp_path / "s.toml"
    scenario.write_text(text)
    before = _netns()
    code = main(["run", str(scenario)])
    _check(code, capsys.readouterr().err, field, results, before)


def test_bad_input_in_a_subprocess(cli, results):
    """The command line behaves like main(): exit 2, one line, nothing created."""
    before = _netns()
    done = cli("run", "--switch", "bridge", "--pairs", "-3")
    _check(done.returncode, done.stderr, "pairs", results, before)
    assert done.stdout == ""


def test_a_switch_without_processes_says_which_switches_can_be_in_a_container(capsys):
    assert main(["run", "--switch", "macvlan", "--switch-in", "container"]) == 2
    err = capsys.readouterr().err
    assert "macvlan does not run in a container" in err and "testpmd, ovs, vpp, vpp-memif, click, bess, snabb, snabb-wire, ovs-kernel do" in err


def test_the_switchs_cores_are_counted_against_the_points(capsys):
    """The scenario's cpus when given, else the host's usable cores."""
    assert main(["run", "--switch", "ovs", "--api", "dpdk", "--cpus", "0",
                 "--switch-cores", "2", "--dry-run"]) == 2
    assert "1 usable core(s) (0)" in capsys.readouterr().err
    assert main(["run", "--switch", "ovs", "--api", "dpdk", "--cpus", "0",
                 "--switch-cores", "1", "--switch-in", "container", "--switch-quota", "50",
                 "--dry-run"]) == 0


def test_unknown_field_lists_the_known_ones(tmp_path):
    (tmp_path / "s.toml").write_text("pairs = 2\npaces = 2\n")
    with pytest.raises(UserError) as e:
        scenarios(tmp_path / "s.toml")
    assert e.value.field == "paces" and "pairs" in e.value.why
    # `pair` names the pairs' profiles: the typo for pairs is told where the count is
    (tmp_path / "s.toml").write_text("pair = 2\n")
    with pytest.raises(UserError) as e:
        scenarios(tmp_path / "s.toml")
    assert e.value.field == "pair" and "pairs" in e.value.why


def test_flags_override_the_file(tmp_path):
    (tmp_path / "s.toml").write_text('switch = "bridge"\npairs = 0\nrate = "10k"\n')
    [s] = scenarios(tmp_path / "s.toml", {"pairs": 2, "rate": None})
    assert (s.switch, s.pairs, s.rate.pps) == ("bridge", 2, 10_000)


STUDY = Path(__file__).resolve().parents[2] / "studies" / "cpu000_tc2_quota.toml"


def test_a_flag_wins_over_every_part_and_quick_table_of_a_file():
    """The study's parts set six sizes and 64, its [quick] 64: --size wins over all."""
    plan = load_plan(STUDY, {"size": "128", "repeat": "2"})
    assert {s.size for s in plan.scenarios} == {128}
    assert {p.repeat for p in plan.plan.points} == {2}       # the latency part said 10
    quick = load_plan(STUDY, {"size": "128,256", "duration": "2"}, quick=True)
    assert {s.size for s in quick.scenarios} == {128, 256}
    assert {s.duration for s in quick.scenarios} == {2}       # [quick] said 1
    # what the flag did not name, the parts still set
    assert {s.mode for s in quick.scenarios} == {"throughput", "latency"}


def test_a_flag_wins_over_a_parts_own_quick_table(tmp_path):
    (tmp_path / "s.toml").write_text('[[part]]\nburst = 4\n[part.quick]\nburst = 8\n'
                                     '[quick]\nburst = 16\n')
    assert {s.burst for s in scenarios(tmp_path / "s.toml")} == {4}
    [s] = load_plan(tmp_path / "s.toml", {"burst": "2"}, quick=True).scenarios
    assert s.burst == 2


@pytest.mark.parametrize("argv, pins", [
    (["--pin"], [True]), (["--pin", "no"], [False]), (["--no-pin"], [False]),
    (["--pin", "yes,no"], [True, False]), (["--pin", "false"], [False]), ([], [True]),
])
def test_a_yes_no_flag_alone_means_yes_and_takes_yes_no_or_both(argv, pins, capsys):
    assert main(["run", "--switch", "bridge", *argv, "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    points = [line for line in lines if line.strip().startswith("[")]
    unpinned = [line for line in lines if "unpinned" in line]
    assert len(points) == len(pins) and len(unpinned) == pins.count(False)


def test_a_yes_no_flag_before_the_scenario_file_says_where_the_file_goes(tmp_path, capsys):
    (tmp_path / "s.toml").write_text('switch = "bridge"\n')
    assert main(["run", "--pin", str(tmp_path / "s.toml"), "--dry-run"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("cnfperf: error: --pin: ") and \
        "the scenario file goes before the flags, or say --pin yes" in line


def test_zero_is_read_back_as_the_word_it_is_shown_as():
    [s] = scenarios(None, {"rate": "max", "limit": "none", "search_max": "auto"})
    assert (s.rate.pps, s.limit.pps, s.search_max.pps) == (0, 0, 0)
    assert s.describe().endswith("rate=max")
    with pytest.raises(UserError, match="rate: 'none' is not a rate"):
        scenarios(None, {"rate": "none"})


def test_defaults_follow_the_mode():
    [tput] = scenarios(None, {"mode": "throughput"})
    [lat] = scenarios(None, {"mode": "latency"})
    assert (tput.rate.pps, tput.burst, tput.poll) == (0, 32, "busy")   # as fast as possible
    # the reference framework's latency rate, one frame at a time, threads asleep
    assert (lat.rate.pps, lat.burst, lat.poll) == (1000, 1, "interrupt")
    [given] = scenarios(None, {"mode": "latency", "rate": "5k", "burst": 4, "poll": "busy"})
    assert (given.rate.pps, given.burst, given.poll) == (5000, 4, "busy")
    [xdp] = scenarios(None, {"mode": "latency", "api": "xdp"})
    assert xdp.poll == "busy", "only sockets wait for latency's frames by default"


def test_a_renamed_field_says_its_new_spelling():
    with pytest.raises(UserError, match='blocking: renamed: now poll = "interrupt"'):
        scenarios(None, {"blocking": True})


def test_lists_expand_to_every_combination_in_order(tmp_path):
    (tmp_path / "s.toml").write_text('switch = ["veth", "bridge"]\napi = ["udp", "raw"]\n')
    points = scenarios(tmp_path / "s.toml", {"mode": ["throughput", "latency"]})
    assert [(p.switch, p.api, p.mode) for p in points] == [
        (sw, api, mode) for sw in ("veth", "bridge") for api in ("udp", "raw")
        for mode in ("throughput", "latency")]


@pytest.mark.parametrize("text, pps", [("1M", 1e6), ("500k", 5e5), ("2.5M", 2.5e6),
                                       ("1000", 1000), ("1Mpps", 1e6), (250, 250), (0, 0)])
def test_rates_parse_in_one_place(text, pps):
    assert parse_rate(text).pps == pps


def test_cpu_list_forms(tmp_path):
    (tmp_path / "s.toml").write_text('cpus = "0"\n')
    [s] = scenarios(tmp_path / "s.toml")
    assert s.cpus == (0,)
    [s] = scenarios(None, {"cpus": [0, 1]})            # a list of CPUs is one set, not a sweep
    assert s.cpus == (0, 1)
    assert [p.cpus for p in scenarios(None, {"cpus": ["0", "1"]})] == [(0,), (1,)]
