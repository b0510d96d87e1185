"""Which accelerator boots a guest here: the smallest guest (probe_argv) under
KVM and under TCG at once, each given a timeout. A KVM that cannot run this
guest (a nested or paravirtualised one, such as PVM) hangs instead of
failing, hence the timeout."""
from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import time

from cnfperf import fields
from cnfperf.host import tools

from ..base import ContainerError
from . import guest as guests
from . import qemu

MARKER = b"cnfperf-guest: init"
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


def boots(timeout: float = 20.0) -> dict[str, str | None]:
    """accel -> None when the guest boots under it in `timeout` seconds, else why not."""
    binary = tools.find(tools.QEMU)
    if binary is None:
        return dict.fromkeys(ACCELS, tools.missing(tools.QEMU))
    try:
        guest = guests.build()
    except ContainerError as e:
        return dict.fromkeys(ACCELS, str(e))
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
    return {accel: found[accel] for accel in ACCELS}


def _watch(started: dict[str, subprocess.Popen], timeout: float) -> dict[str, str | None]:
    """Each QEMU's answer: its /init's first line, or its end, or the timeout."""
    deadline = time.monotonic() + timeout
    output = {accel: b"" for accel in started}
    found: dict[str, str | None] = {}
    while len(found) < len(started):
        left = deadline - time.monotonic()
        waiting = {p.stdout: a for a, p in started.items() if a not in found}
        if left <= 0:
            found.update(dict.fromkeys(waiting.values(),
                                       f"no guest came up in {timeout:g} s"))
            break
        for pipe in select.select(list(waiting), [], [], left)[0]:
            accel = waiting[pipe]
            data = os.read(pipe.fileno(), 65536)
            output[accel] += data
            if MARKER in output[accel]:
                found[accel] = None
            elif not data:
                said = output[accel].decode(errors="replace").strip().splitlines()
                found[accel] = "QEMU exited before the guest came up" + \
                    (f": {said[-1]}" if said else "")
    return found
