"""End to end: malformed and foreign frames, written by a packet socket from
this test, into a real receiver or nf over veths between namespaces.

- VLAN-tagged frames: the receiving kernel takes the tag out before a packet
  socket sees the frame; raw and mmap put it back, so a tagged frame is
  `other` to a receiver and to every nf kind, as it is on xdp and on DPDK's
  af_packet PMD (inline);
- a sequence number no sender could have reached by the frame's own timestamp
  is `bad`, not a gap of ~2^61 or 2^31, and a stray first frame does not
  anchor its flow;
- nf l3 drops a header whose checksum does not hold (RFC 1812), as `bad`;
- jumbo frames pass an nf started without --size on a jumbo link.
"""
from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import time

import pytest

import harness
from test_kernel_apis import RECEIVER_RUN, assert_delivered, sender_run
from test_nf import nf_across

pytestmark = pytest.mark.e2e

PORT = 9000
MAGIC = 0xCF7E
COUNT = 100


def _sum(data: bytes) -> int:
    data += b"\0" * (len(data) % 2)
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def frame(src, dst, seq: int, size: int = 64, vlan: int | None = None,
          bad_ip_checksum: bool = False) -> bytes:
    """An engine frame (engine/README.md, *Wire format*) from end src to end dst:
    Ethernet, IPv4, UDP (no checksum), magic, sequence number, timestamp."""
    payload = struct.pack("!HQQ", MAGIC, seq, time.monotonic_ns())
    payload += bytes(size - 4 - 42 - len(payload))
    udp = struct.pack("!HHHH", PORT, PORT, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     socket.inet_aton(src.ip), socket.inet_aton(dst.ip))
    checksum = ~_sum(ip) & 0xFFFF
    if bad_ip_checksum:
        checksum ^= 0x0101
    ip = ip[:10] + struct.pack("!H", checksum) + ip[12:]
    eth = bytes.fromhex(dst.mac.replace(":", "")) + bytes.fromhex(src.mac.replace(":", ""))
    if vlan is not None:
        eth += struct.pack("!HH", 0x8100, vlan)
    return eth + b"\x08\x00" + ip + udp


def send_frames(end, frames: list[bytes]) -> None:
    """Written on end's interface from inside its namespace, 1 ms apart."""
    script = ("import socket, sys, time\n"
              "s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n"
              f"s.bind(({end.iface!r}, 0))\n"
              "for f in sys.stdin.buffer.read().split(b'\\n--\\n'):\n"
              "    s.send(bytes.fromhex(f.decode())); time.sleep(0.001)\n")
    data = b"\n--\n".join(f.hex().encode() for f in frames)
    subprocess.run(["ip", "netns", "exec", end.netns, "python3", "-c", script], input=data,
                   check=True, timeout=60)


def via(port, end):
    """Frames to end's address through an nf's port: its MAC, end's IP (l3
    routes by address)."""
    return type(end)(port.netns, port.iface, port.mac, end.ip)


def recv_args(engine, api: list[str], end) -> list:
    return [engine, "recv", "--api", *api, "--iface", end.iface, "--src-ip", end.ip,
            "--sport", str(PORT), *RECEIVER_RUN]


KERNEL_APIS = [["raw"], ["raw", "-m"], ["mmap"], ["xdp", "--xdp-mode", "skb"]]
IDS = ["raw", "raw-mmsg", "mmap", "xdp"]


@pytest.mark.parametrize("api", KERNEL_APIS, ids=IDS)
def test_vlan_tagged_frames_are_not_the_receiver_s(engine, pair, engines, api):
    """Before, raw and mmap counted them as their own: the tag was out of sight."""
    a, b = pair
    rx = engines(b.netns, recv_args(engine, api, b))
    rx.ready()
    send_frames(a, [frame(a, b, i, vlan=5) for i in range(COUNT)] +
                [frame(a, b, i) for i in range(COUNT)])
    time.sleep(0.2)
    got = rx.interrupt()
    assert got["rx_packets"] == COUNT and got["other"] >= COUNT, got
    for key in ("bad", "lost", "reordered", "duplicate"):
        assert got[key] == 0, (key, got)


