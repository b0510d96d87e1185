"""Engine argv from (role, attachment, workload) and its JSON lines read back."""
from __future__ import annotations

import io
import os

import pytest

from cnfperf import rate as rates
from cnfperf.dataplanes.base import Attachment
from cnfperf.engine import EngineOutput, EngineOutputError, argv, parse_line
from harness import option, placed_pair


def test_sender_and_receiver_argv():
    s, pair, att = placed_pair(api="raw", rate="250k", duration=3, warmup=0.5, size=128, flows=4,
                         mmsg=True)
    snd, rcv = pair.sender, pair.receiver
    tx = argv("/bin/cnfperf-engine", snd, [att[snd.name]], rcv, rcv.mac, s)
    rx = argv("/bin/cnfperf-engine", rcv, [att[rcv.name]], snd, snd.mac, s)
    assert tx[:2] == ["/bin/cnfperf-engine", "send"] and rx[1] == "recv"
    assert option(tx, "--rate") == "250000" and option(tx, "--duration") == "3"
    assert option(tx, "--warmup") == "0.5" and "--rate" not in rx
    # The receiver counts until SIGINT; warm-up frames are flagged by the sender.
    assert option(rx, "--duration") == "0" and "--warmup" not in rx
    assert option(tx, "--dst-mac") == rcv.mac and option(rx, "--dst-mac") == snd.mac
    assert option(tx, "--dport") == str(rcv.udp_port) and option(tx, "--sport") == str(snd.udp_port)
    assert option(tx, "--iface") == snd.name and option(tx, "--api") == "raw"
    assert option(tx, "--size") == "128" and option(tx, "--flows") == "4" and "--mmsg" in tx
    assert option(tx, "--cpu") == str(snd.cpu) and option(rx, "--cpu") == str(rcv.cpu)
    assert "--" not in tx
    assert "--poll" not in tx and "--poll" not in rx   # throughput: busy polling, the engine's default


def test_latency_roles_and_eal_args():
    s, pair, att = placed_pair(mode="latency")
    snd, rcv = pair.sender, pair.receiver
    dpdk = Attachment(mac=snd.mac, port=0, vdev="net_x")
    args = argv("e", snd, [dpdk], rcv, rcv.mac, s, ("--no-pci", "--vdev=net_x"))
    assert args[1] == "client" and option(args, "--rate") == "1000"
    assert args[-3:] == ["--", "--no-pci", "--vdev=net_x"] and "--iface" not in args
    assert option(args, "--port") == "0"
    # latency over sockets: the engine waits for frames instead of spinning
    assert option(args, "--poll") == "interrupt" and "--blocking" not in args


@pytest.mark.parametrize("poll,rate,told", [("adaptive", "20k", "20000"), ("adaptive", "0", None),
                                            ("busy", "20k", None), ("interrupt", "20k", None)])
def test_an_adaptive_receiver_and_nf_are_told_a_paced_senders_rate(poll, rate, told):
    """Their pace to start from (engine/README.md, polling); an unpaced sender
    has none, and the other modes do not read it."""
    from cnfperf.engine import nf_argv
    s, pair, att = placed_pair(mode="latency", api="raw", nfs=1, tester="split", poll=poll, rate=rate)
    snd, rcv = pair.sender, pair.receiver
    rx = argv("e", rcv, [att[rcv.name]], snd, snd.mac, s)
    assert rx[1] == "server"
    [nf] = pair.nfs
    fwd = nf_argv("e", nf, [Attachment(mac=p.mac, iface=p.name) for p in nf.ports], ("m1", "m2"), s)
    for args in (rx, fwd):
        assert (option(args, "--rate") if "--rate" in args else None) == told, args


@pytest.mark.parametrize("line", ["", "not json", "[1, 2]", '{"type": "hello"}', '{"x": 1}'])
def test_parse_line_rejects_what_is_not_a_record(line):
    with pytest.raises(EngineOutputError):
        parse_line(line)


def test_output_is_followed_from_a_pipe():
    read_fd, write_fd = os.pipe()
    raw = io.StringIO()
    out = EngineOutput("cnfp1a2bp0r", raw)
    with os.fdopen(read_fd, "rb", buffering=0) as reader:
        out.follow(reader)
        with os.fdopen(write_fd, "wb") as writer:
            writer.write(b'{"type":"ready","role":"recv","pid":1}\n')
            writer.flush()
            assert out.printed("ready").wait(5), "ready line not seen"
            writer.write(b'{"type":"interval","rx_pps":1000.0}\n')
            writer.write(b"engine: a stray line\n")
            writer.write(b'{"type":"summary","rx_packets":2000}\n')
        out.join(5)
    assert [r["type"] for r in out.records] == ["ready", "interval", "summary"]
    assert out.summary == {"type": "summary", "rx_packets": 2000}
    assert out.last_interval["rx_pps"] == 1000.0
    assert out.problems and "stray" in out.problems[0]
    assert raw.getvalue().count("\n") == 4, "every line is kept raw, parsed or not"


