"""Where the noise goes and what it runs; its checks are in test_scenario_validation."""
from __future__ import annotations

from cnfperf.run import noise
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