def test_vlan_tagged_frames_are_not_a_dpdk_receiver_s(engine, pair, engines):
    """DPDK's af_packet PMD puts the tag the kernel took out back into the frame
    (the engine asks for no VLAN stripping): the frame is other."""
    harness.require_api(engine, "dpdk")
    a, b = pair
    prefix = f"{b.netns}x"          # the namespace's random tag: this test's alone
    eal = ["--", "--no-huge", "-m", "64", "--no-pci", "--no-telemetry", "--file-prefix", prefix,
           "--vdev", f"net_af_packet0,iface={b.iface},qpairs=1"]
    try:
        rx = engines(b.netns, [engine, "recv", "--api", "dpdk", "--src-ip", b.ip, "--sport", str(PORT),
                               *RECEIVER_RUN, *eal])
        rx.ready()
        send_frames(a, [frame(a, b, i, vlan=5) for i in range(COUNT)] +
                    [frame(a, b, i) for i in range(COUNT)])
        time.sleep(0.2)
        got = rx.interrupt()
    finally:
        # --no-huge cannot be --in-memory: the EAL's runtime directory stays behind
        shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)
    assert got["rx_packets"] == COUNT and got["other"] >= COUNT and got["bad"] == 0, got


@pytest.mark.parametrize("api, nf", [(["raw", "-m"], "l2"), (["mmap"], "l3")], ids=["raw-l2", "mmap-l3"])
def test_nfs_drop_tagged_frames_as_other(engine, chain, engines, api, nf):
    """Before, l2 and l3 forwarded them with the tag lost."""
    s, f1, f2, r = chain
    rx = engines(r.netns, recv_args(engine, ["raw"], r))
    rx.ready()
    fwd = engines(f1.netns, nf_across(engine, chain, api, nf))
    fwd.ready()
    to_r = via(f1, r)
    send_frames(s, [frame(s, to_r, i, vlan=7) for i in range(COUNT)] +
                [frame(s, to_r, i) for i in range(COUNT)])
    time.sleep(0.2)
    forwarded = fwd.interrupt()
    got = rx.interrupt()
    port1 = [p for p in forwarded["ports"] if p["port"] == 1][0]
    port2 = [p for p in forwarded["ports"] if p["port"] == 2][0]
    assert port1["dropped"]["other"] >= COUNT and port2["tx_packets"] == COUNT, forwarded
    assert got["rx_packets"] == COUNT and got["bad"] == 0, got


