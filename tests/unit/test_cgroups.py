"""Control groups on fake trees: the version, which controllers cnfperf can use
and where, a process's group, and a group's CPU time in both versions."""
from __future__ import annotations

import pytest

from cnfperf.host import cgroups, facts as host
from cnfperf.host.system import USER_HZ, Mounted


def _v1(tmp_path, *names: str, files: tuple[str, ...] = ()) -> list[Mounted]:
    """One v1 hierarchy per name (`cpu,cpuacct` co-mounts), each with `files`."""
    table = []
    for name in names:
        mount = tmp_path / name
        mount.mkdir()
        for f in files:
            (mount / f).write_text("0\n")
        table.append(Mounted("cgroup", str(mount), "cgroup", f"rw,nosuid,relatime,{name}"))
    return table


def _v2(tmp_path, controllers: str) -> Mounted:
    mount = tmp_path / "unified"
    mount.mkdir()
    (mount / "cgroup.controllers").write_text(controllers + "\n")
    return Mounted("cgroup2", str(mount), "cgroup2", "rw,nosuid,relatime")


V1_FILES = ("cpuset.cpus", "cpu.cfs_quota_us", "cpu.cfs_period_us", "cpuacct.usage_user",
            "cpuacct.usage_sys")


def test_v1_controllers_each_at_their_mount(tmp_path):
    table = _v1(tmp_path, "cpuset", "cpu,cpuacct", files=V1_FILES)
    found = cgroups.layout(table)
    assert found.version == "v1" and not found.missing
    assert found.controllers["cpuset"].mount == str(tmp_path / "cpuset")
    assert found.controllers["cpuacct"].mount == str(tmp_path / "cpu,cpuacct")
    quota = cgroups.cfs_quota(found)
    assert (quota.version, quota.mount, quota.files) == \
        (1, str(tmp_path / "cpu,cpuacct"), ("cpu.cfs_quota_us", "cpu.cfs_period_us"))


def test_hybrid_keeps_v1_controllers_and_reads_cpuacct_stat_without_usage_files(tmp_path):
    table = [*_v1(tmp_path, "cpuset", "cpuacct", files=("cpuset.cpus", "cpuacct.stat")),
             _v2(tmp_path, "")]
    found = cgroups.layout(table)
    assert found.version == "hybrid"
    assert found.controllers["cpuacct"].files == ("cpuacct.stat",)
    assert found.missing == {"cpu": "in no mounted hierarchy"}
    assert cgroups.cfs_quota(found) is None


def test_v1_cpu_without_cfs_files_cannot_set_quotas(tmp_path):
    found = cgroups.layout(_v1(tmp_path, "cpu", files=("cpu.shares",)))
    assert found.missing["cpu"] == f"{tmp_path / 'cpu'} has no cpu.cfs_quota_us nor cpu.cfs_period_us"


def test_v2_has_what_its_root_lists_and_cpu_stat_always(tmp_path):
    found = cgroups.layout([_v2(tmp_path, "cpuset cpu io memory pids")])
    assert found.version == "v2" and not found.missing
    assert cgroups.cfs_quota(found).files == ("cpu.max",)
    assert found.controllers["cpuacct"] == cgroups.Controller("cpuacct", 2, str(tmp_path / "unified"),
                                                              ("cpu.stat",))
    (tmp_path / "unified" / "cgroup.controllers").write_text("memory\n")
    bare = cgroups.layout([Mounted("cgroup2", str(tmp_path / "unified"), "cgroup2", "rw")])
    assert set(bare.missing) == {"cpuset", "cpu"} and "cpuacct" in bare.controllers


def test_no_cgroups_at_all():
    found = cgroups.layout([Mounted("proc", "/proc", "proc", "rw")])
    assert found.version == "none" and not found.controllers and len(found.missing) == 3


