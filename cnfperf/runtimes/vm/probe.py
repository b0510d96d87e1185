"""Which accelerator boots a guest here: the smallest guest (probe_argv) under
KVM and under TCG at once, each given a timeout. A KVM that cannot run this
guest (a nested or paravirtualised one, such as PVM) hangs instead of
failing, hence the timeout; and a KVM guest not up in twice the time TCG's
took is taken for hung (kvm runs the same guest several times faster than
emulation), not waited for to the timeout.

What a probe found is kept beside the guest (PROBED) for the host's boot: a
second cnfperf on this host (every run with a VM point, doctor, an agent)
reads it instead of spending the probe's seconds again, while the same QEMU,
the same /dev/kvm and the same guest are there (their identities, and the timeout, are its key:
a change of any asks again)."""
from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import subprocess
import time

from pathlib import Path

from cnfperf import fields
from cnfperf.host import tools

from ..base import ContainerError
from . import guest as guests
from . import qemu

MARKER = b"cnfperf-guest: init"
PROBED = "probe.json"      # beside the guest's kernel: what this boot's probe found
BOOT_ID = "/proc/sys/kernel/random/boot_id"
# A KVM guest not up in HUNG times the time emulation (tcg) took to boot the
# same guest is hung (a paravirtualised KVM such as PVM): a working one is
# several times faster than tcg, never slower.
HUNG = 2.0
ACCELS = fields.ACCELS     # each probed
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    # A probe killed with its cnfperf leaves no QEMU hanging in KVM.
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setsid()


def _kvm_problem() -> str | None:
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC))
    except OSError as e:
        return f"/dev/kvm: {e.strerror}"
    return None


def boots(timeout: float = 20.0, fresh: bool = False) -> dict[str, str | None]:
    """accel -> None when the guest boots under it in `timeout` seconds, else
    why not; what this boot's probe found unless `fresh` (PROBED)."""
    binary = tools.find(tools.QEMU)
    if binary is None:
        return dict.fromkeys(ACCELS, tools.missing(tools.QEMU))
    try:
        guest = guests.build()
    except ContainerError as e:
        return dict.fromkeys(ACCELS, str(e))
    kept = guest.kernel.parent / PROBED
    key = probe_key(binary, guest.kernel, guest.initramfs, timeout=timeout)
    if not fresh and (found := recall(kept, key)) is not None:
        return found
    found: dict[str, str | None] = {}
    started: dict[str, subprocess.Popen] = {}
    for accel in ACCELS:
        problem = _kvm_problem() if accel == "kvm" else None
        if problem:
            found[accel] = problem
            continue
        started[accel] = subprocess.Popen(
            qemu.probe_argv(binary, accel, guest.kernel, guest.initramfs),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent)
    try:
        found.update(_watch(started, timeout))
    finally:
        for proc in started.values():
            proc.kill()
            proc.wait()
            proc.stdout.close()
    found = {accel: found[accel] for accel in ACCELS}
    keep(kept, key, found)
    return found


def probe_key(binary: str, *files: Path, timeout: float) -> dict:
    """What a kept probe holds for: this boot of the host, QEMU's binary, the
    guest's files and /dev/kvm as they are now, and the timeout asked."""
    def ident(path: str | Path) -> list:
        try:
            st = os.stat(path)
        except OSError:
            return [str(path), None]
        return [str(path), st.st_ino, st.st_size, st.st_mtime_ns]
    try:
        boot = Path(BOOT_ID).read_text().strip()
    except OSError:
        boot = None
    return {"boot": boot, "qemu": ident(os.path.realpath(binary)),
            "guest": [ident(f) for f in files], "kvm": [ident("/dev/kvm"), _kvm_problem()],
            "timeout": timeout}


def recall(kept: Path, key: dict) -> dict[str, str | None] | None:
    """A kept probe's answers if it holds for `key` (None: ask again)."""
    try:
        said = json.loads(kept.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(said, dict) or said.get("key") != key or key["boot"] is None:
        return None
    found = said.get("found")
    return found if isinstance(found, dict) and set(found) == set(ACCELS) else None


def keep(kept: Path, key: dict, found: dict[str, str | None]) -> None:
    """Keeps a probe's answers for the next cnfperf (written whole or not at all)."""
    tmp = kept.with_name(f".{kept.name}.{os.getpid()}")
    try:
        tmp.write_text(json.dumps({"key": key, "found": found}))
        os.replace(tmp, kept)
    except OSError:
        tmp.unlink(missing_ok=True)


def _watch(started: dict[str, subprocess.Popen], timeout: float) -> dict[str, str | None]:
    """Each QEMU's answer: its /init's first line, or its end, or the timeout;
    kvm's once tcg's guest came up, twice tcg's time (HUNG)."""
    start = time.monotonic()
    deadlines = dict.fromkeys(started, start + timeout)
    output = {accel: b"" for accel in started}
    found: dict[str, str | None] = {}
    while len(found) < len(started):
        now = time.monotonic()
        waiting = {p.stdout: a for a, p in started.items() if a not in found}
        late = [a for a in waiting.values() if deadlines[a] <= now]
        if late:
            found.update({a: f"no guest came up in {timeout:g} s" if deadlines[a] - start >= timeout
                          else f"hung: no guest came up in {deadlines[a] - start:.3g} s, "
                               f"{HUNG:g} times tcg's boot" for a in late})
            continue
        left = min(deadlines[a] for a in waiting.values()) - now
        for pipe in select.select(list(waiting), [], [], left)[0]:
            accel = waiting[pipe]
            data = os.read(pipe.fileno(), 65536)
            output[accel] += data
            if MARKER in output[accel]:
                found[accel] = None
                if accel == "tcg" and "kvm" in deadlines:
                    deadlines["kvm"] = min(deadlines["kvm"], start + HUNG * (time.monotonic() - start))
            elif not data:
                said = output[accel].decode(errors="replace").strip().splitlines()
                found[accel] = "QEMU exited before the guest came up" + \
                    (f": {said[-1]}" if said else "")
    return found
