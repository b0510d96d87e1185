"""Other hosts that are virtual machines (a second kernel), reached over SSH,
for the tests of cnfperf's remote hosts.

Each host is a QEMU guest of cnfperf's own vm runtime (runtimes/vm: the guest
kernel and initramfs, QEMU's command line, the exec server): its root is this
machine's, read-only over 9p, with memory where it writes, so sshd, the
cnfperf checkout and its .venv, and the engine are there at their paths. The
exec server starts sshd (its config, host key and authorized_keys in the
test's directory, which the guest binds through) and keeps it while the host
lives. Its NICs are taps on this machine: one a control network (10.252.<i>.0/30,
sshd listens on the guest's end), one per wire, whose tap is the wire's end
here (`local`). QEMU runs in a netns of its own and opens the taps there; they
then move to this machine's netns, as a lent NIC later moves again, its open
device in QEMU carrying on.

    with vmhost.hosts(tmp_path, ["dut"], wires=[("local", "dut")]) as lab:
        lab.inventory                      # hosts.toml for cnfperf
        lab.hosts["dut"].run(["ip", "-o", "link"])
        lab.connect("dut")                 # a paramiko SSHClient, logged in as root

The Lab is sshhosts'. A wire joins a VM and `local`: two VMs are not cabled.

A host may have emulated SR-IOV NICs too (`sriov={"dut": 1}`: Intel 82576s,
QEMU's igb, under QEMU >= 8: the lab's parts, lab/parts.sh): `pf0`, `pf1`… in
the guest, their virtual functions the switch = sriov data plane's ports.
Their taps stay in QEMU's netns, cabled to nothing: the NIC switches between
its VFs itself. Such a host's wires are igb NICs too (`tv<n>b`, each a PF of
its own, its PCI address at `/sys/class/net/tv<n>b/device`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterable, Iterator, Mapping

import harness
import leak
import sshhosts
from cnfperf.host import tools
from cnfperf.host import lab
from cnfperf.host.facts import static_engine
from cnfperf.host.journal import Journal
from cnfperf.runtimes.base import Container, Mount, Nic, online_cpus
from cnfperf.runtimes.vm import nics as nic_slots, program
from cnfperf.runtimes.images import FULL, MINIMAL
from cnfperf.runtimes.runc import RuncRuntime
from cnfperf.runtimes.vm.runtime import VmRuntime

CONTROL = "vmc"            # control taps here: vmc<i>, 10.252.<i>.1/30
CONTROL_INSIDE = "ctl"     # the guest's NIC on it, 10.252.<i>.2/30
WIRE = "tv"                # wires: tap tv<n>a here, NIC tv<n>b in the guest
PF = "pf"                  # emulated SR-IOV NICs in the guest: pf0, pf1…
PF_TAP = "vmf{}n{}"        # their taps, in QEMU's netns: vmf<i>n<k>
NAME = "vmhost"            # VMs vmhost<i>, QEMU in netns vmhost<i>, where it first opens its taps
NETNS = NAME + "{}"
# Two vCPUs (each one core's TCG thread): the guest's Python, and the 9p root
# that feeds it, start the agent in half the time one takes.
VCPUS = 2
ACCEL = "tcg"              # KVM is not everywhere a test runs (nor does every one boot a guest)
MEMORY_MB = 1024           # the guest's: Python and cnfperf's agent, a point's netns
# sshd's start, under TCG on a busy machine; the guest's boot is the runtime's
READY_S = 60.0
RUN_S = 120.0              # a command from the machine, in the guest (Python's start is slow)

# What sshd needs besides its config, which /init does not make: its privilege
# separation directory; root's shell start-up files emptied (this machine's
# are no host's under test, and bash reads ~/.bashrc for every command over
# SSH: whatever it starts costs seconds under TCG); and what a host of
# cnfperf's has: cgroup2 mounted, the control network.
SETUP = """set -e
mkdir -p /run/sshd
for rc in /root/.bashrc /root/.profile /root/.bash_profile; do
    [ ! -f "$rc" ] || mount --bind /dev/null "$rc"
