"""Fixtures shared by the runtime tests: a unique prefix and a network namespace."""
import subprocess
import uuid

import pytest


@pytest.fixture
def prefix() -> str:
    return f"cnfp{uuid.uuid4().hex[:6]}"


@pytest.fixture
def netns(prefix):
    name = f"{prefix}-ns"
    subprocess.run(["ip", "netns", "add", name], check=True)
    yield name
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
