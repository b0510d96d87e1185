"""Policers, shapers, on/off sources and conformance, without root: their fields
refused in one line before anything is made (a bucket of 0, no rate, a place
that cannot hold them, a host without tc's police action), the engine's
command lines (which the engine itself takes), the kernel's commands, the
journal's undo, and what a receiver's conformance becomes in the results."""
from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest

from cnfperf.cli import main
from cnfperf.dataplanes.base import Attachment
from cnfperf.engine import argv, bucket_arg, conformance_contract, nf_argv
from cnfperf.host import buckets
from cnfperf.results import model
from cnfperf.results.store import Store
from cnfperf.run import cleanup
import harness
from harness import option, placed_pair

BAD_FLAGS = [
    (["--nfs", "1", "--policer", "engine", "--policer-rate", "10k", "--policer-bucket", "0"],
     "policer_bucket"),                                     # a bucket of 0
    (["--nfs", "1", "--shaper", "engine", "--shaper-rate", "10k", "--shaper-queue", "0"],
     "shaper_queue"),
    (["--nfs", "1", "--policer", "engine"], "policer_rate"),     # no rate
    (["--nfs", "1", "--policer", "engine", "--policer-rate", "fast"], "--policer-rate"),
    (["--nfs", "1", "--shaper", "engine", "--shaper-rate", "ndr"], "--shaper-rate"),  # no search
    (["--policer", "engine", "--policer-rate", "10k"], "policer"),   # no NF to police in
    (["--api", "raw", "--nfs", "1", "--nf", "cmd:my-nf {iface1} {iface2}", "--policer", "engine",
      "--policer-rate", "10k"], "policer"),                  # a user's command is no engine
    (["--policer", "sometimes"], "policer"),
    (["--shaper", "cake"], "shaper"),
    (["--switch", "memif", "--api", "dpdk", "--shaper", "tbf", "--shaper-rate", "10k"], "shaper"),
    (["--switch", "veth", "--api", "raw", "--shaper", "tbf", "--shaper-rate", "10k"],
     "shaper"),                                             # raw bypasses the sender's qdisc
    (["--switch", "veth", "--api", "raw", "--policer", "nft", "--policer-rate", "10k"],
     "policer"),                                            # a packet socket's tap comes first
    (["--switch", "bridge", "--shaper", "htb", "--shaper-rate", "10k", "--limit", "20k"],
     "shaper"),                                             # one root qdisc
    (["--switch", "bridge", "--policer", "nft", "--policer-rate", "0.5"], "policer_rate"),
    (["--onoff", "64"], "onoff"),                           # at max: no mean rate to keep
    (["--onoff", "64", "--rate", "ndr"], "onoff"),
    (["--onoff", "64", "--rate", "10k", "--mode", "latency"], "onoff"),
    (["--onoff", "-1", "--rate", "10k"], "onoff"),
]


@pytest.mark.parametrize("flags, field", BAD_FLAGS, ids=[" ".join(f) for f, _ in BAD_FLAGS])
def test_bad_values_exit_2_with_one_line_before_anything(flags, field, tmp_path, monkeypatch,
                                                         capsys):
    results = tmp_path / "results"
    monkeypatch.setenv("CNFPERF_RESULTS", str(results))
    code = main(["run", *flags])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"cnfperf: error: {field}: "), lines[0]
    assert not results.exists()


@pytest.mark.parametrize("lacks", [True, False], ids=["lacks", "has"])
def test_tc_police_is_refused_with_the_kernels_reason_where_it_lacks_it(tmp_path, monkeypatch,
                                                                       capsys, lacks):
    """A kernel without NET_ACT_POLICE: the host under test's refusal names
    it (the host's question, not the input's: another host's kernel may have
    it); one that has it (and iproute2) takes the placement."""
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr(buckets, "tools", SimpleNamespace(problems=lambda *names: []))
    monkeypatch.setattr(buckets, "kernel_option", lambda module, option: not lacks)
    code = main(["run", "--switch", "bridge", "--policer", "tc", "--policer-rate", "10k",
                 "--dry-run"])
    out, err = capsys.readouterr()
    said = "policer=tc: this kernel has no CONFIG_NET_ACT_POLICE (act_police)"
    if lacks:
        assert said in out + err, out + err
    else:
        assert code == 0 and said not in out + err, out + err


