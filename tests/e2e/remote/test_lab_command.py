"""`cnfperf lab`, as a user runs it: an emulated host (remote/lab.py's QEMU
guest under TCG, Debian's 6.12 kernel) booted, its inventory written, root
over SSH with it, kept until Ctrl-C and then gone whole; one killed outright
as it boots leaves what `cnfperf cleanup` removes. The lab's data planes run
on it in test_lab.py (the same machinery, booted once for that module)."""
from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

import harness
import leak
from cnfperf.remote import lab, ssh
from cnfperf.remote.inventory import load

pytestmark = [pytest.mark.e2e, pytest.mark.needs("sshd", "ssh-keygen", "qemu-system-x86_64")]

BOOT_S = 300        # the guest's kernel and initramfs made, booted under TCG, sshd up
STOP_S = 60


def _lab(*args: str, stdout=subprocess.PIPE) -> subprocess.Popen:
    if problems := lab.problems(sriov=True):
        harness.missing("; ".join(problems))
    return subprocess.Popen(harness.cnfperf_argv("lab", *args), cwd=harness.REPO,
                            env=harness.cnfperf_env(), stdin=subprocess.DEVNULL, stdout=stdout,
                            stderr=subprocess.PIPE, text=True)


def _line(proc: subprocess.Popen, stream, start: str, seen: list[str]) -> str:
    """The first line of `stream` that starts with `start`, all read kept in
    `seen` (read from the pipe unbuffered: select() sees no Python buffer)."""
    deadline = time.monotonic() + BOOT_S
    pending = ""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 1)
        if not ready:
            continue
        chunk = os.read(stream.fileno(), 65536).decode(errors="replace")
        assert chunk, f"cnfperf lab ended ({proc.wait()}): {''.join(seen)}{pending}"
        *lines, pending = (pending + chunk).split("\n")
        for line in lines:
            seen.append(line + "\n")
            if line.startswith(start):
                return line
    raise AssertionError(f"no {start!r} line in {BOOT_S} s: {''.join(seen)}{pending}")


def _stop(proc: subprocess.Popen, how: int) -> tuple[str, str]:
    proc.send_signal(how)
    try:
        return proc.communicate(timeout=STOP_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_a_lab_boots_answers_over_ssh_and_goes_whole_on_ctrl_c(cli):
    """The inventory it prints names a host that takes the lab's key over SSH
    and runs the lab's kernel, with its wire's NIC; a second lab is refused
    (exit 3) and `cnfperf cleanup` leaves a running lab be; Ctrl-C ends it
    with nothing left."""
    with leak.assert_no_leftovers():
        proc = _lab("--name", "dut", "--wires", "1", "--pfs", "1")
        try:
            said: list[str] = []
            inventory = Path(_line(proc, proc.stdout, "inventory: ", said).split(": ", 1)[1]
                             .strip())
            assert inventory == lab.INVENTORY, said
            hosts = load(inventory)
            [host] = hosts.hosts.values()
            [wire] = hosts.wires
            here, there = wire.end_on("local"), wire.end_on("dut")
            assert Path(f"/sys/class/net/{here.iface}").exists(), (here, said)
            client = ssh.connect(host)
            try:
                _, stdout, _ = client.exec_command(
                    f"uname -r; cat /sys/class/net/{there.iface}/device/uevent; "
                    "cat /sys/class/net/pf0/device/sriov_totalvfs", timeout=60)
                out = stdout.read().decode()
            finally:
                client.close()
            release, *uevent, vfs = out.split()
            assert tuple(map(int, release.split(".")[:2])) >= (6, 7), out
            assert "DRIVER=igb" in uevent and vfs == "7", out

            again = cli("lab", timeout=60)
            assert again.returncode == 3 and f"pid {proc.pid}" in again.stderr, again
            swept = cli("cleanup", timeout=120)
            assert swept.returncode == 0 and "lab" not in swept.stdout, swept
            assert proc.poll() is None
        except BaseException:
            proc.kill()
            proc.communicate()
            raise
        out, err = _stop(proc, signal.SIGINT)
        assert proc.returncode == 0, (out, err)
        assert "stopped (SIGINT): nothing of it is left" in err, err
        assert not lab.HOME.exists() and not lab.JOURNAL.exists() and not lab.OWNER.exists()


def test_a_lab_killed_as_it_boots_leaves_what_cleanup_removes(cli):
    """SIGKILL once QEMU runs: its VM, taps, netns, directory and journal
    stay (nothing could take them down), and `cnfperf cleanup` removes them
    by the journal, the dead lab's owner file with them."""
    with leak.assert_no_leftovers():
        proc = _lab("--wires", "1", "--pfs", "0", stdout=subprocess.DEVNULL)
        try:
            _line(proc, proc.stderr, "lab: booting", [])
            deadline = time.monotonic() + BOOT_S
            while not any(":qemu-system-x86" in p for p in leak._processes()):
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        finally:
            proc.kill()
            proc.communicate()
        assert lab.JOURNAL.exists() and lab.owner() is None
        done = cli("cleanup", timeout=120)
        assert done.returncode == 0, done
        assert "removed container vmhost" in done.stdout, done.stdout
        assert not lab.JOURNAL.exists() and not lab.OWNER.exists() and not lab.HOME.exists()
