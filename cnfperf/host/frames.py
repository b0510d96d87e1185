"""A test frame on a wire: sent on one interface, listened for on others.

`cnfperf doctor --hosts` checks each wire of an inventory by sending a frame
on one end that names the wire (a token) and asking every end which tokens
it heard: a wire whose frame arrives elsewhere is miswired, one whose frame
arrives nowhere is cut (or down). The frames are Ethernet broadcasts of the
local experimental EtherType (IEEE 802 88B5): no host's stack takes them.
"""
from __future__ import annotations

import os
import socket
import threading
import time

ETHERTYPE = 0x88B5
ETH_P_ALL = 0x0003
MAGIC = b"cnfperf-wire:"
SOURCE = bytes.fromhex("02c7ffffff01")   # locally administered


class Listener:
    """Frames with a token heard on an interface, from start() until stop()."""

    def __init__(self, iface: str):
        self.iface = iface
        self.heard: set[str] = set()
        self.problem = ""
        self._stop = threading.Event()
        self._sock: socket.socket | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"listen {iface}")

    def start(self) -> None:
        try:
            self._sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            self._sock.bind((self.iface, 0))
            self._sock.settimeout(0.1)
        except OSError as e:
            self.problem = f"cannot listen on {self.iface}: {e.strerror or e}"
            return
        self._thread.start()

    def _run(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                frame = self._sock.recv(2048)
            except socket.timeout:
                continue
            except OSError:
                return
            if frame[12:14] == ETHERTYPE.to_bytes(2, "big") and frame[14:].startswith(MAGIC):
                self.heard.add(frame[14 + len(MAGIC):].split(b"\0", 1)[0].decode(errors="replace"))

    def stop(self) -> set[str]:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(1)
        if self._sock is not None:
            self._sock.close()
        return self.heard


def send(iface: str, token: str, count: int = 3) -> str:
    """Send `count` frames carrying `token` on the interface; "" or why not."""
    if not os.path.exists(f"/sys/class/net/{iface}"):
        return f"no interface {iface}"
    with open(f"/sys/class/net/{iface}/operstate") as f:
        state = f.read().strip()
    if state == "down":
        return f"{iface} is down"
    payload = MAGIC + token.encode() + b"\0"
    frame = b"\xff" * 6 + SOURCE + ETHERTYPE.to_bytes(2, "big") + payload
    frame += b"\0" * max(0, 60 - len(frame))
    try:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sock:
            sock.bind((iface, 0))
            for _ in range(count):
                sock.send(frame)
                time.sleep(0.01)
    except OSError as e:
        return f"cannot send on {iface}: {e.strerror or e}"
    return ""
