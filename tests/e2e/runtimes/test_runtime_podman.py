"""podman containers for real: cnfperf's images imported, namespaces, cpuset and
quota, exec with signals, teardown, a killed run's leftovers, a user's image."""
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cnfperf.host import cgroups
from cnfperf.host.journal import Journal
from cnfperf.host.system import CommandFailed
from cnfperf.runtimes import MINIMAL, Mount, PodmanRuntime, Quota, podman
from cnfperf.runtimes import user_image as user_image_of
import harness
from leak import assert_no_leftovers
from user_images import image_archive, user_image

pytestmark = [pytest.mark.e2e, pytest.mark.needs("podman", "conmon", "runc", "busybox")]

CPU = max(os.sched_getaffinity(0))
PRINTER = 'trap "echo stopped; exit 0" INT; i=0; while :; do echo line $i; i=$((i+1)); sleep 0.1; done'


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("images")


@pytest.fixture
def runtime(tmp_path, engine, images):
    journal = Journal(tmp_path / "run.journal")
    rt = PodmanRuntime(journal, tmp_path / "state", images_dir=images)
    rt.prepare(engine)
    yield rt
    journal.close(remove=False)


def run(container, argv, timeout=10) -> str:
    proc = container.exec(argv)
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, (argv, err)
    return out.decode()


def _groups(pid: int) -> dict[str, str]:
    return cgroups.parse_proc_cgroup(Path(f"/proc/{pid}/cgroup").read_text())


def test_an_image_is_imported_once_tagged_with_its_digest(engine, images, tmp_path):
    rt = PodmanRuntime(Journal(tmp_path / "j"), tmp_path, images_dir=images)
    first = rt.prepare(engine)
    started = time.monotonic()
    assert rt.prepare(engine) == first
    assert time.monotonic() - started < 5      # found, not imported again
    assert first.path.startswith(podman.IMAGE_REPO + "full:")
    assert podman.exists(first.path)
    assert not podman.RUN_DIR.exists()          # nothing of podman's stays between runs


def test_container_isolated_pinned_held_and_torn_down(runtime, netns, prefix, tmp_path):
    share = tmp_path / "share"
    share.mkdir()
    (share / "hello").write_text("from the host\n")
    with assert_no_leftovers():
        c = runtime.create(f"{prefix}-c", [CPU], netns, [Mount(str(share), "/mnt/share", True)],
                           quota=Quota(50))
        try:
            assert runtime.journal.live()[0].name == c.name
            assert f"Cpus_allowed_list:\t{CPU}" in run(c, ["cat", "/proc/self/status"])
            assert "sleep" in run(c, ["cat", "/proc/1/cmdline"])
            assert run(c, ["hostname"]).strip() == c.name
            inside = c.init_pid
            for ns in ("pid", "ipc", "uts", "mnt"):
                assert os.readlink(f"/proc/{inside}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}")
            assert os.readlink(f"/proc/{inside}/ns/net") == \
                f"net:[{os.stat(f'/var/run/netns/{netns}').st_ino}]"
            assert run(c, ["cat", "/mnt/share/hello"]) == "from the host\n"
            for path in ("/bin/x", "/mnt/share/x"):
                proc = c.exec(["sh", "-c", f"echo x > {path}"])
                _, err = proc.communicate(timeout=10)
                assert proc.returncode != 0 and b"Read-only file system" in err, path
            # The engine's libraries are in the image.
            proc = c.exec([c.engine, "--version"])
            out, err = proc.communicate(timeout=10)
            assert proc.returncode == 0 and b'"apis"' in out, err
            _held(c)
        finally:
            c.destroy()
        c.destroy()
        assert podman.cgroup_dirs(c.name) == []
        assert runtime.journal.live() == []
        subprocess.run(["ip", "netns", "del", netns], check=True)


def _held(c) -> None:
    """Its init and what exec started share one cgroup (cpu.py reads it through
    init_pid), under its parent, pinned and held to the quota; conmon is not in it."""
    layout = cgroups.layout()
    cpuacct = layout.controllers["cpuacct"]
    group = cgroups.group_of(c.init_pid, cpuacct)
    assert f"{podman.CGROUP_PARENT}/{c.name}/libpod-" in str(group)
    before = set(cgroups.procs(group))
    assert c.init_pid in before
    proc = c.exec(["sleep", "5"])
    try:
        time.sleep(0.3)
        assert len(set(cgroups.procs(group)) - before) == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(5)
    quota = cgroups.cfs_quota(layout)
    qgroup = cgroups.group_of(c.init_pid, quota)
    if quota.version == 1:
        assert (qgroup / "cpu.cfs_quota_us").read_text().split() == ["50000"]
    else:
        assert (qgroup / "cpu.max").read_text().split() == ["50000", "100000"]
    cpuset = cgroups.group_of(c.init_pid, layout.controllers["cpuset"])
    assert (cpuset / "cpuset.cpus").read_text().strip() == str(CPU)


def test_sigint_reaches_the_process_and_lines_arrive_unbuffered(runtime, netns, prefix):
    with assert_no_leftovers():
        c = runtime.create(f"{prefix}-c", [CPU], netns)
        try:
            proc = c.exec(["sh", "-c", PRINTER])
            stamps = []
            for i in range(3):
                assert proc.stdout.readline() == f"line {i}\n".encode()
                stamps.append(time.monotonic())
            assert 0.05 < stamps[2] - stamps[1] < 1.0
            proc.send_signal(signal.SIGINT)
            rest = proc.stdout.read().decode().splitlines()
            assert proc.wait(timeout=5) == 0
            assert rest[-1] == "stopped"
            term = c.exec(["sleep", "600"])
            time.sleep(0.3)
            term.send_signal(signal.SIGTERM)
            assert term.wait(timeout=5) == -signal.SIGTERM or term.returncode == 143
        finally:
            c.destroy()
        subprocess.run(["ip", "netns", "del", netns], check=True)


