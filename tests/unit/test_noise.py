"""Where the noise goes and what it runs; its checks are in test_scenario_validation."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from cnfperf import SystemFailure
from cnfperf.run import noise
from cnfperf.runtimes.base import Container
from cnfperf import nfs as nf_kinds
from cnfperf.plan import noise_cores, place
from harness import scenarios

STRESS_NG_OUTPUT = """\
stress-ng: info:  [12437] dispatching hogs: 1 cpu
stress-ng: metrc: [12437] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
stress-ng: metrc: [12437]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
stress-ng: metrc: [12437] cpu                1479      1.50      1.50      0.00       987.30         988.16
stress-ng: info:  [12437] successful run completed in 1.50s
"""


def test_stress_ng_runs_one_worker_per_core_until_interrupted():
    assert noise.argv("cpu", 2) == ["stress-ng", "--cpu", "2", "--cpu-method", "matrixprod",
                                    "--temp-path", "/tmp", "--metrics-brief", "--timeout", "0"]
    io = noise.argv("io", 1, "/var/tmp/x")
    assert io[:4] == ["stress-ng", "--hdd", "1", "--hdd-bytes"] and "/var/tmp/x" in io
    assert set(noise.STRESSORS) == {"cpu", "cache", "memory", "io"}


def test_bogo_ops_are_read_from_the_metrics():
    assert noise.bogo_ops(STRESS_NG_OUTPUT) == {"cpu": 1479.0}
    assert noise.bogo_ops("") == {}


def test_same_is_where_the_switch_and_the_nfs_poll():
    assert noise_cores("same", (0, 1, 2, 3), [0, 1], [2], (3,)) == (2, 3)
    assert noise_cores("same", (0, 1), [0, 1], [], ()) == (0, 1)   # neither: the ends


def test_other_is_a_free_core_or_the_least_loaded_one():
    assert noise_cores("other", (0, 1, 2, 3), [0, 1], [2], ()) == (3,)
    assert noise_cores("other", (0, 1), [0, 1], [1], ()) == (0,)
    assert noise_cores("1-2", (0, 1, 2, 3), [0], [], ()) == (1, 2)


def test_traffic_noise_is_an_unmeasured_pair_through_the_switch():
    [s] = scenarios(flags={"switch": "bridge", "api": "raw", "noise": "traffic", "cpus": "0-1",
                           "tester": "split"})
    point = place(s, "00ab", nf=nf_kinds.find(s.nf))
    assert [p.index for p in point.pairs] == [0] and [p.index for p in point.paths] == [0, 1]
    [extra] = point.noise_pairs
    assert extra.noise and not extra.nfs and extra.sender.name == "cnfp00abp1s"
    assert len(point.engines) == 4 and len(point.links) == 2
    # four busy pollers on two cores: the plan says so
    assert point.warnings and "4 busy pollers" in point.warnings[0]


def test_nf_cores_and_pinning():
    [s] = scenarios(flags={"switch": "vhost", "api": "dpdk", "nfs": 1, "nf": "testpmd",
                           "nf_cores": 2, "cpus": "0-1"})
    point = place(s, "00ab", nf=nf_kinds.find(s.nf))
    [nf] = point.nfs
    assert len(nf.cores) == 2 and nf.cpu == nf.cores[0]
    assert point.cpuset(nf.cores) == nf.cores
    [loose] = scenarios(flags={"nfs": 1, "pin": False, "cpus": "0-1", "api": "raw"})
    point = place(loose, "00ab", nf=nf_kinds.find(loose.nf))
    assert point.cpuset(point.nfs[0].cores) == (0, 1)


def test_an_unpinned_engine_nf_floats():
    """Its engine is not pinned to its core, nor its DPDK main lcore."""
    from cnfperf.engine import nf_argv
    from cnfperf.dataplanes.base import Attachment
    for pin in (True, False):
        [s] = scenarios(flags={"switch": "vhost", "api": "dpdk", "nfs": 1, "pin": pin,
                               "cpus": "0-1"})
        point = place(s, "00ab", nf=nf_kinds.find(s.nf))
        [pair] = point.pairs
        [nf] = pair.nfs
        ports = [Attachment(mac=p.mac, port=p.slot) for p in nf.ports]
        argv = nf_argv("engine", nf, ports, ("m1", "m2"), s, ["--no-pci"], point.floating)
        assert ("--cpu" in argv) is pin
        assert ("--lcores" in argv) is not pin
        if not pin:
            assert argv[argv.index("--lcores") + 1] == "0@(0,1)"


def test_a_noise_is_a_stressor_traffic_or_a_command_of_yours():
    for ok in ("none", "cpu", "traffic", "cmd:yes > /dev/null", "cmd: sleep 1"):
        noise.check_kind(ok)
    assert noise.command("cmd: nginx -g 'daemon off;' ") == "nginx -g 'daemon off;'"
    assert noise.command("cpu") is None
    assert noise.runs_process("cmd:sleep 1") and noise.runs_process("io")
    assert not noise.runs_process("traffic") and not noise.runs_process("none")
    from cnfperf import UserError
    for bad, words in (("cmd:", "needs a command"), ("cmd:  ", "needs a command"),
                       ("apache", "cmd:COMMAND")):
        with pytest.raises(UserError, match=words):
            noise.check_kind(bad)


def test_a_command_whose_program_the_host_lacks_is_named():
    assert noise.missing_program("cmd:no-such-program-here --flag") == "no-such-program-here"
    assert noise.missing_program("cmd:sh -c 'yes'") is None
    assert noise.missing_program("cmd:while true; do no-such; done") is None   # shell words
    assert noise.missing_program("cmd:X=1 sleep 1") is None
    assert noise.missing_program("cpu") is None


class HostContainer(Container):
    """A container that is this host: the neighbour's process runs as it is."""

    def _command(self, argv, env):
        return argv

    def destroy(self):
        self._reap()


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        for child in map(int, text):
            found |= {child, *_children(child)}
    return found


