"""The podman runtime without podman: the container it asks for, the
configuration it writes, and a user's image as a network function (the
e2e tests run them: tests/e2e/runtimes/test_runtime_podman.py)."""
from __future__ import annotations

import json
import tomllib

import pytest

from cnfperf import UserError, nfs
from cnfperf.dataplanes.base import Attachment
from cnfperf.plan import place
from cnfperf.run.testbed import Builder
from cnfperf.runtimes import FULL, RUNTIMES, Mount, PodmanRuntime, Quota, podman
from cnfperf.scenario import Scenario
from harness import scenarios


def _argv(**kw) -> list[str]:
    args = dict(name="cnfp1a2b-c", ref="localhost/cnfperf-full:0123", cpus=[1, 2, 3],
                netns_path="/var/run/netns/cnfp1a2b-c", mounts=(),
                init=("/bin/sh", "-c", "sleep 1"))
    args.update(kw)
    return podman.run_argv(**args)


def _value(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_a_container_joins_its_netns_pinned_read_only_in_its_own_cgroup():
    argv = _argv()
    assert argv[:2] == ["run", "--detach"] and _value(argv, "--name") == ["cnfp1a2b-c"]
    assert _value(argv, "--network") == ["ns:/var/run/netns/cnfp1a2b-c"]
    assert _value(argv, "--cpuset-cpus") == ["1-3"]
    # cleanup finds its groups (and its conmon's) by its name
    assert _value(argv, "--cgroup-parent") == [f"{podman.CGROUP_PARENT}/cnfp1a2b-c"]
    assert "--read-only" in argv and "--cpu-quota" not in argv
    # the init: the image's entrypoint replaced, its arguments after the image
    assert json.loads(_value(argv, "--entrypoint")[0]) == ["/bin/sh"]
    assert argv[-3:] == ["localhost/cnfperf-full:0123", "-c", "sleep 1"]


def test_a_quota_capabilities_and_limits_as_runc_s():
    argv = _argv(quota=Quota(150, 50_000), caps=("CAP_NET_RAW", "CAP_SYS_RESOURCE"),
                 memlock=podman.oci.UNLIMITED, nofile=4096, tun=True)
    assert _value(argv, "--cpu-quota") == ["75000"] and _value(argv, "--cpu-period") == ["50000"]
    assert _value(argv, "--cap-drop") == ["all"]
    assert [a for a in argv if a.startswith("--cap-add")] == \
        ["--cap-add=CAP_NET_RAW", "--cap-add=CAP_SYS_RESOURCE"]
    assert _value(argv, "--ulimit") == ["memlock=-1:-1", "nofile=4096:4096"]
    # without the capability to raise them, the containers keep ours
    assert _value(_argv(caps=("CAP_NET_RAW",)), "--ulimit") == []
    assert _value(argv, "--device") == ["/dev/net/tun"]
    assert set(_value(argv, "--security-opt")) == {"seccomp=unconfined", "apparmor=unconfined"}


def test_mounts_are_binds_parents_first(tmp_path):
    (tmp_path / "a").mkdir()
    argv = _argv(mounts=(Mount(str(tmp_path / "a"), "/run/x/y", True),
                         Mount(str(tmp_path), "/run/x")))
    assert _value(argv, "--mount") == [
        f"type=bind,source={tmp_path},destination=/run/x",
        f"type=bind,source={tmp_path / 'a'},destination=/run/x/y,ro=true"]


def test_the_configuration_keeps_podman_s_state_where_cleanup_removes_it():
    conf = tomllib.loads(podman.CONTAINERS_CONF.format(run=podman.RUN_DIR))
    assert conf["containers"]["default_ulimits"] == []
    assert conf["engine"]["cgroup_manager"] == "cgroupfs"
    assert conf["engine"]["runtime"] == "runc"
    assert conf["engine"]["tmp_dir"].startswith(str(podman.RUN_DIR) + "/")
    storage = tomllib.loads(podman.STORAGE_CONF.format(
        store=podman.STORE, run=podman.RUN_DIR, extra=f'"{podman.USER_STORE}"'))
    assert storage["storage"]["graphroot"] == str(podman.STORE)
    assert storage["storage"]["runroot"].startswith(str(podman.RUN_DIR) + "/")
    # the user's images seen as they are, read-only
    assert storage["storage"]["options"]["additionalimagestores"] == [str(podman.USER_STORE)]


def test_a_user_image_runs_its_entrypoint_with_args_or_its_command(monkeypatch):
    monkeypatch.setattr(podman, "image_config", lambda ref: (("/nf", "-v"), ("--default",)))
    assert podman.command_of("x", ["--in", "a"]) == ["/nf", "-v", "--in", "a"]
    assert podman.command_of("x", []) == ["/nf", "-v", "--default"]
    monkeypatch.setattr(podman, "image_config", lambda ref: ((), ()))
    with pytest.raises(podman.ContainerError, match="no entrypoint nor command"):
        podman.command_of("x", [])


def test_create_before_prepare_is_refused(tmp_path):
    with pytest.raises(RuntimeError, match="before prepare"):
        PodmanRuntime(None, tmp_path).create("cnfp1", [0], "cnfp1", image=FULL)


# -- image:REF ARGS ----------------------------------------------------------------


def test_an_image_nf_names_its_image_and_runs_in_podman(tmp_path):
    archive = tmp_path / "nf.tar"
    kind = nfs.kind(f"image:{archive} --in {{iface1}} --out '{{iface2}}'")
    assert kind.runtime == "podman" in RUNTIMES
    assert kind.ref == str(archive) and kind.image("raw", list).name == str(archive)
    assert kind.image("raw", list).user
    s = Scenario(nfs=1, nf=kind.nf, nf_api="raw", api="raw")
    assert Builder.nf_runtime(s) == "podman"
    assert Builder.nf_runtime(Scenario(nfs=1, nf="l2", runtime="netns")) == "netns"
    assert nfs.kind("image:localhost/my-nf:1").args == ""


def test_an_image_nf_gets_its_ports(monkeypatch):
    monkeypatch.setattr(podman, "image_config", lambda ref: (("/usr/bin/nf",), ("--help",)))
    monkeypatch.setattr("cnfperf.nfs.image._present", lambda ref: True)
    [s] = scenarios(None, {"nfs": 1, "nf": "image:my-nf:2 -i {iface1} -o {iface2} -c {cpu}"})
    point = place(s, "1a2b", host_cpus=(0, 1), nf=nfs.kind(s.nf))
    [pair] = point.pairs
    [nf] = pair.nfs
    ports = [Attachment(mac=p.mac, iface=p.name) for p in nf.ports]
    cmd = nfs.kind(s.nf).command("localhost/my-nf:2", nf, ports, ("aa", "bb"), pair, s, ())
    assert cmd.argv == ["/usr/bin/nf", "-i", nf.ports[0].name, "-o", nf.ports[1].name,
                        "-c", str(nf.cpu)]
    assert not cmd.records


@pytest.mark.parametrize("nf,why", [
    ("image:", "image: needs an image"),
    ("image:my-nf {port1}", "names a DPDK port"),
    ("image:/surely/not/here.tar", "image archive /surely/not/here.tar: no such file"),
    ("image:localhost/surely-not-there:1", "image localhost/surely-not-there:1: not in podman's store"),
])
def test_a_bad_image_nf_is_one_line_naming_nf(nf, why, monkeypatch):
    monkeypatch.setattr("cnfperf.nfs.image._present", lambda ref: False)
    monkeypatch.setattr("cnfperf.host.tools.find", lambda name, *table: "/usr/bin/" + name)
    monkeypatch.setattr("os.geteuid", lambda: 0)    # podman is asked as root only
    with pytest.raises(UserError, match=why) as e:
        scenarios(None, {"nfs": 1, "nf": nf, "nf_api": "raw"})
    assert e.value.field == "nf" and "\n" not in str(e.value)


def test_a_switch_container_takes_a_runtime_with_cgroups():
    [s] = scenarios(None, {"switch": "testpmd", "api": "dpdk", "switch_in": "container",
                           "runtime": "podman"})
    assert s.runtime == "podman"
    with pytest.raises(UserError, match="needs runtime runc or podman, not netns"):
        scenarios(None, {"switch": "testpmd", "api": "dpdk", "switch_in": "container",
                         "runtime": "netns"})