def test_the_minimal_image_runs_the_static_engine_as_its_init(engine, images, netns, prefix,
                                                              tmp_path):
    static = engine.with_name("cnfperf-engine-static")
    if not static.exists():
        harness.missing("no static engine (make build makes it)")
    with assert_no_leftovers():
        rt = PodmanRuntime(Journal(tmp_path / "j"), tmp_path / "state", images_dir=images)
        rt.prepare(static, MINIMAL)
        c = rt.create(f"{prefix}-m", [CPU], netns, image=MINIMAL)
        try:
            assert "--idle" in Path(f"/proc/{c.init_pid}/cmdline").read_text()
            out = run(c, [c.engine, "--version"])
            assert '"apis"' in out
        finally:
            c.destroy()
        subprocess.run(["ip", "netns", "del", netns], check=True)



def test_leftovers_of_a_killed_run_removed_by_prefix(engine, images, netns, prefix, tmp_path, killed_run):
    with assert_no_leftovers():
        run_dir = tmp_path / "killed"
        run_dir.mkdir()
        killed_run("PodmanRuntime", run_dir, images, engine, prefix, netns, CPU)
        names = PodmanRuntime.leftovers(prefix)
        assert names == [f"{prefix}-c0", f"{prefix}-c1"]
        assert PodmanRuntime.leftovers(prefix + "zz") == []
        assert podman.cgroup_dirs(names[0])
        for name in names:
            PodmanRuntime.remove(name)
            PodmanRuntime.remove(name)  # already gone: no error
        assert PodmanRuntime.leftovers(prefix) == []
        assert not podman.RUN_DIR.exists()
        _wait_gone("runc", "conmon")
        subprocess.run(["ip", "netns", "del", netns], check=True)


def _wait_gone(*comms: str, timeout: float = 5) -> None:
    """Processes orphaned by the kill exit at once but stay zombies until init reaps them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _orphans(comms):
            return
        time.sleep(0.05)
    raise AssertionError(f"still around: {_orphans(comms)}")


def _orphans(comms) -> list[str]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            comm, rest = stat.read_text().rsplit(")", 1)
        except OSError:
            continue
        if comm.split("(", 1)[1].startswith(comms) and rest.split()[1] == "1" and \
                rest.split()[0] != "Z":
            found.append(f"{stat.parent.name}:{comm}")
    return found


def test_bad_input_refused_before_anything_exists(runtime, netns, prefix, tmp_path):
    with assert_no_leftovers():
        for override, field in [(dict(name="bad name"), "container name"),
                                (dict(cpus=[4096]), "cpus"),
                                (dict(netns=f"{prefix}-missing"), "netns"),
                                (dict(mounts=[Mount(str(tmp_path / "nope"), "/mnt/x")]),
                                 "mount source")]:
            args = dict(name=f"{prefix}-c", cpus=[CPU], netns=netns, mounts=())
            args.update(override)
            with pytest.raises(ValueError, match=field):
                runtime.create(**args)
        assert runtime.journal.live() == []
        subprocess.run(["ip", "netns", "del", netns], check=True)


def test_a_user_image_from_podman_s_store_or_an_archive(engine, netns, prefix, tmp_path):
    """Built with `podman build` into podman's default store, it is seen as it
    is; saved to an archive, it is loaded into cnfperf's. Its container lives on
    cnfperf's BusyBox; what exec runs is its entrypoint with the given args."""
    with assert_no_leftovers():
        rt = PodmanRuntime(Journal(tmp_path / "j"), tmp_path / "state")
        with user_image() as ref, image_archive(tmp_path) as archive:
            for image, name in ((ref, ref), (str(archive), "localhost/cnfperf-test-nf:archived")):
                info = rt.prepare(engine, user_image_of(image))
                assert info.name == name and info.size_bytes > 0
                c = rt.create(f"{prefix}-u", [CPU], netns, image=user_image_of(image))
                try:
                    assert c.engine == name
                    proc = c.exec(podman.command_of(c.engine, ["--version"]))
                    out, err = proc.communicate(timeout=10)
                    assert proc.returncode == 0 and b'"nfs"' in out, err
                finally:
                    c.destroy()
        with pytest.raises(podman.ContainerError, match="not in podman's store"):
            rt.prepare(engine, user_image_of("localhost/cnfperf-surely-absent:1"))
        subprocess.run(["ip", "netns", "del", netns], check=True)


def test_a_failing_podman_run_is_undone_and_explained(runtime, prefix):
    fake = Path("/var/run/netns") / f"{prefix}-notns"
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text("")  # exists, but is no namespace: podman (runc) itself must refuse it
    try:
        with assert_no_leftovers():
            with pytest.raises(CommandFailed, match=r"podman run .* failed: .+"):
                runtime.create(f"{prefix}-c", [CPU], fake.name)
            assert runtime.journal.live() == []
            assert podman.cgroup_dirs(f"{prefix}-c") == []
    finally:
        fake.unlink()