def test_a_sequence_number_no_sender_reached_is_bad_not_a_gap(engine, pair, engines):
    """One frame with a random 62-bit number amid a flow: before, lost grew by
    ~2^61 and every later frame counted reordered."""
    a, b = pair
    rx = engines(b.netns, recv_args(engine, ["raw"], b))
    rx.ready()
    stray = 0x2C5C1F0EA3B411D7 & ((1 << 62) - 1)
    frames = [frame(a, b, i) for i in range(COUNT)]
    frames.insert(COUNT // 2, frame(a, b, stray))
    send_frames(a, frames)
    time.sleep(0.2)
    got = rx.interrupt()
    assert got["rx_packets"] == COUNT and got["bad"] == 1, got
    assert got["lost"] == got["reordered"] == got["duplicate"] == 0, got


def test_a_flipped_bit_is_bounded_by_the_frame_s_own_timestamp(engine, pair, engines):
    """Frame 50's number with bit 31 flipped, 2^31 ahead of its flow: before,
    2^31 - 50 lost and every later frame reordered (the bound was 2^32 either
    way); the frame's timestamp, a millisecond after the flow's head, allows
    a few thousand frames ahead. It is bad, and its own number is missing."""
    a, b = pair
    rx = engines(b.netns, recv_args(engine, ["raw"], b))
    rx.ready()
    frames = [frame(a, b, i ^ (1 << 31) if i == COUNT // 2 else i) for i in range(COUNT)]
    send_frames(a, frames)
    time.sleep(0.2)
    got = rx.interrupt()
    assert got["rx_packets"] == COUNT - 1 and got["bad"] == 1, got
    assert got["lost"] == 1 and got["reordered"] == got["duplicate"] == 0, got


def test_a_stray_first_frame_does_not_anchor_its_flow(engine, pair, engines):
    """A stray first, then the flow from 0: before, a first number below the
    nanoseconds since boot anchored the flow (2^48 on a host up 78 hours; here
    half this host's uptime) and every real frame was bad. It is above what a
    sender started after the receiver could have reached by its timestamp."""
    a, b = pair
    rx = engines(b.netns, recv_args(engine, ["raw"], b))
    rx.ready()
    stray = time.monotonic_ns() // 2
    send_frames(a, [frame(a, b, stray)] + [frame(a, b, i) for i in range(COUNT)])
    time.sleep(0.2)
    got = rx.interrupt()
    assert got["rx_packets"] == COUNT and got["bad"] == 1, got
    assert got["lost"] == got["reordered"] == got["duplicate"] == 0, got


def test_l3_drops_headers_whose_checksum_does_not_hold(engine, chain, engines):
    s, f1, f2, r = chain
    rx = engines(r.netns, recv_args(engine, ["raw"], r))
    rx.ready()
    fwd = engines(f1.netns, [engine, "nf", "--api", "raw", "--iface", f1.iface, "--iface2", f2.iface,
                             "--nf", "l3", "--route", "198.18.2.0/24,2", "--dst-mac", s.mac,
                             "--dst-mac2", r.mac, "--duration", "0", "--interval", "0"])
    fwd.ready()
    to_r = via(f1, r)
    frames = [frame(s, to_r, i, bad_ip_checksum=i % 2 == 1) for i in range(2 * COUNT)]
    send_frames(s, frames)
    time.sleep(0.2)
    forwarded = fwd.interrupt()
    got = rx.interrupt()
    port1 = [p for p in forwarded["ports"] if p["port"] == 1][0]
    port2 = [p for p in forwarded["ports"] if p["port"] == 2][0]
    assert port1["dropped"]["bad"] == COUNT and port2["tx_packets"] == COUNT, forwarded
    assert got["rx_packets"] == COUNT and got["bad"] == 0, got
    # every other sequence number is missing: the receiver sees the gaps
    assert got["lost"] == COUNT - 1, got


@pytest.mark.parametrize("api, mtu", [(["raw"], 9000), (["mmap"], 9000), (["xdp", "--xdp-mode", "copy"], 3500)],
                         ids=["raw", "mmap", "xdp"])
def test_jumbo_frames_cross_an_nf_started_without_a_size(engine, chain, engines, api, mtu):
    """Before, raw's egress buffers held 1514 bytes (tx_refused) and xdp's umem
    2 KB frames, whatever the link carried. A veth takes a native XDP program
    only while its peer's MTU leaves a page for a frame: 3500 bytes, not 9000."""
    s, f1, f2, r = chain
    for end in chain:
        subprocess.run(["ip", "-n", end.netns, "link", "set", end.iface, "mtu", str(mtu)], check=True)
    rx = engines(r.netns, recv_args(engine, ["raw"], r))
    rx.ready()
    fwd = engines(f1.netns, [engine, "nf", "--api", *api, "--iface", f1.iface, "--iface2", f2.iface,
                             "--dst-mac", s.mac, "--dst-mac2", r.mac, "--duration", "0", "--interval", "0"])
    fwd.ready()
    tx = engines(s.netns, [engine, "send", "--api", "raw", "--iface", s.iface, "--src-ip", s.ip,
                           "--dst-ip", r.ip, "--dst-mac", f1.mac, "--dport", str(PORT),
                           "--size", str(mtu + 18), *sender_run(5000)])
    sent = tx.summary()
    time.sleep(0.2)
    forwarded = fwd.interrupt()
    got = rx.interrupt()
    assert_delivered(sent, got, 5000)
    assert got["size"] == mtu + 18 and forwarded["tx_refused"] == 0, (got, forwarded)
