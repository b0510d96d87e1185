"""A private Open vSwitch: its own ovsdb-server, database and ovs-vswitchd (DPDK
build, userspace datapath; or, datapath `system`, any build over the kernel's
openvswitch module), all files in one run directory, so it never touches a
system OVS and goes away completely with that directory.

Both daemons are our children (no --detach), so we reap them; each is journaled
as a process (pid and start time) the moment it exists, for `cnfperf cleanup`.
They start on the host or in the switch's container (a procs.Launch says
which); the tools that talk to them (ovsdb-tool, ovs-vsctl, ovs-appctl,
ovs-ofctl) run on the host either way, through files and sockets in run_dir.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Sequence

from cnfperf import SystemFailure
from cnfperf.host import tools
from cnfperf.dataplanes import procs
from cnfperf.dataplanes.ovs_host import TOOLS, vhost_retry, vswitchd_binary
from cnfperf.host.system import CommandFailed, run

SCHEMA_NAMES = ("vswitch.ovsschema",)
SCHEMA_DIRS = ("/usr/share/openvswitch", "/usr/local/share/openvswitch")
COMMS = ("ovsdb-server", "ovs-vswitchd", "ovs-vswitchd-dp")  # comm is cut at 15 chars
# DPDK init plus mempool creation take ~1 s here; the reference scripts slept 80 s.
START_TIMEOUT = 60
COMMAND_TIMEOUT = 20
MAX_REVALIDATOR_MS = 100


class OvsError(SystemFailure):
    """An OVS daemon or command failed; the message names it and its last log lines."""


def schema_path() -> str | None:
    for d in SCHEMA_DIRS:
        for n in SCHEMA_NAMES:
            if os.path.exists(os.path.join(d, n)):
                return os.path.join(d, n)
    return None


# Where the datapath is: DPDK's userspace one (OVS's `netdev`), or the kernel's.
NETDEV, SYSTEM = "netdev", "system"


def problems(datapath: str = NETDEV) -> list[str]:
    found = tools.problems("ovsdb-tool", "ovsdb-server", "ovs-vsctl", "ovs-appctl", "ovs-ofctl",
                           table=TOOLS)
    if schema_path() is None:
        found.append(tools.not_found("vswitch.ovsschema", TOOLS["ovsdb-tool"].package))
    if datapath == NETDEV and vswitchd_binary() is None:
        found.append(tools.missing("ovs-vswitchd-dpdk", TOOLS))
    if datapath == SYSTEM:
        found += tools.problems("ovs-vswitchd", table=TOOLS)
    return found


def vswitchd(datapath: str) -> str | None:
    """ovs-vswitchd for the datapath: DPDK's build, or any (every build has the
    kernel's datapath)."""
    return vswitchd_binary() if datapath == NETDEV else tools.find("ovs-vswitchd", TOOLS)


def cpu_mask(cpus: Sequence[int]) -> str:
    return hex(sum(1 << c for c in set(cpus)))


_DUMP_PORT = re.compile(r"port\s+(\d+):\s*rx pkts=(\d+|\?), bytes=[^,]*, drop=(\d+|\?).*?"
                        r"tx pkts=(\d+|\?), bytes=[^,]*, drop=(\d+|\?)", re.S)


_FLOW = re.compile(r"cookie=0x([0-9a-f]+),.*?n_packets=(\d+)")


def _num(text: str) -> int | None:
    return None if text == "?" else int(text)


def parse_dump_ports(text: str) -> dict[int, dict[str, int | None]]:
    """`ovs-ofctl dump-ports`: counters per OpenFlow port ('?': the port does
    not keep that count, None: unknown, never 0)."""
    return {int(m[1]): {"rx_packets": _num(m[2]), "rx_dropped": _num(m[3]),
                        "tx_packets": _num(m[4]), "tx_dropped": _num(m[5])}
            for m in _DUMP_PORT.finditer(text)}


def parse_flows(text: str) -> dict[int, int]:
    """`ovs-ofctl dump-flows`: n_packets per cookie (cookie 0 sums the rest)."""
    found: dict[int, int] = {}
    for m in _FLOW.finditer(text):
        found[int(m[1], 16)] = found.get(int(m[1], 16), 0) + int(m[2])
    return found


