"""config.json for an engine container: isolation, pinning, mounts, capabilities."""
import pytest

from cnfperf.runtimes import oci
from cnfperf.runtimes.base import Mount


def make(**kw):
    args = dict(name="cnfp1-pair0-tx", rootfs="/images/abc/rootfs", cpus=[1, 2, 3, 6],
                netns_path="/var/run/netns/cnfp1-pair0-tx")
    args.update(kw)
    return oci.config(**args)


def test_own_namespaces_and_joined_network():
    ns = make()["linux"]["namespaces"]
    assert {n["type"] for n in ns} == {"pid", "ipc", "uts", "mount", "network"}
    assert [n.get("path") for n in ns if n["type"] == "network"] == \
        ["/var/run/netns/cnfp1-pair0-tx"]
    # Only the network namespace is joined; the others are new for this container.
    assert all("path" not in n for n in ns if n["type"] != "network")


def test_no_user_namespace():
    cfg = make()
    assert "user" not in {n["type"] for n in cfg["linux"]["namespaces"]}
    assert "uidMappings" not in cfg["linux"]
    assert cfg["process"]["user"] == {"uid": 0, "gid": 0}


def test_cpuset_is_the_planned_cores_in_kernel_list_format():
    assert make()["linux"]["resources"]["cpu"] == {"cpus": "1-3,6"}
    assert make(cpus=[1])["linux"]["resources"]["cpu"] == {"cpus": "1"}


def test_a_quota_is_a_share_of_one_core_per_period():
    from cnfperf.runtimes import Quota
    cpu = make(cpus=[1], quota=Quota(25, 100_000))["linux"]["resources"]["cpu"]
    assert cpu == {"cpus": "1", "quota": 25_000, "period": 100_000}
    assert Quota(12.5, 10_000).quota_us == 1250
    with pytest.raises(ValueError, match="the kernel's least is 1000 µs"):
        Quota(1, 10_000).check(1)      # 100 µs a period: refused, not rounded up
    assert Quota(200, 50_000).quota_us == 100_000          # two cores' worth
    assert Quota.of(None, 100_000) is None
    Quota(200, 100_000).check(2)
    with pytest.raises(ValueError, match="at most 100 × its 1 core"):
        Quota(150, 100_000).check(1)


def test_rootfs_read_only_and_hostname_is_the_name():
    cfg = make()
    assert cfg["root"] == {"path": "/images/abc/rootfs", "readonly": True}
    assert cfg["hostname"] == "cnfp1-pair0-tx"


def test_cgroup_path_is_relative_so_it_nests_under_ours():
    path = make()["linux"]["cgroupsPath"]
    assert path == "cnfp1-pair0-tx" and not path.startswith("/")


def test_bind_mounts_follow_the_scratch_mounts_parents_first():
    mounts = [Mount("/run/cnfp/sock", "/run/sockets/a", readonly=False),
              Mount("/dev/hugepages", "/dev/hugepages"),
              Mount("/srv/data", "/mnt/data", readonly=True)]
    cfg = make(mounts=mounts)["mounts"]
    targets = [m["destination"] for m in cfg]
    for scratch in ("/proc", "/dev", "/sys", "/run", "/tmp", "/mnt"):
        assert scratch in targets
    binds = [m for m in cfg if m["type"] == "bind"]
    assert [b["destination"] for b in binds] == ["/dev/hugepages", "/mnt/data", "/run/sockets/a"]
    assert all(targets.index(b["destination"]) > targets.index("/run") for b in binds)
    ro = {b["destination"]: "ro" in b["options"] for b in binds}
    assert ro == {"/dev/hugepages": False, "/mnt/data": True, "/run/sockets/a": False}
    assert all("rbind" in b["options"] for b in binds)


