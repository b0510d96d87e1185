"""End to end: the engine's kernel apis (udp, raw) through its real roles.

Namespaces joined by veth pairs, real sockets, the real binary. Rates are low
and runs short (20k pps, 1 s): these tests check accounting, valid frames and
clean shutdown; bench/engine_kernel.py measures speed. Receivers run with
--duration 0 and are stopped with SIGINT once the sender is done, as the
orchestrator does.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import harness
from engines import most_sent

pytestmark = pytest.mark.e2e

RATE = 20000
DURATION = 1.0
PORT = "9000"


def endpoint(role: str, api: str, me, peer) -> list[str]:
    """Addresses as the orchestrator passes them: src-* is this endpoint, dst-* its peer."""
    args = ["--api", api, "--src-ip", me.ip, "--sport", PORT]
    if api == "raw":
        args += ["--iface", me.iface]
    if role in ("send", "client"):
        args += ["--dst-ip", peer.ip, "--dport", PORT]
        if api == "raw":
            args += ["--dst-mac", peer.mac]
    return args


def sender_run(rate: int = RATE) -> list[str]:
    return ["--rate", str(rate), "--duration", str(DURATION), "--interval", "0.5"]


# Not pinned: on a 2-core machine shared with other busy pollers the scheduler
# places us better than a fixed core would (bench/ pins, tests do not).
RECEIVER_RUN = ["--duration", "0", "--interval", "0.5"]


def assert_latency(summary: dict, kind: str) -> None:
    lat = summary["latency"]
    assert lat["kind"] == kind
    assert lat["count"] == summary["rx_packets"] > 0
    order = [lat[k] for k in ("min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "p9999_ns", "max_ns")]
    assert all(isinstance(v, int) for v in order), lat
    assert 0 < order[0] and order == sorted(order), f"percentiles out of order: {order}"
    assert lat["min_ns"] <= lat["mean_ns"] <= lat["max_ns"] and lat["stddev_ns"] >= 0
    buckets = lat["histogram"]
    assert sum(n for _, _, n in buckets) == lat["count"]
    assert all(lo <= hi for lo, hi, _ in buckets) and buckets == sorted(buckets)
    assert buckets[0][0] <= lat["min_ns"] <= buckets[0][1] and buckets[-1][0] <= lat["max_ns"] <= buckets[-1][1]


def assert_delivered(sent: dict, received: dict, expected: float) -> None:
    """Everything the sender put out arrived once, in order, intact. It sent what
    was asked for, never more; after a long stall the pacer forgives the debt
    rather than flood, and what it forgave (tx_skipped) is few
    (harness.assert_summary_sent): a sender that sent little passes no longer."""
    assert sent["tx_packets"] <= expected + sent["burst"], f"sent too many: {sent}"
    harness.assert_summary_sent(sent, expected)
    assert sent["tx_pps"] <= 1.02 * sent["offered_pps"], sent
    assert received["rx_packets"] == sent["tx_packets"], (sent, received)
    for key in ("lost", "bad", "corrupt", "reordered", "duplicate"):
        assert received[key] == 0, f"{key}: {received}"
    assert received["warmup_packets"] == sent["warmup_packets"]


INTERRUPT = ["--poll", "interrupt"]

CASES = {
    # name: (api, receiver flags, sender flags); receivers that wait for frames
    # (--poll interrupt) leave the CPU to the sender, one busy-polling pair keeps
    # that path tested
    "udp": ("udp", [], []),
    "udp-mmsg": ("udp", ["-m", *INTERRUPT], ["-m", *INTERRUPT, "--flows", "4", "--warmup", "0.3"]),
    "raw": ("raw", [*INTERRUPT, "-c"], [*INTERRUPT, "-c", "-p", "256"]),
    "raw-mmsg": ("raw", ["-m", *INTERRUPT, "-b", "8"], ["-m", "-b", "8", "--flows", "3"]),
}


@pytest.mark.parametrize("case", CASES)
def test_send_recv(engine, pair, engines, case):
    api, recv_flags, send_only = CASES[case]
    a, b = pair
    rx = engines(b.netns, [engine, "recv", *endpoint("recv", api, b, a), *recv_flags, *RECEIVER_RUN])
    ready = rx.ready()
    assert ready["role"] == "recv" and ready["api"] == api and ready["pid"] > 0
    tx = engines(a.netns, [engine, "send", *endpoint("send", api, a, b), *send_only, *sender_run()])
    sent = tx.summary()
    time.sleep(0.2)
    received = rx.interrupt()

    assert_delivered(sent, received, RATE * DURATION)
    assert_latency(received, "one_way")
    assert sent["offered_pps"] == RATE and sent["tx_refused"] == 0
    assert abs(sent["tx_pps"] - sent["tx_packets"] / sent["duration_s"]) < 1
    if "--warmup" in send_only:
        assert sent["warmup_packets"] > 0.25 * RATE * 0.3, sent
    flows = int(send_only[send_only.index("--flows") + 1]) if "--flows" in send_only else 1
    assert received["flows_seen"] == flows
    size = int(send_only[send_only.index("-p") + 1]) if "-p" in send_only else 64
    assert sent["size"] == received["size"] == size
    assert received["rx_bytes"] == received["rx_packets"] * size
    intervals = [r for r in tx.records if r["type"] == "interval"]
    assert intervals and sum(r["tx_packets"] for r in intervals) <= sent["tx_packets"]


def test_flows_spread_over_destination_addresses(engine, pair, engines):
    """--ip-span 3: flow f is addressed to --dst-ip + f % 3, its IP checksum
    kept right (a raw receiver checks it: `bad`); a receiver spanning the same
    addresses takes every frame, one spanning fewer counts the rest as someone
    else's (`other`)."""
    a, b = pair
    flags = [*INTERRUPT, "--flows", "3", "--ip-span", "3"]
    for span, share in (("3", 1.0), ("2", 2 / 3)):
        rx = engines(b.netns, [engine, "recv", *endpoint("recv", "raw", b, a), *INTERRUPT,
                               "--ip-span", span, *RECEIVER_RUN])
        rx.ready()
        tx = engines(a.netns, [engine, "send", *endpoint("send", "raw", a, b), *flags,
                               *sender_run(2000)])
        sent = tx.summary()
        time.sleep(0.2)
        received = rx.interrupt()
        assert received["bad"] == 0 and received["lost"] == 0, received
        assert received["flows_seen"] == round(3 * share), received
        # flows take turns by burst: the share to within a burst or two
        assert abs(received["rx_packets"] - share * sent["tx_packets"]) <= 2 * sent["burst"], \
            (sent, received)


