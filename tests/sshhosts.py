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
import json
import os
import select
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterable, Iterator

import paramiko

import harness
import leak
from cnfperf.host import tools
from cnfperf.runtimes.runc import RUNC_ROOT

LOCAL = "local"            # the machine the tests run on, as the inventory names it
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

# Keys only, root allowed; no PAM (its session modules would reach the
# machine's logind), no pid file (sshd is the first process). SFTP for copying
# files (paramiko's SFTPClient). {config}: where the host sees its files.
SSHD_CONFIG = """ListenAddress {address}:22
HostKey {config}/host_key
AuthorizedKeysFile {config}/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
Subsystem sftp internal-sftp
"""


@dataclasses.dataclass(frozen=True)
class End:
    """One end of a wire: the host it is on (or `local`) and its interface there."""
    host: str
    name: str

    def __str__(self) -> str:
        return f"{self.host}:{self.name}"


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


@dataclasses.dataclass
class Lab:
    inventory: Path                  # hosts.toml naming the hosts and wires
    hosts: dict[str, Host]
    wires: list[tuple[End, End]]
    key: Path                        # the client's private key
    known_hosts: Path                # every host's key

    def connect(self, name: str, known_hosts: Path | None = None) -> paramiko.SSHClient:
        """An SSH connection to the host as root, which trusts only the keys in
        known_hosts (the lab's by default)."""
        client = paramiko.SSHClient()
        client.load_host_keys(str(known_hosts or self.known_hosts))
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(self.hosts[name].address, username="root", key_filename=str(self.key),
                           allow_agent=False, look_for_keys=False, timeout=10)
        except BaseException:
            client.close()
            raise
        return client


@contextlib.contextmanager
def hosts(directory: Path, names: Iterable[str], wires: Iterable[tuple[str, str]] = (),
          ahead: dict[str, int] | None = None) -> Iterator[Lab]:
    """Starts the hosts and cables the wires (pairs of host names, `local` for
    this machine); everything goes again on the way out, also on a failure.
    `ahead`: seconds a host's CLOCK_MONOTONIC is ahead of this machine's (a
    time namespace of its own: another machine's clock, as it were)."""
    names, wires = list(names), list(wires)
    _check(names, wires)
    harness.require("unshare", "nsenter", "sshd", "ssh-keygen")
    directory.mkdir(parents=True, exist_ok=True)
    key = _keygen(directory / "client_key")
    with contextlib.ExitStack() as stack:
        started: dict[str, Host] = {}
        for name, index in zip(names, _free_indexes(len(names), CONTROL + "{}")):
            started[name] = stack.enter_context(_host(directory, name, index, key,
                                                      (ahead or {}).get(name, 0)))
        ends = [_wire(stack, started, n, a, b)
                for (a, b), n in zip(wires, _free_indexes(len(wires), WIRE + "{}a", WIRE + "{}b"))]
        known_hosts = directory / "known_hosts"
        known_hosts.write_text("".join(
            f"{h.address} {_public(directory / h.name / 'host_key')}\n" for h in started.values()))
        inventory = directory / "hosts.toml"
        inventory.write_text(_inventory(started, ends, key, known_hosts))
        yield Lab(inventory, started, ends, key, known_hosts)


def _check(names: list[str], wires: list[tuple[str, str]]) -> None:
    if len(set(names)) != len(names) or LOCAL in names or not all(names):
        raise ValueError(f"host names must be unique, not empty and not {LOCAL!r}: {names}")
    unknown = {h for wire in wires for h in wire} - set(names) - {LOCAL}
    if unknown:
        raise ValueError(f"wires to hosts not started: {sorted(unknown)}")


def _keygen(path: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.stem, "-f",
                    str(path)], check=True, capture_output=True, stdin=subprocess.DEVNULL)
    path.chmod(0o600)
    return path


def _public(private_key: Path) -> str:
    """`ssh-ed25519 AAAA…` without the comment."""
    return " ".join(Path(f"{private_key}.pub").read_text().split()[:2])


def _free_indexes(count: int, *links: str) -> list[int]:
    """The first `count` n for which the machine has none of the links
    (patterns of n) yet; n < 256, an octet of the control network."""
    taken = set(os.listdir("/sys/class/net"))
    free = (n for n in range(256) if not {link.format(n) for link in links} & taken)
    picked = [n for n, _ in zip(free, range(count))]
    if len(picked) < count:
        raise RuntimeError(f"no free names for {count} links {links}")
    return picked


@contextlib.contextmanager
def _host(directory: Path, name: str, index: int, client_key: Path,
          ahead: int = 0) -> Iterator[Host]:
    files = directory / name
    files.mkdir()
    _keygen(files / "host_key")
    (files / "authorized_keys").write_text(_public(client_key) + "\n")
    address = f"10.251.{index}.2"
    (files / "sshd_config").write_text(SSHD_CONFIG.format(address=address,
                                                          config=CONFIG_DIR))
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
        _ip("link", "add", control, "type", "veth", "peer", "name", CONTROL_INSIDE,
            "netns", str(host.pid))
        _quiet(control)
        _ip("addr", "add", f"10.251.{index}.1/30", "dev", control)
        _ip("link", "set", control, "up")
        host.run(["ip", "addr", "add", f"{address}/30", "dev", CONTROL_INSIDE], check=True)
        host.run(["ip", "link", "set", CONTROL_INSIDE, "up"], check=True)
        proc.stdin.write("go\n")
        proc.stdin.close()
        _wait_listening(proc, address, log)
        yield host
    finally:
        _stop(proc)
        _del_link(control)


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


def _wait_listening(proc: subprocess.Popen, address: str, log: Path,
                    ready_s: float = READY_S) -> None:
    """Until sshd at `address` takes a connection, while `proc` (what runs it) lives."""
    deadline = time.monotonic() + ready_s
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(OSError), socket.create_connection((address, 22), timeout=1):
            return
        time.sleep(0.05)
    raise RuntimeError(f"sshd on {address} is not listening: {log.read_text().strip()}")


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
        stack.callback(_del_link, end.name)
    _ip("link", "add", ends[0].name, "type", "veth", "peer", "name", ends[1].name)
    for end in ends:
        if end.host == LOCAL:
            _quiet(end.name)
            _ip("link", "set", end.name, "up")
        else:
            host = started[end.host]
            _ip("link", "set", end.name, "netns", str(host.pid))
            host.run(["ip", "link", "set", end.name, "up"], check=True)
    return ends


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def _quiet(link: str) -> None:
    """No IPv6 on a link of the machine's: no address, no router solicitations."""
    path = Path(f"/proc/sys/net/ipv6/conf/{link}/disable_ipv6")
    if path.exists():
        path.write_text("1")


def _del_link(name: str) -> None:
    """Deletes a link of the machine's netns (and its peer) if it is there."""
    if os.path.exists(f"/sys/class/net/{name}"):
        subprocess.run(["ip", "link", "del", name], capture_output=True, timeout=20)


def _inventory(started: dict[str, Host], wires: list[tuple[End, End]], key: Path,
               known_hosts: Path) -> str:
    """hosts.toml as cnfperf reads it (JSON's strings are TOML's basic strings)."""
    q = json.dumps
    parts = [f"[[host]]\nname = {q(h.name)}\naddress = {q(h.address)}\nuser = \"root\"\n"
             f"key = {q(str(key))}\nknown_hosts = {q(str(known_hosts))}\n"
             f"cnfperf = {q(str(harness.REPO))}\n" for h in started.values()]
    parts += [f"[[wire]]\na = {q(str(a))}\nb = {q(str(b))}\n" for a, b in wires]
    return "\n".join(parts)
