"""Click NFs: `nf = click:mirror` and `click:strip-encap` (Click's `EtherMirror`,
and `Strip(14) -> EtherEncap` both ways: paper 001's network functions) and
`click:FILE` (a Click configuration of the user's), run by userlevel Click.

On a kernel api Click (the `click` build) reaches the NF's interfaces through
packet sockets: nf_api = raw is FromDevice's and ToDevice's METHOD LINUX (a
recvfrom or send per frame), mmap is METHOD PCAP (libpcap: a TPACKET_V3 ring
for receiving). Click has no AF_XDP element. With nf_api = dpdk Click with
DPDK (the `click-dpdk` build, DPDK linked in) polls the NF's DPDK ports with
FromDPDKDevice and ToDPDKDevice, given the EAL arguments the data plane gives
an engine, and one lcore. On packet sockets it sleeps in poll() until frames
come, whatever `poll` says: no busy poller (with DPDK it polls).

A configuration is text with the placeholders of a cmd: template ({iface1},
{port2}, {mac2}, {peer2}…: placeholders.py, checked there): a placeholder is a
name in braces; other braces are Click's own (compound elements). Every
configuration gets one element more, a Script that prints READY and Click's
clock once the router is initialized, its devices open: the NF's readiness;
with DPDK a DPDKInfo too that sizes its mbuf pool to the memory the data plane
gives (unless the configuration has its own). Our two kinds also print each
port's counters when SIGINT stops them (a SIGNAL Script), the NF's per-port
counters; they send frames on as they got them, so between udp ends they are
refused, and a user's configuration is warned about (SetUDPChecksum).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from cnfperf import UserError
from cnfperf.dataplanes import click as click_plane
from cnfperf.dataplanes.dpdk_args import lcores
from cnfperf.host import builds
from cnfperf.nfs import placeholders
from cnfperf.nfs.base import Command, NfKind, refused
from cnfperf.nfs.cmd import udp_warning
from cnfperf.nfs.engine import forwards_unfinished
from cnfperf.runtimes import images
from cnfperf.runtimes.images import Image

if TYPE_CHECKING:
    from cnfperf.dataplanes.base import Attachment
    from cnfperf.host.facts import HostFacts
    from cnfperf.plan import NF, Pair
    from cnfperf.scenario import Scenario

CLICK = "click:"
KINDS = ("mirror", "strip-encap")   # our configurations, of the engine's kinds of those names

# nf_api -> FromDevice's and ToDevice's METHOD
METHODS = {"raw": "LINUX", "mmap": "PCAP"}
APIS = (*METHODS, "dpdk")
READY = "cnfperf-click ready"
COUNTERS = "cnfperf-click port"
PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)\}")
MIN_SNAPLEN = 1514   # a standard frame without FCS: a stray one is not cut short
# What Click's ports take per wake-up or poll; the engine's default.
DEFAULT_BURST = 32
# Click's DPDK pool: its default (65536 mbufs) is more than the memory the data
# plane gives an NF (dpdk_args.endpoint_mb); this holds its rings and queues.
# An mbuf's data room is a frame, DPDK's 128-byte headroom, and no less than
# DPDK's default 2176 bytes.
NB_MBUF = 8191
MBUF_HEADROOM = 128
MIN_MBUF_SIZE = 2176
# Names of the elements we add to a user's configuration.
OURS = ("cnfperf_ready", "cnfperf_counters", "cnfperf_dpdk")


# Click on kernel interfaces (switches/click/); with DPDK it is the click data
# plane's build (switches/click-dpdk/). Each is named like the image that holds
# it (runtimes: CLICK, CLICK_DPDK): BUILDS maps one to the other.
BUILD = builds.Build("click", "Click modular router, userlevel (kernel interfaces)", ("bin/click",))
BUILDS = {b.name: b for b in (BUILD, click_plane.BUILD)}


def build_of(nf_api: str) -> builds.Build:
    """The build that runs Click NFs on this api."""
    return click_plane.BUILD if nf_api == "dpdk" else BUILD


# The click images: userlevel Click (the `click` build) and only the shared
# objects it links, nothing else: no engine, no shell. Click is the
# container's init too, a router with nothing to do (Idle) that a signal
# stops. CLICK_DPDK_IMAGE: the same of the click-dpdk build, DPDK and its drivers
# linked in (the EAL loads none from disk).
CLICK_PATH = "/bin/click"
CLICK_IMAGE = Image("click", "Click NFs on a kernel api: userlevel Click and its libraries",
                    program=images.BUILD, build=BUILD, path=CLICK_PATH, shell=False,
                    idle=("-e", "Idle"), budget_mb=32)
CLICK_DPDK_IMAGE = Image("click-dpdk",
                         "Click NFs on dpdk: Click with DPDK linked in, its libraries",
                         program=images.BUILD, build=click_plane.BUILD, path=CLICK_PATH, shell=False,
                         idle=("-e", "Idle"), budget_mb=160)


def kind_of(nf: str) -> str | None:
    """`mirror` or `strip-encap` for our kinds; None for a user's file."""
    name = nf[len(CLICK):]
    return name if name in KINDS else None


