"""The vm runtime: QEMU guests as cnfperf's containers (runtime.py). The
guest is a kernel and a small initramfs (guest.py, cpio.py, init.sh) over the
host's own root; its NICs are tap, macvtap or vhost-user backends (nics.py,
qemu.py); commands run in it through virtio-serial ports (exec.py relays on
the host, server.py serves in the guest, frames.py between them)."""
from .runtime import VmContainer, VmRuntime

__all__ = ["VmContainer", "VmRuntime"]
