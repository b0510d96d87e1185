"""The vm runtime without root or QEMU: the initramfs it packs, the NICs it
describes to the guest and to QEMU, and the exec relay's protocol against the
guest's exec server (run here on a unix socket instead of a virtio port)."""
from __future__ import annotations

import gzip
import lzma
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cnfperf.runtimes import CONTAINER_RUNTIMES, RUNTIMES, ContainerError, Nic, VmRuntime
from cnfperf.runtimes.vm import cpio, exec as relay, frames, guest, nics, ports, program, qemu, server

REPO = Path(__file__).resolve().parents[2]


# -- the initramfs -------------------------------------------------------------

def read_newc(archive: bytes) -> dict[str, dict]:
    """The entries of a newc archive, read as the kernel does (header, name,
    data, each padded to 4 bytes); fails on anything malformed."""
    found, at = {}, 0
    while True:
        assert archive[at:at + 6] == b"070701", f"bad magic at {at}"
        fields = [int(archive[at + 6 + 8 * i:at + 14 + 8 * i], 16) for i in range(13)]
        ino, mode, uid, gid, nlink, mtime, size, _, _, rmajor, rminor, namesize, check = fields
        name_at = at + 110
        name = archive[name_at:name_at + namesize]
        assert name.endswith(b"\0") and b"\0" not in name[:-1]
        data_at = name_at + namesize + (-(110 + namesize) % 4)
        assert data_at % 4 == 0
        data = archive[data_at:data_at + size]
        at = data_at + size + (-size % 4)
        name = name[:-1].decode()
        if name == cpio.TRAILER:
            assert at == len(archive)
            return found
        assert (uid, gid, mtime, check) == (0, 0, 0, 0)
        found[name] = {"mode": mode, "data": data, "ino": ino, "nlink": nlink,
                       "rdev": (rmajor, rminor)}


def test_newc_archive_read_back():
    entries = [cpio.directory("bin"), cpio.file("bin/busybox", b"\x7fELF" + b"x" * 5, 0o755),
               cpio.symlink("bin/sh", "busybox"), cpio.char_device("dev/console", 5, 1),
               cpio.file("init", b"#!/bin/sh\n", 0o755), cpio.file("e", b"")]
    found = read_newc(cpio.pack(entries))
    assert list(found) == ["bin", "bin/busybox", "bin/sh", "dev/console", "init", "e"]
    assert stat.S_ISDIR(found["bin"]["mode"]) and found["bin"]["nlink"] == 2
    assert found["bin/busybox"]["mode"] == stat.S_IFREG | 0o755
    assert found["bin/busybox"]["data"] == b"\x7fELFxxxxx"
    assert stat.S_ISLNK(found["bin/sh"]["mode"]) and found["bin/sh"]["data"] == b"busybox"
    assert stat.S_ISCHR(found["dev/console"]["mode"]) and found["dev/console"]["rdev"] == (5, 1)
    assert len({e["ino"] for e in found.values()}) == len(found)
    assert cpio.pack(entries) == cpio.pack(entries)      # same input, same bytes
    assert gzip.decompress(cpio.compress(cpio.pack(entries))) == cpio.pack(entries)


def test_initramfs_holds_init_busybox_modules_and_exec_server():
    modules = {"virtio": b"mod-a", "virtio_net": b"mod-b"}
    groups = {"base": ["virtio"], "net": ["virtio_net"], "dpdk": []}
    found = read_newc(gzip.decompress(guest.initramfs(modules, groups, b"BUSYBOX")))
    assert found["init"]["data"].startswith(b"#!/bin/sh\n")
    assert found["init"]["mode"] & 0o111
    assert found["bin/busybox"]["data"] == b"BUSYBOX" and found["bin/sh"]["data"] == b"busybox"
    assert found["lib/modules/virtio_net.ko"]["data"] == b"mod-b"
    assert found["etc/modules.net"]["data"] == b"virtio_net virtio_net.ko\n"
    assert found["etc/modules.dpdk"]["data"] == b""
    assert found["exec/server.py"]["data"] == (REPO / "cnfperf/runtimes/vm/server.py").read_bytes()
    assert "exec/frames.py" in found
    # every directory comes before what it holds
    names = list(found)
    for name in names:
        if "/" in name:
            assert names.index(name.rsplit("/", 1)[0]) < names.index(name)