def path_of(nf: str) -> Path:
    """A user's configuration file (relative to the working directory)."""
    return Path(nf[len(CLICK):]).expanduser()


def ports_of(nf: str) -> int:
    """How many ports of ours print counters: none in a user's configuration."""
    return {"mirror": 1, "strip-encap": 2}.get(kind_of(nf) or "", 0)


def template(nf: str, nf_api: str, size: int = 64, burst: int = DEFAULT_BURST) -> str:
    """The configuration with its placeholders: ours, or the user's file as it
    is (UserError naming `nf` when it cannot be read)."""
    kind = kind_of(nf)
    if kind is not None:
        return _ours(kind, nf_api, max(size, MIN_SNAPLEN), burst)
    path = path_of(nf)
    if not str(path) or str(path) == ".":
        raise UserError("nf", f"{CLICK} needs one of {', '.join(KINDS)} or a Click "
                              "configuration file, e.g. click:my-nf.click")
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise UserError("nf", f"{nf}: neither one of {', '.join(CLICK + k for k in KINDS)} "
                              f"nor a file ({path} not found)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError("nf", f"{nf}: cannot read {path}: {getattr(e, 'strerror', None) or e}") \
            from None
    if not text.strip():
        raise UserError("nf", f"{nf}: {path} is empty")
    for name in OURS:
        if re.search(rf"\b{name}\b", text):
            raise UserError("nf", f"{nf}: {name} is a name cnfperf gives an element of its own")
    return text


def placeholders_of(text: str) -> list[str]:
    return PLACEHOLDER.findall(text)


def config(nf: str, nf_api: str, text: str, values: Mapping[str, Any], size: int = 64) -> str:
    """The configuration Click runs: placeholders filled in, our readiness
    Script added (and DPDK's pool), and the Script that prints our kinds'
    counters."""
    filled = PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)
    ours = ""
    if nf_api == "dpdk" and not re.search(r"\bDPDKInfo\b", text):
        ours += (f"{OURS[2]} :: DPDKInfo(NB_MBUF {NB_MBUF}, "
                 f"MBUF_SIZE {max(size + MBUF_HEADROOM, MIN_MBUF_SIZE)});\n")
    # `now` is the Script's own handler: Click's wall clock, as the engine's wall_ns.
    ours += f'{OURS[0]} :: Script(print "{READY} $({OURS[0]}.now)");\n'
    if ports_of(nf):
        ours += _counters(ports_of(nf), nf_api)
    return filled + "\n" + ours


def _counters(ports: int, nf_api: str) -> str:
    """Our kinds' Script that prints each port's counters on SIGINT, then stops:
    frames in (rx), out (tx), those its output could not take (refused: the
    Queue's drops, ToDPDKDevice's), those not IPv4 (bad), and those its
    socket or device dropped before Click read them (kernel: `??` if unknown)."""
    dpdk = nf_api == "dpdk"
    prints = ", ".join(
        f'print "{COUNTERS} {n} rx $(rx{n}.count) tx $(tx{n}.count) '
        f'refused $({f"out{n}.dropped" if dpdk else f"q{n}.drops"}) bad $(bad{n}.count) '
        f'kernel $({f"in{n}.hw_dropped" if dpdk else f"in{n}.kernel_drops"})"'
        for n in range(1, ports + 1))
    return f"{OURS[1]} :: Script(TYPE SIGNAL INT, {prints}, stop);\n"


