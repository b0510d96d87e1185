"""Hosts this machine makes and reaches over SSH (the lab's emulated hosts,
remote/lab.py): each runs an sshd of its own, keys only, and the lab writes
the inventory (remote/inventory.py) that names them, their keys and the wires
cabled to them, as cnfperf reads any.

    key = keygen(directory / "client_key")
    config.write_text(SSHD_CONFIG.format(address=address, config=files))
    inventory.write_text(inventory_text(hosts, wires, key, known_hosts, repo))
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterable, Mapping, Protocol

import paramiko

from cnfperf.fields import LOCAL   # the machine cnfperf runs on, as the inventory names it

# Keys only, root allowed; no PAM (its session modules would reach the
# machine's logind), no pid file (sshd is a host's own). SFTP for copying
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


class Reached(Protocol):
    """A host made here: its name and sshd's address."""
    name: str
    address: str


@dataclasses.dataclass(frozen=True)
class End:
    """One end of a wire: the host it is on (or `local`) and its interface there."""
    host: str
    name: str

    def __str__(self) -> str:
        return f"{self.host}:{self.name}"


@dataclasses.dataclass
class Lab:
    inventory: Path                  # hosts.toml naming the hosts and wires
    hosts: Mapping[str, Reached]
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


def check(names: list[str], wires: Iterable[tuple[str, str]]) -> None:
    if len(set(names)) != len(names) or LOCAL in names or not all(names):
        raise ValueError(f"host names must be unique, not empty and not {LOCAL!r}: {names}")
    unknown = {h for wire in wires for h in wire} - set(names) - {LOCAL}
    if unknown:
        raise ValueError(f"wires to hosts not started: {sorted(unknown)}")


def keygen(path: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.stem, "-f",
                    str(path)], check=True, capture_output=True, stdin=subprocess.DEVNULL)
    path.chmod(0o600)
    return path


def public(private_key: Path) -> str:
    """`ssh-ed25519 AAAA…` without the comment."""
    return " ".join(Path(f"{private_key}.pub").read_text().split()[:2])


def host_files(files: Path, client_key: Path, address: str, config: Path | str) -> None:
    """A host's sshd files in `files`: its key, the client's as the one it
    authorizes, and sshd_config naming them where the host sees them (`config`)."""
    files.mkdir()
    keygen(files / "host_key")
    (files / "authorized_keys").write_text(public(client_key) + "\n")
    (files / "sshd_config").write_text(SSHD_CONFIG.format(address=address, config=config))


def known_hosts_text(hosts: Iterable[Reached], directory: Path) -> str:
    """Every host's key (`directory`/<name>/host_key), at its address."""
    return "".join(f"{h.address} {public(directory / h.name / 'host_key')}\n" for h in hosts)


def free_indexes(count: int, *links: str) -> list[int]:
    """The first `count` n for which the machine has none of the links
    (patterns of n) yet; n < 256, an octet of the control network."""
    taken = set(os.listdir("/sys/class/net"))
    free = (n for n in range(256) if not {link.format(n) for link in links} & taken)
    picked = [n for n, _ in zip(free, range(count))]
    if len(picked) < count:
        raise RuntimeError(f"no free names for {count} links {links}")
    return picked


def wait_listening(alive: Callable[[], bool], address: str, log: Path, ready_s: float) -> None:
    """Until sshd at `address` takes a connection, while what runs it is alive."""
    deadline = time.monotonic() + ready_s
    while time.monotonic() < deadline and alive():
        with contextlib.suppress(OSError), socket.create_connection((address, 22), timeout=1):
            return
        time.sleep(0.05)
    raise RuntimeError(f"sshd on {address} is not listening: {log.read_text().strip()}")


def ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def quiet(link: str) -> None:
    """No IPv6 on a link of the machine's: no address, no router solicitations."""
    path = Path(f"/proc/sys/net/ipv6/conf/{link}/disable_ipv6")
    if path.exists():
        path.write_text("1")


def del_link(name: str) -> None:
    """Deletes a link of the machine's netns (and its peer) if it is there."""
    if os.path.exists(f"/sys/class/net/{name}"):
        subprocess.run(["ip", "link", "del", name], capture_output=True, timeout=20)


def inventory_text(hosts: Iterable[Reached], wires: Iterable[tuple[End, End]], key: Path,
                   known_hosts: Path, repo: Path) -> str:
    """hosts.toml as cnfperf reads it (JSON's strings are TOML's basic strings);
    `repo`: the cnfperf checkout every host runs (this one, which they see)."""
    q = json.dumps
    parts = [f"[[host]]\nname = {q(h.name)}\naddress = {q(h.address)}\nuser = \"root\"\n"
             f"key = {q(str(key))}\nknown_hosts = {q(str(known_hosts))}\n"
             f"cnfperf = {q(str(repo))}\n" for h in hosts]
    parts += [f"[[wire]]\na = {q(str(a))}\nb = {q(str(b))}\n" for a, b in wires]
    return "\n".join(parts)
