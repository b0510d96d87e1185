"""The VM runtime's monitor client (runtimes/vm/qmp.py): QEMU binds its
socket a moment before it listens, and a connection refused then is tried
again. A monitor that speaks QMP's greeting and answers stands in for QEMU."""
import json
import socket
import threading
import time

import pytest

from cnfperf.runtimes import ContainerError
from cnfperf.runtimes.vm import qmp

GREETING = {"QMP": {"version": {"qemu": {"major": 10, "minor": 0, "micro": 2},
                                "package": ""}, "capabilities": []}}


def _monitor(sock: socket.socket, listen_after: float) -> None:
    """Listens after a while, greets, then answers each command (JSON objects
    one after another, not always a line each) with {"return": {}}."""
    time.sleep(listen_after)
    sock.listen(1)
    conn, _ = sock.accept()
    decoder, pending = json.JSONDecoder(), ""
    with conn:
        conn.sendall(json.dumps(GREETING).encode() + b"\n")
        while data := conn.recv(4096):
            pending += data.decode()
            while pending.strip():
                try:
                    asked, end = decoder.raw_decode(pending.lstrip())
                except ValueError:
                    break       # the rest of it still to come
                pending = pending.lstrip()[end:]
                answer = {"return": {}, **({"id": asked["id"]} if "id" in asked else {})}
                conn.sendall(json.dumps(answer).encode() + b"\n")


def test_a_socket_bound_before_it_listens_is_tried_again(tmp_path):
    path = tmp_path / "qmp.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    serving = threading.Thread(target=_monitor, args=(sock, 0.3), daemon=True)
    serving.start()
    try:
        assert qmp.execute(path, "cont", timeout=5) == [{}]
    finally:
        sock.close()


def test_a_monitor_that_never_listens_fails_in_its_time(tmp_path):
    path = tmp_path / "qmp.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    start = time.monotonic()
    try:
        with pytest.raises(ContainerError, match="QMP cont at .*refused"):
            qmp.execute(path, "cont", timeout=0.3)
    finally:
        sock.close()
    assert 0.3 <= time.monotonic() - start < 3
