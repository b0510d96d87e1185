"""End to end: engines kept across trials (--keep): after each summary they
hold their ports, and a line on stdin runs the next trial on them, as a fresh
engine would (its own counters, tracker and timeline; what the ports still
held of the last trial let go). Raw over a veth, and DPDK over memif."""
from __future__ import annotations

import subprocess

import pytest

import harness
from test_bypass_apis import VHOST, VIRTIO, dpdk, flow, hugepages  # noqa: F401 (fixtures)
from test_kernel_apis import assert_latency, endpoint
from engines import engines as engine_processes, most_sent

pytestmark = pytest.mark.e2e

RATES = (20000, 40000, 10000)


def trials(rx, tx) -> list[tuple[dict, dict]]:
    """Three trials, one per rate, the first the engines' own (the receiver was
    ready before the sender started): the receiver told first, then the sender;
    the receiver's window ended by SIGINT once the sender is done, as the runner does."""
    done = []
    for i, rate in enumerate(RATES):
        if i:
            rx.again(rate)
            rx.ready()
            tx.again(rate, 1, 0.1)
        sent = tx.summary()
        got = rx.interrupt()
        done.append((sent, got))
    tx.release()
    rx.release()
    return done


def assert_each_trial_is_a_fresh_engines(done: list[tuple[dict, dict]]) -> None:
    for rate, (sent, got) in zip(RATES, done):
        assert sent["offered_pps"] == rate and sent["tx_packets"] <= most_sent(rate, 1, 32), sent
        harness.assert_summary_sent(sent, rate)
        assert got["rx_packets"] == sent["tx_packets"], (sent, got)
        assert got["warmup_packets"] == sent["warmup_tx_packets"], (rate, sent, got)
        for key in ("lost", "reordered", "duplicate", "bad", "corrupt"):
            assert got[key] == 0, f"{key}: {got}"
        assert_latency(got, "one_way")


def test_kept_raw_engines_run_three_trials(engine, pair, engines):
    a, b = pair
    rx = engines(b.netns, [engine, "recv", *endpoint("recv", "raw", b, a), "--duration", "0",
                           "--interval", "0", "--keep"])
    rx.ready()
    tx = engines(a.netns, [engine, "send", *endpoint("send", "raw", a, b), "--rate", str(RATES[0]),
                           "--duration", "1", "--warmup", "0.1", "--interval", "0", "--keep"])
    assert_each_trial_is_a_fresh_engines(trials(rx, tx))


def test_kept_dpdk_engines_over_memif_run_three_trials(engine, dpdk):  # noqa: F811
    eal, sockets = dpdk
    sock = sockets / "memif0.sock"
    with engine_processes() as start:
        rx = start([engine, "recv", "--api", "dpdk", *flow("recv", VHOST, VIRTIO), "--duration", "0",
                    "--interval", "0", "--keep", *eal("ms", f"net_memif0,role=server,socket={sock}")])
        rx.ready()   # the memif server listens before its client connects
        tx = start([engine, "send", "--api", "dpdk", *flow("send", VIRTIO, VHOST), "--rate",
                    str(RATES[0]), "--duration", "1", "--warmup", "0.1", "--interval", "0", "--keep",
                    *eal("mc", f"net_memif0,role=client,socket={sock}")])
        assert_each_trial_is_a_fresh_engines(trials(rx, tx))


@pytest.mark.parametrize("line", ["fast 1 0", "1000 1", "1000 -1 0", "1000 1 0 more"])
def test_a_bad_trial_line_is_one_line_and_exit_2(engine, pair, line):
    a, b = pair
    argv = ["ip", "netns", "exec", a.netns, str(engine), "send", *endpoint("send", "raw", a, b),
            "--rate", "1000", "--duration", "0.1", "--warmup", "0", "--interval", "0", "--keep"]
    done = subprocess.run(argv, input=line + "\n", capture_output=True, text=True, timeout=30)
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1 and "is not RATE DURATION WARMUP" in done.stderr, done.stderr
    assert done.stdout.count('"summary"') == 1, done.stdout