def _ours(kind: str, nf_api: str, snaplen: int, burst: int) -> str:
    """Our kinds: each port's input (in1) and output (out1), counted where
    frames come in (rx1) and where they leave (tx1). As the engine's kinds, they
    take IPv4 frames only and count the rest as bad. On packet sockets SNIFFER
    stays true: false would need iptables in the image to keep the frames from
    the kernel, which drops them anyway (the NF's interfaces have no address);
    ToDevice pulls from a Queue. ToDPDKDevice takes pushed frames itself."""
    dpdk = nf_api == "dpdk"

    def port(n: int) -> str:
        if dpdk:
            return (f"in{n} :: FromDPDKDevice({{port{n}}}, PROMISC true, BURST {burst});\n"
                    f"out{n} :: ToDPDKDevice({{port{n}}}, BURST {burst});\n")
        method = METHODS[nf_api]
        return (f"in{n} :: FromDevice({{iface{n}}}, SNIFFER true, PROMISC true, "
                f"METHOD {method}, SNAPLEN {snaplen}, BURST {burst});\n"
                f"out{n} :: ToDevice({{iface{n}}}, METHOD {method}, BURST {burst});\n")

    def path(a: int, b: int, work: str) -> str:
        """Frames in at port a, through `work`, out at port b."""
        queue = "" if dpdk else f"-> q{b} :: Queue "
        return (f"in{a} -> rx{a} :: Counter -> ip{a} :: Classifier(12/0800, -) -> {work} "
                f"{queue}-> tx{b} :: Counter -> out{b};\n"
                f"ip{a}[1] -> bad{a} :: Counter -> Discard;\n")
    if kind == "mirror":
        return "// Click's EtherMirror: back where it came from, the MACs swapped\n" + \
            port(1) + path(1, 1, "EtherMirror")
    # The new header takes a frame to the next hop: from port 2's MAC to the
    # hop after towards the receiver, from port 1's to the hop before back.
    return ("// Click's Strip(14) -> EtherEncap both ways, a new header for the next hop\n" +
            port(1) + port(2) +
            path(1, 2, "Strip(14) -> EtherEncap(0x0800, {mac2}, {peer2})") +
            path(2, 1, "Strip(14) -> EtherEncap(0x0800, {mac1}, {peer1})"))


def argv(click: str, text: str, eal: Sequence[str] = (), lcores: str = "") -> list[str]:
    """Click's command line: with DPDK its EAL arguments and one lcore (Click
    runs a thread per lcore), and the configuration as its argument (the NF's
    argv file in the run directory holds it whole)."""
    dpdk = ["--dpdk", *eal, "--lcores", lcores, "--"] if eal else []
    return [click, *dpdk, "-e", text]


_READY_LINE = re.compile(rf"{READY} (\d+)(?:\.(\d+))?")
_COUNTER_LINE = re.compile(rf"{COUNTERS} (\d) rx (\d+) tx (\d+) refused (\d+) bad (\d+) "
                           r"kernel (\S+)")


def ready_wall_ns(lines: list[str]) -> int | None:
    """When Click said it was ready, by its wall clock (`sec.fraction`)."""
    for line in lines:
        m = _READY_LINE.search(line)
        if m:
            frac = (m.group(2) or "")[:9].ljust(9, "0")
            return int(m.group(1)) * 1_000_000_000 + int(frac)
    return None


def summary(nf: str, output: str) -> dict[str, Any]:
    """An engine-like summary: our kinds' counters, per port; none for a file.
    What a port's socket or device dropped before Click read it (`kernel`) is
    the link's loss, as for the engine's NFs, not the NF's: it is kept beside
    the counters as the engine's ends keep theirs."""
    ports = []
    for m in _COUNTER_LINE.finditer(output):
        n, rx, tx, refused, bad = (int(g) for g in m.groups()[:5])
        kernel = int(m.group(6)) if m.group(6).isdigit() else None
        ports.append({"port": n, "rx_packets": rx, "tx_packets": tx, "tx_refused": refused,
                      "dropped": {"other": bad}, "api_rx_dropped": kernel})
    ports.sort(key=lambda p: p["port"])
    out: dict[str, Any] = {"nf": nf, "ports": ports}
    if ports:
        out |= {"rx_packets": sum(p["rx_packets"] for p in ports),
                "tx_packets": sum(p["tx_packets"] for p in ports)}
    return out