def test_the_engine_is_told_its_buckets_and_the_profile():
    s, pair, att = placed_pair(api="raw", nfs=1, tester="split", rate="640", onoff=64,
                         policer="engine", policer_rate="200", policer_bucket=16,
                         shaper="engine", shaper_rate="2.5k", shaper_bucket=8, shaper_queue=100)
    snd, rcv = pair.sender, pair.receiver
    [nf] = pair.nfs
    tx = argv("e", snd, [att[snd.name]], rcv, rcv.mac, s)
    rx = argv("e", rcv, [att[rcv.name]], snd, snd.mac, s)
    fwd = nf_argv("e", nf, [Attachment(mac=p.mac, iface=p.name) for p in nf.ports], ("a", "b"), s)
    assert option(tx, "--onoff") == "64" and option(rx, "--onoff") is None
    assert option(fwd, "--policer") == "200,16" and option(fwd, "--shaper") == "2500,8,100"
    # the shaper acts last: what the receiver gets is held to its profile
    assert option(rx, "--conformance") == "2500,8" and option(tx, "--conformance") is None
    assert conformance_contract(s) == (2500.0, 8)


def test_nothing_is_said_without_them_and_a_kernel_shaper_is_the_profile():
    s, pair, att = placed_pair(api="raw", rate="1000")
    snd, rcv = pair.sender, pair.receiver
    rx = argv("e", rcv, [att[rcv.name]], snd, snd.mac, s)
    tx = argv("e", snd, [att[snd.name]], rcv, rcv.mac, s)
    assert not {"--onoff", "--conformance", "--policer", "--shaper"} & {*rx, *tx}
    s, pair, att = placed_pair(switch="bridge", api="raw", rate="1000", shaper="tbf",
                         shaper_rate="300", shaper_bucket=4)
    rx = argv("e", pair.receiver, [att[pair.receiver.name]], pair.sender, pair.sender.mac, s)
    assert option(rx, "--conformance") == "300,4"
    assert bucket_arg(0.5, 3) == "0.5,3" and bucket_arg(2.5e6, 1, 2) == "2500000,1,2"