def test_a_stalled_sender_counts_what_its_schedule_skipped(engine, pair, engines):
    """A sender stopped for 300 ms inside its window (SIGSTOP: a host taking the
    core away) catches up at most PACER_CATCHUP bursts, not 300 ms of frames in
    a flood, and counts the rest as tx_skipped: sent + skipped is its schedule."""
    a, b = pair
    rx = engines(b.netns, [engine, "recv", *endpoint("recv", "udp", b, a), *INTERRUPT, *RECEIVER_RUN])
    rx.ready()
    tx = engines(a.netns, [engine, "send", *endpoint("send", "udp", a, b), *INTERRUPT, *sender_run()])
    tx.ready()
    time.sleep(0.3)
    os.kill(tx.proc.pid, signal.SIGSTOP)
    time.sleep(0.3)
    os.kill(tx.proc.pid, signal.SIGCONT)
    sent = tx.summary()
    received = rx.interrupt()

    assert sent["tx_skipped"] >= 0.25 * RATE, sent          # 0.3 s at the rate, less the catch-up
    assert 0.9 * RATE * DURATION <= sent["tx_packets"] + sent["tx_skipped"] \
        <= most_sent(RATE, DURATION, sent["burst"]), sent
    assert received["rx_packets"] == sent["tx_packets"] and received["lost"] == 0, received
    assert received["tx_skipped"] == 0
    # the stop is the sender's stall (overslept between two bursts), 300 ms of it
    stalls = sent["stalls"]
    assert stalls["threshold_ns"] == 200_000 and stalls["pollers"] == 1, stalls
    assert stalls["count"] >= 1 and 0.25e9 <= stalls["max_ns"] <= stalls["total_ns"] \
        <= sent["duration_s"] * 1e9, stalls