def test_modules_in_dependency_order_built_in_ones_left_out():
    info = {"virtio_net": b"\0depends=virtio_ring,virtio,net_failover\0",
            "net_failover": b"\0depends=failover\0", "failover": b"\0depends=\0",
            "virtio": b"\0depends=virtio_ring\0", "virtio_ring": b"\0depends=\0",
            "9p": b"x\0depends=9pnet,netfs\0vermagic=6.1", "9pnet": b"\0depends=\0"}
    files = {n: Path(f"/m/{n}.ko") for n in info}
    order = guest.load_order(("virtio_net", "9p"), files, {"netfs"}, lambda p: info[p.stem])
    assert order == ["virtio_ring", "virtio", "failover", "net_failover", "virtio_net", "9pnet", "9p"]
    with pytest.raises(ContainerError, match="9pnet: not found"):
        guest.load_order(("9p",), {"9p": files["9p"]}, {"netfs"}, lambda p: info[p.stem])


def test_module_names_and_kernels(tmp_path):
    assert guest.module_name(Path("x/9pnet_virtio.ko")) == "9pnet_virtio"
    assert guest.module_name(Path("x/virtio-rng.ko.xz")) == "virtio_rng"
    boot, mods = tmp_path / "boot", tmp_path / "modules"
    for version, with_modules in (("6.1.0-9-amd64", True), ("6.1.0-10-amd64", True),
                                  ("6.5.0-1-amd64", False), ("6.9.0-1-cloud-amd64", True),
                                  ("6.9.0-custom", True)):
        (boot / f"vmlinuz-{version}").parent.mkdir(exist_ok=True)
        (boot / f"vmlinuz-{version}").write_bytes(b"k")
        if with_modules:
            (mods / version / "kernel").mkdir(parents=True)
    assert guest.find_kernel(boot, mods).version == "6.1.0-10-amd64"
    assert guest.find_kernel(tmp_path / "none", mods) is None
    for version in ("6.1.0-9-amd64", "6.1.0-10-amd64"):
        (boot / f"vmlinuz-{version}").unlink()
    assert guest.find_kernel(boot, mods).version == "6.9.0-custom"   # none generic: the newest
    # the one linux-image-amd64 depends on, where it is there; the lab's: the newest since
    assert guest.find_kernel(boot, mods, preferred="6.9.0-1-cloud-amd64").version == \
        "6.9.0-1-cloud-amd64"
    assert guest.find_kernel(boot, mods, preferred="6.0.0-1-amd64").version == "6.9.0-custom"
    assert guest.find_kernel(boot, mods, since=(6, 9)).version == "6.9.0-custom"
    assert guest.find_kernel(boot, mods, since=(6, 12)) is None


def test_vmlinux_out_of_an_xz_bzimage():
    elf = b"\x7fELF" + bytes(range(256)) * 64
    bzimage = b"MZ setup code " * 100 + lzma.compress(elf, format=lzma.FORMAT_XZ) + b"\0" * 64
    assert guest.vmlinux(bzimage) == elf
    assert guest.vmlinux(b"MZ gzip inside \x1f\x8b\x08") is None


# -- NICs ----------------------------------------------------------------------

TAP = Nic(mac="52:54:00:00:00:01", name="p0", tap="cnfpt0")
MACVTAP = Nic(mac="52:54:00:00:00:02", name="p1", mtu=9000, tap="cnfpmv0", netns="cnfpsw",
              macvtap=True)
VHOST = Nic(mac="52:54:00:00:00:03", name="p2", dpdk=True, socket="/run/cnfperf/x/v0.sock")
VHOST_SERVER = Nic(mac="52:54:00:00:00:04", name="p3", dpdk=True, socket="/run/x/v1.sock",
                   server=True)


