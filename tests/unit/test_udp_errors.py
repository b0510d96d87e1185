"""The ends' kernel UDP drops (udp_errors.py): read from /proc/net/snmp,
stored with each end's metrics, and named in the loss table where frames went."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cnfperf.host import links, udp_errors
from cnfperf.cli import main
from cnfperf import nfs as nf_kinds
from cnfperf.plan import place
from cnfperf.report import nfs
from cnfperf.report.tables import summary_table
from cnfperf.results import model
from harness import migrated_run, scenarios
from test_nf_results import RUN, _by_name, _end, chain, stored_run

SNMP = """Ip: Forwarding DefaultTTL InReceives
Ip: 2 64 30000
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 5 0 24992 0 2 0 24990 0 0
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
UdpLite: 0 0 7 0 0 0 7 0 0
"""


def test_the_udp_line_is_read_not_udplite():
    assert udp_errors.parse(SNMP) == {"udp_in_errors": 24992, "udp_in_csum_errors": 24990,
                                      "udp_rcvbuf_errors": 2}
    assert udp_errors.parse("Ip: Forwarding\nIp: 1\n") == {}
    old = "Udp: InDatagrams NoPorts InErrors\nUdp: 1 2 3\n"   # a kernel without InCsumErrors
    assert udp_errors.parse(old) == {"udp_in_errors": 3}


def test_what_the_counters_grew_by():
    before = {"udp_in_errors": 10, "udp_in_csum_errors": 4}
    after = {"udp_in_errors": 24_012, "udp_in_csum_errors": 24_004}
    assert udp_errors.dropped(before, after) == {"udp_in_errors": 24_002,
                                                 "udp_in_csum_errors": 24_000}
    assert udp_errors.dropped(None, after) == {} and udp_errors.dropped(before, None) == {}


def test_unreadable_counters_are_unknown_not_a_failure():
    assert udp_errors.read("cnfp-no-such-netns") is None


def test_a_namespace_s_counters_are_read_by_a_thread_that_joins_it(tmp_path, monkeypatch):
    """No process forked (`ip netns exec` forked one per read and remounted
    /sys): a thread of ours joins the namespace (here our own, through a
    name that points at it) and reads its view of /proc/net/snmp."""
    (tmp_path / "ours").symlink_to("/proc/self/ns/net")
    monkeypatch.setattr(links, "NETNS_DIR", tmp_path)

    def no_fork(*args, **kwargs):
        raise AssertionError("forked a process to read counters")
    monkeypatch.setattr(subprocess, "Popen", no_fork)
    got = udp_errors.read("ours")
    if os.geteuid() != 0:   # joining a namespace takes CAP_SYS_ADMIN
        assert got is None
        return
    assert got == udp_errors.parse(Path("/proc/net/snmp").read_text())


def test_the_words_say_whose_kernel_and_why():
    assert udp_errors.describe(24_992, 24_992) == [
        "the receiver's kernel dropped 24,992 datagrams with bad UDP checksums"]
    assert udp_errors.describe(30, 0, who="client", what="echoes") == [
        "the client's kernel dropped 30 echoes for other errors (UDP InErrors, e.g. a full "
        "socket buffer)"]   # stored before RcvbufErrors was: a guess
    assert udp_errors.describe(1_250, 0, 1_200) == [
        "the receiver's kernel dropped 1,200 datagrams: its socket buffer was full "
        "(UDP RcvbufErrors)",
        "the receiver's kernel dropped 50 datagrams for other errors (UDP InErrors)"]
    assert udp_errors.describe(0, 0) == udp_errors.describe(None, None) == []


def _csum_errors(result: model.PointResult, name: str, n: int) -> None:
    [m] = [m for m in result.endpoints if m.endpoint == name]
    m.udp_in_errors = m.udp_in_csum_errors = n


def test_the_loss_table_names_the_receiver_kernel_s_checksum_drops(tmp_path):
    """Every frame crossed the NFs and the data plane and none reached the
    receiving engine: its kernel dropped them, and the table says so."""
    point, result = chain()
    receiver = point.pairs[0].receiver.name
    result.endpoints[1] = _end(0, receiver, "recv", rx=0, warmup=0)
    _csum_errors(result, receiver, 9_990)
    run = stored_run(tmp_path, (point, result, {}))
    [stored] = run["points"]
    [row] = [e for e in stored["endpoints"] if e["endpoint"] == receiver]
    assert (row["udp_in_errors"], row["udp_in_csum_errors"]) == (9_990, 9_990)
    h = _by_name(nfs.hops(stored, 0))
    last = h["link → receiver"]
    assert last.lost == 9_990
    assert "the receiver's kernel dropped 9,990 datagrams with bad UDP checksums" in last.why
    assert "bad UDP checksums" in nfs.hops(stored, 0)[-1].why[-1]
    assert "bad UDP checksums" in summary_table(nfs.loss_localisation(run, brief=True))


def test_a_point_without_nfs_shows_its_path_when_a_kernel_dropped_datagrams(tmp_path):
    [s] = scenarios(None, {"switch": "veth", "api": "udp"})
    point = place(s, RUN, host_cpus=(0, 1), joins="link", nf=nf_kinds.find(s.nf))
    pair = point.pairs[0]
    sender = _end(0, pair.sender.name, "send", tx=10_000)
    receiver = _end(0, pair.receiver.name, "recv", rx=9_000)
    pairs = [model.pair_result(0, sender, receiver, "throughput")]
    result = model.PointResult(pairs=pairs, total=model.total(pairs),
                               endpoints=[sender, receiver], counters={})
    assert nfs.loss_localisation(stored_run(tmp_path / "a", (point, result, {}))) is None
    # rate = max: the receiver's kernel took datagrams faster than its engine read them
    receiver.udp_in_errors = receiver.udp_rcvbuf_errors = 1_000
    _, _, rows = nfs.loss_localisation(stored_run(tmp_path / "b", (point, result, {})))
    assert [r[3] for r in rows] == ["p0s (send)", "link → receiver", "p0r (recv)", "end to end"]
    assert rows[1][7] == ("the receiver's kernel dropped 1,000 datagrams: its socket buffer was "
                          "full (UDP RcvbufErrors)")


def test_a_path_that_lost_nothing_is_not_flagged_for_its_kernel_s_drops(tmp_path):
    """Datagrams that were not the pair's (none of its frames is missing): no
    path of the point is shown, and no hop says its kernel dropped anything."""
    [s] = scenarios(None, {"switch": "veth", "api": "udp"})
    point = place(s, RUN, host_cpus=(0, 1), joins="link", nf=nf_kinds.find(s.nf))
    pair = point.pairs[0]
    sender = _end(0, pair.sender.name, "send", tx=10_000)
    receiver = _end(0, pair.receiver.name, "recv", rx=10_000)
    receiver.udp_in_errors = receiver.udp_rcvbuf_errors = 7
    pairs = [model.pair_result(0, sender, receiver, "throughput")]
    result = model.PointResult(pairs=pairs, total=model.total(pairs),
                               endpoints=[sender, receiver], counters={})
    run = stored_run(tmp_path, (point, result, {}))
    for brief in (True, False):
        _, headers, rows = nfs.loss_localisation(run, brief=brief)
        assert headers == ["paths", "lost"] and rows == [[1, "none: every hop's counts agree"]]
    assert all(not h.why for h in nfs.hops(run["points"][0], 0))


def test_a_client_s_kernel_drops_are_echoes_that_did_not_come_back(tmp_path):
    [s] = scenarios(None, {"switch": "bridge", "api": "udp", "mode": "latency", "nfs": 1})
    point = place(s, RUN, host_cpus=(0, 1, 2), joins="switch", nf=nf_kinds.find(s.nf))
    pair = point.pairs[0]
    client = _end(0, pair.sender.name, "client", tx=1_000, rx=0, warmup=0, warmup_tx=0)
    client.udp_in_errors = client.udp_in_csum_errors = 1_000
    server = _end(0, pair.receiver.name, "server", rx=1_000, warmup=0)
    pairs = [model.pair_result(0, client, server, "latency")]
    result = model.PointResult(pairs=pairs, total=model.total(pairs),
                               endpoints=[client, server], counters={})
    [stored] = stored_run(tmp_path, (point, result, {}))["points"]
    assert nfs.hops(stored, 0)[-1].why == [
        "the client's kernel dropped 1,000 echoes with bad UDP checksums"]


def test_an_old_database_gains_the_columns_unknown_for_its_points(tmp_path):
    [point] = migrated_run(   # at 9: before the columns
        tmp_path, 9,
        "INSERT INTO points (run_id, idx, status, switch, mode, scenario) "
        "VALUES ('beef', 0, 'done', 'veth', 'throughput', '{}')",
        "INSERT INTO metrics (point_id, pair, endpoint, role, summary) "
        "SELECT id, 0, 'p0r', 'recv', '{}' FROM points")["points"]
    [row] = point["endpoints"]
    assert row["udp_in_errors"] is None and row["udp_in_csum_errors"] is None
    assert row["udp_rcvbuf_errors"] is None


def test_a_user_s_command_between_udp_ends_is_warned_about_their_checksums(tmp_path):
    """testpmd and our Click kinds are refused (below); a command or a Click
    configuration of the user's may finish the checksums or not (Click's
    SetUDPChecksum): the plan says what it must do."""
    config = tmp_path / "fwd.click"
    config.write_text("FromDevice({iface1}) -> Queue -> ToDevice({iface2});\n"
                      "FromDevice({iface2}) -> Queue -> ToDevice({iface1});\n")

    def warnings(nf, **flags):
        [s] = scenarios(None, {"switch": "veth", "nfs": 1, "nf": nf, **flags})
        return [w for w in place(s, RUN, host_cpus=(0, 1, 2, 3), nf=nf_kinds.find(s.nf)).warnings if "checksum" in w]
    for nf, what in (("cmd:my-nf {iface1} {iface2}", "a command"),
                     (f"click:{config}", "a Click configuration")):
        [warning] = warnings(nf, api="udp")
        assert what in warning and "receiver's kernel drops" in warning, warning
        assert warnings(nf, api="raw") == []
    assert warnings("l2", api="udp") == []


@pytest.mark.parametrize("nf", ["testpmd", "click:strip-encap", "click:mirror"])
def test_nfs_that_send_the_checksums_on_unfinished_are_refused_naming_what_works(nf, capsys):
    flags = ["--nf-api", "dpdk"] if nf == "testpmd" else []
    tester = ["--tester", "single"] if nf == "click:mirror" else []
    assert main(["run", "--switch", "bridge", "--api", "udp", "--nfs", "1", "--nf", nf, *flags,
                 *tester, "--dry-run"]) == 2
    [err] = capsys.readouterr().err.strip().splitlines()
    assert err.startswith(f"cnfperf: error: nf: {nf} would send the udp ends' datagrams on"), err
    assert err.endswith("on every nf_api (raw, mmap, xdp, dpdk)"), err