# `ovs-appctl dpif-netdev/pmd-rxq-show`: a header per PMD thread, then a line
# per Rx queue it polls:
#   pmd thread numa_id 0 core_id 1:
#     port: cnfp1a2bp0s      queue-id:  0 (enabled)   pmd usage:  0 %
_PMD = re.compile(r"^pmd thread numa_id \S+ core_id (\d+):")
_RXQ = re.compile(r"^\s*port:\s*(\S+)\s+queue-id:\s*(\d+)")


def parse_pmd_rxq_show(text: str) -> list[dict[str, Any]]:
    """Each Rx queue and the core of the PMD thread that polls it."""
    found, core = [], None
    for line in text.splitlines():
        if m := _PMD.match(line):
            core = int(m[1])
        elif (m := _RXQ.match(line)) and core is not None:
            found.append({"port": m[1], "queue": int(m[2]), "core": core})
    return found


# `ovs-appctl dpif-netdev/pmd-stats-show`: a header per PMD thread (and the
# main thread), then its counters since pmd-stats-clear, cycles in TSC cycles:
#   pmd thread numa_id 0 core_id 1:
#     packets received: 1234
#     idle cycles: 123456 (90.00%)
#     processing cycles: 12345 (10.00%)
_THREAD = re.compile(r"^(pmd thread numa_id \S+ core_id (\d+)|main thread):")
_STAT = re.compile(r"^\s*(packets received|idle cycles|processing cycles):\s*(\d+)")


def parse_pmd_stats_show(text: str) -> dict[str, Any] | None:
    """The PMD threads' own cost: processing cycles per packet received and
    the share of their cycles spent processing (busy), over all of them and
    each; None when no PMD thread said."""
    threads: list[dict[str, Any]] = []
    for line in text.splitlines():
        if m := _THREAD.match(line):
            threads.append({"thread": f"pmd core {m[2]}" if m[2] else "main", "packets": 0,
                            "idle": 0, "processing": 0})
        elif (m := _STAT.match(line)) and threads:
            key = {"packets received": "packets", "idle cycles": "idle",
                   "processing cycles": "processing"}[m[1]]
            threads[-1][key] = int(m[2])
    pmds = [t for t in threads if t["thread"] != "main"]
    if not pmds:
        return None

    def said(t: dict[str, Any]) -> dict[str, Any]:
        cycles = t["idle"] + t["processing"]
        return {"thread": t["thread"], "packets": t["packets"],
                "cycles_per_packet": t["processing"] / t["packets"] if t["packets"] else None,
                "busy_share": t["processing"] / cycles if cycles else None}
    total = {k: sum(t[k] for t in pmds) for k in ("packets", "idle", "processing")}
    return {"source": "ovs-appctl dpif-netdev/pmd-stats-show",
            **{k: v for k, v in said({"thread": "all", **total}).items() if k != "thread"},
            "threads": [said(t) for t in pmds]}


def parse_map(text: str) -> dict[str, str]:
    """ovs-vsctl's `{a=1, b="x y"}` map syntax."""
    return {m[1]: m[2].strip('"') for m in re.finditer(r'([\w:-]+)=("[^"]*"|[^,}]*)', text)}


def parse_rules(text: str) -> list[str]:
    """`ovs-ofctl --no-stats --no-names dump-flows`: one rule a line, as OVS
    prints it (`cookie=0x10001, table=1, priority=10,in_port=1 actions=output:2`),
    without its reply's header."""
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith(("NXST_FLOW", "OFPST_FLOW"))]


def _json_value(value: Any) -> Any:
    """An OVSDB JSON datum (`ovs-vsctl --format=json`): a map as a dict, a set
    as a list, an atom as itself."""
    if isinstance(value, list) and len(value) == 2 and value[0] == "map":
        return {k: _json_value(v) for k, v in value[1]}
    if isinstance(value, list) and len(value) == 2 and value[0] == "set":
        return [_json_value(v) for v in value[1]]
    return value