def test_a_command_neighbour_runs_until_the_trial_ends_and_its_whole_group_stops(tmp_path):
    c = HostContainer(None, "cnfptest", (0,), "", "")
    n = noise.Noise(c, "cmd:sleep 60 & sleep 60 & echo started; wait", (0,))
    n.start(tmp_path)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (len(_children(n.proc.pid)) < 2 or
                                           "started" not in (tmp_path / "noise.out").read_text()):
        time.sleep(0.02)
    pids = _children(n.proc.pid)
    assert len(pids) >= 2
    record = n.stop()
    assert record == {"kind": "cmd", "cores": [0], "output": "noise.out",
                      "command": "sleep 60 & sleep 60 & echo started; wait", "tail": ["started"]}
    time.sleep(0.1)
    assert not [p for p in pids if Path(f"/proc/{p}").exists()
                and Path(f"/proc/{p}/stat").read_text().split()[2] != "Z"]
    assert (tmp_path / "noise.out").read_text() == "started\n"
    assert n.stop() is None      # stopped: a teardown's second stop does nothing
    c.destroy()


def test_a_command_neighbour_that_ends_early_fails_the_point(tmp_path):
    c = HostContainer(None, "cnfptest", (0,), "", "")
    n = noise.Noise(c, "cmd:echo bye; exit 3", (0,))
    n.start(tmp_path)
    n.proc.wait(timeout=5)
    with pytest.raises(SystemFailure, match=r"noise cmd:echo…: exited with code 3 before the trial ended: bye"):
        n.stop()
    c.destroy()


def test_a_stress_ng_record_holds_its_bogo_ops():
    c = HostContainer(None, "cnfptest", (0, 1), "", "")
    n = noise.Noise(c, "cpu", (0, 1))
    assert n.record(STRESS_NG_OUTPUT) == {"kind": "cpu", "cores": [0, 1], "output": "noise.out",
                                         "bogo_ops": {"cpu": 1479.0}}
    assert n.what == "noise cpu"


def test_a_child_that_ignores_sigterm_is_killed_once_its_shell_has_ended(tmp_path):
    c = HostContainer(None, "cnfptest", (0,), "", "")
    n = noise.Noise(c, "cmd:(trap '' TERM; exec sleep 60) & trap 'exit 0' TERM; echo up; wait",
                    (0,))
    n.start(tmp_path)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (not _children(n.proc.pid) or
                                           "up" not in (tmp_path / "noise.out").read_text()):
        time.sleep(0.02)
    [sleeper] = _children(n.proc.pid)
    began = time.monotonic()
    assert n.stop()["tail"] == ["up"]
    assert time.monotonic() - began < noise.STOP_TIMEOUT / 2    # not waited out
    time.sleep(0.1)
    assert not Path(f"/proc/{sleeper}").exists() or \
        Path(f"/proc/{sleeper}/stat").read_text().split()[2] == "Z"
    c.destroy()
