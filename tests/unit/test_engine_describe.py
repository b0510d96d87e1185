"""What the engine says of itself (`cnfperf-engine --describe`) and what cnfperf
knows of it before any engine runs are the same: the NF kinds with their
properties, the poll modes with theirs, the apis; and every command line cnfperf
builds is one the engine's options take. Runs the built engine (make build):
under CI=true a missing one fails, naming it."""
from __future__ import annotations

import itertools
import json
import stat
from pathlib import Path

import pytest

from cnfperf import engine, fields, nfs, polls
from cnfperf.dataplanes import ovs, vpp_app
from cnfperf.dataplanes.base import Attachment
from cnfperf.engine import argv, argv_problems
from cnfperf.host import engine_path
from cnfperf.host.engine_describe import DescribeError, Description, describe, parse
from cnfperf.nfs.engine import ENGINE_NFS, EngineKind
from cnfperf.plan import place
import harness


@pytest.fixture(scope="module")
def described() -> Description:
    return describe(harness.engine())


def _option(d: Description, name: str):
    return next(o for o in d.options if o.name == name)


def test_the_engine_s_nf_kinds_are_cnfperf_s_with_their_properties(described):
    assert described.nfs == ENGINE_NFS
    assert EngineKind.names == tuple(k.name for k in described.nfs)
    nf = _option(described, "nf")
    assert nf.words == EngineKind.names and nf.default == EngineKind.names[0]


def test_the_engine_s_poll_modes_are_cnfperf_s_with_their_properties(described):
    assert described.polls == polls.POLL_MODES
    assert fields.POLLS == _option(described, "poll").words
    assert polls.ENGINE_DEFAULT == _option(described, "poll").default


def test_the_roles_cnfperf_runs_are_the_engine_s(described):
    from cnfperf import plan
    assert set(plan.POLLERS) | {r for roles in plan.ROLES.values() for r in roles} <= \
        set(described.roles) - {"nf"}
    assert described.roles["nf"]["forwards"] and not described.roles["tester"]["forwards"]


def test_every_switch_has_a_setting_for_every_poll_mode():
    """A switch translates each mode into its own words (its plugin's table)."""
    for table in (vpp_app.RX_MODES, vpp_app.NIC_RX_MODES, ovs.PMD_MAXSLEEP_US):
        assert set(table) == set(polls.POLLS)


def test_the_apis_are_the_ones_the_engine_knows(described):
    assert fields.APIS == described.known_apis
    assert fields.APIS[0] == described.apis[0].name   # the default, built in always
    for api in described.apis:   # an NF's apis are those that see Ethernet frames
        assert (api.name in fields.NF_APIS) == api.l2, api.name


@pytest.mark.parametrize("field,option", [("size", "size"), ("burst", "burst"), ("flows", "flows"),
                                          ("duration", "duration"), ("warmup", "warmup"),
                                          ("onoff", "onoff")])
def test_a_field_the_engine_is_given_stays_inside_its_option_s_range(described, field, option):
    f, o = fields.by_name()[field], _option(described, option)
    low = f.ge if f.ge is not None else f.gt
    assert o.min <= low and f.le <= o.max, (field, low, f.le, o.min, o.max)


def test_a_bucket_s_bounds_are_the_engine_s(described):
    rate, bucket, queue = _option(described, "shaper").parts
    assert (bucket.max, queue.max) == (fields.MAX_BUCKET, fields.MAX_QUEUE)
    assert rate.above_min and rate.min == 0 and rate.max == _option(described, "rate").max
    assert _option(described, "policer").parts == (rate, bucket)


def test_what_cnfperf_takes_of_the_engine_s_defaults_is_its_own(described):
    from cnfperf.run import trial
    assert trial.CLIENT_DRAIN == _option(described, "drain").default
    for name, value in (("interval", engine.INTERVAL), ("settle", engine.SETTLE)):
        o = _option(described, name)
        assert o.min <= value <= o.max, name


# Scenarios that between them make the engine take every option cnfperf gives it.
SCENARIOS = [
    dict(api="raw", rate="250k", duration=3, warmup=0.5, size=128, flows=4, mmsg=True),
    dict(mode="latency", api="udp"),
    dict(mode="latency", api="raw", nfs=1, tester="split", poll="adaptive", rate="20k"),
    dict(api="mmap", nfs=1, nf="mirror", poll="interrupt", touch=True),
    dict(api="raw", nfs=1, nf="l3", tester="split", rate="640", onoff=64, policer="engine",
         policer_rate="200", policer_bucket=16, shaper="engine", shaper_rate="640",
         shaper_bucket=8, shaper_queue=100),
    dict(api="raw", switch="bridge", rate="1000", shaper="tbf", shaper_rate="300",
         shaper_bucket=4),
    dict(api="raw", nfs=1, nf="strip-encap", tester="single", size=1518),
    dict(api="dpdk", nfs=1, switch="testpmd", nf="l2", poll="adaptive", rate="1M"),
    dict(api="raw", switch="bridge", nfs=1, nf="l3", nf_cores=2, flows=16, tester="single"),
]


