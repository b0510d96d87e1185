"""The inventory: the hosts cnfperf may drive over SSH and the wires between them.

An inventory is a TOML file (hosts.toml by convention) of `[[host]]` and
`[[wire]]` tables, EXAMPLE below. `load()` reads and checks it: any bad entry is
refused with one `UserError` line naming the file and the entry, before anything
connects. Nothing here connects to anything; whether a host answers is checked
where it is used.

A `[[host]]` has these keys; only name and address are required:

    name         how scenarios and wires name it: [a-z][a-z0-9_-]{0,31}, not "local"
    address      a DNS name or an IP address (IPv6 plain, without brackets)
    port         the SSH port, default 22
    user         default "root": cnfperf's agent needs root there
    key          a private key file: ~ is expanded, a relative path is the inventory
                 folder's; group and others may not read or write it (chmod 600)
    ssh_agent    true: keys from the SSH agent (SSH_AUTH_SOCK). Exactly one of key, ssh_agent.
    known_hosts  default ~/.ssh/known_hosts: the host's key must be in it, unless
    trust_new    is true: an unknown host key is accepted and recorded
    cnfperf      the absolute path of the cnfperf checkout on that host (its
                 .venv/bin/cnfperf runs); default: this checkout's path

A `[[wire]]` is a cable between two ports: `a` and `b` are each `host:interface`
(a Linux interface name) or `host:PCI address` (0000:03:00.0, for DPDK). A port
is on one wire at most, and a wire joins two different ports.

The host `local` is the machine cnfperf runs on: wires (and placements) name it
without a `[[host]]` entry, and a `[[host]]` may not take its name. Passwords
are not taken: a key or the SSH agent authenticates.
"""
from __future__ import annotations

import ipaddress
import os
import re
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import cnfperf
from cnfperf import UserError
from cnfperf.fields import LOCAL   # this machine: no [[host]] entry, no SSH
from cnfperf.host import pci

EXAMPLE = '''\
[[host]]
name = "dut"                 # how scenarios and wires name it; not "local" (reserved)
address = "192.0.2.10"       # DNS name or IP address (IPv6 in brackets not needed: plain)
port = 22                    # default 22
user = "root"                # default "root" (cnfperf's agent needs root there)
key = "~/.ssh/id_ed25519"    # a private key file (~ expanded, relative to the inventory's folder)
# ssh_agent = true           # or: keys from the SSH agent (SSH_AUTH_SOCK). Exactly one of key/ssh_agent.
known_hosts = "~/.ssh/known_hosts"  # default; the host key must be in it...
trust_new = false            # ...unless true: an unknown host key is accepted and recorded
cnfperf = "/opt/cnfperf"     # the cnfperf checkout on that host (its .venv/bin/cnfperf runs); default: this checkout's path

[[wire]]                     # a cable between two hosts' ports
a = "local:enp3s0f0"         # host:interface, or host:PCI address (0000:03:00.0) for DPDK
b = "dut:enp3s0f0"
'''

NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
HOST_KEYS = ("name", "address", "port", "user", "key", "ssh_agent", "known_hosts",
             "trust_new", "cnfperf")
WIRE_KEYS = ("a", "b")
# Any key spelled like a secret, wherever it is: the inventory holds no secrets.
PASSWORD = re.compile(r"([\w-]*[_-])?pass(word|wd|phrase)?", re.I)
IFNAMSIZ = 16              # the kernel's, with its NUL: names have at most 15 characters
HOSTNAME_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")
USER = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")
# The checkout this cnfperf runs from (cnfperf/ is its package folder).
CHECKOUT = Path(cnfperf.__file__).resolve().parent.parent


@dataclass(frozen=True)
class Host:
    """A machine driven over SSH."""

    name: str
    address: str
    port: int
    user: str
    key: Path | None
    ssh_agent: bool
    known_hosts: Path
    trust_new: bool
    cnfperf: Path

    def stored(self) -> dict[str, Any]:
        """What a result may keep of the host: where it was, not how to get in."""
        return {"name": self.name, "address": self.address, "port": self.port,
                "user": self.user}


@dataclass(frozen=True)
class End:
    """One end of a wire: a host's interface, or its NIC's PCI address (DPDK)."""

    host: str
    iface: str | None = None
    pci: str | None = None

    def __str__(self) -> str:
        return f"{self.host}:{self.iface if self.iface is not None else self.pci}"

    @property
    def dpdk(self) -> bool:
        return self.pci is not None


@dataclass(frozen=True)
class Wire:
    """A cable between two ports."""

    a: End
    b: End

    def end_on(self, host: str) -> End:
        """This wire's end on `host` (a when both ends are on it); KeyError if none."""
        for end in (self.a, self.b):
            if end.host == host:
                return end
        raise KeyError(host)

    def other(self, host: str) -> End:
        """The end facing `host`'s end."""
        return self.b if self.end_on(host) is self.a else self.a

    def __str__(self) -> str:
        return f"{self.a} - {self.b}"


