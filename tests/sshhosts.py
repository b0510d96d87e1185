"""Other hosts on this machine, reached over SSH, for the tests of cnfperf's
remote hosts.

CI has one machine. Each host here is a process tree in network, mount and PID
namespaces of its own, with sshd as its first process: /run and /tmp are its
own tmpfs (so cnfperf's lock, journal, netns names and runc state there are the
host's), /sys shows its own links but keeps the machine's cgroup hierarchy
(runc needs it), /dev/hugepages stays the machine's. A veth pair per host is
its control network, where sshd listens; a veth pair per wire cables two hosts
(or a host and this machine, `local`). A host may have a clock of its own: a
time namespace whose CLOCK_MONOTONIC is ahead of the machine's (`ahead`), as
another machine's differs. Killing a host's first process ends everything
inside it, and its namespaces with it.

    with sshhosts.hosts(tmp_path, ["dut"], wires=[("local", "dut")]) as lab:
        lab.inventory                      # hosts.toml for cnfperf
        lab.hosts["dut"].run(["ip", "-o", "link"])
        lab.connect("dut")                 # a paramiko SSHClient, logged in as root
"""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import glob
import os
import select
import signal
import subprocess
from pathlib import Path
from typing import Iterable, Iterator

import harness
import leak
from cnfperf.host import tools
from cnfperf.remote import sshd
from cnfperf.remote.sshd import LOCAL, End, Lab  # noqa: F401 (the tests' names)
from cnfperf.runtimes.runc import RUNC_ROOT
CONTROL = "sshc"           # control links in the machine's netns: sshc<i>, 10.251.<i>.1/30
CONTROL_INSIDE = "ctl"     # their peers inside host i, 10.251.<i>.2/30
WIRE = "tw"                # wires: tw<n>a and tw<n>b (not cnfp*: cnfperf's cleanup owns those)
READY_S = 15.0             # a host's mounts, and then its sshd, are up within this
STOP_S = 15.0
PR_SET_PDEATHSIG = 1
CONFIG_DIR = "/run/sshhost"   # inside a host: sshd's config and keys, copied from the test's

# A host's first process: the mounts, then (once the machine has set up its
# control link) sshd in its place. $1: the directory of sshd_config and keys,
# which the host's own /tmp will hide; $2: sshd; $3: the cnfperf checkout the
# inventory names, kept where it is (a clone under /tmp or /run would be
# hidden by the host's own: held aside on /mnt meanwhile).
START = f"""set -e
mount --bind "$3" /mnt
mount -t tmpfs -o mode=0755 run /run
mkdir -p /run/sshd {CONFIG_DIR}/cgroup
cp -p "$1/sshd_config" "$1/host_key" "$1/authorized_keys" {CONFIG_DIR}/
mount -t tmpfs -o mode=1777 tmp /tmp
mkdir -p "$3"
mount --move /mnt "$3"
mount --rbind /sys/fs/cgroup {CONFIG_DIR}/cgroup
umount -l /sys
mount -t sysfs sysfs /sys
mount --move {CONFIG_DIR}/cgroup /sys/fs/cgroup
sysctl -qew net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip link set lo up
echo ready
read -r go
exec "$2" -D -e -f {CONFIG_DIR}/sshd_config </dev/null >&2
"""

@dataclasses.dataclass
class Host:
    name: str
    address: str    # sshd's, on the control network
    pid: int        # its first process (sshd), as the machine numbers it
    log: Path       # sshd's messages

    def run(self, argv: list[str], timeout: float = 60, check: bool = False,
            input: str | None = None) -> subprocess.CompletedProcess:
        """A command in the host's namespaces, from the machine (no SSH)."""
        done = subprocess.run(["nsenter", "-t", str(self.pid), "-n", "-m", "-p", "--wd=/",
                               "--", *argv], capture_output=True, text=True, timeout=timeout,
                              input=input, stdin=None if input is not None else subprocess.DEVNULL)
        if check and done.returncode != 0:
            raise RuntimeError(f"{self.name}: {' '.join(argv)} exited {done.returncode}: "
                               f"{done.stderr.strip()}")
        return done

    def path(self, inside: str) -> Path:
        """A path of the host's mount namespace, as the machine reaches it."""
        return Path(f"/proc/{self.pid}/root") / inside.lstrip("/")

    def links(self) -> set[str]:
        out = self.run(["ip", "-o", "-br", "link", "show"], check=True).stdout
        return {line.split()[0].split("@")[0] for line in out.splitlines() if line.strip()}

    def leftovers(self) -> set[str]:
        """What cnfperf left inside the host; empty when clean."""
        found = {f"netns {line.split()[0]}"
                 for line in self.run(["ip", "netns", "list"], check=True).stdout.splitlines()
                 if line.strip()}
        found |= {f"link {name}" for name in self.links() if name.startswith("cnfp")}
        found |= {f"process {p}" for p in self._processes()}
        if self.path(str(RUNC_ROOT)).is_dir():
            out = self.run(["runc", "--root", str(RUNC_ROOT), "list", "-q"], check=True).stdout
            found |= {f"runc container {c}" for c in out.split()}
        run_files = [f for f in glob.glob(str(self.path("/run/cnfperf/*")))
                     if not f.endswith("/lock")]
        found |= {f"file {f}" for f in run_files + glob.glob(str(self.path("/run/dpdk/*")))
                  + glob.glob(str(self.path("/run/openvswitch/*")))}
        return found

    def _processes(self) -> set[str]:
        """leak.WATCHED_COMMS in the host's PID namespace (its own /proc)."""
        found = set()
        for stat_path in glob.glob(str(self.path("/proc/[0-9]*/stat"))):
            with contextlib.suppress(OSError):
                stat = Path(stat_path).read_text()
                comm = stat[stat.index("(") + 1:stat.rindex(")")]
                if stat[stat.rindex(")") + 2] != "Z" and \
                        comm.startswith(leak.WATCHED_COMMS + ("dpdk-",)):
                    found.add(f"{stat_path.split('/')[-2]}:{comm}")
        return found


