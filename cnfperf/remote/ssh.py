"""The SSH connection to another host (paramiko), and the one command it runs there.

Host keys are checked against the inventory's known_hosts file: an unknown
key is refused, unless the host says `trust_new = true`, and then the key is
recorded in that file and said on stderr (trust on first use, never silent). A
changed key is refused whatever trust_new says. Keys come from the host's key
file or from the SSH agent, never a password: paramiko is told to look for
nothing else.

The remote side runs only cnfperf's own agent: `<cnfperf>/.venv/bin/cnfperf
agent`, a fixed command whose one variable part is the host's `cnfperf`
checkout (the inventory's); every scenario value travels as data over its
stdin, never in a command line.
"""
from __future__ import annotations

import shlex
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cnfperf import UserError

if TYPE_CHECKING:
    import paramiko

    from cnfperf.remote.inventory import Host

CONNECT_TIMEOUT = 10.0
# A dead peer is noticed within about this long (SSH keepalives) even when no
# data flows, so a trial does not wait forever on a host that vanished.
KEEPALIVE_S = 5


class Unreachable(UserError):
    """A host of the inventory cnfperf could not reach or log in to (exit 2:
    the inventory, or the host's sshd, needs fixing): the line says why."""

    def __init__(self, why: str):
        super().__init__("hosts", why)


def agent_command(host: Host) -> str:
    """The one command cnfperf runs on a host: its agent, from the host's checkout."""
    return shlex.join([str(Path(host.cnfperf) / ".venv" / "bin" / "cnfperf"), "agent"])


def connect(host: Host, timeout: float = CONNECT_TIMEOUT) -> paramiko.SSHClient:
    """A logged-in connection to the host, its key checked (see the module)."""
    import paramiko   # only a run with other hosts pays for its import

    client = paramiko.SSHClient()
    known = Path(host.known_hosts).expanduser()
    if known.exists():
        client.load_host_keys(str(known))
    client.set_missing_host_key_policy(_TrustNew(known) if host.trust_new
                                       else paramiko.RejectPolicy())
    where = f"host {host.name!r} ({host.user}@{host.address}:{host.port})"
    try:
        client.connect(host.address, port=host.port, username=host.user,
                       key_filename=str(Path(host.key).expanduser()) if host.key else None,
                       allow_agent=host.ssh_agent, look_for_keys=False, password=None,
                       timeout=timeout, banner_timeout=timeout, auth_timeout=timeout)
    except paramiko.BadHostKeyException as e:
        client.close()
        raise Unreachable(f"{where}: its host key changed ({e.key.get_name()} "
                          f"{e.key.get_fingerprint().hex()}); if that is expected, remove "
                          f"its line from {known}") from None
    except paramiko.SSHException as e:
        client.close()
        if "not found in known_hosts" in str(e):
            raise Unreachable(f"{where}: its host key is not in {known} (add it with "
                              "ssh-keyscan after checking it, or set trust_new = true)") from None
        raise Unreachable(f"{where}: {e}") from None
    except (OSError, socket.timeout, EOFError) as e:
        client.close()
        raise Unreachable(f"{where}: unreachable: {e}") from None
    transport = client.get_transport()
    if transport is not None:
        transport.set_keepalive(KEEPALIVE_S)
    return client


class _TrustNew:
    """trust_new = true: a key never seen is recorded in known_hosts, and said."""

    def __init__(self, known: Path):
        self.known = known

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str,
                         key: paramiko.PKey) -> None:
        import paramiko
        client.get_host_keys().add(hostname, key.get_name(), key)
        # one line appended: the rest of the file (comments, markers, key types
        # paramiko does not read) stays as it is
        self.known.parent.mkdir(parents=True, exist_ok=True)
        with open(self.known, "a") as f:
            f.write(paramiko.hostkeys.HostKeyEntry([hostname], key).to_line())
        print(f"cnfperf: trusting {hostname}'s new host key {key.get_name()} "
              f"{key.get_fingerprint().hex()} (trust_new = true), recorded in {self.known}",
              file=sys.stderr)
