"""Other hosts that are virtual machines (a second kernel), reached over SSH,
for the tests of cnfperf's remote hosts: the lab's (cnfperf/remote/lab.py,
`cnfperf lab`), booted for a test module, with what the tests ask of a guest
besides (leftovers()).

    with vmhost.hosts(tmp_path, ["dut"], wires=[("local", "dut")]) as lab:
        lab.inventory                      # hosts.toml for cnfperf
        lab.hosts["dut"].run(["ip", "-o", "link"])
        lab.connect("dut")                 # a paramiko SSHClient, logged in as root

A wire joins a VM and `local`: two VMs are not cabled. `sriov={"dut": 1}`:
the host's emulated SR-IOV NICs (pf0…; remote/lab.py).
"""
from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Iterable, Iterator, Mapping

import harness
import leak
from cnfperf.remote import lab as guests, sshd

# What cnfperf left in the guest, one "kind what" a line; leak.WATCHED_COMMS
# and dpdk-* among its processes.
LEFTOVERS = r"""
ip netns list | while read -r ns _; do echo "netns $ns"; done
ip -o -br link show | while read -r link _; do
    case "$link" in cnfp*) echo "link ${link%%@*}" ;; esac
done
for stat in /proc/[0-9]*/stat; do
    read -r line < "$stat" 2>/dev/null || continue
    comm=${line#*(}; comm=${comm%)*}; state=${line##*) }; state=${state%% *}
    [ "$state" = Z ] && continue
    for watched in "$@"; do
        case "$comm" in "$watched"*) pid=${stat#/proc/}; echo "process ${pid%/stat}:$comm"; break ;; esac
    done
done
for f in /run/cnfperf/* /run/dpdk/* /run/openvswitch/*; do
    [ -e "$f" ] && [ "$f" != /run/cnfperf/lock ] && echo "file $f"
done
true
"""


@dataclasses.dataclass
class VmHost(guests.GuestHost):
    def leftovers(self) -> set[str]:
        """What cnfperf left in the guest; empty when clean."""
        out = self.run(["sh", "-c", LEFTOVERS, "leftovers",
                        *leak.WATCHED_COMMS, "dpdk-"], check=True).stdout
        return {line.strip() for line in out.splitlines() if line.strip()}


@contextlib.contextmanager
def hosts(directory: Path, names: Iterable[str],
          wires: Iterable[tuple[str, str]] = (),
          sriov: Mapping[str, int] | None = None) -> Iterator[sshd.Lab]:
    """Boots the VMs and cables the wires (pairs of a VM's name and `local`);
    `sriov`: a VM's count of emulated SR-IOV NICs; everything goes again on
    the way out, also on a failure."""
    harness.require(*guests.TOOLS, "qemu-system-x86_64")
    if problems := guests.problems(any((sriov or {}).values())):
        harness.missing("; ".join(problems))
    # End-to-end tests run one at a time: any lab's VM there now is no other
    # test's, but one a test killed outright left. Owned while it runs, as
    # `cnfperf lab`'s: a `cnfperf cleanup` leaves it be.
    guests.sweep()
    with guests.owned(), guests.hosts(directory, names, harness.engine(), wires, sriov) as lab:
        lab.hosts = {name: VmHost(**vars(host)) for name, host in lab.hosts.items()}
        yield lab
