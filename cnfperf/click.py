"""Click NFs: `nf = click:mirror` and `click:strip-encap` (Click's `EtherMirror`,
and `Strip(14) -> EtherEncap` both ways: paper 001's network functions) and
`click:FILE` (a Click configuration of the user's), run by userlevel Click
(the `click` build: switches/build.sh click) on the NF's kernel interfaces.

Click reaches its ports through packet sockets: nf_api = raw is FromDevice's
and ToDevice's METHOD LINUX (a recvfrom or send per frame), mmap is METHOD PCAP
(libpcap: a TPACKET_V3 ring for receiving). Click has no AF_XDP element, and
its DPDK elements need the click-dpdk build, which this kind does not run.

A configuration is text with the placeholders of a cmd: template ({iface1},
{mac2}, {peer2}…: functions.PLACEHOLDERS, checked there): a placeholder is a
name in braces; other braces are Click's own (compound elements). Every
configuration gets one element more, a Script that prints READY and Click's
clock once the router is initialized, its devices open: the NF's readiness.
Our two kinds also print each port's counters when SIGINT stops them (a SIGNAL
Script), the NF's per-port counters.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

from cnfperf import UserError
from cnfperf.fields import CLICK, CLICK_NFS

# nf_api -> FromDevice's and ToDevice's METHOD
METHODS = {"raw": "LINUX", "mmap": "PCAP"}
APIS = tuple(METHODS)
READY = "cnfperf-click ready"
COUNTERS = "cnfperf-click port"
PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)\}")
MIN_SNAPLEN = 1514   # a standard frame without FCS: a stray one is not cut short
# What Click's packet sockets take from the socket per wake-up; the engine's default.
DEFAULT_BURST = 32
# Names of the elements we add to a user's configuration.
OURS = ("cnfperf_ready", "cnfperf_counters")


def is_click(nf: str) -> bool:
    return nf.startswith(CLICK)


def kind_of(nf: str) -> str | None:
    """`mirror` or `strip-encap` for our kinds; None for a user's file."""
    name = nf[len(CLICK):]
    return name if name in CLICK_NFS else None


def path_of(nf: str) -> Path:
    """A user's configuration file (relative to the working directory)."""
    return Path(nf[len(CLICK):]).expanduser()


def template(nf: str, nf_api: str, size: int = 64, burst: int = DEFAULT_BURST) -> str:
    """The configuration with its placeholders: ours, or the user's file as it
    is (UserError naming `nf` when it cannot be read)."""
    kind = kind_of(nf)
    if kind is not None:
        return _ours(kind, METHODS[nf_api], max(size, MIN_SNAPLEN), burst)
    path = path_of(nf)
    if not str(path) or str(path) == ".":
        raise UserError("nf", f"{CLICK} needs one of {', '.join(CLICK_NFS)} or a Click "
                              "configuration file, e.g. click:my-nf.click")
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise UserError("nf", f"{nf}: neither one of {', '.join(CLICK + k for k in CLICK_NFS)} "
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


def placeholders(text: str) -> list[str]:
    return PLACEHOLDER.findall(text)


def ports_of(nf: str) -> int:
    """How many ports of ours print counters: none in a user's configuration."""
    return {"mirror": 1, "strip-encap": 2}.get(kind_of(nf) or "", 0)


def config(text: str, values: Mapping[str, Any], counted: int = 0) -> str:
    """The configuration Click runs: placeholders filled in, our readiness Script
    added, and the Script that prints the counters of our kinds' `counted` ports."""
    filled = PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)
    # `now` is the Script's own handler: Click's wall clock, as the engine's wall_ns.
    ours = f'\n{OURS[0]} :: Script(print "{READY} $({OURS[0]}.now)");\n'
    if counted:
        prints = ", ".join(
            f'print "{COUNTERS} {n} rx $(rx{n}.count) tx $(tx{n}.count) refused $(q{n}.drops) '
            f'bad $(bad{n}.count) kernel $(in{n}.kernel_drops)"' for n in range(1, counted + 1))
        ours += f"{OURS[1]} :: Script(TYPE SIGNAL INT, {prints}, stop);\n"
    return filled + ours


def _ours(kind: str, method: str, snaplen: int, burst: int) -> str:
    """Our kinds: each port's FromDevice (in1) and ToDevice (out1), counted where
    frames come in (rx1) and where they leave (tx1). As the engine's kinds, they
    take IPv4 frames only and count the rest as bad; SNIFFER stays true: false
    would need iptables in the image to keep the frames from the kernel, which
    drops them anyway (the NF's interfaces have no address)."""
    def port(n: int) -> str:
        return (f"in{n} :: FromDevice({{iface{n}}}, SNIFFER true, PROMISC true, "
                f"METHOD {method}, SNAPLEN {snaplen}, BURST {burst});\n"
                f"out{n} :: ToDevice({{iface{n}}}, METHOD {method}, BURST {burst});\n")

    def path(a: int, b: int, work: str) -> str:
        """Frames in at port a, through `work`, out at port b."""
        return (f"in{a} -> rx{a} :: Counter -> ip{a} :: Classifier(12/0800, -) -> {work} "
                f"-> q{b} :: Queue -> tx{b} :: Counter -> out{b};\n"
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


def argv(click: str, text: str) -> list[str]:
    """Click's command line: the configuration as its argument (the NF's argv
    file in the run directory holds it whole)."""
    return [click, "-e", text]


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
    What a port's socket dropped before Click read it (`kernel`: `??` when it
    cannot tell) is the link's loss, as for the engine's NFs, not the NF's:
    it is kept beside the counters as the engine's ends keep theirs."""
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