@pytest.mark.parametrize("api,flags", [("udp", INTERRUPT), ("raw", ["-m"])], ids=["udp-interrupt", "raw-mmsg"])
def test_client_server_rtt(engine, pair, engines, api, flags):
    a, b = pair
    srv = engines(b.netns, [engine, "server", *endpoint("server", api, b, a), *flags, *RECEIVER_RUN])
    srv.ready()
    cli = engines(a.netns, [engine, "client", *endpoint("client", api, a, b), *flags, "--flows", "2",
                            *sender_run(5000), "--drain", "0.3"])
    rtt = cli.summary()
    served = srv.interrupt()

    assert rtt["tx_packets"] <= most_sent(5000, DURATION, rtt["burst"]), rtt
    harness.assert_summary_sent(rtt, 5000 * DURATION)
    assert rtt["rx_packets"] == rtt["tx_packets"] == served["rx_packets"] == served["tx_packets"], (rtt, served)
    assert rtt["lost"] == 0 and rtt["duplicate"] == 0 and rtt["bad"] == 0
    assert served["bad"] == 0 and served["tx_refused"] == 0
    assert rtt["flows_seen"] == 2
    assert_latency(rtt, "rtt")
    # echoes go through a round trip of two veth hops: more than a microsecond, less than a second
    assert 1000 < rtt["latency"]["p50_ns"] < 1e9


@pytest.mark.parametrize("threads", ["1", "2"])
def test_polling_client_threads(engine, pair, engines, threads):
    """A client on a non-blocking socket: --threads 1 takes the echoes in the
    generator's idle time, --threads 2 on a receive thread; both account
    every echo and order their percentiles (timing is for benchmarks)."""
    a, b = pair
    srv = engines(b.netns, [engine, "server", *endpoint("server", "udp", b, a), *INTERRUPT, *RECEIVER_RUN])
    srv.ready()
    cli = engines(a.netns, [engine, "client", *endpoint("client", "udp", a, b), "--threads", threads,
                            "-b", "1", *sender_run(2000), "--warmup", "0.2", "--drain", "0.3"])
    ready = cli.ready()
    time.sleep(0.3)  # ready comes just before the receive thread starts
    # the thread count is the point: read it from the kernel while the client runs
    tasks = len(list(Path(f"/proc/{ready['pid']}/task").iterdir()))
    rtt = cli.summary()
    served = srv.interrupt()

    assert tasks == int(threads)
    assert 0 < rtt["tx_packets"] <= most_sent(2000, DURATION, 1), rtt
    assert rtt["rx_packets"] == rtt["tx_packets"], rtt
    assert served["rx_packets"] == served["tx_packets"] == rtt["tx_packets"], (rtt, served)
    assert served["warmup_packets"] == rtt["warmup_packets"] > 0, (rtt, served)
    for key in ("lost", "bad", "corrupt", "reordered", "duplicate", "tx_refused"):
        assert rtt[key] == 0, f"{key}: {rtt}"
    assert_latency(rtt, "rtt")
    intervals = [r for r in cli.records if r["type"] == "interval"]
    assert intervals and all(r["latency"]["count"] == r["rx_packets"] for r in intervals), intervals
    assert sum(r["rx_packets"] for r in intervals) <= rtt["rx_packets"]


def test_a_held_engine_keeps_its_port_until_its_stdin_ends(engine, pair, engines):
    """--hold: summary first, port open and idle after it, exit 0 at end of stdin."""
    a, b = pair
    rx = engines(b.netns, [engine, "recv", *endpoint("recv", "raw", b, a), *RECEIVER_RUN, "--hold"])
    rx.ready()
    tx = engines(a.netns, [engine, "send", *endpoint("send", "raw", a, b), *sender_run(), "--hold"])
    sent = tx.summary()
    time.sleep(0.3)
    received = rx.interrupt()
    harness.assert_summary_sent(sent, RATE * DURATION)
    assert received["rx_packets"] == sent["tx_packets"]
    time.sleep(0.5)
    assert tx.proc.poll() is None and rx.proc.poll() is None, "a held engine exited"
    tx.release()
    rx.release()