def test_sysfs_read_only_and_proc_sys_protected():
    cfg = make()
    sysfs = next(m for m in cfg["mounts"] if m["destination"] == "/sys")
    assert "ro" in sysfs["options"]
    assert "/proc/sys" in cfg["linux"]["readonlyPaths"]
    assert "/proc/kcore" in cfg["linux"]["maskedPaths"]


def test_capabilities_the_engine_needs_in_every_set():
    caps = make()["process"]["capabilities"]
    needed = {"CAP_NET_RAW", "CAP_NET_ADMIN", "CAP_IPC_LOCK", "CAP_SYS_ADMIN",
              "CAP_SYS_NICE", "CAP_SYS_RESOURCE"}
    for kind in ("bounding", "effective", "permitted", "ambient"):
        assert needed <= set(caps[kind]), kind


def test_capabilities_limited_to_those_given():
    caps = make(caps=["CAP_NET_RAW"])["process"]["capabilities"]
    assert caps["bounding"] == ["CAP_NET_RAW"] == caps["effective"]


def test_memlock_unlimited_by_default_and_no_new_privileges():
    proc = make()["process"]
    memlock = next(r for r in proc["rlimits"] if r["type"] == "RLIMIT_MEMLOCK")
    assert memlock["soft"] == memlock["hard"] == 2**64 - 1
    assert proc["noNewPrivileges"] is True
    assert proc["terminal"] is False


def test_memlock_and_nofile_as_given():
    rl = {r["type"]: r for r in make(memlock=8 << 20, nofile=1024)["process"]["rlimits"]}
    assert rl["RLIMIT_MEMLOCK"]["hard"] == 8 << 20
    assert rl["RLIMIT_NOFILE"]["soft"] == 1024


def test_init_survives_only_until_sigterm():
    args = make()["process"]["args"]
    assert args[:2] == ["/bin/sh", "-c"] and "trap 'exit 0' TERM" in args[2]


def test_the_minimal_image_runs_its_engine_as_init():
    from cnfperf.runtimes import rootfs
    args = make(init=rootfs.ENGINE_INIT)["process"]["args"]
    assert args == ["/bin/cnfperf-engine-static", "--idle"]


def test_devices_denied_except_tun_when_asked():
    res = make()["linux"]["resources"]["devices"]
    assert res == [{"allow": False, "access": "rwm"}]
    cfg = make(tun=True)["linux"]
    assert cfg["devices"][0]["path"] == "/dev/net/tun"
    assert {"allow": True, "type": "c", "major": 10, "minor": 200, "access": "rwm"} in \
        cfg["resources"]["devices"]


@pytest.mark.parametrize("target", ["/dev/hugepages", "/run/sock/x.sock", "/tmp/a",
                                    "/mnt/b", "/var/run/vhost/a.sock", "/sys/fs/bpf"])
def test_targets_in_scratch_dirs_accepted(tmp_path, target):
    oci.check_targets([Mount("/", target)], str(tmp_path))


@pytest.mark.parametrize("target", ["/opt/x", "/etc/foo", "/run", "/var/lib/x", "/bin/sh2"])
def test_targets_that_would_change_the_image_refused(tmp_path, target):
    with pytest.raises(ValueError, match="mount target"):
        oci.check_targets([Mount("/", target)], str(tmp_path))


def test_target_existing_in_image_accepted(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/hosts").write_text("")
    oci.check_targets([Mount("/etc/hosts", "/etc/hosts")], str(tmp_path))


def test_held_capabilities_are_a_subset_of_ours():
    assert set(oci.held_capabilities()) <= set(oci.CAPABILITIES)


def test_host_settings_never_ask_above_our_hard_limits():
    import resource
    s = oci.host_settings()
    for res, key in ((resource.RLIMIT_MEMLOCK, "memlock"), (resource.RLIMIT_NOFILE, "nofile")):
        hard = resource.getrlimit(res)[1]
        if hard != resource.RLIM_INFINITY and "CAP_SYS_RESOURCE" not in s["caps"]:
            assert s[key] <= hard
