"""End to end: an on/off source through an nf that polices or shapes it, and
the receiver's conformance to the profile, over veths between namespaces with
the raw api (engine/src/core/bucket.h).

The source sends 64 frames back to back every 100 ms (640 pps on average).
A policer of 200 pps and 16 frames gets 20 tokens back between two clumps,
more than its bucket holds, so it meets every clump full and passes exactly
16 of it: 4 ms of slack either way in when a clump arrives. What it drops is
counted against that expectation, computed below as a token bucket would.
"""
from __future__ import annotations

import time

import pytest

from test_nf import port, raw

pytestmark = pytest.mark.e2e

ONOFF, RATE = 64, 640          # frames per clump, mean pps: a clump every 100 ms
POLICER = (200, 16)            # pps, frames
SHAPER = (800, 8, 1000)        # pps, frames, queue: a clump leaves in 70 ms
PORT = "9000"


def policed(clumps: int, onoff: int, period_s: float, rate: float, bucket: int) -> int:
    """Frames a token bucket (`rate` tokens a second, `bucket` of them, full at
    the start) passes of `clumps` clumps of `onoff` frames, `period_s` apart,
    each clump's frames at one instant."""
    tokens, passed = float(bucket), 0
    for _ in range(clumps):
        k = min(onoff, int(tokens))
        passed += k
        tokens = min(float(bucket), tokens - k + rate * period_s)
    return passed


def _run(engine, chain, engines, nf_args: list[str], profile: str, wait_s: float):
    """recv | nf | send: the sender's summary, the nf's and the receiver's."""
    s, f1, f2, r = chain
    rx = engines(r.netns, [engine, "recv", *raw(r), "--src-ip", r.ip, "--sport", PORT,
                           "--conformance", profile, "--poll", "interrupt", "--duration", "0",
                           "--interval", "0"])
    rx.ready()
    nf = engines(f1.netns, [engine, "nf", *raw(f1), "--iface2", f2.iface, "--dst-mac", s.mac,
                            "--dst-mac2", r.mac, "--poll", "interrupt", *nf_args,
                            "--duration", "0", "--interval", "0"])
    nf.ready()
    tx = engines(s.netns, [engine, "send", *raw(s), "--src-ip", s.ip, "--sport", PORT,
                           "--dst-ip", r.ip, "--dst-mac", f1.mac, "--dport", PORT,
                           "--rate", str(RATE), "--onoff", str(ONOFF), "--duration", "1",
                           "--poll", "adaptive", "--interval", "0"])
    sent = tx.summary()
    time.sleep(wait_s)
    return sent, nf.interrupt(), rx.interrupt()


def test_the_policer_drops_exactly_what_exceeds_its_bucket(engine, chain, engines):
    sent, fwd, got = _run(engine, chain, engines, ["--policer", "200,16"], "200,16", 0.2)
    p1, p2 = port(fwd, 1), port(fwd, 2)
    came = p1["rx_packets"] - p1["dropped"]["other"]
    assert sent["tx_refused"] == 0 and came == sent["tx_packets"], (sent, fwd)
    assert came % ONOFF == 0, f"{came} frames are not whole clumps of {ONOFF}"
    clumps = came // ONOFF
    assert clumps >= 10, sent
    passed = policed(clumps, ONOFF, ONOFF / RATE, *POLICER)
    assert passed == 16 * clumps
    assert p1["dropped"]["policer"] == came - passed, fwd
    assert p2["tx_packets"] == passed == got["rx_packets"], (fwd, got)
    assert fwd["policer"] == {"rate_pps": 200.0, "bucket": 16, "dropped": came - passed}
    # what came out conforms to the policer's profile: a bucket of 16 at 200 pps
    c = got["conformance"]
    assert c["frames"] == passed and c["exceeded"] == 0, c
    assert 15 < c["sigma"] <= 16.001, c


def test_the_shaper_delays_what_exceeds_its_bucket_and_loses_nothing(engine, chain, engines):
    sent, fwd, got = _run(engine, chain, engines, ["--shaper", "800,8,1000"], "800,8", 0.4)
    p1, p2 = port(fwd, 1), port(fwd, 2)
    came = p1["rx_packets"] - p1["dropped"]["other"]
    clumps = came // ONOFF
    assert came == sent["tx_packets"] and came % ONOFF == 0 and clumps >= 10, (sent, fwd)
    assert p1["dropped"]["shaper"] == p1["dropped"]["policer"] == 0, fwd
    assert p2["tx_packets"] == came == got["rx_packets"], (fwd, got)
    shaper = fwd["shaper"]
    assert shaper["queued"] == 0 and shaper["dropped"] == 0, shaper
    # a clump's first 8 frames leave at once (a full bucket), the other 56 wait
    assert (ONOFF - 8) * clumps - clumps <= shaper["delayed"] <= (ONOFF - 8) * clumps, shaper
    assert p2["delayed"] == shaper["delayed"]
    # the last of a clump waits 56 frames' time at 800 pps: 70 ms
    assert 0.06e9 <= shaper["delay_max_ns"] < 0.1e9, shaper
    # what came out is near the shaper's profile, where the source is 64 frames deep
    c = got["conformance"]
    assert c["frames"] == came and c["sigma"] <= 8 + 4, c
    assert c["exceeded"] <= 0.05 * came, c


def test_an_onoff_source_alone_is_as_deep_as_its_clumps(engine, pair, engines):
    """Without a policer the receiver sees the clumps: sigma near 64 at the
    mean rate, and most of each clump beyond a bucket of 16."""
    a, b = pair
    rx = engines(b.netns, [engine, "recv", *raw(b), "--src-ip", b.ip, "--sport", PORT,
                           "--conformance", "640,16", "--poll", "interrupt", "--duration", "0",
                           "--interval", "0"])
    rx.ready()
    tx = engines(a.netns, [engine, "send", *raw(a), "--src-ip", a.ip, "--sport", PORT,
                           "--dst-ip", b.ip, "--dst-mac", b.mac, "--dport", PORT, "--rate", "640",
                           "--onoff", "64", "--duration", "1", "--poll", "adaptive",
                           "--interval", "0"])
    sent = tx.summary()
    time.sleep(0.2)
    got = rx.interrupt()
    c = got["conformance"]
    assert sent["offered_pps"] == 640.0 and got["rx_packets"] == sent["tx_packets"] == c["frames"]
    # a clump a little early finds the last one not quite drained (jitter of
    # the sender's wake-ups): up to a frame more
    assert 60 <= c["sigma"] <= 65, c
    clumps = c["frames"] // 64
    # a profile of 16 frames at the mean rate gets its bucket back between two
    # clumps: 48 of each are beyond it (a frame less where a clump came spread out)
    assert 46 * clumps <= c["exceeded"] <= 48 * clumps, c
