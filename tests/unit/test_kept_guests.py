"""VMs kept with their switch between a run's points (run/keep.py): the keeper's
rules, with a switch and VMs that only record what they are asked. That a real
guest serves a second point is tests/e2e/orchestrator/test_vm_runs.py's."""
from __future__ import annotations

import pytest

from cnfperf import nfs
from cnfperf.plan import place
from cnfperf.run import keep
from cnfperf.scenario import Scenario


class Switch:
    name = "testpmd"
    keeps = True

    def __init__(self, said: list[str]):
        self.said = said

    def stale(self):
        return None

    def reuse(self, point):
        self.said.append("switch reset")

    def release(self):
        self.said.append("switch released")

    def stop(self):
        self.said.append("switch stopped")


class Guest:
    def __init__(self, said: list[str], name: str = "nf"):
        self.said, self.name, self.why = said, name, None

    def stale(self):
        return self.why

    def release(self):
        self.said.append(f"{self.name} released")

    def destroy(self):
        self.said.append(f"{self.name} destroyed")


def _point(index: int = 0, **fields):
    s = Scenario(**{**dict(switch="testpmd", api="dpdk", tester="single", nfs=1, nf_in="vm",
                           rate="1k"), **fields})
    return place(s, "1a2b", index=index, total=9, host_cpus=(0, 1, 2), nf=nfs.kind(s.nf))


def _measured(keeper: keep.Keeper, point, switch: Switch, guest: Guest | None,
              passed: bool = True):
    """A point as the builder and the runner go through it: take, the VM
    (kept or new), passed, then its teardown: the VM parked, the switch handed back."""
    taken = keeper.take(point)
    kept = keeper.guest("nf")
    vm = kept or guest
    if passed:
        keeper.passed(point)
    keeper.park(point, "nf", vm)
    keeper.hand_back(point, taken or switch)
    return taken, kept


@pytest.fixture
def said():
    return []


@pytest.fixture
def keeper(said):
    return keep.Keeper(gone=lambda name: said.append(f"netns {name} removed"))


def test_a_passed_point_s_vm_serves_the_next_point_alike_with_its_netns(keeper, said):
    switch, vm = Switch(said), Guest(said)
    assert _measured(keeper, _point(0), switch, vm) == (None, None)
    assert keeper.served["guests"]["nf"]["kept"] is False
    assert keeper.holds("nf") and said == ["nf released", "switch released"]
    taken, kept = _measured(keeper, _point(1, rate="2k"), switch, Guest(said, "other"))
    assert taken is switch and kept is vm
    assert keeper.served["guests"]["nf"] == {"kept": True, "points": 2}
    assert keeper.holds("nf") and "nf destroyed" not in said and "other" not in " ".join(said)
    assert keeper.drop() == "data-plane testpmd and VMs nf"
    assert said[-3:] == ["nf destroyed", "netns nf removed", "switch stopped"]
    assert not keeper.holds("nf")


def test_a_point_made_otherwise_boots_a_fresh_vm_and_says_which_fields(keeper, said):
    switch = Switch(said)
    _measured(keeper, _point(0), switch, Guest(said))
    taken, kept = _measured(keeper, _point(1, vm_memory=1024, nf_quota=50), switch,
                            Guest(said, "fresh"))
    assert taken is switch and kept is None   # same switch, another guest
    assert said[2:4] == ["switch reset", "nf destroyed"] and "netns nf removed" in said
    assert keeper.served["guests"]["nf"] == {
        "kept": False, "fresh_because": "the point differs in nf_quota, vm_memory"}


def test_a_guest_that_no_longer_answers_is_replaced(keeper, said):
    switch, vm = Switch(said), Guest(said)
    _measured(keeper, _point(0), switch, vm)
    vm.why = "QEMU of VM nf exited"
    _, kept = _measured(keeper, _point(1), switch, Guest(said, "fresh"))
    assert kept is None and {"nf destroyed", "netns nf removed"} <= set(said)
    assert keeper.served["guests"]["nf"] == {"kept": False,
                                             "fresh_because": "QEMU of VM nf exited"}


def test_a_failed_point_leaves_no_vm_and_a_fault_keeps_none(keeper, said):
    _measured(keeper, _point(0), Switch(said), Guest(said), passed=False)
    assert said == ["nf destroyed", "switch stopped"] and not keeper.holds("nf")
    said.clear()
    _measured(keeper, _point(1, fault="link:0"), Switch(said), Guest(said))
    assert said == ["nf destroyed", "switch released"] and not keeper.holds("nf")
    _measured(keeper, _point(2, fault="link:0"), Switch(said), Guest(said))
    assert keeper.served["guests"]["nf"] == {
        "kept": False, "fresh_because": "a fault was injected into the point before"}


def test_vm_keep_no_boots_a_fresh_vm_for_every_point_beside_a_kept_switch(keeper, said):
    switch = Switch(said)
    _measured(keeper, _point(0, vm_keep=False), switch, Guest(said))
    assert said == ["nf destroyed", "switch released"] and not keeper.holds("nf")
    taken, kept = _measured(keeper, _point(1, vm_keep=False), switch, Guest(said))
    assert taken is switch and kept is None
    assert keeper.served["guests"]["nf"] == {"kept": False, "fresh_because": "vm_keep = no"}


def test_a_point_that_fails_before_its_teardown_holds_the_switch_leaves_no_vm(keeper, said):
    switch = Switch(said)
    _measured(keeper, _point(0), switch, Guest(said))
    said.clear()
    keeper.abandon(keeper.take(_point(1)))
    assert said == ["switch reset", "nf destroyed", "netns nf removed", "switch stopped"]
    assert not keeper.holds("nf") and keeper.take(_point(2)) is None


def test_a_guest_that_cannot_be_checked_takes_the_switch_and_the_other_guests_down(
        keeper, said):
    switch, vm, other = Switch(said), Guest(said), Guest(said, "nf2")
    _measured(keeper, _point(0), switch, vm)
    keeper.kept.guests["nf2"] = keep.Guest(other)

    def broken():
        raise KeyboardInterrupt
    other.stale = broken
    said.clear()
    with pytest.raises(KeyboardInterrupt):
        keeper.take(_point(1))
    assert said == ["switch reset", "nf destroyed", "netns nf removed", "nf2 destroyed",
                    "netns nf2 removed", "switch stopped"]
    assert not keeper.holds("nf") and keeper.kept is None and not keeper.offered


def test_another_switch_takes_the_vms_of_the_kept_one_down_first(keeper, said):
    _measured(keeper, _point(0), Switch(said), Guest(said))
    said.clear()
    assert keeper.take(_point(1, switch_rxd=512)) is None
    assert said == ["nf destroyed", "netns nf removed", "switch stopped"]
    keeper.guest("nf")
    assert keeper.served["guests"]["nf"]["fresh_because"].startswith("their switch is fresh: ")


def test_only_the_traffic_s_fields_leave_a_guest_as_it_is():
    made = keep.guest_key(_point())
    for fields in ({"rate": "5k"}, {"duration": 3}, {"size": 128}, {"search": "rfc2544"},
                   {"flows": 4}):
        assert keep.guest_key(_point(**fields)) == made, fields
    # but the switch is made for a size: a fresh one, and fresh VMs with it
    assert keep.switch_key(_point(size=128)) != keep.switch_key(_point())
    for fields in ({"vm_memory": 1024}, {"accel": "tcg"}, {"nf": "testpmd"},
                   {"nf_quota": 50}, {"pin": False}):
        assert keep.guest_key(_point(**fields)) != made, fields
