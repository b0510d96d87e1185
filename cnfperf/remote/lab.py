"""The lab: hosts under test that are virtual machines on this one, a second
kernel each, whose hardware is emulated, reached over SSH as any host is
(`cnfperf lab`; the tests' remote hosts).

Each host is a QEMU guest of cnfperf's own vm runtime (runtimes/vm: the guest
kernel and initramfs, QEMU's command line, the exec server): its root is this
machine's, read-only over 9p, with memory where it writes, so sshd, the
cnfperf checkout and its .venv, and the engine are there at their paths. The
exec server starts sshd (its config, host key and authorized_keys in the
lab's directory, which the guest binds through) and keeps it while the host
lives. Its NICs are taps on this machine: one a control network
(10.252.<i>.0/30, sshd listens on the guest's end), one per wire, whose tap
is the wire's end here (`local`). QEMU runs in a netns of its own and opens
the taps there; they then move to this machine's netns, as a lent NIC later
moves again, its open device in QEMU carrying on.

A host may have emulated SR-IOV NICs (`sriov={"dut": 1}`: Intel 82576s,
QEMU's igb, under QEMU >= 8: the lab's parts, lab/parts.sh): `pf0`, `pf1`… in
the guest, their virtual functions the switch = sriov data plane's ports, and
the guest runs Debian's 6.12 kernel (netkit, openvswitch, act_police). Their
taps stay in QEMU's netns, cabled to nothing: the NIC switches between its VFs
itself. Such a host's wires are igb NICs too (`tv<n>b`, each a PF of its own,
its PCI address at `/sys/class/net/tv<n>b/device`).

Everything made is journaled before it exists (`journal`): `cnfperf cleanup`
removes what a killed lab left (dead_journals()).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

from cnfperf.dataplanes import DATAPLANES
from cnfperf.host import lab as parts, tools
from cnfperf.host.facts import static_engine
from cnfperf.host.journal import RUN_DIR, Journal
from cnfperf.host.keeper import Busy, Keeper
from cnfperf.remote import sshd
from cnfperf.runtimes import ContainerError
from cnfperf.runtimes.base import Container, Mount, Nic, online_cpus
from cnfperf.runtimes.images import FULL, MINIMAL
from cnfperf.runtimes.runc import RuncRuntime
from cnfperf.runtimes.vm import nics as nic_slots, program
from cnfperf.runtimes.vm.runtime import VmRuntime

REPO = Path(__file__).resolve().parents[2]   # the checkout every lab host runs
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
ACCEL = "tcg"              # KVM is not everywhere a lab runs (and PVM's hangs stock kernels)
MEMORY_MB = 1024           # the guest's: Python and cnfperf's agent, a point's netns
# sshd's start, under TCG on a busy machine; the guest's boot is the runtime's
READY_S = 60.0
RUN_S = 120.0              # a command from the machine, in the guest (Python's start is slow)
TOOLS = ("sshd", "ssh-keygen")
# `cnfperf lab`'s own: its directory (keys, sshd's files, the inventory:
# INVENTORY) and its journal, whose owner file says which process keeps it.
HOME = RUN_DIR / "lab"
INVENTORY = HOME / "hosts.toml"
JOURNAL = RUN_DIR / "lab.journal"
OWNER = RUN_DIR / "lab.owner"
KEEPER = Keeper("a lab", OWNER, JOURNAL)
# What `cnfperf lab` takes: a host's wires (each a tap here and an emulated
# NIC there) and emulated SR-IOV NICs (igb: 7 VFs each), within the VM's
# PCIe slots and what TCG boots in reasonable time.
MAX_WIRES, MAX_PFS = 8, 4

# What sshd needs besides its config, which /init does not make: its privilege
# separation directory; root's shell start-up files emptied (this machine's
# are no host's under test, and bash reads ~/.bashrc for every command over
# SSH: whatever it starts costs seconds under TCG); and what a host of
# cnfperf's has: cgroup2 mounted, the control network, a /var/lib it can
# write (a node's kubelet and CNI plugins write there whatever they are
# told: cnfperf cluster --hosts), in memory over this machine's.
SETUP = """set -e
mkdir -p /run/sshd /run/varlib/upper /run/varlib/work
for rc in /root/.bashrc /root/.profile /root/.bash_profile; do
    [ ! -f "$rc" ] || mount --bind /dev/null "$rc"