def test_a_process_group_in_either_version(tmp_path):
    text = "12:cpu,cpuacct:/user.slice/cnfp1a2bp0s\n3:cpuset:/cnfp1a2bp0s\n0::/sys.slice/x\n"
    assert cgroups.parse_proc_cgroup(text) == {"cpu": "/user.slice/cnfp1a2bp0s",
                                               "cpuacct": "/user.slice/cnfp1a2bp0s",
                                               "cpuset": "/cnfp1a2bp0s", "": "/sys.slice/x"}
    (tmp_path / "proc" / "42").mkdir(parents=True)
    (tmp_path / "proc" / "42" / "cgroup").write_text(text)
    v1 = cgroups.Controller("cpuacct", 1, str(tmp_path / "acct"), ())
    v2 = cgroups.Controller("cpuacct", 2, str(tmp_path / "unified"), ())
    assert cgroups.group_of(42, v1, tmp_path / "proc") == tmp_path / "acct/user.slice/cnfp1a2bp0s"
    assert cgroups.group_of(42, v2, tmp_path / "proc") == tmp_path / "unified/sys.slice/x"


def test_where_a_relative_group_lands_in_each_hierarchy(tmp_path):
    """runc nests a container's group under its own in every hierarchy, v1's
    named ones (name=systemd) and a hybrid host's v2 mount too."""
    table = [*_v1(tmp_path, "cpu,cpuacct", "memory"),
             Mounted("cgroup", str(tmp_path / "systemd"), "cgroup", "rw,xattr,name=systemd"),
             Mounted("cgroup2", str(tmp_path / "unified"), "cgroup2", "rw"),
             Mounted("proc", "/proc", "proc", "rw")]
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "cgroup").write_text(
        "4:memory:/sandbox/abc\n3:cpu,cpuacct:/\n1:name=systemd:/\n0::/\n")
    assert cgroups.own_parents(table, tmp_path / "proc") == [
        tmp_path / "cpu,cpuacct", tmp_path / "memory/sandbox/abc", tmp_path / "systemd",
        tmp_path / "unified"]
    assert cgroups.own_parents(table, tmp_path / "none") == []


def test_removing_groups_deepest_first_and_twice(tmp_path):
    top = tmp_path / "cnfp1a2bp0s"
    (top / "child").mkdir(parents=True)
    assert cgroups.tree(top) == [top / "child", top]
    assert cgroups.remove(cgroups.tree(top)) == [] and not top.exists()
    assert cgroups.tree(top) == [] and cgroups.remove([top]) == []


def test_cpu_times_from_each_file(tmp_path):
    usage = tmp_path / "usage"
    usage.mkdir()
    (usage / "cpuacct.usage_user").write_text("1500000000\n")
    (usage / "cpuacct.usage_sys").write_text("250000000\n")
    (usage / "cpuacct.stat").write_text("user 999\nsystem 999\n")   # the ns files win
    assert cgroups.cpu_times(usage) == (1.5, 0.25)
    ticks = tmp_path / "ticks"
    ticks.mkdir()
    (ticks / "cpuacct.stat").write_text(f"user {3 * USER_HZ}\nsystem {USER_HZ // 2}\n")
    assert cgroups.cpu_times(ticks) == pytest.approx((3.0, 0.5))
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cpu.stat").write_text("usage_usec 2750000\nuser_usec 2000000\nsystem_usec 750000\n"
                                 "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n")
    (v2 / "cgroup.procs").write_text("7\n9\n")
    assert cgroups.cpu_times(v2) == (2.0, 0.75) and cgroups.procs(v2) == [7, 9]
    with pytest.raises(OSError):
        cgroups.cpu_times(tmp_path)


def test_doctor_says_the_version_and_where_each_controller_is(tmp_path):
    layout = cgroups.layout([*_v1(tmp_path, "cpuset", "cpuacct",
                                  files=("cpuset.cpus", "cpuacct.stat")), _v2(tmp_path, "")])
    rows = dict(host._cgroups(layout.to_dict()))
    assert rows["cgroups"].startswith("hybrid")
    assert rows["cgroup cpuset"].startswith(f"v1 at {tmp_path / 'cpuset'} (cpuset.cpus)")
    assert rows["cgroup cpu"] == "unusable: in no mounted hierarchy (no CFS quotas)"
    assert rows["cgroup cpuacct"].startswith(f"v1 at {tmp_path / 'cpuacct'} (cpuacct.stat)")


def test_this_host_has_a_version():
    assert cgroups.layout().version in ("v1", "v2", "hybrid", "none")
