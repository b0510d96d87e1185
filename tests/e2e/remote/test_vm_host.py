"""A host under test that is a virtual machine: a second kernel (a QEMU guest
under TCG, tests/vmhost.py), reached over SSH, its agent run from the same
checkout; the tester here, the kernel bridge there, the guest's virtio NICs
the wires (their taps the ends here). Counters on both hosts, and nothing
left behind on either."""
from __future__ import annotations

from pathlib import Path

import pytest

import vmhost
from cnfperf.runtimes.vm.guest import find_kernel
from test_tg_dut import (WIRES, assert_counters_match, assert_hosts_stored, assert_zero_loss,
                         run_point, stored_point)

pytestmark = [pytest.mark.e2e, pytest.mark.needs("sshd", "ssh-keygen", "qemu-system-x86_64")]

# The agent's start, its facts and the point's build, all emulated: minutes.
RUN_S = 900


@pytest.fixture
def lab(tmp_path: Path, no_leftovers):
    with vmhost.hosts(tmp_path / "lab", ["dut"], wires=WIRES) as lab:
        yield lab
        assert lab.hosts["dut"].leftovers() == set()


def test_bridge_on_a_virtual_machine(engine, cli, lab):
    point = stored_point(run_point(cli, lab, "--switch", "bridge", "--api", "raw",
                                             timeout=RUN_S))
    assert_zero_loss(point, paced=False)
    assert_hosts_stored(point, lab)
    assert point["hosts"]["dut"]["kernel"] == find_kernel().version     # the guest's
    # the bridge's ports there are the guest's NICs, named by host; here the taps
    assert_counters_match(point, lab, {end.name: f"dut:{end.name}" for _, end in lab.wires})
