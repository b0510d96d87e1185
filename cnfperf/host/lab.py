"""The lab's parts: what lab/parts.sh (make deps) unpacks from Debian's
backports beside the host's own packages, never installing them: a QEMU that
emulates an SR-IOV NIC (runtimes/vm/program.py) and an iproute2 whose `ip`
makes netkit links (host/iproute.py). An emulated host (the lab's guest) sees
them at the same path: its root is the host's."""
from __future__ import annotations

import os
from pathlib import Path

PARTS = Path(os.environ.get("CNFPERF_LAB_PARTS", "/var/lib/cnfperf/lab"))
HINT = "lab/parts.sh (make deps) unpacks it from Debian's bookworm-backports"
# The lab guest's kernel: netkit came in 6.7 (lab/parts.sh installs a 6.12);
# the emulated igb's VFs and the kernel's switching modules are older.
KERNEL_SINCE = (6, 7)


def part(name: str, parts: Path | None = None) -> Path:
    """Where the part `name` is unpacked (a root: usr/, bin/…), there or not."""
    return (parts or PARTS) / name