@pytest.mark.parametrize("role", ["nf", "recv", "send"])
def test_the_engine_takes_what_it_is_told(role):
    """The engine's own parser accepts the orchestrator's words: it gets past
    its options (exit 2 would be a refused one) to opening a port that is not
    there (exit 1)."""
    s, pair, att = placed_pair(api="raw", nfs=1, tester="split", rate="640", onoff=64,
                         policer="engine", policer_rate="200", policer_bucket=16,
                         shaper="engine", shaper_rate="640", shaper_bucket=8, shaper_queue=100)
    engine = str(harness.engine())
    snd, rcv = pair.sender, pair.receiver
    [nf] = pair.nfs
    args = {"nf": nf_argv(engine, nf, [Attachment(mac=p.mac, iface=p.name) for p in nf.ports],
                          (snd.mac, rcv.mac), s),
            "recv": argv(engine, rcv, [att[rcv.name]], snd, snd.mac, s),
            "send": argv(engine, snd, [att[snd.name]], rcv, rcv.mac, s)}[role]
    args = [a for a in args if a != "--hold"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=10,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 1, (args, done.stderr)
    assert "--" not in done.stderr.split(":", 2)[1], done.stderr   # no option named


def test_the_kernels_commands():
    tbf = buckets.shaper_args("tbf", "x", 1000, 16, 100, 64)
    assert tbf == [["qdisc", "replace", "dev", "x", "root", "tbf", "rate", "480000bit",
                    "burst", "960", "limit", "6000"]]
    htb = buckets.shaper_args("htb", "x", 1000, 16, 100, 1518)
    assert htb[1][-8:] == ["rate", "12112000bit", "ceil", "12112000bit", "burst", "24224",
                           "cburst", "24224"]
    assert htb[2][-2:] == ["limit", "100"]
    nft = buckets.nft_script("t", "eth9", 2500.4, 16)
    assert 'hook ingress device "eth9"' in nft
    assert nft.endswith("limit rate over 2500/second burst 16 packets counter drop")
    police = buckets.police_args("eth9", 1000, 16)
    assert police[1][-6:] == ["pkts_rate", "1000", "pkts_burst", "16", "conform-exceed", "drop/ok"]
    assert buckets.refusal("engine") is None and buckets.refusal("none") is None


def test_cleanup_knows_how_to_undo_them():
    """A killed run's journal names them; cnfperf cleanup removes them by kind."""
    registry = cleanup._undo_registry()
    assert registry["qdisc"] is buckets.UNDO["qdisc"] and registry["nft"] is buckets.UNDO["nft"]


def _summary(sigma, exceeded, frames):
    return {"conformance": {"rate_pps": 200.0, "bucket": 16, "frames": frames, "sigma": sigma,
                            "exceeded": exceeded}}


def test_conformance_per_pair_and_in_total():
    assert model.conformance({}) == (None, None)
    assert model.conformance(_summary(None, 0, 0)) == (None, None)   # nothing received
    assert model.conformance(_summary(16.0, 40, 160)) == (16.0, 0.25)
    ends = [model.endpoint_metrics(0, "s", "send", 0, {"tx_packets": 160}),
            model.endpoint_metrics(0, "r", "recv", 1, {"rx_packets": 160,
                                                       **_summary(16.0, 40, 160)}),
            model.endpoint_metrics(1, "r2", "recv", 1, {"rx_packets": 40,
                                                        **_summary(20.5, 0, 40)})]
    one = model.pair_result(0, ends[0], ends[1], "throughput")
    two = model.pair_result(1, ends[0], ends[2], "throughput")
    assert (one.conformance_sigma, one.conformance_exceeded) == (16.0, 0.25)
    total = model.total([one, two])
    # sigma: the largest; the share beyond: over every frame received
    assert total.conformance_sigma == 20.5 and total.conformance_exceeded == pytest.approx(0.2)
    plain = model.pair_result(0, ends[0], model.endpoint_metrics(0, "r", "recv", 1, {}),
                              "throughput")
    assert model.total([plain]).conformance_sigma is None


def test_the_store_has_their_columns(tmp_path):
    store = Store(tmp_path)
    cols = {t: {r[1] for r in store.db.execute(f"PRAGMA table_info({t})")}
            for t in ("points", "pairs", "nf_ports")}
    store.close()
    assert {"conformance_sigma", "conformance_exceeded"} <= cols["pairs"] & cols["points"]
    assert {"dropped_policer", "dropped_shaper", "delayed"} <= cols["nf_ports"]
    assert {"policer", "policer_rate", "policer_bucket", "shaper", "shaper_rate",
            "shaper_bucket", "shaper_queue", "onoff"} <= cols["points"]


def test_the_report_shows_conformance_and_the_shapers_wait_against_its_bound():
    from cnfperf.report import summary
    point = {"status": "done", "idx": 0, "rep": 0, "switch": "veth", "mode": "throughput",
             "scenario": {"switch": "veth", "shaper": "engine", "shaper_rate": 800,
                          "shaper_bucket": 8, "shaper_queue": 1000},
             "per_pair": [{"pair": 0, "conformance_sigma": 8.5, "conformance_exceeded": 0.01}],
             "endpoints": [{"pair": 0, "role": "nf",
                            "summary": {"shaper": {"delay_max_ns": 70_000_000}}}]}
    title, headers, rows = summary.conformance({"points": [point]})
    assert dict(zip(headers, rows[0])) == {
        "point": "veth", "rep": 1, "pair": "0", "contract": "shaper", "rate kpps": 0.8,
        "bucket": 8, "sigma (frames)": 8.5, "beyond the bucket %": 1.0,
        "longest wait ms": 70.0, "bound ms": 1250.0}
    point["per_pair"][0]["conformance_sigma"] = None
    assert summary.conformance({"points": [point]}) is None
