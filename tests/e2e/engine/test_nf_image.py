"""End to end: the minimal image. A network function on a kernel api runs the
static engine alone in its image (no shell, no loader, no shared object), in a
runc container whose init is the engine itself (--idle); the tester's ends run
on the host, as in test_nf.py.

sender | nf (runc, minimal image) | receiver, over veths between namespaces.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

import harness
from cnfperf.host.facts import static_engine
from cnfperf.host.journal import Journal
from cnfperf.runtimes import MINIMAL, RuncRuntime
from cnfperf.runtimes.runc import RUNC_ROOT
from test_kernel_apis import RECEIVER_RUN, assert_delivered, sender_run

pytestmark = [pytest.mark.e2e, pytest.mark.needs("runc")]

LIMIT = 2_000_000       # bytes: the bound for the kernel-api NF's image
RATE = 10000
PORT = "9000"


def runc(*args: str) -> str:
    return subprocess.run(["runc", "--root", str(RUNC_ROOT), *args], capture_output=True,
                          text=True, check=True, timeout=20).stdout


@pytest.fixture
def static(engine) -> Path:
    path = static_engine(engine)
    if not path.exists():
        harness.missing(f"static engine not built ({path.relative_to(harness.REPO)}; make build)")
    return path


def test_static_engine_forwards_in_a_runc_container_of_the_minimal_image(
        static, chain, engines, tmp_path):
    s, f1, f2, r = chain
    journal = Journal(tmp_path / "run.journal")
    rt = RuncRuntime(journal, tmp_path / "state", images_dir=tmp_path / "images")
    info = rt.prepare(static, MINIMAL)
    root = Path(info.path)
    assert info.name == "engine-static" and info.size_bytes <= LIMIT, info
    files = [p for p in root.rglob("*") if p.is_file()]
    assert root / "bin/cnfperf-engine-static" in files
    assert all(p.suffix == ".o" for p in files if p.name != "cnfperf-engine-static"), files

    c = rt.create(f"{f1.netns}c", [max(os.sched_getaffinity(0))], f1.netns, image=MINIMAL)
    try:
        assert c.engine == "/bin/cnfperf-engine-static"
        # No shell in there: the container's init is the engine, waiting.
        init = json.loads(runc("state", c.name))["pid"]
        assert Path(f"/proc/{init}/cmdline").read_bytes().split(b"\0")[:2] == \
            [b"/bin/cnfperf-engine-static", b"--idle"]

        rx = engines(r.netns, [harness.engine(), "recv", "--api", "raw", "--iface", r.iface,
                               "--src-ip", r.ip, "--sport", PORT, "--poll", "interrupt",
                               *RECEIVER_RUN])
        rx.ready()
        # runc exec without a terminal: its stdio and signals are the engine's.
        nf = engines(None, ["runc", "--root", str(RUNC_ROOT), "exec", c.name, c.engine, "nf",
                            "--api", "raw", "--iface", f1.iface, "--iface2", f2.iface,
                            "--dst-mac", s.mac, "--dst-mac2", r.mac, "--poll", "adaptive",
                            "--duration", "0", "--interval", "0"])
        assert nf.ready()["role"] == "nf"
        tx = engines(s.netns, [harness.engine(), "send", "--api", "raw", "--iface", s.iface,
                               "--src-ip", s.ip, "--sport", PORT, "--dst-ip", r.ip,
                               "--dst-mac", f1.mac, "--dport", PORT, *sender_run(RATE)])
        sent = tx.summary()
        time.sleep(0.2)
        fwd = nf.interrupt()
        received = rx.interrupt()

        assert_delivered(sent, received, RATE * 1.0)
        [p1, p2] = sorted(fwd["ports"], key=lambda p: p["port"])
        assert p1["rx_packets"] - p1["dropped"]["other"] == sent["tx_packets"] == \
            p2["tx_packets"], fwd

        # A polite stop reaches the engine as pid 1 (no shell to trap it).
        runc("kill", c.name, "TERM")
        deadline = time.monotonic() + 5
        while json.loads(runc("state", c.name))["status"] != "stopped":
            assert time.monotonic() < deadline, "the container's init ignored SIGTERM"
            time.sleep(0.05)
    finally:
        c.destroy()
    assert journal.live() == [] and not (tmp_path / "state" / "bundles" / c.name).exists()
    journal.close(remove=False)