def _attached(api: str, port) -> Attachment:
    """A port as its data plane hands it over: an interface, or a DPDK port id."""
    if api == "dpdk":
        return Attachment(mac=port.mac, port=len(port.name) % 4, vdev="net_x")
    return Attachment(mac=port.mac, iface=port.name)


def _argvs(fields_: dict) -> list[list[str]]:
    """Every engine's and engine NF's command line of the scenario's first pair,
    its ports attached as a run attaches them (testbed.ports: in slot order)."""
    [s] = harness.scenarios(None, fields_)
    point = place(s, "1a2b", host_cpus=(0, 1), nf=nfs.find(s.nf))
    pair = point.pairs[0]

    def ports(node: str, api: str) -> list[Attachment]:
        return [_attached(api, p) for p in sorted((p for p in point.ports if p.node == node),
                                                  key=lambda p: p.slot)]
    eal = ("--no-pci",) if s.api == "dpdk" else ()
    out = []
    for ep in (e for e in pair.engines if e.runs_engine):
        peer = pair.receiver if ep is pair.sender else pair.sender
        out.append(argv("e", ep, ports(ep.name, s.api), peer, peer.mac, s, eal))
    for nf in pair.nfs:
        hops = ("02:00:00:00:00:01", "02:00:00:00:00:02") if len(nf.ports) == 2 else ()
        out.append(EngineKind(s.nf).command("e", nf, ports(nf.name, s.nf_api), hops, pair, s,
                                            eal).argv)
    return out


@pytest.mark.parametrize("fields_", SCENARIOS, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()))
def test_every_command_line_cnfperf_builds_is_one_the_engine_takes(described, fields_):
    for args in _argvs(fields_):
        assert argv_problems(args, described) == [], args


def test_the_command_lines_use_every_option_they_may(described):
    """The scenarios above reach every option cnfperf gives: the check is not
    vacuous for any of them."""
    given = {a for f in SCENARIOS for args in _argvs(f) for a in args if a.startswith("--")}
    assert given >= {"--api", "--iface", "--iface2", "--src-mac", "--src-ip", "--sport",
                     "--dst-mac", "--dst-ip", "--dport", "--size", "--burst", "--flows",
                     "--cpu", "--interval", "--duration", "--rate", "--warmup", "--settle",
                     "--onoff", "--conformance", "--policer", "--shaper", "--poll", "--nf",
                     "--route", "--touch", "--mmsg", "--hold", "--port", "--port2", "--dst-mac2",
                     "--threads"}


@pytest.mark.parametrize("bad,says", [
    (["--frobnicate"], "--frobnicate: not an option of the engine with --api raw"),
    (["--poll", "never"], "--poll never: not one of busy, adaptive, interrupt"),
    (["--size", "63"], "--size 63: not from 64 to 9220"),
    (["--burst", "2.5"], "--burst 2.5: not a whole number"),
    (["--duration", "soon"], "--duration soon: not a number"),
    (["--rate", "2G"], "--rate 2G: not from 0 to 1e+09"),
    (["--dst-mac", "02:00"], "--dst-mac 02:00: not a MAC address"),
    (["--dst-ip", "10.0.0.256"], "--dst-ip 10.0.0.256: not an IPv4 address"),
    (["--shaper", "20k,32"], "--shaper 20k,32: not RATE,BUCKET,QUEUE"),
    (["--route", "10.0.0.1/8,1"], "--route 10.0.0.1/8,1: not PREFIX/LEN,PORT"),
    (["--shaper", "0,32,100"], "--shaper 0,32,100: RATE not above 0 and at most 1e+09"),
    (["--policer", "20k,2000000"], "--policer 20k,2000000: BUCKET not from 1 to 1e+06"),
    (["--conformance", "20k,x"], "--conformance 20k,x: BUCKET not a whole number"),
    (["--touch", "yes"], "yes: not an option of the engine with --api raw"),
    (["--xdp-mode", "copy"], "--xdp-mode: not an option of the engine with --api raw"),
    (["--cpu"], "--cpu: needs a value"),
    (["--cpu", "0,x"], "--cpu 0,x: not a CPU or a comma-separated list of them"),
    (["--cpu", "0,99999"], "--cpu 0,99999: not from 0 to 1023"),
])
def test_what_the_engine_would_refuse_is_named(described, bad, says):
    args = ["e", "recv", "--api", "raw", "--iface", "x", *bad]
    assert argv_problems(args, described) == [says]
    assert argv_problems(["e", "fwd"], described)[0].startswith("role fwd: not one of send,")