done
mount -t cgroup2 cgroup2 /sys/fs/cgroup
ip addr add "$1/30" dev {inside}
ip link set {inside} up
""".format(inside=CONTROL_INSIDE)

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
class VmHost:
    name: str
    address: str             # sshd's, on the control network
    vm: Container            # the vm runtime's: exec() runs a command in the guest
    log: Path                # sshd's messages

    def run(self, argv: list[str], timeout: float = RUN_S, check: bool = False,
            input: str | None = None) -> subprocess.CompletedProcess:
        """A command in the guest, from the machine (its exec server, no SSH)."""
        proc = self.vm.exec(argv, stdin=subprocess.PIPE if input is not None
                            else subprocess.DEVNULL)
        try:
            out, err = proc.communicate(input.encode() if input is not None else None, timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        done = subprocess.CompletedProcess(argv, proc.returncode, out.decode(errors="replace"),
                                           err.decode(errors="replace"))
        if check and done.returncode != 0:
            raise RuntimeError(f"{self.name}: {' '.join(argv)} exited {done.returncode}: "
                               f"{done.stderr.strip()}")
        return done

    def leftovers(self) -> set[str]:
        """What cnfperf left in the guest; empty when clean."""
        out = self.run(["sh", "-c", LEFTOVERS, "leftovers",
                        *leak.WATCHED_COMMS, "dpdk-"], check=True).stdout
        return {line.strip() for line in out.splitlines() if line.strip()}


@contextlib.contextmanager
def hosts(directory: Path, names: Iterable[str],
          wires: Iterable[tuple[str, str]] = (),
          sriov: Mapping[str, int] | None = None) -> Iterator[sshhosts.Lab]:
    """Boots the VMs and cables the wires (pairs of a VM's name and `local`);
    `sriov`: a VM's count of emulated SR-IOV NICs; everything goes again on
    the way out, also on a failure."""
    names, wires = list(names), list(wires)
    sshhosts._check(names, wires)
    if any(sshhosts.LOCAL not in wire for wire in wires):
        raise ValueError(f"wires join a VM and {sshhosts.LOCAL!r}: {wires}")
    harness.require("sshd", "ssh-keygen", "qemu-system-x86_64")
    sriov = dict(sriov or {})
    problems = VmRuntime.check()
    if any(sriov.values()) and (why := program.igb_problem()):
        problems.append(why)
    if problems:
        harness.missing("; ".join(problems))
    directory.mkdir(parents=True, exist_ok=True)
    _sweep()
    _compile(harness.REPO / "cnfperf")
    key = sshhosts._keygen(directory / "client_key")
    journal = Journal(directory / "vm.journal")
    runtime = VmRuntime(journal, directory, accel=ACCEL, memory_mb=MEMORY_MB,
                        kernel_since=lab.KERNEL_SINCE if sriov else None)
    runtime.configure(ACCEL, MEMORY_MB, pin=False)
    runtime.prepare(harness.engine())
    # The guest's root is this machine's, read-only: the runc images its points'
    # containers run (the tester's, a kernel api's NFs') are built here, where
    # they can be written.
    for built, image in ((harness.engine(), FULL), (static_engine(harness.engine()), MINIMAL)):
        RuncRuntime(None, directory / "runc").prepare(built, image)
    numbered = list(zip(wires, sshhosts._free_indexes(len(wires), WIRE + "{}a")))
    with contextlib.ExitStack() as stack:
        stack.callback(journal.close, True)
        started: dict[str, VmHost] = {}
        ends: list[tuple[sshhosts.End, sshhosts.End]] = []
        for name, index in zip(names, sshhosts._free_indexes(len(names), CONTROL + "{}")):
            mine = [(w, n) for w, n in numbered if name in w]
            started[name] = stack.enter_context(_host(runtime, directory, name, index, key,
                                                      [n for _, n in mine],
                                                      sriov.get(name, 0)))
            ends += [_ends(w, n) for w, n in mine]
        known_hosts = directory / "known_hosts"
        known_hosts.write_text("".join(
            f"{h.address} {sshhosts._public(directory / h.name / 'host_key')}\n"
            for h in started.values()))
        inventory = directory / "hosts.toml"
        inventory.write_text(sshhosts._inventory(started, ends, key, known_hosts))
        yield sshhosts.Lab(inventory, started, ends, key, known_hosts)


def _sweep() -> None:
    """What a test killed outright left (QEMU is not the test's child to take
    along): its VMs, their netns and taps. End-to-end tests run one at a time,
    so any there now is no other test's."""
    for name in VmRuntime.leftovers(NAME):
        VmRuntime.remove(name)
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for netns in (line.split()[0] for line in out.splitlines() if line.startswith(NAME)):
        subprocess.run(["ip", "netns", "del", netns], capture_output=True, timeout=20)
    out = subprocess.run(["ip", "-o", "link", "show", "type", "tun"], capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        link = line.split(":")[1].strip()
        if re.fullmatch(rf"{CONTROL}\d+|{WIRE}\d+a", link):
            sshhosts._del_link(link)


def _compile(package: Path) -> None:
    """cnfperf's bytecode, written here: the guest's root is read-only, so its
    Python would compile every module again, under TCG, at each agent's start."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True,
                   capture_output=True, timeout=120)


def _ends(wire: tuple[str, str], n: int) -> tuple[sshhosts.End, sshhosts.End]:
    """local's end first (the tap), then the guest's NIC."""
    vm = next(h for h in wire if h != sshhosts.LOCAL)
    here, there = sshhosts.End(sshhosts.LOCAL, f"{WIRE}{n}a"), sshhosts.End(vm, f"{WIRE}{n}b")
    return (here, there) if wire[0] == sshhosts.LOCAL else (there, here)


@contextlib.contextmanager
def _host(runtime: VmRuntime, directory: Path, name: str, index: int, client_key: Path,
          wires: list[int], pfs: int = 0) -> Iterator[VmHost]:
    files = directory / name
    files.mkdir()
    sshhosts._keygen(files / "host_key")
    (files / "authorized_keys").write_text(sshhosts._public(client_key) + "\n")
    address = f"10.252.{index}.2"
    (files / "sshd_config").write_text(sshhosts.SSHD_CONFIG.format(address=address,
                                                                   config=files))
    log = files / "sshd.log"
    netns = NETNS.format(index)
    control = f"{CONTROL}{index}"
    taps = [control] + [f"{WIRE}{n}a" for n in wires]
    nics = [Nic(_mac(index, 0), CONTROL_INSIDE, tap=control)]
    # a host with emulated SR-IOV NICs (the lab) has emulated NICs on its
    # wires too: the kernel's igb, or DPDK's by PCI address (a point binds them)
    wire_model = nic_slots.IGB if pfs else nic_slots.VIRTIO
    nics += [Nic(_mac(index, k + 1), f"{WIRE}{n}b", tap=f"{WIRE}{n}a", model=wire_model)
             for k, n in enumerate(wires)]
    pf_taps = [PF_TAP.format(index, k) for k in range(pfs)]
    nics += [Nic(_mac(index, 0x80 + k), f"{PF}{k}", tap=tap, model=nic_slots.IGB)
             for k, tap in enumerate(pf_taps)]
    with contextlib.ExitStack() as stack:
        sshhosts._ip("netns", "add", netns)
        stack.callback(sshhosts._ip, "netns", "del", netns)
        for tap in pf_taps:
            stack.callback(_del_tap, tap, netns)
            sshhosts._ip("-n", netns, "tuntap", "add", "dev", tap, "mode", "tap")
            sshhosts._ip("-n", netns, "link", "set", tap, "up")
        for tap in taps:
            # a persistent tap outlives QEMU: deleted here, wherever it is by then
            stack.callback(_del_tap, tap, netns)
            sshhosts._ip("-n", netns, "tuntap", "add", "dev", tap, "mode", "tap")
        vm = runtime.create(f"{NAME}{index}", sorted(online_cpus())[:VCPUS], netns,
                            mounts=[Mount(str(files), str(files), readonly=True),
                                    Mount(str(harness.REPO), str(harness.REPO), readonly=True)],
                            nics=nics)
        stack.callback(vm.destroy)
        for tap in taps:
            sshhosts._ip("-n", netns, "link", "set", tap, "netns", str(os.getpid()))
            sshhosts._quiet(tap)
            sshhosts._ip("link", "set", tap, "up")
        sshhosts._ip("addr", "add", f"10.252.{index}.1/30", "dev", control)
        host = VmHost(name, address, vm, log)
        host.run(["sh", "-c", SETUP, "setup", address], check=True)
        with open(log, "wb") as err:
            sshd = vm.exec([tools.find("sshd"), "-D", "-e", "-f", str(files / "sshd_config")],
                           stdout=subprocess.DEVNULL, stderr=err)
        sshhosts._wait_listening(sshd, address, log, READY_S)
        yield host


def _mac(index: int, nic: int) -> str:
    """Locally administered, unicast: 02:cf:76:00:<host>:<nic>."""
    return f"02:cf:76:00:{index:02x}:{nic:02x}"


def _del_tap(tap: str, netns: str) -> None:
    sshhosts._del_link(tap)
    subprocess.run(["ip", "-n", netns, "link", "del", tap], capture_output=True, timeout=20)