done
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t overlay overlay -o lowerdir=/var/lib,upperdir=/run/varlib/upper,workdir=/run/varlib/work /var/lib
ip addr add "$1/30" dev {inside}
ip link set {inside} up
""".format(inside=CONTROL_INSIDE)


class LabError(Exception):
    """The lab cannot start here: what is missing, or what failed."""


@dataclasses.dataclass
class GuestHost:
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


def problems(sriov: bool) -> list[str]:
    """What keeps a lab from starting here (the tools, the vm runtime's
    parts, and for emulated SR-IOV NICs a QEMU >= 8 and a 6.7+ kernel)."""
    found = tools.problems(*TOOLS) + VmRuntime.check()
    if sriov and (why := program.igb_problem()):
        found.append(why)
    return found


@contextlib.contextmanager
def hosts(directory: Path, names: Iterable[str], engine: Path,
          wires: Iterable[tuple[str, str]] = (), sriov: Mapping[str, int] | None = None,
          journal: Journal | None = None,
          say: Callable[[str], None] = lambda _line: None) -> Iterator[sshd.Lab]:
    """Boots the VMs and cables the wires (pairs of a VM's name and `local`);
    `sriov`: a VM's count of emulated SR-IOV NICs; `engine`: the built engine
    the hosts' points run; `journal`: where what it makes is written first
    (default: one in `directory`); everything goes again on the way out, also
    on a failure. `say`: a line per step (a boot takes tens of seconds)."""
    names, wires = list(names), list(wires)
    sshd.check(names, wires)
    if any(sshd.LOCAL not in wire for wire in wires):
        raise ValueError(f"wires join a VM and {sshd.LOCAL!r}: {wires}")
    sriov = dict(sriov or {})
    if found := problems(any(sriov.values())):
        raise LabError("; ".join(found))
    directory.mkdir(parents=True, exist_ok=True)
    say("compiling cnfperf's bytecode for the guests")
    _compile(REPO / "cnfperf")
    key = sshd.keygen(directory / "client_key")
    own = journal is None           # closed here; a caller's journal is the caller's
    journal = journal or Journal(directory / "vm.journal")
    runtime = VmRuntime(journal, directory, accel=ACCEL, memory_mb=MEMORY_MB,
                        kernel_since=parts.KERNEL_SINCE if sriov else None,
                        iommu=any(sriov.values()))
    runtime.configure(ACCEL, MEMORY_MB, pin=False)
    say("preparing the guest's kernel and initramfs, and the containers' images")
    runtime.prepare(engine)
    # The guest's root is this machine's, read-only: the runc images its points'
    # containers run (the tester's, a kernel api's NFs', a switch's of its own)
    # are built here, where they can be written. The switches' only where this
    # machine has their programs (a switch refuses without them anyway).
    runc = RuncRuntime(None, directory / "runc")
    switches = list(dict.fromkeys(dp.image for dp in DATAPLANES.values() if dp.image))
    for built, image in ((engine, FULL), (static_engine(engine), MINIMAL),
                         *((engine, i) for i in switches)):
        try:
            runc.prepare(built, image)
        except ContainerError:
            if image not in switches:
                raise
    numbered = list(zip(wires, sshd.free_indexes(len(wires), WIRE + "{}a")))
    with contextlib.ExitStack() as stack:
        if own:
            stack.callback(journal.close, True)
        started: dict[str, GuestHost] = {}
        ends: list[tuple[sshd.End, sshd.End]] = []
        for name, index in zip(names, sshd.free_indexes(len(names), CONTROL + "{}")):
            mine = [(w, n) for w, n in numbered if name in w]
            say(f"booting {name} (TCG: seconds; its agent, once a run asks, starts in a minute)")
            started[name] = stack.enter_context(_host(runtime, journal, directory, name, index,
                                                      key, [n for _, n in mine],
                                                      sriov.get(name, 0)))
            ends += [_ends(w, n) for w, n in mine]
        known_hosts = directory / "known_hosts"
        known_hosts.write_text(sshd.known_hosts_text(started.values(), directory))
        inventory = directory / "hosts.toml"
        inventory.write_text(sshd.inventory_text(started.values(), ends, key, known_hosts,
                                                 REPO))
        yield sshd.Lab(inventory, started, ends, key, known_hosts)


def leftovers() -> list[tuple[str, Callable[[], object]]]:
    """What a lab killed outright left (QEMU is not its child to take along):
    its VMs, their netns and taps, by name, each with what removes it.
    Refused while a lab runs."""
    if (pid := owner()) is not None:
        raise LabError(f"a lab runs (`cnfperf lab`, pid {pid}): its VMs are not leftovers")
    found: list[tuple[str, Callable[[], object]]] = [
        (f"vm {name}", lambda n=name: VmRuntime.remove(n)) for name in VmRuntime.leftovers(NAME)]
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found += [(f"netns {ns}", lambda ns=ns: sshd.ip("netns", "del", ns))
              for ns in (line.split()[0] for line in out.splitlines()) if ns.startswith(NAME)]
    out = subprocess.run(["ip", "-o", "link", "show", "type", "tun"], capture_output=True,
                         text=True).stdout
    found += [(f"tap {link}", lambda link=link: sshd.del_link(link))
              for link in (line.split(":")[1].strip() for line in out.splitlines())
              if re.fullmatch(rf"{CONTROL}\d+|{WIRE}\d+a", link)]
    return found


def sweep() -> None:
    """Every leftover of a lab killed outright removed (leftovers())."""
    for _, remove in leftovers():
        remove()


def owner() -> int | None:
    """The pid of the `cnfperf lab` that keeps this machine's lab, while it lives."""
    return KEEPER.owner()


@contextlib.contextmanager
def owned() -> Iterator[None]:
    """This process keeps the machine's lab while inside (owner()): cleanup
    leaves its VMs alone, and another lab is refused (LabError)."""
    try:
        with KEEPER.owned():
            yield
    except Busy as e:
        raise LabError(f"{e} (`cnfperf lab`)") from None


def dead_journals() -> list[Path]:
    """The journal of a lab whose `cnfperf lab` is gone (killed outright):
    what it made is leftovers."""
    return KEEPER.dead_journals()


def _compile(package: Path) -> None:
    """cnfperf's bytecode, written here: the guest's root is read-only, so its
    Python would compile every module again, under TCG, at each agent's start."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True,
                   capture_output=True, timeout=120)


def _ends(wire: tuple[str, str], n: int) -> tuple[sshd.End, sshd.End]:
    """local's end first (the tap), then the guest's NIC."""
    vm = next(h for h in wire if h != sshd.LOCAL)
    here, there = sshd.End(sshd.LOCAL, f"{WIRE}{n}a"), sshd.End(vm, f"{WIRE}{n}b")
    return (here, there) if wire[0] == sshd.LOCAL else (there, here)


@contextlib.contextmanager
def _host(runtime: VmRuntime, journal: Journal, directory: Path, name: str, index: int,
          client_key: Path, wires: list[int], pfs: int = 0) -> Iterator[GuestHost]:
    files = directory / name
    address = f"10.252.{index}.2"
    sshd.host_files(files, client_key, address, files)
    log = files / "sshd.log"
    netns = NETNS.format(index)
    control = f"{CONTROL}{index}"
    taps = [control] + [f"{WIRE}{n}a" for n in wires]
    nics = [Nic(_mac(index, 0), CONTROL_INSIDE, tap=control)]
    # a host with emulated SR-IOV NICs has emulated NICs on its wires too:
    # the kernel's igb, or DPDK's by PCI address (a point binds them)
    wire_model = nic_slots.IGB if pfs else nic_slots.VIRTIO
    nics += [Nic(_mac(index, k + 1), f"{WIRE}{n}b", tap=f"{WIRE}{n}a", model=wire_model)
             for k, n in enumerate(wires)]
    pf_taps = [PF_TAP.format(index, k) for k in range(pfs)]
    nics += [Nic(_mac(index, 0x80 + k), f"{PF}{k}", tap=tap, model=nic_slots.IGB)
             for k, tap in enumerate(pf_taps)]
    with contextlib.ExitStack() as stack:
        journal.add("netns", netns)
        sshd.ip("netns", "add", netns)
        stack.callback(_gone, journal, "netns", netns, sshd.ip, "netns", "del", netns)
        for tap in pf_taps + taps:
            # a persistent tap outlives QEMU: deleted here, wherever it is by then
            journal.add("link", tap)
            stack.callback(_gone, journal, "link", tap, _del_tap, tap, netns)
            sshd.ip("-n", netns, "tuntap", "add", "dev", tap, "mode", "tap")
        for tap in pf_taps:
            sshd.ip("-n", netns, "link", "set", tap, "up")
        vm = runtime.create(f"{NAME}{index}", sorted(online_cpus())[:VCPUS], netns,
                            mounts=[Mount(str(files), str(files), readonly=True),
                                    Mount(str(REPO), str(REPO), readonly=True)],
                            nics=nics)
        stack.callback(vm.destroy)
        for tap in taps:
            sshd.ip("-n", netns, "link", "set", tap, "netns", str(os.getpid()))
            sshd.quiet(tap)
            sshd.ip("link", "set", tap, "up")
        sshd.ip("addr", "add", f"10.252.{index}.1/30", "dev", control)
        host = GuestHost(name, address, vm, log)
        host.run(["sh", "-c", SETUP, "setup", address], check=True)
        with open(log, "wb") as err:
            server = vm.exec([tools.find("sshd"), "-D", "-e", "-f", str(files / "sshd_config")],
                             stdout=subprocess.DEVNULL, stderr=err)
        sshd.wait_listening(lambda: server.poll() is None, address, log, READY_S)
        yield host


def _gone(journal: Journal, kind: str, name: str, remove: Callable[..., None],
          *args: str) -> None:
    remove(*args)
    journal.discard(kind, name)


def _mac(index: int, nic: int) -> str:
    """Locally administered, unicast: 02:cf:76:00:<host>:<nic>."""
    return f"02:cf:76:00:{index:02x}:{nic:02x}"


def _del_tap(tap: str, netns: str) -> None:
    sshd.del_link(tap)
    subprocess.run(["ip", "-n", netns, "link", "del", tap], capture_output=True, timeout=20)