def test_an_api_s_own_options_and_eal_arguments(described):
    assert argv_problems(["e", "nf", "--api", "dpdk", "--port", "0", "--port2", "1",
                          "--", "--no-pci", "--weird"], described) == []
    assert argv_problems(["e", "recv", "-m", "-r", "500k", "-p", "64"], described) == []


def test_a_binary_that_does_not_describe_itself_is_named(tmp_path):
    old = tmp_path / "old-engine"
    old.write_text("#!/bin/sh\necho \"cnfperf-engine: ROLE: '$1' is not a role\" >&2\nexit 2\n")
    old.chmod(old.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(DescribeError, match="make build"):
        describe(old)
    said = tmp_path / "says-nothing"
    said.write_text("#!/bin/sh\necho '{\"version\": \"0.1.0\"}'\n")
    said.chmod(said.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(DescribeError, match=r"says-nothing --describe gave no description"):
        describe(said)


def test_an_engine_that_describes_a_kind_otherwise_is_refused_before_the_run(tmp_path, described):
    """A build older or newer than cnfperf (make build forgotten): preflight
    and doctor say so instead of a point that goes wrong."""
    from cnfperf import nfs
    from cnfperf.host.facts import EngineFacts
    from cnfperf.scenario import Scenario
    doc = json.loads(json.dumps({**described.__dict__, "roles": []}, default=lambda o: o.__dict__))
    doc["nfs"] = [{**k, "ports": 1} if k["name"] == "l3" else k for k in doc["nfs"]]
    skewed = tmp_path / "skewed-engine"
    skewed.write_text(f"#!/bin/sh\ncat <<'EOF'\n{json.dumps(doc)}\nEOF\n")
    skewed.chmod(0o755)

    def host(path: Path):
        engine = EngineFacts(path=str(path), version="0", apis=["raw"],
                             nfs=[k.name for k in ENGINE_NFS])
        return type("Host", (), {"engine": engine, "static_engine": EngineFacts()})()
    s = Scenario(nfs=1, nf="l3", api="raw", nf_api="raw")
    assert nfs.kind("l3").problems(s, host(skewed)) == [
        "nf l3: the engine describes it as 1 port, a next hop, routed, cnfperf places it as "
        "2 ports, a next hop, routed: make build"]
    assert nfs.kind("l2").problems(s.model_copy(update={"nf": "l2"}), host(skewed)) == []
    assert nfs.kind("l3").problems(s, host(harness.engine())) == []


def test_the_document_is_read_as_printed(described):
    text = json.dumps({"version": "9", "roles": [{"name": "recv", "rx": True}],
                       "apis": [{"name": "udp", "l2": False, "needs_iface": False,
                                 "options": []}],
                       "known_apis": ["udp"], "nfs": [], "polls": [],
                       "options": [{"name": "api", "letter": None, "type": "word",
                                    "value": None, "words": ["udp"], "default": "udp",
                                    "ends": False, "help": "h"}]})
    d = parse(text)
    assert d.roles == {"recv": {"rx": True}} and d.option("--api").words == ("udp",)
    assert d.option("--port") is None and described.option("--port", "dpdk").type == "value"


def test_find_engine_lives_below_the_plugins(tmp_path, monkeypatch):
    """host/ and the data planes find the engine without importing engine.py."""
    assert engine.find_engine is engine_path.find_engine
    monkeypatch.setenv(engine_path.ENGINE_ENV, str(tmp_path / "mine"))
    assert engine_path.find_engine() == tmp_path / "mine"
    monkeypatch.delenv(engine_path.ENGINE_ENV)
    assert engine_path.BUILT == Path(harness.REPO) / "engine" / "build" / "cnfperf-engine"
    text = Path(engine_path.__file__).read_text()
    assert "cnfperf.engine" not in text and "dataplanes" not in text


def test_no_module_compares_a_poll_mode_s_name():
    """Code asks a mode's properties (polls.mode), never its name: the engine
    may grow a mode without a hunt through cnfperf. A switch's own table of
    its settings per mode is the one exception (keyed, not compared)."""
    root = Path(harness.REPO) / "cnfperf"
    pattern = [f'{op} "{name}"' for op, name in itertools.product(("==", "!="), polls.POLLS)]
    found = [f"{path.relative_to(root)}: {p}" for path in root.rglob("*.py")
             for p in pattern if p in path.read_text()]
    assert found == [], found
