"""netkit's `ip` and kernel OVS's daemons, chosen without a kernel that has
them: which `ip` makes a netkit link, what the private OVS is told for the
kernel's datapath, and how its vswitchd is started in the switch's netns."""
from __future__ import annotations

from pathlib import Path

from cnfperf.dataplanes import ovsdb, procs
from cnfperf.host import iproute, lab


def test_netkit_takes_the_host_s_ip_when_it_is_new_enough_else_the_lab_s(monkeypatch, tmp_path):
    parts = tmp_path / "parts"
    (parts / "iproute2" / "bin").mkdir(parents=True)
    (parts / "iproute2" / "bin" / "ip").write_text("")
    monkeypatch.setattr(lab, "PARTS", parts)
    monkeypatch.setattr(iproute.tools, "find", lambda name, table=None: "/sbin/ip")
    versions = {"/sbin/ip": (6, 1), str(parts / "iproute2/bin/ip"): (6, 15)}
    monkeypatch.setattr(iproute, "version", lambda binary: versions[binary])
    assert iproute.netkit_ip() == str(parts / "iproute2/bin/ip")
    assert iproute.netkit_problem() is None
    versions["/sbin/ip"] = (6, 7)
    assert iproute.netkit_ip() == "/sbin/ip"
    versions["/sbin/ip"] = (6, 1)
    versions[str(parts / "iproute2/bin/ip")] = (6, 1)
    assert iproute.netkit_ip() is None
    assert "iproute2 >= 6.7" in iproute.netkit_problem()
    assert "lab/parts.sh" in iproute.netkit_problem()


def test_the_kernel_datapath_s_ovs_has_no_dpdk_in_its_config(tmp_path: Path):
    system = ovsdb.Ovs(tmp_path / "ovs", "cnfp1ovsk", "", 0, pmd_cpus=(),
                       datapath=ovsdb.SYSTEM)
    assert system._config() == [f"other_config:max-revalidator={ovsdb.MAX_REVALIDATOR_MS}"]
    netdev = ovsdb.Ovs(tmp_path / "ovs2", "cnfp1ovs", "/dev/hugepages", 64, pmd_cpus=(1,))
    assert "other_config:dpdk-init=true" in netdev._config()


def test_a_process_started_in_a_netns_is_ip_netns_exec_s(monkeypatch):
    seen = {}

    def spawn(argv, **kw):
        seen["argv"] = list(argv)
    monkeypatch.setattr(procs, "spawn", spawn)
    procs.in_netns("cnfp1sw")(["ovs-vswitchd", "unix:db.sock"], what="start ovs-vswitchd")
    assert seen["argv"] == ["ip", "netns", "exec", "cnfp1sw", "ovs-vswitchd", "unix:db.sock"]
