"""Click NFs (nf = click:…): the configurations Click is given, the checks of a
user's configuration file, bad values (exit 2), its counters and readiness read
from its output, and the click image."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from cnfperf import UserError, nfs
from cnfperf.nfs import click as click_nfs, placeholders
from cnfperf.reference import help_text
from cnfperf.scenario import Scenario
from cnfperf.host import builds
from cnfperf.run import checks
from cnfperf.cli import main
from cnfperf.dataplanes.base import Attachment
from cnfperf.fields import by_name
from cnfperf.plan import place
from cnfperf.nfs.click import CLICK_DPDK_IMAGE as CLICK_DPDK, CLICK_IMAGE as CLICK
from cnfperf.runtimes import MINIMAL, rootfs
from harness import scenarios

FORWARDER = """\
elementclass Fwd { $src, $dst | input -> EtherRewrite($src, $dst) -> output }
FromDevice({iface1}) -> Fwd({mac2}, {peer2}) -> Queue -> ToDevice({iface2});
FromDevice({iface2}) -> Fwd({mac1}, {peer1}) -> Queue -> ToDevice({iface1});
"""
HOPS = ("02:00:00:00:00:aa", "02:00:00:00:00:bb")   # the hop before, the hop after


def _check(nf: str, nf_api: str) -> None:
    """The kind's own rules for one NF of it (the kind's check: its
    template or configuration against its ports)."""
    nfs.kind(nf).check(Scenario(nfs=1, nf=nf, nf_api=nf_api, api="raw"))


def _command(**fields) -> tuple[nfs.Command, list[Attachment]]:
    """The command of the one NF of a placed point, its ports on kernel interfaces."""
    [s] = scenarios(None, {"nfs": 1, "api": "raw", **fields})
    point = place(s, "1a2b", host_cpus=(0, 1), nf=nfs.kind(s.nf))
    [pair] = point.pairs
    [nf] = pair.nfs
    ports = [Attachment(mac=p.mac, iface=p.name) for p in nf.ports]
    hops = HOPS if len(ports) == 2 else ()
    return nfs.kind(s.nf).command("/bin/click", nf, ports, hops, pair, s, ()), ports


def _config(cmd: nfs.Command) -> str:
    assert cmd.argv[:2] == ["/bin/click", "-e"] and len(cmd.argv) == 3
    assert not cmd.records and cmd.ready == click_nfs.READY
    return cmd.argv[2]


def test_the_kinds_are_listed_with_the_others():
    assert {"click:mirror", "click:strip-encap"} <= set(nfs.names())
    assert nfs.kind("click:mirror").ports == 1
    assert "click:strip-encap" in help_text(by_name()["nf"]) and "click:FILE" in help_text(by_name()["nf"])


def test_a_click_mirror_sends_frames_back_by_its_one_port():
    cmd, [port] = _command(nf="click:mirror", tester="single")
    config = _config(cmd)
    assert f"in1 :: FromDevice({port.iface}, SNIFFER true, PROMISC true, METHOD PCAP," in config
    assert f"out1 :: ToDevice({port.iface}, METHOD PCAP, BURST 32)" in config
    assert "-> EtherMirror -> q1 :: Queue -> tx1 :: Counter -> out1" in config
    assert "in2" not in config and "{" not in config.replace("{ ", "")
    # its counters when SIGINT stops it, one port's
    assert re.search(r"Script\(TYPE SIGNAL INT, print \"cnfperf-click port 1 rx \$\(rx1\.count\)"
                     r".*, stop\);", config)
    assert "port 2" not in config


def test_a_click_strip_encap_puts_the_next_hop_s_header_on_both_ways():
    cmd, (a, b) = _command(nf="click:strip-encap", switch="bridge")
    config = _config(cmd)
    before, after = HOPS
    # towards the receiver: in at port 1, from port 2's MAC to the hop after, out at port 2
    assert (f"in1 -> rx1 :: Counter -> ip1 :: Classifier(12/0800, -) -> Strip(14) -> "
            f"EtherEncap(0x0800, {b.mac}, {after}) -> q2 :: Queue -> tx2 :: Counter -> out2;"
            in config)
    # and the mirror image back
    assert (f"in2 -> rx2 :: Counter -> ip2 :: Classifier(12/0800, -) -> Strip(14) -> "
            f"EtherEncap(0x0800, {a.mac}, {before}) -> q1 :: Queue -> tx1 :: Counter -> out1;"
            in config)
    assert f"FromDevice({a.iface}," in config and f"ToDevice({b.iface}," in config
    assert "cnfperf-click port 1 rx" in config and "cnfperf-click port 2 rx" in config


@pytest.mark.parametrize("nf_api,method", [("raw", "LINUX"), ("mmap", "PCAP")])
def test_nf_api_is_click_s_packet_socket_method(nf_api, method):
    config = _config(_command(nf="click:strip-encap", nf_api=nf_api)[0])
    assert config.count(f"METHOD {method}") == 4   # two FromDevice, two ToDevice


def test_a_jumbo_frame_is_captured_whole_in_bursts_of_the_point_s():
    config = _config(_command(nf="click:strip-encap", size=9000, burst=8)[0])
    assert "SNAPLEN 9000, BURST 8)" in config and "ToDevice(" in config
    small = _config(_command(nf="click:strip-encap")[0])
    assert f"SNAPLEN {click_nfs.MIN_SNAPLEN}," in small   # a stray standard frame is not cut


def test_a_user_s_configuration_gets_its_ports_and_a_ready_line(tmp_path):
    path = tmp_path / "fwd.click"
    path.write_text(FORWARDER)
    cmd, (a, b) = _command(nf=f"click:{path}")
    config = _config(cmd)
    before, after = HOPS
    assert config.startswith(FORWARDER.splitlines()[0])   # Click's own braces untouched
    assert f"FromDevice({a.iface}) -> Fwd({b.mac}, {after})" in config
    assert f"FromDevice({b.iface}) -> Fwd({a.mac}, {before})" in config
    assert 'cnfperf_ready :: Script(print "cnfperf-click ready $(cnfperf_ready.now)");' in config
    assert "SIGNAL" not in config   # its counters are its own
    assert not nfs.kind(f"click:{path}").counted and nfs.kind("click:mirror").counted


def test_a_configuration_file_is_checked_before_anything(tmp_path):
    good = tmp_path / "good.click"
    good.write_text(FORWARDER)
    _check(f"click:{good}", "raw")
    cases = {
        "{port1}": "names a DPDK port's",            # the ports are kernel interfaces
        "{eal}": "for a command line",
        "{bogus}": r"\{bogus\} is not a placeholder; known: \{iface1\}",
        "cnfperf_ready :: Idle;": "a name cnfperf gives",
        "": "is empty",
    }
    for text, why in cases.items():
        path = tmp_path / "bad.click"
        path.write_text(text)
        with pytest.raises(UserError, match=why):
            _check(f"click:{path}", "mmap")
    with pytest.raises(UserError, match="nor a file .*nope.click not found"):
        _check(f"click:{tmp_path}/nope.click", "raw")
    with pytest.raises(UserError, match="needs one of mirror, strip-encap or a Click"):
        _check("click:", "raw")
    with pytest.raises(UserError, match="cannot read"):
        _check(f"click:{tmp_path}", "raw")   # a directory


def test_click_has_no_af_xdp():
    with pytest.raises(UserError, match="AF_XDP") as e:
        _check("click:mirror", "xdp")
    assert e.value.field == "nf_api"


def test_click_with_dpdk_polls_the_nf_s_dpdk_ports_on_one_lcore():
    [s] = scenarios(None, {"nfs": 1, "api": "dpdk", "switch": "memif", "nf": "click:strip-encap"})
    point = place(s, "1a2b", host_cpus=(0, 1), nf=nfs.kind(s.nf))
    [pair] = point.pairs
    [nf] = pair.nfs
    ports = [Attachment(mac=p.mac, port=i) for i, p in enumerate(nf.ports)]
    cmd = nfs.kind(s.nf).command("/bin/click", nf, ports, HOPS, pair, s, ("--vdev", "x"))
    # the data plane's EAL arguments, then one lcore on the NF's core
    assert cmd.argv[:7] == ["/bin/click", "--dpdk", "--vdev", "x", "--lcores", f"0@{nf.cpu}",
                            "--"]
    assert cmd.argv[7] == "-e" and cmd.ready == click_nfs.READY
    config = cmd.argv[8]
    assert "in1 :: FromDPDKDevice(0, PROMISC true, BURST 32);" in config
    assert "out2 :: ToDPDKDevice(1, BURST 32);" in config
    assert (f"EtherEncap(0x0800, {nf.ports[1].mac}, {HOPS[1]}) -> tx2 :: Counter -> out2;"
            in config)                                    # pushed: no Queue
    assert "refused $(out2.dropped)" in config and "kernel $(in1.hw_dropped)" in config
    # a pool the data plane's memory holds
    assert f"cnfperf_dpdk :: DPDKInfo(NB_MBUF {click_nfs.NB_MBUF}, MBUF_SIZE 2176);" in config
    [s] = scenarios(None, {"nfs": 1, "api": "dpdk", "switch": "memif", "nf": "click:mirror",
                           "tester": "single", "pin": False, "size": 9000})
    point = place(s, "1a2b", host_cpus=(0, 1), nf=nfs.kind(s.nf))
    [nf] = point.nfs
    cmd = nfs.kind(s.nf).command("/bin/click", nf, [Attachment(mac=nf.ports[0].mac, port=0)], (),
                            point.pairs[0], s, ("--vdev", "x"), point.floating)
    assert cmd.argv[5] == "0@(0,1)"                       # unpinned: it floats
    assert "MBUF_SIZE 9128);" in cmd.argv[8]              # a jumbo frame in one mbuf


def test_a_user_s_dpdk_configuration_names_its_ports_and_keeps_its_pool(tmp_path):
    path = tmp_path / "fwd.click"
    path.write_text("DPDKInfo(NB_MBUF 1023);\nFromDPDKDevice({port1}) -> ToDPDKDevice({port2});\n")
    _check(f"click:{path}", "dpdk")
    text = click_nfs.template(f"click:{path}", "dpdk")
    config = click_nfs.config(f"click:{path}", "dpdk", text, {"port1": 0, "port2": 1})
    assert "FromDPDKDevice(0) -> ToDPDKDevice(1);" in config and "cnfperf_dpdk" not in config
    for text, why in (("FromDPDKDevice({iface1});", "names a kernel interface"),
                      ("FromDPDKDevice({eal});", "cnfperf gives Click its EAL arguments")):
        path.write_text(text)
        with pytest.raises(UserError, match=why):
            _check(f"click:{path}", "dpdk")


BAD = [
    (["--nf", "click:frobnicate"], "nf"),                        # no such kind, no such file
    (["--nf", "click:"], "nf"),
    (["--nf", "click:strip-encap", "--nf-api", "xdp"], "nf_api"),
    (["--switch", "memif", "--api", "dpdk", "--nfs", "2", "--nf", "click:strip-encap"], "nfs"),
    (["--nf", "click:strip-encap", "--nf-cores", "2", "--cpus", "0-1"], "nf_cores"),
    (["--nf", "click:mirror", "--tester", "split"], "nf"),       # a mirror needs a single tester
]


@pytest.mark.parametrize("flags,field", BAD, ids=[" ".join(f) for f, _ in BAD])
def test_bad_click_values_exit_2_naming_the_field(flags, field, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path / "results"))
    code = main(["run", "--switch", "bridge", "--api", "raw", "--nfs", "1", *flags])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f"cnfperf: error: {field}: "), err
    assert not (tmp_path / "results").exists()


def test_an_unknown_placeholder_in_a_file_exits_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path / "results"))
    path = tmp_path / "nf.click"
    path.write_text("FromDevice({iface1}) -> Queue -> ToDevice({iface3});\n")
    code = main(["run", "--api", "raw", "--nfs", "1", "--nf", f"click:{path}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"cnfperf: error: nf: {{iface3}} is not a placeholder; known: "
                                 + ", ".join("{" + p + "}" for p in placeholders.PLACEHOLDERS)]


OUTPUT = """\
cnfperf-click ready 1795453272.558078177
cnfperf-click port 1 rx 2400 tx 2398 refused 2 bad 3 kernel 4
cnfperf-click port 2 rx 10 tx 2390 refused 0 bad 0 kernel ??
"""


def test_click_s_counters_become_per_port_counters():
    summary = nfs.kind("click:strip-encap").summary(OUTPUT)
    assert summary["ports"] == [
        {"port": 1, "rx_packets": 2400, "tx_packets": 2398, "tx_refused": 2,
         "dropped": {"other": 3}, "api_rx_dropped": 4},
        {"port": 2, "rx_packets": 10, "tx_packets": 2390, "tx_refused": 0,
         "dropped": {"other": 0}, "api_rx_dropped": None}]   # it could not tell: ??
    assert (summary["rx_packets"], summary["tx_packets"]) == (2410, 4788)
    assert nfs.kind("click:x.click").summary("") == {"nf": "click:x.click", "ports": []}


def test_click_says_when_it_was_ready_by_its_clock():
    assert nfs.kind("click:mirror").ready(OUTPUT.splitlines()) == \
        {"type": "ready", "wall_ns": 1795453272558078177}
    assert click_nfs.ready_wall_ns(["cnfperf-click ready 17.5"]) == 17_500_000_000
    assert nfs.kind("click:mirror").ready(["nothing"]) is None
    assert nfs.kind("testpmd").ready(OUTPUT.splitlines()) is None


def test_click_nfs_on_sockets_are_not_counted_as_busy_pollers():
    [s] = scenarios(None, {"nfs": 2, "api": "raw", "nf": "click:strip-encap"})
    assert place(s, "1a2b", host_cpus=(0, 1), nf=nfs.kind(s.nf)).warnings == ()
    [s] = scenarios(None, {"nfs": 1, "api": "dpdk", "switch": "memif", "tester": "split",
                           "nf": "click:strip-encap"})   # with DPDK Click polls
    assert place(s, "1a2b", host_cpus=(0, 1), nf=nfs.kind(s.nf)).warnings
    [s] = scenarios(None, {"nfs": 2, "api": "raw", "nf": "l2"})
    assert place(s, "1a2b", host_cpus=(0, 1), nf=nfs.kind(s.nf)).warnings


def test_a_study_leaves_click_points_out_when_click_is_not_built(tmp_path, monkeypatch):
    monkeypatch.setenv(builds.PREFIX_ENV, str(tmp_path / "none"))
    engine = type("E", (), {"apis": [], "nfs": None})()
    keep = checks.unusable(type("Host", (), {"engine": engine, "static_engine": engine})())
    monkeypatch.setattr(checks.host, "_problems", lambda *a: [])
    why = keep({"switch": "bridge", "api": "raw", "nfs": 1, "nf": "click:strip-encap"})
    assert why and why.startswith("nf click:strip-encap: click not built") and \
        "switches/build.sh click)" in why
    why = keep({"switch": "memif", "api": "dpdk", "nfs": 1, "nf": "click:strip-encap"})
    assert why and why.startswith("nf click:strip-encap: click-dpdk not built")
    assert keep({"switch": "bridge", "api": "raw", "nfs": 1, "nf": "l2"}) is None
    # Click with DPDK opens virtio-user ports (the click patches): only the build is missing
    assert keep({"switch": "ovs", "api": "dpdk", "nfs": 1, "nf": "click:mirror",
                 "tester": "single"}).startswith("nf click:mirror: click-dpdk not built")
    assert keep({"switch": "bridge", "api": "raw", "nfs": 0, "nf": "click:mirror"}) is None


def test_click_nfs_run_in_the_click_images():
    from cnfperf.run.testbed import Builder
    [s] = scenarios(None, {"nfs": 1, "api": "raw", "nf": "click:strip-encap"})
    [nf] = place(s, "1a2b", host_cpus=(0, 1), nf=nfs.kind(s.nf)).nfs
    assert Builder.image_of(None, nf, s.nf) == CLICK
    [s] = scenarios(None, {"nfs": 1, "api": "dpdk", "switch": "memif", "nf": "click:strip-encap"})
    [nf] = place(s, "1a2b", host_cpus=(0, 1), nf=nfs.kind(s.nf)).nfs
    assert Builder.image_of(None, nf, s.nf) == CLICK_DPDK


def _elf(path: Path) -> Path:
    path.write_bytes(b"\x7fELF click")
    path.chmod(0o755)
    return path


def test_the_click_image_is_click_and_its_libraries_alone(tmp_path):
    libs = tmp_path / "lib"
    libs.mkdir()
    for name in ("libpcap.so.0.8", "libc.so.6", "libgcc_s.so.1"):
        (libs / name).write_text(name)
    program = _elf(tmp_path / "click")
    spec = rootfs.spec_for(CLICK, program, resolve=lambda p: [str(libs / "libpcap.so.0.8"),
                                                             str(libs / "libc.so.6")])
    assert (spec.name, spec.engine_path, spec.busybox) == ("click", "/bin/click", None)
    assert spec.init == ("/bin/click", "-e", "Idle") and not spec.minimal
    assert rootfs.spec_for(CLICK_DPDK, program, resolve=lambda p: []).name == "click-dpdk"
    # libgcc_s: glibc loads it itself (pthread_cancel, unwinding)
    assert spec.files == sorted(str(libs / n) for n in ("libc.so.6", "libgcc_s.so.1",
                                                        "libpcap.so.0.8"))
    info = rootfs.build(spec, tmp_path / "images")
    root = Path(info.path)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                   if p.is_file() or p.is_symlink())
    inside = str(libs).lstrip("/")
    assert files == sorted(["bin/click", "var/run", f"{inside}/libc.so.6",
                            f"{inside}/libgcc_s.so.1", f"{inside}/libpcap.so.0.8"])
    assert os.access(root / "bin/click", os.X_OK) and info.name == "click"
    # another image of its own, beside the minimal one of the same binary
    assert rootfs.build(rootfs.ImageSpec(MINIMAL, engine=program, busybox=None),
                        tmp_path / "images").path != info.path
    with pytest.raises(rootfs.ContainerError, match="switches/build.sh click"):
        rootfs.spec_for(CLICK, tmp_path / "nope")


@pytest.mark.needs("click", "ldd")
def test_the_built_click_s_image_holds_what_it_links():
    spec = rootfs.spec_for(CLICK, builds.program(click_nfs.BUILD))
    names = {os.path.basename(f) for f in spec.files}
    assert {"libpcap.so.0.8", "libstdc++.so.6", "libc.so.6"} <= names
    assert not any("busybox" in f or "cnfperf-engine" in f for f in spec.files)
    out = subprocess.run([str(builds.program(click_nfs.BUILD)), "-e", "Idle", "--quit"],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 0, out.stderr   # the image's init parses
