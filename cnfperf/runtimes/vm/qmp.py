"""QEMU's monitor (QMP) through the qemu.qmp library: the few commands cnfperf
gives a VM (which threads are its vCPUs, run, quit), each a short blocking call."""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from qemu.qmp import ConnectError, QMPClient

from ..base import ContainerError

# The library logs each failure itself; ours say it once, as a ContainerError.
logging.getLogger("qemu.qmp").setLevel(logging.CRITICAL)


# between two tries to connect while QEMU does not listen yet
RETRY_S = 0.05


async def _connect(path: Path, timeout: float) -> QMPClient:
    """A client connected to the monitor. QEMU binds its socket (the file is
    there) a moment before it listens: a connection refused in between is
    tried again, until `timeout`."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        client = QMPClient("cnfperf")
        try:
            await asyncio.wait_for(client.connect(str(path)), max(RETRY_S, end - loop.time()))
            return client
        except ConnectError as e:
            if not isinstance(e.exc, ConnectionRefusedError) or loop.time() >= end:
                raise
        await asyncio.sleep(RETRY_S)


async def _execute(path: Path, commands: list[str], timeout: float) -> list[Any]:
    client = await _connect(path, timeout)
    try:
        return [await asyncio.wait_for(client.execute(c), timeout) for c in commands]
    finally:
        await client.disconnect()


def execute(path: Path, *commands: str, timeout: float = 10.0) -> list[Any]:
    """Each command's return value; ContainerError saying which failed."""
    try:
        return asyncio.run(_execute(path, list(commands), timeout))
    except Exception as e:   # the library's errors have no common base but this
        raise ContainerError(f"QMP {', '.join(commands)} at {path}: "
                             f"{type(e).__name__} {e}".rstrip()) from None


def vcpu_threads(path: Path, timeout: float) -> dict[int, int]:
    """vCPU index -> the host thread that runs it."""
    cpus = execute(path, "query-cpus-fast", timeout=timeout)[0]
    return {c["cpu-index"]: c["thread-id"] for c in cpus}