def test_nics_described_to_init_by_slot():
    assert nics.describe([TAP, MACVTAP, VHOST]) == \
        "08/52:54:00:00:00:01/p0/1500/k,09/52:54:00:00:00:02/p1/9000/k,0a/52:54:00:00:00:03/p2/1500/d"
    assert nics.pci(0) == "0000:00:08.0" and nics.pci(2) == "0000:00:0a.0"


@pytest.mark.parametrize("nic,why", [
    (Nic(mac="52:54:00:00:00:01", name="p0"), "one of tap and socket"),
    (Nic(mac="52:54:00:00:00:01", name="p0", tap="t", socket="/s"), "one of tap and socket"),
    (Nic(mac="52:54:00:00:00:01", name="p0", socket="/s"), "QEMU 7.2 crashes"),
    (Nic(mac="53:54:00:00:00:01", name="p0", tap="t"), "unicast"),
    (Nic(mac="52:54:00:00:01", name="p0", tap="t"), "unicast"),
    (Nic(mac="52:54:00:00:00:01", name="a-name-too-long-x", tap="t"), "name"),
    (Nic(mac="52:54:00:00:00:01", name="p0", tap="t", mtu=40), "mtu"),
    (Nic(mac="52:54:00:00:00:01", name="p0", tap="t", server=True), "server"),
    (Nic(mac="52:54:00:00:00:01", name="p0", dpdk=True, socket="/s", macvtap=True), "macvtap"),
    (Nic(mac="52:54:00:00:00:01", name="p0", dpdk=True, socket="s"), "absolute"),
])
def test_bad_nics_refused(nic, why):
    with pytest.raises(ValueError, match=why):
        nics.check([nic])


IGB = Nic(mac="52:54:00:00:00:05", name="pf0", tap="cnfpt5", model="igb")


def test_an_igb_nic_sits_behind_a_pcie_root_port_and_init_loads_its_drivers(tmp_path):
    assert nics.describe([TAP, IGB]).endswith(",09/52:54:00:00:00:05/pf0/1500/i")
    argv = qemu.argv(["qemu"], spec(tmp_path, [TAP, IGB], {0: 7, 1: 9}))
    devices = option(argv, "-device")
    port = devices.index("pcie-root-port,id=port1,bus=pcie.0,chassis=2,addr=0x9")
    assert devices[port + 1] == "igb,bus=port1,netdev=net1,mac=52:54:00:00:00:05,romfile="
    assert "tap,id=net1,fd=9,vhost=off" in option(argv, "-netdev")
    assert "igbvf" in guest.GROUPS["igb"]


@pytest.mark.parametrize("nic,why", [
    (Nic(mac="52:54:00:00:00:01", name="p0", tap="t", model="e1000"), "model"),
    (Nic(mac="52:54:00:00:00:01", name="p0", tap="t", model="igb", dpdk=True), "igb"),
    (Nic(mac="52:54:00:00:00:01", name="p0", socket="/s", model="igb", dpdk=True), "igb"),
])
def test_bad_igb_nics_refused(nic, why):
    with pytest.raises(ValueError, match=why):
        nics.check([nic])


def test_an_igb_nic_takes_a_qemu_that_has_one(monkeypatch):
    old, new = program.Qemu("/usr/bin/q", "7.2.19"), program.Qemu("/lab/q", "10.0.2", ("/lab/fw",),
                                                                  "/lab/mods")
    monkeypatch.setattr(program, "host", lambda: old)
    monkeypatch.setattr(program, "lab", lambda parts=None: new)
    assert program.choose([TAP]) is old
    assert program.choose([TAP, IGB]) is new
    assert new.args() == ["/lab/q", "-L", "/lab/fw"] and new.env() == {"QEMU_MODULE_DIR": "/lab/mods"}
    monkeypatch.setattr(program, "lab", lambda parts=None: None)
    assert "QEMU >= 8.0; this host's QEMU is 7.2.19" in program.igb_problem()
    monkeypatch.setattr(program, "host", lambda: program.Qemu("/usr/bin/q", "8.2.1"))
    assert program.choose([IGB]).binary == "/usr/bin/q"


