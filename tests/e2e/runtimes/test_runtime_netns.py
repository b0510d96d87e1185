"""The netns fallback for real: the host engine in a namespace, pinned, stoppable."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cnfperf.host.journal import Journal
from cnfperf.runtimes import Mount, NetnsRuntime
from leak import assert_no_leftovers

pytestmark = [pytest.mark.e2e, pytest.mark.needs("ip", "taskset")]

CPU = max(os.sched_getaffinity(0))
PRINTER = 'trap "echo stopped; exit 0" INT; i=0; while :; do echo line $i; i=$((i+1)); sleep 0.1; done'


@pytest.fixture
def runtime(tmp_path):
    journal = Journal(tmp_path / "run.journal")
    rt = NetnsRuntime(journal, tmp_path / "state")
    info = rt.prepare(Path("/bin/true"))
    assert (info.path, info.size_bytes) == ("", 0)
    yield rt
    journal.close(remove=False)


def run(container, argv) -> str:
    proc = container.exec(argv)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, (argv, err)
    return out.decode()


def test_pinned_in_the_namespace_and_stopped_by_sigint(runtime, netns, prefix):
    with assert_no_leftovers():
        c = runtime.create(f"{prefix}-c", [CPU], netns)
        try:
            assert c.engine == os.path.realpath("/bin/true")
            status = run(c, ["cat", "/proc/self/status"])
            assert f"Cpus_allowed_list:\t{CPU}" in status.splitlines()

            host_end, moved = f"{prefix}h", f"{prefix}m"
            subprocess.run(["ip", "link", "add", host_end, "type", "veth", "peer", "name",
                            moved], check=True)
            try:
                subprocess.run(["ip", "link", "set", moved, "netns", netns], check=True)
                links = run(c, ["ip", "-o", "link"])
                assert moved in links and host_end not in links
            finally:
                subprocess.run(["ip", "link", "del", host_end], check=True)

            proc = c.exec(["sh", "-c", PRINTER])
            for i in range(3):
                assert proc.stdout.readline() == f"line {i}\n".encode()
            proc.send_signal(signal.SIGINT)
            assert proc.stdout.read().decode().splitlines()[-1] == "stopped"
            assert proc.wait(timeout=5) == 0
        finally:
            c.destroy()
        c.destroy()
        assert runtime.journal.live() == []
        subprocess.run(["ip", "netns", "del", netns], check=True)


def test_destroy_kills_what_exec_started(runtime, netns, prefix):
    with assert_no_leftovers():
        c = runtime.create(f"{prefix}-c", [CPU], netns)
        proc = c.exec(["sleep", "600"])
        c.destroy()
        assert proc.poll() is not None
        subprocess.run(["ip", "netns", "del", netns], check=True)


KILLED_RUN = """
import sys, time
from pathlib import Path
from cnfperf.host.journal import Journal
from cnfperf.runtimes import NetnsRuntime
rt = NetnsRuntime(Journal(Path(sys.argv[1]) / "j"), Path(sys.argv[1]))
rt.prepare(Path("/bin/true"))
c = rt.create(sys.argv[2] + "-c0", [int(sys.argv[4])], sys.argv[3])
p = c.exec(["sleep", "600"], stdout=None, stderr=open(Path(sys.argv[1]) / "err", "wb"))
print("ready", p.pid, flush=True)
time.sleep(600)
"""


def _why_not_found(pid: int, tmp_path: Path) -> str:
    """What a failing look-up needs to be understood: is the process there, as what."""
    try:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()[:8]
        environ = [v for v in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                   if v.startswith(b"CNFPERF")]
    except OSError as e:
        status, environ = [f"gone: {e}"], []
    return f"pid {pid}: {status} {environ}; stderr: {(tmp_path / 'err').read_text()!r}"


def test_processes_of_a_killed_run_found_and_removed(netns, prefix, tmp_path):
    with assert_no_leftovers():
        child = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(tmp_path), prefix,
                                  netns, str(CPU)], stdout=subprocess.PIPE,
                                 cwd=Path(__file__).resolve().parents[3])
        try:
            ready, pid = child.stdout.readline().split()
            assert ready == b"ready"
        finally:
            child.kill()
            child.wait()
        # Found by the tag in its environment. Scanned until found, and the value the
        # scan returned is the one checked: a later scan is a second chance to miss.
        start, scans, found = time.monotonic(), 0, []
        while not found and time.monotonic() < start + 5:
            found, scans = NetnsRuntime.leftovers(prefix), scans + 1
            time.sleep(0 if found else 0.05)
        assert found == [f"{prefix}-c0"], \
            f"{scans} scans in {time.monotonic() - start:.1f} s; {_why_not_found(int(pid), tmp_path)}"
        NetnsRuntime.remove(f"{prefix}-c0")
        NetnsRuntime.remove(f"{prefix}-c0")
        deadline = time.monotonic() + 5
        while NetnsRuntime.leftovers(prefix) and time.monotonic() < deadline:
            time.sleep(0.05)  # the orphan is a zombie until init reaps it
        assert NetnsRuntime.leftovers(prefix) == []
        subprocess.run(["ip", "netns", "del", netns], check=True)


def test_remapped_mounts_refused(runtime, netns, prefix, tmp_path):
    with pytest.raises(ValueError, match="mount target"):
        runtime.create(f"{prefix}-c", [CPU], netns, [Mount(str(tmp_path), "/mnt/x")])
    c = runtime.create(f"{prefix}-c", [CPU], netns, [Mount(str(tmp_path), str(tmp_path))])
    c.destroy()
    assert runtime.journal.live() == []