def parse_table(text: str) -> list[dict[str, Any]]:
    """`ovs-vsctl --format=json list TABLE`: a dict per row, by column."""
    doc = json.loads(text)
    return [{h: _json_value(v) for h, v in zip(doc["headings"], row)} for row in doc["data"]]


# `ovs-appctl dpif/show`: a line per port, its settings (get_config) in brackets:
#     dpdk0 1/2: (dpdk: configured_rx_queues=1, configured_rxq_descriptors=128, …)
_DPIF_PORT = re.compile(r"^\s+(\S+) \d+/\S+: \((\S+?)(?::\s*(.*))?\)\s*$")


def parse_dpif_show(text: str) -> dict[str, dict[str, str]]:
    """Each port's type and settings as vswitchd configured them ({} for a
    port without any: the bridge's own tap)."""
    found = {}
    for line in text.splitlines():
        if m := _DPIF_PORT.match(line):
            found[m[1]] = {"type": m[2], **{k: v for k, _, v in
                                            (kv.strip().partition("=")
                                             for kv in (m[3] or "").split(",") if kv.strip())}}
    return found


class Ovs:
    """ovsdb-server + ovs-vswitchd in run_dir.

    memory_mb bounds DPDK memory (OVS sizes its mbuf pool to what fits);
    pmd_cpus get the poll-mode threads, one each; cpus (if given) bound the other
    threads on the host; `launch` starts the daemons elsewhere (in a container);
    pmd_maxsleep_us lets an idle PMD thread sleep up to that long (0: it spins).
    datapath `system`: the kernel's (no DPDK, no PMD threads: memory_mb,
    huge_dir and pmd_cpus unused), in the netns `launch` starts vswitchd in.
    """

    def __init__(self, run_dir: Path, file_prefix: str, huge_dir: str, memory_mb: int,
                 pmd_cpus: Sequence[int], cpus: Sequence[int] | None = None,
                 journal: Any = None, pmd_maxsleep_us: int = 0,
                 launch: procs.Launch | None = None, datapath: str = NETDEV):
        self.datapath = datapath
        self.run_dir = Path(run_dir)
        self.file_prefix = file_prefix
        self.huge_dir = huge_dir
        self.memory_mb = memory_mb
        self.pmd_cpus = tuple(pmd_cpus)
        self.pmd_maxsleep_us = pmd_maxsleep_us
        self.launch = launch or procs.on_host(tuple(cpus) if cpus else None)
        self.journal = journal
        self.db_sock = self.run_dir / "db.sock"
        self.vswitchd_ctl = self.run_dir / "ovs-vswitchd.ctl"
        self.ovsdb_ctl = self.run_dir / "ovsdb-server.ctl"
        self._procs: dict[str, subprocess.Popen] = {}
        # What the daemons and the tools need besides their usual environment.
        self.ovs_env = {k: str(self.run_dir) for k in
                        ("OVS_RUNDIR", "OVS_LOGDIR", "OVS_DBDIR", "OVS_SYSCONFDIR")}
        self.env = dict(os.environ, **self.ovs_env)

    # --- lifecycle ---------------------------------------------------------
    def start(self, timeout: float = START_TIMEOUT) -> None:
        binary = vswitchd(self.datapath)
        schema = schema_path()
        if binary is None or schema is None:
            raise OvsError("; ".join(problems(self.datapath)))
        if self.journal is not None:
            self.journal.add("dir", str(self.run_dir))
        self.run_dir.mkdir(parents=True)  # never someone else's: stop() removes it
        try:
            self._run(["ovsdb-tool", "create", str(self.run_dir / "conf.db"), schema])
            self._spawn("ovsdb-server", [
                "ovsdb-server", str(self.run_dir / "conf.db"), f"--remote=punix:{self.db_sock}",
                f"--unixctl={self.ovsdb_ctl}", f"--pidfile={self.run_dir}/ovsdb-server.pid",
                f"--log-file={self.run_dir}/ovsdb-server.log", "--no-chdir"])
            self._wait(lambda: self._ok(["ovs-vsctl", f"--db=unix:{self.db_sock}", "--no-wait",
                                         "init"]) is not None, "ovsdb-server", timeout)
            self.vsctl("--no-wait", "set", "Open_vSwitch", ".", *self._config())
            self._spawn("ovs-vswitchd", [
                binary, f"unix:{self.db_sock}", f"--unixctl={self.vswitchd_ctl}",
                f"--pidfile={self.run_dir}/ovs-vswitchd.pid",
                f"--log-file={self.run_dir}/ovs-vswitchd.log", "--no-chdir"])
            self._wait(self._dpdk_ready if self.datapath == NETDEV else self._answers,
                       "ovs-vswitchd", timeout)
        except BaseException:
            self.stop()
            raise

    def _config(self) -> list[str]:
        # Flow counts reach the rules once per revalidation (500 ms by
        # default): counters() waits for a round, so a shorter one is a
        # shorter wait at every read.
        revalidate = f"other_config:max-revalidator={MAX_REVALIDATOR_MS}"
        if self.datapath == SYSTEM:
            return [revalidate]
        mem = str(self.memory_mb)
        return [
            "other_config:dpdk-init=true",
            f"other_config:dpdk-socket-mem={mem}", f"other_config:dpdk-socket-limit={mem}",
            f"other_config:dpdk-hugepage-dir={self.huge_dir}",
            f"other_config:dpdk-extra=--file-prefix={self.file_prefix} --no-pci --no-telemetry",
            f"other_config:pmd-cpu-mask={cpu_mask(self.pmd_cpus)}",
            f"other_config:pmd-maxsleep={self.pmd_maxsleep_us}",
            revalidate,
        ]

    def _answers(self) -> bool:
        return self.vswitchd_ctl.exists() and self._ok(
            ["ovs-appctl", "--timeout=5", "-t", str(self.vswitchd_ctl), "version"]) is not None

    def _dpdk_ready(self) -> bool:
        if not self.vswitchd_ctl.exists():
            return False
        out = self._ok(["ovs-vsctl", f"--db=unix:{self.db_sock}", "--no-wait", "get",
                        "Open_vSwitch", ".", "dpdk_initialized"])
        return out is not None and out.strip() == "true"

    def stop(self) -> None:
        """`exit --cleanup` (vswitchd removes its datapath and ports), then ovsdb
        `exit`; signals for whatever does not go; run directory removed."""
        for name, ctl in (("ovs-vswitchd", self.vswitchd_ctl), ("ovsdb-server", self.ovsdb_ctl)):
            proc = self._procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            args = ["exit", "--cleanup"] if name == "ovs-vswitchd" else ["exit"]
            self._ok(["ovs-appctl", f"--timeout={COMMAND_TIMEOUT}", "-t", str(ctl), *args])
            procs.stop(proc, timeout=10)
        # Anything still mentioning our run directory (a previous start of ours).
        procs.kill_all(str(self.run_dir), COMMS)
        shutil.rmtree(self.run_dir, ignore_errors=True)
        if self.journal is not None:
            for name in ("ovs-vswitchd", "ovsdb-server"):
                self.journal.discard("process", self._entry(name))
            self.journal.discard("dir", str(self.run_dir))

    def __enter__(self) -> "Ovs":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- commands ----------------------------------------------------------
    def vsctl(self, *args: str) -> str:
        """ovs-vsctl; without --no-wait it returns once vswitchd applied the change."""
        argv = ["ovs-vsctl", f"--db=unix:{self.db_sock}", f"--timeout={COMMAND_TIMEOUT}", *args]
        return self._run(argv)

    def appctl(self, *args: str) -> str:
        return self._run(["ovs-appctl", f"--timeout={COMMAND_TIMEOUT}", "-t",
                          str(self.vswitchd_ctl), *args])

    def add_bridge(self, bridge: str) -> None:
        self.vsctl("add-br", bridge, "--", "set", "bridge", bridge,
                   f"datapath_type={self.datapath}")

    def add_system_port(self, bridge: str, port: str, ofport: int) -> None:
        """A kernel netdev (in vswitchd's netns) as a port of the kernel datapath."""
        self.vsctl("add-port", bridge, port, "--", "set", "Interface", port,
                   f"ofport_request={ofport}")

    def add_vhost_client_port(self, bridge: str, port: str, socket: str, ofport: int,
                              settings: Sequence[str] = ()) -> None:
        """OVS is the vhost-user client: it (re)connects to the endpoint's socket
        whenever the endpoint's virtio-user server comes up. `settings`: more
        of the Interface's columns (port_settings), in the same transaction."""
        self.vsctl("add-port", bridge, port, "--", "set", "Interface", port,
                   "type=dpdkvhostuserclient", f"options:vhost-server-path={socket}",
                   f"ofport_request={ofport}", *settings)

    def add_dpdk_port(self, bridge: str, port: str, devargs: str, ofport: int,
                      settings: Sequence[str] = ()) -> None:
        """A DPDK port on a device named by its devargs (a vdev: the af_packet
        PMD on a NIC)."""
        self.vsctl("add-port", bridge, port, "--", "set", "Interface", port, "type=dpdk",
                   f"options:dpdk-devargs={devargs}", f"ofport_request={ofport}", *settings)

    def make_pool(self, bridge: str, port: str, ofport: int, mtu: int) -> None:
        """OVS's shared mbuf pool for `mtu`, made now: a DPDK port (the null
        PMD, receiving nothing) makes it as it is added, and is removed again.
        The pool stays, unused (OVS sweeps unused pools only after it looked
        for one to reuse), and the first vhost-user port to connect takes it.
        Left to that port, it would be made while other peers connect: see
        ovs.SWITCH_MB."""
        self.add_dpdk_port(bridge, port, "net_null0,no-rx=1", ofport, [f"mtu_request={mtu}"])
        self.vsctl("del-port", bridge, port)

    def learn(self, bridge: str, port: str, mac: str) -> None:
        """A static MAC table entry: NORMAL forwards to this port from the first
        packet on, without flooding and without waiting for the port to send."""
        self.appctl("fdb/add", bridge, port, "0", mac)

    def interface(self, name: str, column: str) -> dict[str, str]:
        return parse_map(self.vsctl("--no-wait", "get", "Interface", name, column))

    def interfaces(self, *columns: str) -> dict[str, dict[str, Any]]:
        """Every Interface's `columns`, by its name, from the database."""
        text = self.vsctl("--no-wait", "--format=json", f"--columns=name,{','.join(columns)}",
                          "list", "Interface")
        return {row.pop("name"): row for row in parse_table(text)}

    def rules(self, bridge: str) -> list[str]:
        """The bridge's OpenFlow rules as vswitchd holds them (ports by number)."""
        return parse_rules(self._run(["ovs-ofctl", f"--timeout={COMMAND_TIMEOUT}",
                                      "--no-stats", "--no-names", "dump-flows", bridge]))

    def add_flows(self, bridge: str, flows: list[str]) -> None:
        path = self.run_dir / f"{bridge}.flows"
        path.write_text("\n".join(flows) + "\n")
        self._run(["ovs-ofctl", f"--timeout={COMMAND_TIMEOUT}", "add-flows", bridge, str(path)])

    def mod_port(self, bridge: str, port: str, action: str) -> None:
        """`ovs-ofctl mod-port`: `down` (the port neither takes in nor sends
        out a frame) or `up`."""
        self._run(["ovs-ofctl", f"--timeout={COMMAND_TIMEOUT}", "mod-port", bridge, port, action])

    def replace_flows(self, bridge: str, flows: list[str]) -> None:
        """Every rule deleted, then these added: their counts start at zero (a
        rule kept by replace-flows would keep its count)."""
        path = self.run_dir / f"{bridge}.flows"
        path.write_text("\n".join(flows) + "\n")
        self._run(["ovs-ofctl", f"--timeout={COMMAND_TIMEOUT}", "del-flows", bridge])
        self._run(["ovs-ofctl", f"--timeout={COMMAND_TIMEOUT}", "add-flows", bridge, str(path)])

    def alive(self) -> bool:
        """Both daemons still run and vswitchd answers."""
        return self.gone() is None

    def gone(self) -> str | None:
        """Why the switch no longer serves (a daemon exited: its code and its
        log's last lines), or None while both run and vswitchd answers."""
        for name, proc in self._procs.items():
            if proc.poll() is not None:
                return f"{name} exited with code {proc.returncode}: {self.log_tail(name)}"
        if len(self._procs) < 2:
            return "not started"
        if self._ok(["ovs-appctl", "--timeout=5", "-t", str(self.vswitchd_ctl),
                     "version"]) is None:
            return f"ovs-vswitchd does not answer: {self.log_tail()}"
        return None

    def flow_packets(self, bridge: str) -> dict[int, int]:
        """n_packets per flow cookie. Flow counters are pushed from the datapath
        by the revalidators; waiting for one round makes them current."""
        self.appctl("revalidator/wait")
        return parse_flows(self._run(["ovs-ofctl", f"--timeout={COMMAND_TIMEOUT}",
                                      "dump-flows", bridge]))

    def counters(self, bridge: str) -> dict[int, dict[str, int | None]]:
        """Per OpenFlow port, live (the database's statistics column lags up to
        5 s). A vhost-user port has counters only while its peer is connected."""
        return parse_dump_ports(self._run(["ovs-ofctl", f"--timeout={COMMAND_TIMEOUT}",
                                           "dump-ports", bridge]))

    def pids(self) -> list[int]:
        """ovsdb-server's and ovs-vswitchd's, while they run."""
        return [p.pid for p in self._procs.values() if p.poll() is None]

    def log_tail(self, daemon: str = "ovs-vswitchd", n: int = 3) -> str:
        """The last lines of its log, or, before it has one, of its stderr
        (what the runtime's exec said when the daemon never ran)."""
        with contextlib.suppress(OSError):
            lines = (self.run_dir / f"{daemon}.log").read_text().splitlines()
            return " | ".join(l.split("|", 4)[-1] for l in lines[-n:])
        with contextlib.suppress(OSError):
            lines = (self.run_dir / f"{daemon}.stderr").read_text().strip().splitlines()
            if lines:
                return " | ".join(lines[-n:])
        return "(no log)"

    # --- plumbing ----------------------------------------------------------
    def _spawn(self, name: str, argv: list[str]) -> None:
        env = dict(self.ovs_env)
        retry = vhost_retry() if self.datapath == NETDEV else None
        if name == "ovs-vswitchd" and retry:
            # A new engine's socket is connected within 10 ms, not up to a second.
            env["LD_PRELOAD"] = retry
        # Its log file says what it does; its stdout would only fill a pipe.
        # Its stderr goes to a file: what fails before its log opens (the
        # runtime's exec, a library) says so there.
        with open(self.run_dir / f"{name}.stderr", "wb") as stderr:
            self._procs[name] = self.launch(argv, what=f"start {name}", env=env,
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=stderr)
        procs.journal_process(self.journal, self._entry(name), self._procs[name].pid)

    def _entry(self, daemon: str) -> str:
        return f"{self.file_prefix} {daemon}"

    def _wait(self, ready, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        delay = 0.02
        while not ready():
            proc = self._procs[name]
            if proc.poll() is not None:
                raise OvsError(f"{name} exited with code {proc.returncode} while starting: "
                               f"{self.log_tail(name)}")
            if time.monotonic() > deadline:
                raise OvsError(f"{name} not ready within {timeout:g} s: {self.log_tail(name)}")
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    def _ok(self, argv: list[str]) -> str | None:
        """Output, or None if it failed: for asking a daemon that may not be up yet."""
        try:
            return self._command(argv)
        except CommandFailed:
            return None

    def _run(self, argv: list[str]) -> str:
        try:
            return self._command(argv)
        except CommandFailed as e:
            # Why vswitchd refused or did not answer is in its log, not in the command's.
            raise OvsError(f"{e} (vswitchd log: {self.log_tail()})") from None

    def _command(self, argv: list[str]) -> str:
        # Longer than the --timeout given to OVS's tools: they say what they waited for.
        return run(argv, env=self.env, timeout=COMMAND_TIMEOUT + 5)