@dataclass(frozen=True)
class Inventory:
    """The hosts of an inventory file, by name in the file's order, and its wires."""

    path: Path
    hosts: dict[str, Host]
    wires: tuple[Wire, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """Every name a placement or wire may use: local first, then the file's order."""
        return (LOCAL, *self.hosts)

    def host(self, name: str, field: str | None = None) -> Host:
        """The host called `name`; a UserError (naming `field`, else the file) if there
        is none. `local` is this machine, which is not a Host."""
        if name in self.hosts:
            return self.hosts[name]
        known = ", ".join(self.hosts) or "none"
        why = ("is this machine, not a host of the inventory" if name == LOCAL
               else f"no such host in the inventory (its hosts: {known})")
        raise UserError(field or str(self.path), f"{name!r}: {why}")

    def hosts_used(self, names: Iterable[str], field: str | None = None) -> tuple[Host, ...]:
        """The Hosts among `names`, each once, in order; `local` is left out (it is no
        SSH host) and an unknown name is a UserError."""
        return tuple(self.host(n, field) for n in dict.fromkeys(names) if n != LOCAL)

    def wires_between(self, x: str, y: str) -> list[tuple[End, End]]:
        """Each wire between hosts x and y, as (end on x, end on y), in file order."""
        out = []
        for wire in self.wires:
            for ex, ey in ((wire.a, wire.b), (wire.b, wire.a)):
                if ex.host == x and ey.host == y:
                    out.append((ex, ey))
                    break
        return out


def load(path: Path | str, environ: Mapping[str, str] = os.environ) -> Inventory:
    """Read and check an inventory; UserError (one line) on anything wrong."""
    path = Path(path)
    where = str(path)
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise UserError(where, f"cannot read the inventory: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(where, f"not TOML: {e}") from None
    try:
        return _inventory(path, doc, environ)
    except ValueError as e:
        raise UserError(where, str(e)) from None


# -- checking: each check raises ValueError("entry: why"), load() adds the file --


def _inventory(path: Path, doc: dict[str, Any], environ: Mapping[str, str]) -> Inventory:
    _keys(doc, ("host", "wire"), "the inventory")
    folder = path.absolute().parent
    hosts: dict[str, Host] = {}
    for i, entry in enumerate(_tables(doc, "host"), 1):
        host = _host(entry, i, folder, environ)
        if host.name in hosts:
            raise ValueError(f"host {host.name!r} is named twice")
        hosts[host.name] = host
    wires = tuple(_wire(entry, i, hosts) for i, entry in enumerate(_tables(doc, "wire"), 1))
    _ports_once(wires)
    return Inventory(path, hosts, wires)


def _tables(doc: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    tables = doc.get(kind, [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ValueError(f"{kind}: expected [[{kind}]] tables")
    return tables


def _keys(entry: dict[str, Any], allowed: tuple[str, ...], what: str) -> None:
    for key in entry:
        if PASSWORD.fullmatch(key):
            raise ValueError(f"{what}: {key!r}: passwords are not taken: "
                             "use a key or the SSH agent")
    for key in entry:
        if key not in allowed:
            raise ValueError(f"{what}: unknown key {key!r}; known keys: {', '.join(allowed)}")


def _get(entry: dict[str, Any], key: str, kind: type, what: str, default: Any = None) -> Any:
    """entry[key] of the given TOML type (a bool is no int), or the default; a
    required key has no default."""
    if key not in entry:
        if default is None:
            raise ValueError(f"{what}: missing key {key!r}")
        return default
    value = entry[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        name = {str: "a string", int: "an integer", bool: "true or false"}[kind]
        raise ValueError(f"{what}: {key}: expected {name}, got {value!r}")
    return value


def _host(entry: dict[str, Any], i: int, folder: Path, environ: Mapping[str, str]) -> Host:
    said = entry.get("name")   # name the entry by its name as soon as it has a good one
    what = f"host {said!r}" if isinstance(said, str) and NAME.fullmatch(said) \
        and said != LOCAL else f"host {i}"
    _keys(entry, HOST_KEYS, what)
    name = _get(entry, "name", str, what)
    if name == LOCAL:
        raise ValueError(f"{what}: name 'local' is reserved: it is this machine, "
                         "which needs no [[host]]")
    if not NAME.fullmatch(name):
        raise ValueError(f"{what}: name {name!r}: expected [a-z][a-z0-9_-]{{0,31}}")
    what = f"host {name!r}"
    address = _address(_get(entry, "address", str, what), what)
    port = _get(entry, "port", int, what, 22)
    if not 1 <= port <= 65535:
        raise ValueError(f"{what}: port {port}: expected 1-65535")
    user = _get(entry, "user", str, what, "root")
    if not USER.fullmatch(user):
        raise ValueError(f"{what}: user {user!r} is not a user name")
    key_text = _get(entry, "key", str, what, "")
    ssh_agent = _get(entry, "ssh_agent", bool, what, False)
    if bool(key_text) == ssh_agent:
        raise ValueError(f"{what}: " + ("both key and ssh_agent: choose one" if ssh_agent else
                                        "neither key nor ssh_agent = true: give one"))
    if ssh_agent and not environ.get("SSH_AUTH_SOCK"):
        raise ValueError(f"{what}: ssh_agent = true but SSH_AUTH_SOCK is not set: "
                         "start an SSH agent (ssh-agent, ssh-add) or give a key")
    key = _key(key_text, folder, what) if key_text else None
    trust_new = _get(entry, "trust_new", bool, what, False)
    known_text = _get(entry, "known_hosts", str, what, "~/.ssh/known_hosts")
    known_hosts = _local_path(known_text, folder)
    if known_hosts.exists() and not known_hosts.is_file():
        raise ValueError(f"{what}: known_hosts {known_text} is not a regular file")
    if not trust_new and not known_hosts.exists():
        raise ValueError(f"{what}: known_hosts {known_text} does not exist: add the host's "
                         "key there (ssh-keyscan) or set trust_new = true")
    remote = _get(entry, "cnfperf", str, what, str(CHECKOUT))
    if not remote.startswith("/"):   # a path on that host: no ~ or folder of ours applies
        raise ValueError(f"{what}: cnfperf {remote!r}: expected the checkout's absolute "
                         "path on that host")
    return Host(name, address, port, user, key, ssh_agent, known_hosts, trust_new, Path(remote))


def _address(text: str, what: str) -> str:
    try:
        ipaddress.ip_address(text)
        return text
    except ValueError:
        pass
    labels = text.removesuffix(".").split(".")
    if len(text) > 253 or not all(HOSTNAME_LABEL.fullmatch(x) for x in labels):
        raise ValueError(f"{what}: address {text!r}: expected a DNS name or an IP address"
                         " (IPv6 without brackets, no user@ or :port)")
    return text


def _local_path(text: str, folder: Path) -> Path:
    """A path on this machine: ~ expanded, relative to the inventory's folder."""
    return folder / Path(text).expanduser()


def _key(text: str, folder: Path, what: str) -> Path:
    """The private key file, which SSH would refuse too when others may read it."""
    key = _local_path(text, folder)
    try:
        st = key.stat()
    except OSError as e:
        raise ValueError(f"{what}: key {text}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{what}: key {text} is not a regular file")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        how = " and ".join(w for bits, w in ((0o044, "readable"), (0o022, "writable"),
                                             (0o011, "executable")) if mode & bits)
        raise ValueError(f"{what}: key {text} is {how} by others than its owner "
                         f"(mode {mode:04o}): chmod 600 it")
    if not os.access(key, os.R_OK):
        raise ValueError(f"{what}: key {text} is not readable by this user")
    return key


def _wire(entry: dict[str, Any], i: int, hosts: dict[str, Host]) -> Wire:
    what = f"wire {i}"
    _keys(entry, WIRE_KEYS, what)
    a, b = (_end(_get(entry, k, str, what), f"{what}: {k}", hosts) for k in WIRE_KEYS)
    if a == b:
        raise ValueError(f"{what}: both ends are {a}: a wire joins two ports")
    return Wire(a, b)


def _end(text: str, what: str, hosts: dict[str, Host]) -> End:
    host, sep, port = text.partition(":")
    if not (host and sep and port):
        raise ValueError(f"{what}: {text!r}: expected host:interface or host:PCI address "
                         "(dut:eth1, dut:0000:03:00.0)")
    if host != LOCAL and host not in hosts:
        raise ValueError(f"{what}: {text!r}: no host {host!r} (known: "
                         f"{', '.join((LOCAL, *hosts))})")
    if pci.ADDRESS.fullmatch(port):
        return End(host, pci=port.lower())
    if len(port) >= IFNAMSIZ or port in (".", "..") or \
            any(c in "/:" or c.isspace() for c in port):
        raise ValueError(f"{what}: {text!r}: {port!r} is neither an interface name "
                         "(at most 15 characters, no / : or spaces) nor a PCI address "
                         "(0000:03:00.0)")
    return End(host, iface=port)


def _ports_once(wires: tuple[Wire, ...]) -> None:
    """A port is on one cable at most: two wires on one port is a typo."""
    seen: dict[End, int] = {}
    for i, wire in enumerate(wires, 1):
        for end in (wire.a, wire.b):
            if end in seen:
                raise ValueError(f"wire {i}: port {end} is already on wire {seen[end]}")
            seen[end] = i