@pytest.mark.parametrize("pps,arg", [(0.5, "0.5"), (2_500_000, "2500000"), (1e9, "1000000000"),
                                     (1234.5678, "1234.5678")])
def test_the_engine_gets_the_rate_as_asked_never_rounded_to_unpaced(pps, arg):
    assert rates.fixed(pps).argv() == arg


def test_a_senders_start_record_says_when_its_warm_up_began():
    from cnfperf.engine import parse_line
    record = parse_line('{"type": "start", "role": "tester", "wall_ns": 5, "warmup_s": 0.2}')
    out = EngineOutput("cnfp1a2bp0s", io.StringIO())
    out.records += [{"type": "ready", "wall_ns": 1}, record]
    assert out.start == record and out.ready == {"type": "ready", "wall_ns": 1}
    assert EngineOutput("x", io.StringIO()).start is None


@pytest.mark.parametrize("switch,api,nf_api", [("bridge", "raw", "raw"), ("bridge", "raw", "xdp"),
                                               ("ovs", "dpdk", "dpdk")])
def test_an_engine_nf_on_two_cores_polls_a_queue_of_each_port_per_core(switch, api, nf_api):
    """nf_cores = 2: its ports have a queue per core (the data plane makes
    them), its engine a thread per queue, each pinned to a core of its own;
    unpinned, the threads float."""
    from cnfperf import nfs
    from cnfperf.engine import nf_argv
    s, pair, _ = placed_pair(switch=switch, api=api, nf_api=nf_api, nfs=1, nf="l3", nf_cores=2,
                             tester="single")
    [nf] = pair.nfs
    assert [p.queues for p in nf.ports] == [2, 2] and len(nf.cores) == 2
    assert nfs.find("l3").cores_problem(s) is None
    ports = [Attachment(mac=p.mac, iface=p.name) for p in nf.ports]
    args = nf_argv("e", nf, ports, ("m1", "m2"), s)
    assert option(args, "--threads") == "2"
    assert option(args, "--cpu") == ",".join(map(str, nf.cores))
    floating = nf_argv("e", nf, ports, ("m1", "m2"), s, floating=(0, 1))
    assert option(floating, "--threads") == "2" and "--cpu" not in floating


def test_an_engine_nf_on_one_core_has_one_queue_and_thread():
    from cnfperf.engine import nf_argv
    s, pair, _ = placed_pair(api="raw", nfs=1, nf="l3", tester="split")
    [nf] = pair.nfs
    assert [p.queues for p in nf.ports] == [1, 1]
    args = nf_argv("e", nf, [Attachment(mac=p.mac, iface=p.name) for p in nf.ports], ("a", "b"), s)
    assert "--threads" not in args and option(args, "--cpu") == str(nf.cpu)


def test_ends_on_two_cores_poll_a_queue_of_their_port_per_core():
    """endpoint_cores = 2: each end takes two cores in a row (receiver first),
    its port two queues, its engine a thread per queue pinned to them; the NF
    takes the cores after the ends', and the plan counts a poller per queue."""
    from cnfperf import nfs
    from cnfperf.plan import place
    from harness import scenarios
    [s] = scenarios(None, {"api": "raw", "flows": 4, "endpoint_cores": 2, "nfs": 1,
                           "tester": "split"})
    point = place(s, "1a2b", host_cpus=(0, 1, 2, 3, 4, 5), nf=nfs.find(s.nf))
    [pair] = point.pairs
    snd, rcv = pair.sender, pair.receiver
    assert (rcv.cores, snd.cores, pair.nfs[0].cores) == ((0, 1), (2, 3), (4,))
    assert snd.port.queues == rcv.port.queues == 2
    assert point.pollers == 5
    att = {ep.name: Attachment(mac=ep.mac, iface=ep.name) for ep in pair.endpoints}
    for ep, peer in ((snd, rcv), (rcv, snd)):
        args = argv("e", ep, [att[ep.name]], peer, peer.mac, s)
        assert option(args, "--threads") == "2" and option(args, "--cpu") == ",".join(map(str, ep.cores))