def test_nics_named_once():
    with pytest.raises(ValueError, match="another NIC's"):
        nics.check([TAP, Nic(mac="52:54:00:00:00:09", name="p0", tap="t2")])
    nics.check([TAP, MACVTAP, VHOST, VHOST_SERVER])


def spec(tmp_path, nic_list=(), fds=None, accel="tcg", **kw) -> qemu.Spec:
    return qemu.Spec("cnfp1234-nf0", 2, accel, tmp_path / "kernel", tmp_path / "initramfs.gz",
                     "/usr/bin/python3", tmp_path, nics=tuple(nic_list), fds=fds or {}, **kw)


def option(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_qemu_argv_of_each_nic_kind(tmp_path):
    argv = qemu.argv(["qemu"], spec(tmp_path, [TAP, MACVTAP, VHOST, VHOST_SERVER], {0: 7, 1: 8}))
    netdevs = option(argv, "-netdev")
    assert netdevs == ["tap,id=net0,fd=7,vhost=off", "tap,id=net1,fd=8,vhost=off",
                       "vhost-user,id=net2,chardev=vhost2", "vhost-user,id=net3,chardev=vhost3"]
    chardevs = [c for c in option(argv, "-chardev") if c.startswith("socket,id=vhost")]
    assert chardevs == ["socket,id=vhost2,path=/run/cnfperf/x/v0.sock,reconnect=1",
                        "socket,id=vhost3,path=/run/x/v1.sock,server=on,wait=off"]
    devices = [d for d in option(argv, "-device") if d.startswith("virtio-net-pci")]
    assert devices == [f"virtio-net-pci,netdev=net{n},mac=52:54:00:00:00:0{n + 1},addr={0x8 + n:#x}"
                       for n in range(4)]
    with pytest.raises(ValueError, match="no open tap"):
        qemu.argv(["qemu"], spec(tmp_path, [TAP]))


def test_qemu_argv_of_the_machine(tmp_path):
    s = spec(tmp_path, [TAP, VHOST], {0: 5})
    argv = qemu.argv(["qemu"], s)
    assert argv[0] == "qemu" and "-S" in argv and "-no-reboot" in argv
    assert option(argv, "-accel") == ["tcg,thread=multi"] and option(argv, "-smp") == ["2"]
    # a DPDK NIC: hugepages in the guest, on top of its base memory
    assert s.hugepages == 128 and s.memory == qemu.BASE_MB + 256
    assert option(argv, "-object") == [f"memory-backend-memfd,id=mem,size={s.memory}M,share=on"]
    assert option(argv, "-name") == ["cnfperf:cnfp1234-nf0,debug-threads=on"]
    assert option(argv, "-qmp") == [f"unix:{tmp_path}/qmp.sock,server=on,wait=off"]
    assert any("readonly=on" in f and "path=/," in f for f in option(argv, "-fsdev"))
    ports = [d for d in option(argv, "-device") if d.startswith("virtserialport")]
    assert len(ports) == qemu.EXEC_PORTS and f"name={frames.PORT_NAME}0" in ports[0]
    line = option(argv, "-append")[0].split()
    assert "hugepages=128" in line and "cnfperf_python=/usr/bin/python3" in line
    assert f"cnfperf_nics={nics.describe([TAP, VHOST])}" in line
    assert option(qemu.argv(["qemu"], spec(tmp_path, accel="kvm", memory_mb=200)), "-m") == ["200M"]
    with pytest.raises(ValueError, match="command line"):
        qemu.cmdline(spec(tmp_path, mounts=("/run/" + "x" * 3000,)))


def test_an_iommu_before_the_pci_devices_and_on_in_the_guest(tmp_path):
    """The lab's hosts: vfio-pci for DPDK there; none by default."""
    plain = qemu.argv(["qemu"], spec(tmp_path))
    assert "intel-iommu" not in option(plain, "-device")
    assert "intel_iommu=on" not in option(plain, "-append")[0]
    argv = qemu.argv(["qemu"], spec(tmp_path, [TAP], {0: 5}, iommu=True))
    devices = option(argv, "-device")
    assert devices[0] == "intel-iommu", devices
    assert {"intel_iommu=on", "iommu=pt"} <= set(option(argv, "-append")[0].split())


def test_registered_beside_the_container_runtimes():
    assert RUNTIMES["vm"] is VmRuntime and VmRuntime.own_kernel and VmRuntime.place == "vm"
    assert "vm" not in CONTAINER_RUNTIMES and set(CONTAINER_RUNTIMES) == {"runc", "netns", "podman"}
    with pytest.raises(ValueError, match="accel"):
        VmRuntime(None, Path("/nonexistent"), accel="hvf")


# -- the exec protocol ---------------------------------------------------------

def test_frames_survive_any_split():
    sid = frames.new_sid()
    stream = frames.pack(sid, frames.RUN, b'{"argv": ["x"]}') + \
        b"".join(frames.chunks(sid, frames.STDIN, b"y" * 70000)) + frames.pack(sid, frames.STDIN_EOF)
    reader = frames.Reader()
    got = [f for i in range(0, len(stream), 777) for f in reader.feed(stream[i:i + 777])]
    assert [k for _, k, _ in got] == [frames.RUN, frames.STDIN, frames.STDIN, frames.STDIN,
                                      frames.STDIN_EOF]
    assert b"".join(p for _, k, p in got if k == frames.STDIN) == b"y" * 70000
    assert {s for s, _, _ in got} == {sid}
    with pytest.raises(frames.ProtocolError):
        frames.Reader().feed(frames.HEADER.pack(sid, 99, 0))
    with pytest.raises(frames.ProtocolError):
        frames.Reader().feed(frames.HEADER.pack(sid, frames.STDIN, frames.MAX_PAYLOAD + 1))


@pytest.fixture
def clocks() -> list[int]:
    """What the guest's clock was set to by exec_port's server (the host's stays)."""
    return []


@pytest.fixture
def exec_port(tmp_path, clocks):
    """The exec server's request loop on a unix socket where QEMU's exec port
    socket would be (one connection after another, as a port serves relays)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(ports.sock_path(tmp_path, 0)))
    listener.listen(4)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                server.Port(conn.fileno(), "test", set_clock=clocks.append).serve_connection()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield tmp_path
    stop.set()
    listener.close()


def start_relay(sockdir: Path, *argv: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cnfperf.runtimes.vm.exec", str(sockdir),
                             "--env=GREETING=hi there", "--", *argv], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def test_hello_sets_the_guests_clock_to_the_hosts(exec_port, clocks):
    before = time.time_ns()
    assert ports.hello(exec_port, 10).startswith("cnfperf-exec")
    # twice: the second ahead by half the first's round trip
    assert len(clocks) == 2
    assert before <= clocks[0] <= clocks[1] <= time.time_ns() + 10**9


def test_relay_runs_a_command_with_its_stdio_env_and_exit(exec_port):
    proc = start_relay(exec_port, "sh", "-c", 'read x; echo "$GREETING $x"; echo err >&2; exit 3',
                       stdin=subprocess.PIPE)
    out, err = proc.communicate(b"from stdin\n", timeout=20)
    assert (out, err, proc.returncode) == (b"hi there from stdin\n", b"err\n", 3)
    proc = start_relay(exec_port, "/nonexistent/binary")
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 127 and b"cannot run" in err


def test_relay_forwards_signals_and_dies_of_the_same(exec_port):
    proc = start_relay(exec_port, "sh", "-c",
                       'trap "echo stopped; exit 5" INT; echo up; while :; do sleep 0.05; done')
    assert proc.stdout.readline() == b"up\n"
    proc.send_signal(signal.SIGINT)
    assert proc.stdout.read() == b"stopped\n" and proc.wait(timeout=20) == 5
    proc = start_relay(exec_port, "sh", "-c", "echo up; exec sleep 60")
    assert proc.stdout.readline() == b"up\n"
    proc.terminate()
    assert proc.wait(timeout=20) == -signal.SIGTERM


def test_a_killed_relay_takes_its_command_along(exec_port, tmp_path):
    pidfile = tmp_path / "pid"
    proc = start_relay(exec_port, "sh", "-c", f"echo $$ > {pidfile}; echo up; exec sleep 60")
    assert proc.stdout.readline() == b"up\n"
    pid = int(pidfile.read_text())
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_relay_usage_and_busy_ports(tmp_path):
    with pytest.raises(SystemExit):
        relay.parse([str(tmp_path), "--", ])
    assert relay.parse([str(tmp_path), "--env=A=b=c", "--", "x", "--", "y"]) == \
        (tmp_path, {"A": "b=c"}, ["x", "--", "y"])
    with pytest.raises(OSError, match="no exec port"):
        ports.claim(tmp_path, 0.1)


def test_the_engines_directory_is_seen_through_the_guests_tmpfs(tmp_path):
    from cnfperf.runtimes.vm.runtime import _shared
    (tmp_path / "build").mkdir()
    engine = tmp_path / "build" / "cnfperf-engine"
    assert _shared([], str(engine)) == (str(tmp_path / "build"),)


def test_mounts_are_host_paths_as_they_are(tmp_path):
    from cnfperf.runtimes import Mount
    from cnfperf.runtimes.vm.runtime import _shared
    (tmp_path / "a").mkdir()
    assert _shared([Mount(str(tmp_path / "a"), str(tmp_path / "a"))]) == \
        (os.path.realpath(tmp_path / "a"),)
    with pytest.raises(ValueError, match="as they are"):
        _shared([Mount(str(tmp_path / "a"), "/mnt/a")])
    (tmp_path / "b c").mkdir()
    with pytest.raises(ValueError, match="only letters"):
        _shared([Mount(str(tmp_path / "b c"), str(tmp_path / "b c"))])


# -- its cgroup ------------------------------------------------------------------

def fake_layout(tmp_path, version: int):
    from cnfperf.host.cgroups import Controller, Layout
    if version == 1:
        mounts = {c: tmp_path / c for c in ("cpuset", "cpu", "cpuacct")}
        for m in mounts.values():
            m.mkdir()
        (mounts["cpuset"] / "cpuset.mems").write_text("0\n")
    else:
        mounts = dict.fromkeys(("cpuset", "cpu", "cpuacct"), tmp_path)
        (tmp_path / "cgroup.subtree_control").write_text("cpu memory\n")
    return Layout(f"v{version}", {c: Controller(c, version, str(m), ()) for c, m in mounts.items()})


def test_cgroup_v1_a_group_per_hierarchy(tmp_path):
    from cnfperf.runtimes import Quota
    from cnfperf.runtimes.vm import cgroup
    layout = fake_layout(tmp_path, 1)
    groups = cgroup.create("cnfp1234-vm", [1, 2], Quota(150), layout)
    assert groups == cgroup.dirs("cnfp1234-vm", layout) == \
        [tmp_path / c / "cnfp1234-vm.vm" for c in ("cpuset", "cpu", "cpuacct")]
    cpuset, cpu, _ = groups
    assert (cpuset / "cpuset.mems").read_text() == "0" and (cpuset / "cpuset.cpus").read_text() == "1-2"
    assert (cpu / "cpu.cfs_period_us").read_text() == "100000"
    assert (cpu / "cpu.cfs_quota_us").read_text() == "150000"


def test_cgroup_v2_one_group_with_its_controllers_enabled(tmp_path):
    from cnfperf.runtimes import Quota
    from cnfperf.runtimes.vm import cgroup
    groups = cgroup.create("cnfp1234-vm", [0], Quota(50, 200_000), fake_layout(tmp_path, 2))
    assert groups == [tmp_path / "cnfp1234-vm.vm"]
    assert (groups[0] / "cpuset.cpus").read_text() == "0"
    assert (groups[0] / "cpu.max").read_text() == "100000 200000"
    # what was enabled for it (the fake file keeps the last write only)
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpuset"
