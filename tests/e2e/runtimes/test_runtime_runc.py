"""runc containers for real: image, namespaces, cpuset, exec, signals, teardown."""
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cnfperf.host.journal import Journal
from cnfperf.runtimes import ContainerError, Mount, RuncRuntime
from cnfperf.host.system import CommandFailed
from cnfperf.runtimes.runc import RUNC_ROOT
import harness
from cnfperf.host import cgroups, tools
from leak import assert_no_leftovers

pytestmark = [pytest.mark.e2e, pytest.mark.needs("runc", "busybox")]

CPU = max(os.sched_getaffinity(0))
PRINTER = 'trap "echo stopped; exit 0" INT; i=0; while :; do echo line $i; i=$((i+1)); sleep 0.1; done'


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("images")


@pytest.fixture
def runtime(tmp_path, engine, images):
    journal = Journal(tmp_path / "run.journal")
    rt = RuncRuntime(journal, tmp_path / "state", images_dir=images)
    rt.prepare(engine)
    yield rt
    journal.close(remove=False)


def runc_ids() -> set[str]:
    if not RUNC_ROOT.is_dir():
        return set()
    out = subprocess.run(["runc", "--root", str(RUNC_ROOT), "list", "-q"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def run(container, argv, timeout=10) -> str:
    proc = container.exec(argv)
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, (argv, err)
    return out.decode()


def test_image_built_once_with_engine_and_its_libraries(engine, images, tmp_path):
    rt = RuncRuntime(Journal(tmp_path / "j"), tmp_path, images_dir=images)
    first = rt.prepare(engine)
    again = rt.prepare(engine)
    assert again == first
    root = Path(first.path)
    assert (root / "bin/cnfperf-engine").read_bytes() == engine.read_bytes()
    assert (root / "bin/busybox").is_file()
    assert list(root.rglob("libc.so.6")) and list(root.rglob("ld-linux*"))
    du = int(subprocess.run(["du", "-sb", str(root)], capture_output=True, text=True,
                            check=True).stdout.split()[0])
    assert first.size_bytes == du
    # Only what the engine needs: far below a distribution image.
    assert first.size_bytes < 64 << 20


def test_container_isolated_pinned_and_torn_down(runtime, netns, prefix, tmp_path):
    share = tmp_path / "share"
    share.mkdir()
    (share / "hello").write_text("from the host\n")
    with assert_no_leftovers():
        c = runtime.create(f"{prefix}-c", [CPU], netns, [Mount(str(share), "/mnt/share", True)])
        try:
            cgroups = _inspect(c, runtime, netns, prefix)
        finally:
            c.destroy()
        c.destroy()
        assert c.name not in runc_ids()
        assert not (runtime.state_dir / "bundles" / c.name).exists()
        assert runtime.journal.live() == []
        assert cgroups and not [d for d in cgroups if d.exists()]
        subprocess.run(["ip", "netns", "del", netns], check=True)


def _inspect(c, runtime, netns, prefix):
    """What a container must look like from inside and from the host."""
    bundle = runtime.state_dir / "bundles" / c.name
    assert (bundle / "config.json").is_file()
    assert runtime.journal.live()[0].name == c.name
    assert c.name in runc_ids()

    status = run(c, ["cat", "/proc/self/status"])
    assert f"Cpus_allowed_list:\t{CPU}" in status.splitlines()

    # Own pid namespace: our init is pid 1 and host processes are invisible.
    assert "sleep" in run(c, ["cat", "/proc/1/cmdline"])
    pids = run(c, ["sh", "-c", "ls /proc | grep -c '^[0-9]'"])
    assert int(pids) < 10
    assert run(c, ["hostname"]).strip() == c.name
    inside = _pid_in(c)
    for ns in ("pid", "ipc", "uts", "mnt"):
        assert os.readlink(f"/proc/{inside}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}")
    assert os.readlink(f"/proc/{inside}/ns/user") == os.readlink("/proc/self/ns/user")

    # Joined the right network namespace: a link moved there is seen inside.
    assert os.readlink(f"/proc/{inside}/ns/net") == \
        f"net:[{os.stat(f'/var/run/netns/{netns}').st_ino}]"
    host_end, moved = f"{prefix}h", f"{prefix}m"
    subprocess.run(["ip", "link", "add", host_end, "type", "veth", "peer", "name", moved],
                   check=True)
    try:
        subprocess.run(["ip", "link", "set", moved, "netns", netns], check=True)
        assert moved in run(c, ["ip", "-o", "link"])
        assert host_end not in run(c, ["ip", "-o", "link"])
    finally:
        subprocess.run(["ip", "link", "del", host_end], check=True)

    assert run(c, ["cat", "/mnt/share/hello"]) == "from the host\n"
    for path in ("/bin/x", "/mnt/share/x"):
        proc = c.exec(["sh", "-c", f"echo x > {path}"])
        _, err = proc.communicate(timeout=10)
        assert proc.returncode != 0 and b"Read-only file system" in err, path

    # The loader finds every library the engine links inside the image.
    proc = c.exec([c.engine, "--cnfp-no-such-option"])
    _, err = proc.communicate(timeout=10)
    assert proc.returncode != 127 and b"error while loading shared" not in err
    return _cgroup_dirs(inside, c.name)


def _cgroup_dirs(pid: int, name: str) -> list[Path]:
    """The container's own cgroups; its cpuset holds exactly the planned core."""
    dirs, pinned = [], False
    v2 = Path("/sys/fs/cgroup/cgroup.controllers").exists()
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if not path.endswith("/" + name):
            continue
        for ctl in controllers.split(",") if controllers else [""]:
            mount = "" if v2 else (ctl.removeprefix("name=") or "unified")
            d = Path("/sys/fs/cgroup") / mount / path.lstrip("/")
            if (ctl == "cpuset" or v2) and (d / "cpuset.cpus").exists():
                assert (d / "cpuset.cpus").read_text().strip() == str(CPU)
                pinned = True
            if d.is_dir():
                dirs.append(d)
    assert pinned, "no cpuset cgroup of its own"
    return dirs


def _pid_in(container) -> int:
    """Host pid of the container's init, as runc reports it."""
    out = subprocess.run(["runc", "--root", str(RUNC_ROOT), "state", container.name],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["pid"]


def test_sigint_reaches_the_process_and_lines_arrive_unbuffered(runtime, netns, prefix):
    with assert_no_leftovers():
        c = runtime.create(f"{prefix}-c", [CPU], netns)
        try:
            proc = c.exec(["sh", "-c", PRINTER])
            stamps = []
            for i in range(3):
                assert proc.stdout.readline() == f"line {i}\n".encode()
                stamps.append(time.monotonic())
            # Each line arrives when it is printed, not when a buffer fills.
            assert 0.05 < stamps[2] - stamps[1] < 1.0
            proc.send_signal(signal.SIGINT)
            rest = proc.stdout.read().decode().splitlines()
            assert proc.wait(timeout=5) == 0
            assert rest[-1] == "stopped"
        finally:
            c.destroy()
        subprocess.run(["ip", "netns", "del", netns], check=True)


def test_lazy_container_starts_with_its_process_as_init(runtime, netns, prefix):
    """create(lazy=True) makes only the bundle; the first exec is the container's
    init (`runc run`: its cpuset, its cgroup, signals and unbuffered lines as
    through `runc exec`), one exec'd beside it joins it, and the container ends
    with its init; the next exec starts it again."""
    with assert_no_leftovers():
        c = runtime.create(f"{prefix}-c", [CPU], netns, lazy=True)
        try:
            assert c.name not in runc_ids() and c.init_pid is None
            assert runtime.journal.live()[0].name == c.name
            proc = c.exec(["sh", "-c", PRINTER])
            assert proc.stdout.readline() == b"line 0\n"
            assert c.name in runc_ids()
            assert c.init_pid == _pid_in(c)
            assert "while" in run(c, ["cat", "/proc/1/cmdline"])   # beside it: runc exec
            assert f"Cpus_allowed_list:\t{CPU}" in \
                Path(f"/proc/{c.init_pid}/status").read_text().splitlines()
            assert _cgroup_dirs(c.init_pid, c.name)
            proc.send_signal(signal.SIGINT)
            rest = proc.stdout.read().decode().splitlines()
            assert proc.wait(timeout=5) == 0 and rest[-1] == "stopped"
            assert c.name not in runc_ids() and c.init_pid is None
            # again, with an environment of its own; its exit code is the process's
            proc = c.exec(["sh", "-c", "echo $X; exit 3"], env={"X": "again"})
            out, _ = proc.communicate(timeout=10)
            assert (out, proc.returncode) == (b"again\n", 3)
            # a `runc run` killed outright leaves its container running: the next
            # start removes it first
            proc = c.exec(["sh", "-c", PRINTER])
            assert proc.stdout.readline() == b"line 0\n"
            proc.kill()
            proc.wait()
            assert run(c, ["hostname"]).strip() == c.name
        finally:
            c.destroy()
        assert c.name not in runc_ids()
        assert runtime.journal.live() == []
        subprocess.run(["ip", "netns", "del", netns], check=True)


def test_destroy_kills_running_processes(runtime, netns, prefix):
    with assert_no_leftovers():
        c = runtime.create(f"{prefix}-c", [CPU], netns)
        procs = [c.exec(["sleep", "600"]), c.exec(["sh", "-c", PRINTER])]
        assert procs[1].stdout.readline() == b"line 0\n"
        started = time.monotonic()
        c.destroy()
        assert all(p.poll() is not None for p in procs)
        assert time.monotonic() - started < 5
        subprocess.run(["ip", "netns", "del", netns], check=True)


def test_a_runc_killed_while_it_makes_the_container_leaves_no_cgroup(runtime, netns, prefix):
    """runc makes the container's cgroups before it saves its state: a runc
    killed in between (a ^C's teardown kills the `runc run` it waits for) leaves
    groups that `runc delete` does not know. destroy() removes them, with the
    half-made container's init waiting in them. A createRuntime hook holds runc
    at that step (the hook ends once runc is gone)."""
    with assert_no_leftovers():
        c = runtime.create(f"{prefix}-c", [CPU], netns, lazy=True)
        try:
            c.lazy["hooks"] = {"createRuntime": [{
                "path": "/bin/sh",
                "args": ["sh", "-c", "while kill -0 $PPID; do sleep 0.05; done"]}]}
            proc = c.exec(["sleep", "600"])
            groups = [parent / c.name for parent in cgroups.own_parents()]
            deadline = time.monotonic() + 10
            while not all(g.is_dir() for g in groups) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert all(g.is_dir() for g in groups), groups
            assert any(cgroups.procs(g) for g in groups), "no half-made container's init"
            proc.kill()
            proc.wait()
            assert c.name not in runc_ids()
        finally:
            c.destroy()
        assert not any(g.exists() for g in groups)
        subprocess.run(["ip", "netns", "del", netns], check=True)


def test_leftovers_of_a_killed_run_removed_by_prefix(engine, images, netns, prefix, tmp_path, killed_run):
    with assert_no_leftovers():
        run_dir = tmp_path / "killed"
        run_dir.mkdir()
        killed_run("RuncRuntime", run_dir, images, engine, prefix, netns, CPU)
        names = RuncRuntime.leftovers(prefix)
        assert names == [f"{prefix}-c0", f"{prefix}-c1"]
        assert RuncRuntime.leftovers(prefix + "zz") == []
        for name in names:
            RuncRuntime.remove(name)
            RuncRuntime.remove(name)  # already gone: no error
        assert RuncRuntime.leftovers(prefix) == []
        assert not (run_dir / "bundles" / names[0]).exists()
        _wait_orphans_reaped()
        subprocess.run(["ip", "netns", "del", netns], check=True)


def _wait_orphans_reaped(timeout=5):
    """runc processes orphaned by a kill (or by a failed `runc run`) exit at once but
    stay zombies until init reaps them; some inits (sandboxes) reap only now and then."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _orphaned_runc():
            return
        time.sleep(0.05)
    raise AssertionError(f"runc processes still around: {_orphaned_runc()}")


def _orphaned_runc() -> list[str]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            comm, rest = stat.read_text().rsplit(")", 1)
        except OSError:
            continue
        state, ppid = rest.split()[:2]
        if comm.split("(", 1)[1].startswith("runc") and ppid == "1":
            found.append(f"{stat.parent.name}:{comm}:{state}")
    return found


def test_failing_runc_undone_and_explained(runtime, prefix):
    fake = Path("/var/run/netns") / f"{prefix}-notns"
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text("")  # exists, but is no namespace: runc itself must refuse it
    try:
        with assert_no_leftovers():
            with pytest.raises(CommandFailed, match=r"runc run .* failed: .+"):
                runtime.create(f"{prefix}-c", [CPU], fake.name)
            _wait_orphans_reaped()
            assert f"{prefix}-c" not in runc_ids()
            assert not (runtime.state_dir / "bundles" / f"{prefix}-c").exists()
            assert runtime.journal.live() == []
    finally:
        fake.unlink()


def test_bad_input_refused_before_anything_exists(runtime, netns, prefix, tmp_path):
    with assert_no_leftovers():
        cases = [(dict(name="bad name"), "container name"),
                 (dict(cpus=[4096]), "cpus"),
                 (dict(netns=f"{prefix}-missing"), "netns"),
                 (dict(mounts=[Mount(str(tmp_path), "/opt/x")]), "mount target"),
                 (dict(mounts=[Mount(str(tmp_path / "nope"), "/mnt/x")]), "mount source")]
        for override, field in cases:
            args = dict(name=f"{prefix}-c", cpus=[CPU], netns=netns, mounts=())
            args.update(override)
            with pytest.raises(ValueError, match=field):
                runtime.create(**args)
        assert runtime.journal.live() == []
        assert not (runtime.state_dir / "bundles").exists()
        subprocess.run(["ip", "netns", "del", netns], check=True)


def test_exec_after_destroy_refused(runtime, netns, prefix):
    c = runtime.create(f"{prefix}-c", [CPU], netns)
    c.destroy()
    with pytest.raises(ContainerError, match="destroyed"):
        c.exec(["true"])


@pytest.mark.needs("dpdk-testpmd")
def test_dpdk_drivers_load_from_the_image(tmp_path, images, netns, prefix):
    """A DPDK binary's image holds the EAL plugin directory and what its drivers
    link: the EAL starts and opens vdev ports inside the container."""
    cpus = harness.cores(2)
    with assert_no_leftovers():
        rt = RuncRuntime(Journal(tmp_path / "j"), tmp_path / "state", images_dir=images)
        info = rt.prepare(Path(tools.find("dpdk-testpmd")))
        assert info.name == "busybox+engine+dpdk"
        assert list(Path(info.path).rglob("pmds-*/librte_net_memif.so"))
        c = rt.create(f"{prefix}-c", cpus, netns)
        try:
            # Interactive mode reads commands from stdin; at its end (DEVNULL) it
            # quits at once, so no core is left polling.
            proc = c.exec([c.engine, "-l", ",".join(map(str, cpus)), "--no-huge", "-m", "128",
                           "--no-pci", "--vdev", "net_memif0,role=server,socket=/run/m.sock",
                           "--vdev", "net_null0", "--", "-i", "--total-num-mbufs", "2048"])
            out, err = proc.communicate(timeout=60)
        finally:
            c.destroy()
        assert proc.returncode == 0, err.decode()[-2000:]
        assert b"Port 0 is closed" in out and b"Port 1 is closed" in out
        subprocess.run(["ip", "netns", "del", netns], check=True)


def test_an_image_declared_elsewhere_runs_as_its_declaration_says(images, netns, prefix,
                                                                   tmp_path):
    """An image runc never heard of (a made-up family's: a build's program,
    no shell, an idle init), built from its declaration alone: its container
    runs with the program as its init, what exec runs is that program, and
    nothing but it and its libraries is inside."""
    from cnfperf.runtimes import Image
    from cnfperf.host.builds import Build
    from cnfperf.runtimes.images import BUILD
    nap = Image("nap", "a test's", program=BUILD, build=Build("nap", "a test's", ("nap",)), path="/bin/nap", shell=False,
                idle=("2147483647",), budget_mb=16)
    program = tmp_path / "nap"    # the `nap` build's program: coreutils' sleep
    program.write_bytes(Path(os.path.realpath(shutil.which("sleep"))).read_bytes())
    program.chmod(0o755)
    with assert_no_leftovers():
        journal = Journal(tmp_path / "j")
        rt = RuncRuntime(journal, tmp_path / "state", images_dir=images)
        info = rt.prepare(program, nap)
        root = Path(info.path)
        assert info.name == "nap" and (root / "bin/nap").read_bytes() == program.read_bytes()
        assert not (root / "bin/busybox").exists() and list(root.rglob("libc.so.6"))
        c = rt.create(f"{prefix}-n", [CPU], netns, image=nap)
        try:
            assert c.engine == "/bin/nap"
            with open(f"/proc/{c.init_pid}/cmdline", "rb") as f:
                assert f.read().split(b"\0")[:2] == [b"/bin/nap", b"2147483647"]
            assert run(c, ["/bin/nap", "0"]) == ""
        finally:
            c.destroy()
        journal.close(remove=False)