class ClickKind(NfKind):
    names = tuple(CLICK + k for k in KINDS)
    styles = {CLICK + "mirror": 5, CLICK + "strip-encap": 6}   # a user's file: none
    prefix = CLICK
    forms = {"click:FILE": "a Click configuration of yours, likewise"}
    apis = APIS
    builds = (BUILD, click_plane.BUILD)

    @property
    def ours(self) -> str | None:
        """`mirror` or `strip-encap` for our kinds; None for a user's file."""
        return kind_of(self.nf)

    @property
    def ports(self) -> int:
        return 1 if self.ours == "mirror" else 2

    @property
    def counted(self) -> bool:
        return ports_of(self.nf) > 0

    def scenario_problem(self, s: Scenario) -> tuple[str, str] | None:
        """Its api, and its configuration: ours, or a readable file whose
        placeholders its ports will have; then the path's rules; ours send the
        udp ends' frames on unfinished."""
        if s.nf_api not in APIS:
            return "nf_api", (f"Click NFs reach their ports through packet sockets or DPDK: "
                              f"nf_api = {', '.join(APIS)}, not {s.nf_api} (Click has no AF_XDP "
                              "element)")
        try:
            for name in placeholders_of(template(self.nf, s.nf_api)):
                if name == "eal":
                    raise UserError("nf", "{eal} is for a command line: cnfperf gives Click its "
                                          "EAL arguments itself; name the ports {port1}, {port2}")
                placeholders.check_name(name, s.nf_api)
        except UserError as e:
            return refused(e)
        if (problem := super().scenario_problem(s)) is not None:
            return problem
        if s.api == "udp" and self.ours is not None:
            return "nf", forwards_unfinished(self.nf)
        return None

    def cores_problem(self, s: Scenario) -> str | None:
        if s.nf_cores > 1:
            return "Click NFs run their elements in one thread (one lcore with DPDK): nf_cores = 1"
        return None

    def warnings(self, s: Scenario) -> tuple[str, ...]:
        if not (s.nfs and s.api == "udp") or self.ours is not None:
            return ()
        return (udp_warning("a Click configuration that sends frames on as it reads them must "
                            "finish them (SetUDPChecksum)"),)

    def pollers(self, s: Scenario, cores: int) -> int:
        return cores if s.nf_api == "dpdk" else 0

    def problems(self, s: Scenario, host: HostFacts) -> list[str]:
        # the click build (click-dpdk on dpdk), from the host or in the click image
        return [f"nf {self.nf}: {p}" for p in builds.problems(build_of(s.nf_api))]

    def image(self, api: str, static_apis: Callable[[], Sequence[str]]) -> Image:
        return CLICK_DPDK_IMAGE if api == "dpdk" else CLICK_IMAGE

    def command(self, engine: str, nf: NF, ports: Sequence[Attachment], hops: Sequence[str],
                pair: Pair, s: Scenario, eal: Sequence[str],
                floating: Sequence[int] = ()) -> Command:
        text = template(self.nf, s.nf_api, s.size, s.burst)
        filled = config(self.nf, s.nf_api, text,
                        placeholders.values(nf, ports, hops, eal, floating), s.size)
        # Click runs a thread per lcore: one, its main, on the NF's core
        # (floating over the point's when unpinned)
        main = lcores((), floating) if floating else f"0@{nf.cpu}"
        return Command(argv(engine, filled, eal, main), records=False, ready=READY)

    def ready(self, lines: list[str]) -> dict[str, Any] | None:
        wall_ns = ready_wall_ns(lines)
        return {"type": "ready", "wall_ns": wall_ns} if wall_ns is not None else None

    def summary(self, output: str) -> dict[str, Any]:
        return summary(self.nf, output)