@contextlib.contextmanager
def hosts(directory: Path, names: Iterable[str], wires: Iterable[tuple[str, str]] = (),
          ahead: dict[str, int] | None = None) -> Iterator[Lab]:
    """Starts the hosts and cables the wires (pairs of host names, `local` for
    this machine); everything goes again on the way out, also on a failure.
    `ahead`: seconds a host's CLOCK_MONOTONIC is ahead of this machine's (a
    time namespace of its own: another machine's clock, as it were)."""
    names, wires = list(names), list(wires)
    sshd.check(names, wires)
    harness.require("unshare", "nsenter", "sshd", "ssh-keygen")
    directory.mkdir(parents=True, exist_ok=True)
    key = sshd.keygen(directory / "client_key")
    with contextlib.ExitStack() as stack:
        started: dict[str, Host] = {}
        for name, index in zip(names, sshd.free_indexes(len(names), CONTROL + "{}")):
            started[name] = stack.enter_context(_host(directory, name, index, key,
                                                      (ahead or {}).get(name, 0)))
        numbers = sshd.free_indexes(len(wires), WIRE + "{}a", WIRE + "{}b")
        ends = [_wire(stack, started, n, a, b) for (a, b), n in zip(wires, numbers)]
        known_hosts = directory / "known_hosts"
        known_hosts.write_text(sshd.known_hosts_text(started.values(), directory))
        inventory = directory / "hosts.toml"
        inventory.write_text(sshd.inventory_text(started.values(), ends, key, known_hosts,
                                                 harness.REPO))
        yield Lab(inventory, started, ends, key, known_hosts)


@contextlib.contextmanager
def _host(directory: Path, name: str, index: int, client_key: Path,
          ahead: int = 0) -> Iterator[Host]:
    files = directory / name
    address = f"10.251.{index}.2"
    sshd.host_files(files, client_key, address, CONFIG_DIR)
    log = files / "sshd.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            ["unshare", "--net", "--mount", "--pid", "--fork", "--mount-proc",
             *(["--time", f"--monotonic={ahead}"] if ahead else []),
             "--propagation", "private", "--kill-child", "sh", "-c", START, "sshhost",
             str(files), tools.find("sshd"), str(harness.REPO)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
            start_new_session=True, preexec_fn=_die_with_tests)
    control = f"{CONTROL}{index}"
    try:
        _expect_ready(proc, name, log)
        host = Host(name, address, _first_process(proc.pid), log)
        sshd.ip("link", "add", control, "type", "veth", "peer", "name", CONTROL_INSIDE,
                "netns", str(host.pid))
        sshd.quiet(control)
        sshd.ip("addr", "add", f"10.251.{index}.1/30", "dev", control)
        sshd.ip("link", "set", control, "up")
        host.run(["ip", "addr", "add", f"{address}/30", "dev", CONTROL_INSIDE], check=True)
        host.run(["ip", "link", "set", CONTROL_INSIDE, "up"], check=True)
        proc.stdin.write("go\n")
        proc.stdin.close()
        sshd.wait_listening(lambda: proc.poll() is None, address, log, READY_S)
        yield host
    finally:
        _stop(proc)
        sshd.del_link(control)


def _die_with_tests() -> None:
    """A test process killed outright takes its hosts along: unshare gets
    SIGKILL, and --kill-child passes it on to the host's first process (the
    links of a netns that goes, and their peers, go with it)."""
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _expect_ready(proc: subprocess.Popen, name: str, log: Path) -> None:
    ready, _, _ = select.select([proc.stdout], [], [], READY_S)
    if not ready or proc.stdout.readline() != "ready\n":
        raise RuntimeError(f"host {name} did not start: {log.read_text().strip()}")


def _first_process(unshare_pid: int) -> int:
    """The child `unshare --fork` made: the first process of the new PID namespace."""
    children = Path(f"/proc/{unshare_pid}/task/{unshare_pid}/children").read_text().split()
    if len(children) != 1:
        raise RuntimeError(f"unshare {unshare_pid} has children {children}, not one")
    return int(children[0])


def _stop(proc: subprocess.Popen) -> None:
    """Kills the host's first process, which ends every process of its PID
    namespace; unshare exits once they all have (--kill-child also does it
    when unshare itself goes first)."""
    if proc.poll() is None:
        with contextlib.suppress(OSError, ValueError, RuntimeError):
            os.kill(_first_process(proc.pid), signal.SIGKILL)
    try:
        proc.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=STOP_S)
    for pipe in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError, ValueError):
            pipe.close()


def _wire(stack: contextlib.ExitStack, started: dict[str, Host], n: int,
          a: str, b: str) -> tuple[End, End]:
    ends = (End(a, f"{WIRE}{n}a"), End(b, f"{WIRE}{n}b"))
    for end in ends:
        # deletes only what is still in the machine's netns: the names were free here
        stack.callback(sshd.del_link, end.name)
    sshd.ip("link", "add", ends[0].name, "type", "veth", "peer", "name", ends[1].name)
    for end in ends:
        if end.host == LOCAL:
            sshd.quiet(end.name)
            sshd.ip("link", "set", end.name, "up")
        else:
            host = started[end.host]
            sshd.ip("link", "set", end.name, "netns", str(host.pid))
            host.run(["ip", "link", "set", end.name, "up"], check=True)
    return ends
