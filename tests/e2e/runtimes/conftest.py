"""Fixtures shared by the runtime tests: a unique prefix and a network namespace."""
import subprocess
import sys
import uuid

import pytest

from harness import REPO


@pytest.fixture
def prefix() -> str:
    return f"cnfp{uuid.uuid4().hex[:6]}"


@pytest.fixture
def netns(prefix):
    name = f"{prefix}-ns"
    subprocess.run(["ip", "netns", "add", name], check=True)
    yield name
    subprocess.run(["ip", "netns", "del", name], capture_output=True)


# A run that made two containers with a busy process each, then died by SIGKILL:
# what `cnfperf cleanup` finds after a crash.
KILLED_RUN = """
import sys, time
from pathlib import Path
from cnfperf.host.journal import Journal
from cnfperf.runtimes import {runtime}
state, images, engine, prefix, netns, cpu = sys.argv[1:]
rt = {runtime}(Journal(Path(state) / "j"), Path(state), images_dir=Path(images))
rt.prepare(Path(engine))
for i in range(2):
    c = rt.create(f"{{prefix}}-c{{i}}", [int(cpu)], netns)
    c.exec(["sleep", "600"])
print("ready", flush=True)
time.sleep(600)
"""


@pytest.fixture
def killed_run():
    """kill(runtime, state, images, engine, prefix, netns, cpu): runs KILLED_RUN with
    `runtime` (a class name of cnfperf.runtimes) and kills it once it is ready."""
    return _killed_run


def _killed_run(runtime: str, state, images, engine, prefix: str, netns: str, cpu: int) -> None:
    child = subprocess.Popen([sys.executable, "-c", KILLED_RUN.format(runtime=runtime), str(state),
                              str(images), str(engine), prefix, netns, str(cpu)],
                             stdout=subprocess.PIPE, cwd=REPO, start_new_session=True)
    try:
        assert child.stdout.readline() == b"ready\n"
    finally:
        child.kill()
        child.wait()