def test_a_held_engine_without_stdin_closes_at_once(engine, pair):
    """Nobody to release it (stdin is /dev/null): it does not wait."""
    a, b = pair
    done = subprocess.run(["ip", "netns", "exec", a.netns, str(engine), "send",
                           *endpoint("send", "raw", a, b), "--rate", "1000", "--duration", "0.2",
                           "--interval", "0", "--hold"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["type"] for line in done.stdout.splitlines()] == \
        ["ready", "start", "summary"]


def test_sigint_ends_an_endless_sender(engine, pair, engines):
    a, b = pair
    tx = engines(a.netns, [engine, "send", *endpoint("send", "raw", a, b), "--rate", "10k",
                           "--duration", "0", "--interval", "0.2"])
    tx.ready()
    time.sleep(0.6)
    sent = tx.interrupt()
    assert 0.3 < sent["duration_s"] < 5
    harness.assert_summary_sent(sent, 10_000 * sent["duration_s"])     # its rate, until SIGINT
    assert 0 < sent["tx_pps"] <= 10000 * 1.02, sent
    assert len([r for r in tx.records if r["type"] == "interval"]) >= 1


def _tshark(pcap, *fields: str) -> list[list[str]]:
    out = subprocess.run(
        ["tshark", "-r", str(pcap), "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
         "-T", "fields", *[x for f in fields for x in ("-e", f)]],
        capture_output=True, text=True, timeout=60, check=True).stdout
    return [line.split("\t") for line in out.splitlines()]


@pytest.mark.parametrize("api", ["raw", "udp"])
@pytest.mark.needs("tcpdump", "tshark", "ethtool")
def test_capture_decodes_cleanly(engine, pair, engines, tmp_path, api):
    """The sender's frames, captured on the wire (the peer's side of the veth: a raw
    sender bypasses the qdisc and with it the taps on its own side), decode with
    the right fields, good checksums and no expert warnings."""
    a, b = pair
    if api == "udp":
        # veth leaves the UDP checksum partial (offload); make the kernel finish it
        subprocess.run(["ip", "netns", "exec", a.netns, "ethtool", "-K", a.iface, "tx", "off"],
                       check=True, capture_output=True, timeout=20)
    pcap = tmp_path / "frames.pcap"
    pcap.touch()
    pcap.chmod(0o666)    # tcpdump drops to its own user before writing
    cap = subprocess.Popen(["ip", "netns", "exec", b.netns, "tcpdump", "-i", b.iface, "-U", "--immediate-mode",
                            "-w", str(pcap), "udp"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)  # tcpdump opens its socket in its own time; no signal says when
        rx = engines(b.netns, [engine, "recv", *endpoint("recv", api, b, a), *RECEIVER_RUN])
        rx.ready()
        tx = engines(a.netns, [engine, "send", *endpoint("send", api, a, b), "-p", "100", "--flows", "2", "-c",
                               "-b", "10", "--rate", "1000", "--duration", "0.1", "--interval", "0"])
        sent = tx.summary()
        time.sleep(0.3)
        rx.interrupt()
    finally:
        cap.send_signal(2)
        cap.wait(timeout=10)

    rows = _tshark(pcap, "frame.len", "ip.src", "ip.dst", "ip.len", "ip.checksum.status", "ip.ttl",
                   "udp.srcport", "udp.dstport", "udp.length", "udp.checksum.status", "_ws.expert")
    assert 20 <= len(rows) == sent["tx_packets"] <= 100, (len(rows), sent)
    sports = set()
    for frame_len, src, dst, ip_len, ip_ok, ttl, sport, dport, udp_len, udp_ok, expert in rows:
        assert (src, dst) == (a.ip, b.ip)
        assert int(frame_len) == 96 and int(ip_len) == 82 and int(udp_len) == 62
        assert ip_ok == "1" and int(ttl) > 0
        assert udp_ok in ("1", "3"), "checksum good (1), or 0 = not present (3, raw: legal in IPv4)"
        assert dport == PORT and expert == "", expert
        sports.add(int(sport))
    assert sports == {9000, 9001}
    warnings = subprocess.run(["tshark", "-r", str(pcap), "-q", "-z", "expert,warn", "-o", "ip.check_checksum:TRUE",
                               "-o", "udp.check_checksum:TRUE"], capture_output=True, text=True, timeout=60).stdout
    assert "Warnings" not in warnings and "Errors" not in warnings, warnings
