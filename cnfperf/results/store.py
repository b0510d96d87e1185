"""Results in SQLite: runs, test points, metrics per endpoint, switch counters per port,
network functions and their ports, CPU use per node.

The schema is versioned with PRAGMA user_version; `_MIGRATIONS[n]` takes a
database from version n to n+1, so later columns (repetitions, search bounds)
are added without losing old results.
"""
from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cnfperf import UserError, __version__, fields
from cnfperf.results import hdrh
from cnfperf.results.model import (DROP_REASONS, LATENCY_KEYS, NFResult, PairResult, PointResult,
                                   baseline_share)

RESULTS_ENV = "CNFPERF_RESULTS"
DB_NAME = "cnfperf.db"
_LAT = ", ".join(f"lat_{k}_ns REAL" for k in LATENCY_KEYS)
_TOTALS = f"""offered_pps REAL, sent INTEGER, received INTEGER, lost INTEGER, loss_ratio REAL,
    tx_pps REAL, rx_pps REAL, rx_bps REAL, reordered INTEGER, duplicates INTEGER,
    latency_kind TEXT, {_LAT}, latency_histogram TEXT"""

_SCHEMA_1 = f"""
CREATE TABLE runs (
    id TEXT PRIMARY KEY, started REAL NOT NULL, finished REAL, status TEXT NOT NULL,
    command TEXT, points INTEGER, run_dir TEXT, error TEXT,
    cnfperf_version TEXT, engine_version TEXT, host TEXT);
CREATE TABLE points (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id), idx INTEGER NOT NULL,
    status TEXT NOT NULL, error TEXT, started REAL, finished REAL,
    switch TEXT, api TEXT, mode TEXT, pairs INTEGER, size INTEGER, burst INTEGER,
    rate REAL, duration REAL, warmup REAL, flows INTEGER, touch INTEGER, mmsg INTEGER,
    blocking INTEGER, runtime TEXT, cpus TEXT,
    scenario TEXT, placement TEXT, warnings TEXT, versions TEXT,
    image_name TEXT, image_size INTEGER,
    {_TOTALS},
    UNIQUE (run_id, idx));
CREATE TABLE pairs (
    point_id INTEGER NOT NULL REFERENCES points(id), pair INTEGER NOT NULL,
    {_TOTALS}, PRIMARY KEY (point_id, pair));
CREATE TABLE metrics (
    point_id INTEGER NOT NULL REFERENCES points(id), pair INTEGER NOT NULL,
    endpoint TEXT NOT NULL, role TEXT NOT NULL, cpu INTEGER,
    tx_packets INTEGER, rx_packets INTEGER, tx_pps REAL, rx_pps REAL, tx_bps REAL,
    rx_bps REAL, offered_pps REAL, reordered INTEGER, duplicates INTEGER, corrupt INTEGER,
    seq_lost INTEGER, warmup_packets INTEGER, seconds REAL,
    latency_kind TEXT, latency_samples INTEGER, {_LAT}, latency_histogram TEXT,
    summary TEXT, PRIMARY KEY (point_id, endpoint));
CREATE TABLE counters (
    point_id INTEGER NOT NULL REFERENCES points(id), port TEXT NOT NULL,
    rx_packets INTEGER, tx_packets INTEGER, rx_dropped INTEGER, tx_dropped INTEGER,
    PRIMARY KEY (point_id, port));
"""
# Sweeps: a point's key (parameters + repetition) is what --resume compares; grp
# is shared by the repetitions of one point. Searches: the rate found, the loss at
# it and every trial. steady_rx_pps: the received rate of the steady-state
# intervals only (experiments/stats.py).
_SCHEMA_2 = """
ALTER TABLE runs ADD COLUMN spec TEXT;
ALTER TABLE points ADD COLUMN key TEXT;
ALTER TABLE points ADD COLUMN grp TEXT;
ALTER TABLE points ADD COLUMN rep INTEGER NOT NULL DEFAULT 0;
ALTER TABLE points ADD COLUMN steady_rx_pps REAL;
ALTER TABLE points ADD COLUMN search_rate_pps REAL;
ALTER TABLE points ADD COLUMN search_loss_ratio REAL;
ALTER TABLE points ADD COLUMN search_requested_pps REAL;
ALTER TABLE points ADD COLUMN search_loss_threshold REAL;
ALTER TABLE points ADD COLUMN search_verified INTEGER;
ALTER TABLE points ADD COLUMN generator_limited INTEGER;
ALTER TABLE pairs ADD COLUMN steady_rx_pps REAL;
CREATE UNIQUE INDEX points_key ON points (run_id, key);
CREATE TABLE trials (
    point_id INTEGER NOT NULL REFERENCES points(id), n INTEGER NOT NULL,
    phase TEXT NOT NULL, requested_pps REAL, offered_pps REAL, rx_pps REAL,
    sent INTEGER, received INTEGER, loss_ratio REAL, passed INTEGER,
    PRIMARY KEY (point_id, n));
"""
# One word per concept, as the engine says it: offered = the rate asked for,
# tx = what really left (a trial's old "requested" and "offered").
_SCHEMA_3 = """
ALTER TABLE trials RENAME COLUMN offered_pps TO tx_pps;
ALTER TABLE trials RENAME COLUMN requested_pps TO offered_pps;
ALTER TABLE points RENAME COLUMN search_requested_pps TO search_offered_pps;
"""
# blocking sockets became one of the ways to wait for packets: poll = interrupt.
_SCHEMA_4 = """
ALTER TABLE points RENAME COLUMN blocking TO poll;
UPDATE points SET poll = CASE poll WHEN 1 THEN 'interrupt' ELSE 'busy' END;
"""
# Network functions may run in an image of their own (the minimal one, the tools
# one: runtimes/rootfs.py); image_* stay the tester's (full) image.
_SCHEMA_5 = """
ALTER TABLE points ADD COLUMN nf_image_name TEXT;
ALTER TABLE points ADD COLUMN nf_image_size INTEGER;
"""
# Network functions on the paths: each NF's startup and polling (nf_results; idx
# is its place on its pair's path, from the sender) and its ports' counters
# (nf_ports, by the NF's name; port 1 faces the sender, 2 the receiver; rx and drops counted at the
# ingress port, tx and tx_refused at the egress port). Per point: its paths'
# shape (pair, chain, pipeline, graph) and the nodes whose poller was CPU-bound
# (model.CPU_BOUND_BUSY; comma-separated node names, "" for none).
_SCHEMA_6 = """
ALTER TABLE points ADD COLUMN shape TEXT;
ALTER TABLE points ADD COLUMN cpu_bound TEXT;
CREATE TABLE nf_results (
    point_id INTEGER NOT NULL REFERENCES points(id), name TEXT NOT NULL,
    pair INTEGER NOT NULL, idx INTEGER NOT NULL, kind TEXT, cpu INTEGER,
    ready_s REAL, first_tx_s REAL, polls INTEGER, empty_polls INTEGER,
    PRIMARY KEY (point_id, name));
CREATE TABLE nf_ports (
    point_id INTEGER NOT NULL REFERENCES points(id), name TEXT NOT NULL,
    port INTEGER NOT NULL, rx_packets INTEGER, tx_packets INTEGER, tx_refused INTEGER,
    dropped_other INTEGER, dropped_bad INTEGER, dropped_no_route INTEGER, dropped_ttl INTEGER,
    PRIMARY KEY (point_id, name, port));
"""
# CPU use per node over the measured window (cnfperf/run/cpu.py): kind is the node's
# (model.CPU_KINDS), cores a cpulist, quota % of one core (NULL: none), user_s
# and system_s its CPU time (NULL: unreadable), softirq_s its cores', packets
# what it handled, cycles_per_packet from tsc_hz (its source named), threads
# each thread's name, allowed cores and last core (JSON).
_SCHEMA_7 = """
CREATE TABLE cpu_usage (
    point_id INTEGER NOT NULL REFERENCES points(id), node TEXT NOT NULL, kind TEXT NOT NULL,
    cores TEXT, quota REAL, user_s REAL, system_s REAL, softirq_s REAL, wall_s REAL,
    packets INTEGER, cycles_per_packet REAL, tsc_hz REAL, tsc_source TEXT, threads TEXT,
    PRIMARY KEY (point_id, node));
"""
# The switch's queue-to-core affinity (DataPlane.queues): a JSON list of
# {port, queue, core}, one per Rx queue its poll threads serve; NULL for a
# switch without poll threads.
_SCHEMA_8 = """
ALTER TABLE points ADD COLUMN queues TEXT;
"""
# Which tester a point used and why: its `tester` column says which (split or
# single), tester_why why ("set", or what tester = auto weighed: testers.py);
# pollers the busy pollers it counted for that tester (its ends, NFs and
# data plane: plan.busy_pollers), cores how many cores the point was placed on
# (point_cores since _SCHEMA_11). NULL in points stored before.
_SCHEMA_9 = """
ALTER TABLE points ADD COLUMN tester_why TEXT;
ALTER TABLE points ADD COLUMN pollers INTEGER;
ALTER TABLE points ADD COLUMN cores INTEGER;
"""
# With the udp api: the datagrams each end's kernel dropped over the trial, UDP
# InErrors and, of those, InCsumErrors (udp_errors.py); NULL for other apis.
_SCHEMA_10 = """
ALTER TABLE metrics ADD COLUMN udp_in_errors INTEGER;
ALTER TABLE metrics ADD COLUMN udp_in_csum_errors INTEGER;
"""
# A point's count of cores is point_cores: `cores` is a node's cpulist (cpu_usage).
_SCHEMA_11 = """
ALTER TABLE points RENAME COLUMN cores TO point_cores;
"""
# Of those InErrors, RcvbufErrors: the datagrams a full socket buffer had no
# room for (udp_errors.py); NULL for other apis and in points stored before.
_SCHEMA_12 = """
ALTER TABLE metrics ADD COLUMN udp_rcvbuf_errors INTEGER;
"""
# What the report needs of the point's data plane, as it was when measured
# (DataPlane.stored(): name, description, kind, counter_view, joins, style), a
# JSON object: the report reads a run through it, not through today's data
# planes. Points stored before get the facts their data plane had when this
# column came (_FACTS_13, by name); a name not among them stays NULL and the
# report falls back to the name alone.
_FACTS_13 = {
    "veth": ("a veth pair per link, no switch between its ends", "kernel", "node", "link", 0),
    "bridge": ("Linux bridge; each port on a veth to the bridge", "kernel", "switch", "switch", 1),
    "macvlan": ("macvlan children in bridge mode on a shared parent link", "kernel", "node",
                "switch", 2),
    "vhost": ("direct vhost-user link: the receiving end is the backend, the other virtio-user",
              "dpdk", "switch", "link", 3),
    "memif": ("direct memif shared-memory link: the receiving end is server, the other client",
              "dpdk", "switch", "link", 4),
    "testpmd": ("dpdk-testpmd io forwarding between paired vhost-user ports (no switching "
                "logic)", "dpdk", "switch", "switch", 5),
    "ovs": ("Open vSwitch, DPDK userspace datapath, vhost-user client ports, NORMAL switching",
            "dpdk", "switch", "switch", 6),
    "vpp": ("FD.io VPP, one L2 bridge domain over its own vhost-user ports (no DPDK inside)",
            "dpdk", "switch", "switch", 7),
    "vpp-memif": ("FD.io VPP, one L2 bridge domain over memif ports (CSIT's container path)",
                  "dpdk", "switch", "switch", 8),
    "click": ("Click modular router with DPDK: an EtherSwitch per link between vhost-user "
              "ports", "dpdk", "switch", "switch", 9),
    "snabb": ("Snabb: its learning bridge between vhost-user client ports (one process)",
              "dpdk", "switch", "switch", 10),
    "snabb-wire": ("Snabb: each link's two vhost-user client ports wired to each other, no "
                   "bridge", "dpdk", "switch", "switch", 11),
}


# Likewise what the report needs of the point's NF kind (NfKind.stored(): name,
# style), a JSON object, NULL for a point without NFs: points stored before
# get the style their kind had when this column came (_NF_STYLES_13, by the
# scenario's `nf`, read from its JSON: the nf column is a field's, added after
# the migrations); another value (cmd:, click:FILE) stays NULL and is drawn by
# its name. A table of kind names outside cnfperf/nfs/ on purpose: it is
# history, what those kinds were, and never grows.
_NF_STYLES_13 = {"l2": 0, "mirror": 1, "strip-encap": 2, "l3": 3, "testpmd": 4,
                 "click:mirror": 5, "click:strip-encap": 6}


def _facts_13(name: str, facts: tuple) -> str:
    keys = ("description", "kind", "counter_view", "joins", "style")
    text = json.dumps({"name": name, **dict(zip(keys, facts))}).replace("'", "''")
    return f"UPDATE points SET switch_facts = '{text}' WHERE switch = '{name}';"


def _nf_facts_13(name: str, style: int) -> str:
    text = json.dumps({"name": name, "style": style})
    return (f"UPDATE points SET nf_facts = '{text}' WHERE {_scenario('nf')} = '{name}' "
            f"AND {_scenario('nfs')} > 0;")


def _scenario(key: str) -> str:
    """SQL: the stored scenario's value of `key` (NULL when it has none)."""
    return f"(CASE WHEN json_valid(scenario) THEN json_extract(scenario, '$.{key}') END)"


_SCHEMA_13 = "\n".join([
    "ALTER TABLE points ADD COLUMN switch_facts TEXT;",
    *(_facts_13(name, facts) for name, facts in _FACTS_13.items()),
    "ALTER TABLE points ADD COLUMN nf_facts TEXT;",
    *(_nf_facts_13(name, style) for name, style in _NF_STYLES_13.items())])
# How the point's virtual machines ran (VmRuntime.facts: accel as used, kvm or
# tcg, QEMU's and the guest kernel's versions, how many VMs), a JSON object;
# NULL for a point without VMs and for every point stored before.
_SCHEMA_14 = """ALTER TABLE points ADD COLUMN vm_facts TEXT;
"""
# The other hosts the point ran on (tester_host, dut_host of an inventory): a
# JSON object by host name of what each was (its address and user, kernel, CPU,
# cnfperf and engine versions, clock source); NULL for a point that ran on
# this host alone (the run's host), and for every point stored before.
_SCHEMA_15 = """ALTER TABLE points ADD COLUMN hosts TEXT;
"""
# Each latency histogram also as HdrHistogram's V2 blob (results/hdrh.py), beside
# latency_histogram in points, pairs and metrics. Points stored before get theirs
# here, in the step's transaction (the SQL function hdrh_blob: _functions): the
# store then holds a blob wherever it holds a histogram, for every reader of the
# database, and reading pays nothing; NULL where there is no histogram.
_HDRH_TABLES = ("points", "pairs", "metrics")
_SCHEMA_16 = "\n".join([
    *(f"ALTER TABLE {t} ADD COLUMN latency_hdrh TEXT;" for t in _HDRH_TABLES),
    *(f"UPDATE {t} SET latency_hdrh = hdrh_blob(latency_histogram, lat_max_ns) "
      "WHERE latency_histogram IS NOT NULL;" for t in _HDRH_TABLES)])
# Searches by MLRsearch (strategies/mlr.py): per goal its bounds and conditional
# throughput (goals; loads per pair); per trial its duration, its generator
# truth (strategies/truth.py: the frames intended, the sends refused, the
# frames the pacer skipped, how much longer than asked the senders took, and
# whether the trial is valid, why not) and, for the latency trials after a
# search, the fraction of the rate found (0: the search's lowest load) and the
# latency (its histogram also as an HdrHistogram blob).
_SCHEMA_17 = "\n".join([
    *(f"ALTER TABLE trials ADD COLUMN {c};" for c in (
        "duration REAL", "intended INTEGER", "refused INTEGER", "skipped INTEGER",
        "stretch REAL", "valid INTEGER", "invalid_why TEXT", "fraction REAL",
        "latency_kind TEXT", "latency_samples INTEGER",
        *(f"lat_{k}_ns REAL" for k in LATENCY_KEYS), "latency_histogram TEXT",
        "latency_hdrh TEXT")),
    """CREATE TABLE goals (
    point_id INTEGER NOT NULL REFERENCES points(id), goal INTEGER NOT NULL,
    loss_ratio REAL, exceed_ratio REAL, width REAL, lower_pps REAL, upper_pps REAL,
    conditional_pps REAL, good_s REAL, bad_s REAL, generator_limited INTEGER,
    PRIMARY KEY (point_id, goal));""",
    # A soak's time series (strategies/soak.py): a row per second of traffic, written
    # as it is measured, before the point itself (so by the point's run and index):
    # an interrupted soak keeps what it measured, and --resume goes on from there
    # in a new segment.
    """CREATE TABLE soak (
    run_id TEXT NOT NULL REFERENCES runs(id), idx INTEGER NOT NULL, n INTEGER NOT NULL,
    segment INTEGER NOT NULL, at_s REAL, interval_s REAL, offered_pps REAL,
    tx_packets INTEGER, rx_packets INTEGER, lost INTEGER, loss_ratio REAL, rx_pps REAL,
    lat_p50_ns REAL, lat_p99_ns REAL, lat_max_ns REAL,
    PRIMARY KEY (run_id, idx, n));"""])
# A profile per pair (scenario.py: pairs that differ): what each pair was asked,
# every per-pair field's value (fields.PER_PAIR) as JSON; NULL where a point's
# pairs were alike (its scenario says) and before schema 18.
_SCHEMA_18 = "ALTER TABLE pairs ADD COLUMN profile TEXT;"
# A fault inside a trial (run/fault.py): per point and per pair the outage the
# counting end measured from sequence numbers (the longest gap in time less one
# frame interval, in ns, and the frames lost in it; a point's is its pairs'
# longest), and per point what the fault did (fault_facts: its target, ports,
# when, how long, the spread of its commands; fault_ns how long its target was
# down) and what the noisy neighbour did (noise_facts: stress-ng's bogo ops, a
# command's exit and output). NULL in points stored before, and without a fault
# or a neighbour (the outage too: without a fault a gap is loss, model.pair_result).
_SCHEMA_19 = "\n".join([
    *(f"ALTER TABLE {t} ADD COLUMN {c};" for t in ("points", "pairs")
      for c in ("outage_ns REAL", "outage_lost INTEGER")),
    "ALTER TABLE points ADD COLUMN fault_ns REAL;",
    "ALTER TABLE points ADD COLUMN fault_facts TEXT;",
    "ALTER TABLE points ADD COLUMN noise_facts TEXT;"])
# Policers, shapers and conformance (host/buckets.py, the engine's --policer,
# --shaper, --conformance): per pair (and point) the smallest bucket, in frames,
# the received stream conforms to at the contract's rate and the share of its
# frames beyond the contract's bucket (NULL without one); per NF port the
# frames its policer and its shaper dropped and those its shaper delayed.
_SCHEMA_20 = "\n".join([
    *(f"ALTER TABLE {t} ADD COLUMN {c};" for t in ("points", "pairs")
      for c in ("conformance_sigma REAL", "conformance_exceeded REAL")),
    *(f"ALTER TABLE nf_ports ADD COLUMN {c} INTEGER;"
      for c in ("dropped_policer", "dropped_shaper", "delayed"))])
# The generator baseline (generator_baseline, run/baseline.py): per run, each
# distinct baseline measured before its points (key: its scenario hashed; api,
# size, burst, tester and pairs its generator's; switch the link it went
# through; what left and arrived over its unpaced trial; status done or
# failed, and why); per point the rx rate of its baseline (baseline_pps) and
# its own received rate as a share of it (baseline_share, model.baseline_share).
# NULL where a point asked none (or is not a throughput point).
_SCHEMA_21 = """ALTER TABLE points ADD COLUMN baseline_pps REAL;
ALTER TABLE points ADD COLUMN baseline_share REAL;
CREATE TABLE baselines (
    run_id TEXT NOT NULL REFERENCES runs(id), key TEXT NOT NULL,
    api TEXT, size INTEGER, burst INTEGER, tester TEXT, pairs INTEGER, switch TEXT,
    scenario TEXT, status TEXT NOT NULL, error TEXT, started REAL, finished REAL,
    tx_pps REAL, rx_pps REAL, loss_ratio REAL,
    PRIMARY KEY (run_id, key));
"""
# Stalls (the engine's `stalls`: gaps between two iterations of a polling loop
# longer than its threshold, over the measured window): per engine, NFs'
# included, how many, their sum, the longest, the sum's share of its window and
# the threshold; per point the largest sum and the largest share of any of its
# pollers (model.PointResult.stalled), per trial of a search that largest share.
# NULL where the engine did not say (a command NF) and in points stored before.
_SCHEMA_22 = "\n".join([
    *(f"ALTER TABLE metrics ADD COLUMN {c};" for c in (
        "stall_count INTEGER", "stall_total_ns INTEGER", "stall_max_ns INTEGER",
        "stall_share REAL", "stall_threshold_ns INTEGER")),
    "ALTER TABLE points ADD COLUMN stall_ns REAL;",
    "ALTER TABLE points ADD COLUMN stall_share REAL;",
    "ALTER TABLE trials ADD COLUMN stall_share REAL;"])
# The cluster the point's pods ran on (nf_in, endpoint_in or switch_in = pod: the pod
# runtime's facts, its Kubernetes version, node and CPU manager policy; and by
# node each pod's QoS class and cores), a JSON object; NULL without pods and
# for every point stored before.
_SCHEMA_23 = "ALTER TABLE points ADD COLUMN cluster_facts TEXT;"
# An NF on several cores (the engine's, a thread per queue): the frames each
# queue's thread took in, a JSON list; NULL on one core and before.
_SCHEMA_24 = "ALTER TABLE nf_results ADD COLUMN queues TEXT;"
# A point's expectations (`expect`: results/expect.py), the lines as written, a
# JSON list; NULL without any and before. What each gave is judged from the
# stored point whenever it is read (report/gates.py), against any earlier run.
_SCHEMA_25 = "ALTER TABLE points ADD COLUMN expect TEXT;"
# The switch's own per-packet cost, as it counts it (DataPlane.cost: OVS-DPDK's
# pmd-stats-show, VPP's show runtime, testpmd's --record-core-cycles), a JSON
# object; NULL where it reports none and before.
_SCHEMA_26 = "ALTER TABLE points ADD COLUMN switch_cost TEXT;"
_MIGRATIONS = [_SCHEMA_1, _SCHEMA_2, _SCHEMA_3, _SCHEMA_4, _SCHEMA_5, _SCHEMA_6, _SCHEMA_7,
               _SCHEMA_8, _SCHEMA_9, _SCHEMA_10, _SCHEMA_11, _SCHEMA_12, _SCHEMA_13,
               _SCHEMA_14, _SCHEMA_15, _SCHEMA_16, _SCHEMA_17, _SCHEMA_18, _SCHEMA_19,
               _SCHEMA_20, _SCHEMA_21, _SCHEMA_22, _SCHEMA_23, _SCHEMA_24,
               _SCHEMA_25, _SCHEMA_26]
# Children of a point, deleted with it when --resume runs it again.
_POINT_CHILDREN = ("pairs", "metrics", "counters", "trials", "goals", "nf_results",
                   "nf_ports", "cpu_usage")
SEARCH_KEYS = ("rate_pps", "loss_ratio", "offered_pps", "loss_threshold", "verified",
               "generator_limited")
SCHEMA_VERSION = len(_MIGRATIONS)


def _hdrh_blob(histogram: str | None, max_ns: float | None) -> str | None:
    """SQL hdrh_blob(latency_histogram, lat_max_ns): a stored histogram's blob.
    One an old row holds that is not a list of buckets gets none (NULL): a
    migration must not fail a store on a row it cannot read."""
    try:
        return hdrh.blob(json.loads(histogram or "null"), max_ns)
    except (ValueError, TypeError):
        return None


def _functions(db: sqlite3.Connection) -> None:
    """The SQL functions the migrations call."""
    db.create_function("hdrh_blob", 2, _hdrh_blob, deterministic=True)


def results_dir(override: str | Path | None = None) -> Path:
    return Path(override or os.environ.get(RESULTS_ENV) or "results")


class Store:
    def __init__(self, directory: Path, create: bool = True):
        self.directory = directory
        self.path = directory / DB_NAME
        if not create and not self.path.exists():
            raise FileNotFoundError(f"no results database at {self.path}")
        directory.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=10)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA foreign_keys = ON")
        _functions(self.db)
        self._migrate()
        self._field_columns()

    def close(self) -> None:
        self.db.close()

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise UserError("--results", f"{self.path}: schema version {version} is newer "
                                         f"than this cnfperf ({SCHEMA_VERSION}); upgrade cnfperf")
        for n in range(version, SCHEMA_VERSION):
            # A step and its version in one transaction: executescript commits
            # statement by statement, so a step cut short (a crash, a full
            # disk) between its ALTER and its user_version would leave a store
            # that fails on every later open (duplicate column). Rolled back
            # whole instead, the next open runs the step again.
            try:
                self.db.executescript(f"BEGIN;\n{_MIGRATIONS[n]}\n"
                                      f"PRAGMA user_version = {n + 1};\nCOMMIT;")
            except BaseException:
                if self.db.in_transaction:
                    self.db.rollback()
                raise

    def _field_columns(self) -> None:
        """A column per stored field of the table (fields.py): a new field gets
        its column here, in old databases too (their points leave it empty)."""
        have = {r[1] for r in self.db.execute("PRAGMA table_info(points)")}
        with self.db:
            for f in fields.stored():
                if f.name not in have:
                    self.db.execute(f'ALTER TABLE points ADD COLUMN "{f.name}" {f.column}')

    # -- writing ------------------------------------------------------------

    def run_ids(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT id FROM runs")}

    def begin_run(self, run_id: str, command: list[str], points: int, run_dir: Path,
                  host: dict[str, Any], engine_version: str | None,
                  spec: dict[str, Any] | None = None) -> None:
        with self.db:
            self.db.execute(
                "INSERT INTO runs (id, started, status, command, points, run_dir, "
                "cnfperf_version, engine_version, host, spec) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, time.time(), "running", json.dumps(command), points, str(run_dir),
                 __version__, engine_version, json.dumps(host, default=str),
                 json.dumps(spec, default=str) if spec is not None else None))

    def resume_run(self, run_id: str, points: int) -> None:
        """A run continues: points that did not finish are forgotten (they run again)."""
        with self.db:
            stale = [r[0] for r in self.db.execute(
                "SELECT id FROM points WHERE run_id = ? AND status != 'done'", (run_id,))]
            for table in _POINT_CHILDREN:
                self.db.executemany(f"DELETE FROM {table} WHERE point_id = ?",
                                    [(i,) for i in stale])
            self.db.executemany("DELETE FROM points WHERE id = ?", [(i,) for i in stale])
            self.db.execute("UPDATE runs SET status = 'running', finished = NULL, error = NULL, "
                            "points = ? WHERE id = ?", (points, run_id))

    def done_keys(self, run_id: str) -> set[str]:
        return {r[0] for r in self.db.execute(
            "SELECT key FROM points WHERE run_id = ? AND status = 'done' AND key IS NOT NULL",
            (run_id,))}

    def latest_run_id(self) -> str | None:
        row = self.db.execute("SELECT id FROM runs ORDER BY started DESC LIMIT 1").fetchone()
        return row[0] if row else None

    def finish_run(self, run_id: str, status: str, error: str | None = None) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET finished = ?, status = ?, error = ? WHERE id = ?",
                            (time.time(), status, error, run_id))

    def add_point(self, run_id: str, idx: int, params: dict[str, Any], *, status: str,
                  started: float, result: PointResult | None = None, error: str | None = None,
                  placement: Any = None, warnings: list[str] = (), versions: Any = None,
                  image: Any = None, nf_image: Any = None, key: str | None = None,
                  group: str | None = None,
                  rep: int = 0, search: dict[str, Any] | None = None,
                  trials: list[dict[str, Any]] = (), goals: list[dict[str, Any]] = (),
                  shape: str | None = None,
                  tester_why: str | None = None, pollers: int | None = None,
                  point_cores: int | None = None,
                  switch_facts: dict[str, Any] | None = None,
                  nf_facts: dict[str, Any] | None = None,
                  vm_facts: dict[str, Any] | None = None,
                  cluster_facts: dict[str, Any] | None = None,
                  hosts: dict[str, Any] | None = None,
                  baseline_pps: float | None = None, expect: list[str] = ()) -> int:
        """Stores one finished (or failed) point in one transaction. `image` is
        the one the tester's ends ran in, `nf_image` its network functions' when
        not that one (minimal or tools; None: they ran in the ends' or there were none). `search` (SEARCH_KEYS),
        `trials` and `goals` (MLRsearch's) come from a search; `shape`, `tester_why`, `pollers`
        and `point_cores` are the plan's (TestPoint's; point_cores: how many cores);
        `switch_facts` what the report needs of the data plane (DataPlane.stored),
        `nf_facts` of its NFs' kind (NfKind.stored; None: no NFs), `vm_facts`
        how its virtual machines ran (None: none), `cluster_facts` the
        cluster its pods ran on and how each ran (None: none), `hosts` the other hosts it
        ran on and what each was (None: this one alone), `baseline_pps` the
        received rate of its generator baseline (None: it asked none), `expect`
        its expectations."""
        row: dict[str, Any] = {f.name: _sql(params.get(f.name)) for f in fields.stored()}
        row.update(key=key, grp=group, rep=rep)
        if search:
            row.update({("generator_limited" if k == "generator_limited" else f"search_{k}"):
                        _sql(search.get(k)) for k in SEARCH_KEYS})
        row.update(run_id=run_id, idx=idx, status=status, error=error, started=started,
                   finished=time.time(), scenario=json.dumps(params, default=str),
                   placement=json.dumps(placement, default=str),
                   warnings=json.dumps(list(warnings)), versions=json.dumps(versions),
                   image_name=getattr(image, "name", None),
                   image_size=getattr(image, "size_bytes", None),
                   nf_image_name=getattr(nf_image, "name", None),
                   nf_image_size=getattr(nf_image, "size_bytes", None), shape=shape,
                   tester_why=tester_why, pollers=pollers,
                   point_cores=point_cores,
                   switch_facts=json.dumps(switch_facts) if switch_facts else None,
                   nf_facts=json.dumps(nf_facts) if nf_facts else None,
                   vm_facts=json.dumps(vm_facts) if vm_facts else None,
                   cluster_facts=json.dumps(cluster_facts) if cluster_facts else None,
                   hosts=json.dumps(hosts) if hosts else None, baseline_pps=baseline_pps,
                   expect=json.dumps(list(expect)) if expect else None)
        if result:
            row["baseline_share"] = baseline_share(result.total.rx_pps, baseline_pps)
            worst = result.stalled()
            row.update(stall_ns=worst.stall_total_ns if worst else None,
                       stall_share=worst.stall_share if worst else None)
            row.update(_totals(result.total), cpu_bound=",".join(result.cpu_bound()),
                       queues=json.dumps(result.queues) if result.queues else None,
                       fault_ns=(result.fault or {}).get("down_ns"),
                       fault_facts=json.dumps(result.fault) if result.fault else None,
                       noise_facts=json.dumps(result.noise) if result.noise else None,
                       switch_cost=json.dumps(result.switch_cost) if result.switch_cost
                       else None)
        with self.db:
            point_id = self._insert("points", row)
            if result:
                for p in result.pairs:
                    self._insert("pairs", {"point_id": point_id, "pair": p.pair, **_totals(p),
                                           "profile": json.dumps(p.profile) if p.profile
                                           else None})
                for m in result.endpoints:
                    data = {k: v for k, v in asdict(m).items() if k not in ("latency", "summary")}
                    data.update(point_id=point_id, summary=json.dumps(m.summary),
                                **_latency(m.latency))
                    data["latency_samples"] = m.latency.samples if m.latency else None
                    self._insert("metrics", data)
                for port, c in sorted(result.counters.items()):
                    self._insert("counters", {"point_id": point_id, "port": port, **asdict(c)})
                for nf in result.nfs:
                    self._nf(point_id, nf)
                for usage in result.cpu:
                    self._insert("cpu_usage", {
                        "point_id": point_id, "cycles_per_packet": usage.cycles_per_packet,
                        **{k: v for k, v in asdict(usage).items() if k != "softirq_counts"},
                        "threads": json.dumps(usage.threads)})
            for trial in trials:
                self._insert("trials", {"point_id": point_id,
                                        **{k: _sql(v) for k, v in trial.items()}})
            for goal in goals:
                self._insert("goals", {"point_id": point_id,
                                       **{k: _sql(v) for k, v in goal.items()}})
        return point_id

    def add_baseline(self, run_id: str, key: str, params: dict[str, Any], *, started: float,
                     result: PointResult | None = None, error: str | None = None) -> None:
        """A generator baseline of the run (run/baseline.py): measured (`result`)
        or failed (`error`); one measured again replaces it."""
        row = {k: _sql(params.get(k)) for k in ("api", "size", "burst", "tester", "pairs",
                                                 "switch")}
        row.update(run_id=run_id, key=key, scenario=json.dumps(params, default=str),
                   status="done" if result else "failed", error=error, started=started,
                   finished=time.time())
        if result:
            row.update({k: getattr(result.total, k) for k in ("tx_pps", "rx_pps", "loss_ratio")})
        with self.db:
            self.db.execute("DELETE FROM baselines WHERE run_id = ? AND key = ?", (run_id, key))
            self._insert("baselines", row)

    def baselines(self, run_id: str) -> list[dict[str, Any]]:
        """The run's generator baselines, in the order they were measured."""
        return [_decoded(dict(r), ("scenario",)) for r in self.db.execute(
            "SELECT * FROM baselines WHERE run_id = ? ORDER BY started", (run_id,))]

    def keep_soak(self, run_id: str, idx: int, rows: list[dict[str, Any]]) -> None:
        """A soak's intervals, committed as they are measured (before their point)."""
        with self.db:
            for row in rows:
                self._insert("soak", {"run_id": run_id, "idx": idx, **row})

    def soak(self, run_id: str, idx: int) -> list[dict[str, Any]]:
        """The soak intervals a run's point has kept so far, in order."""
        return [{k: r[k] for k in r.keys() if k not in ("run_id", "idx")} for r in self.db.execute(
            "SELECT * FROM soak WHERE run_id = ? AND idx = ? ORDER BY n", (run_id, idx))]

    def _nf(self, point_id: int, nf: NFResult) -> None:
        self._insert("nf_results", {"point_id": point_id, "name": nf.name, "pair": nf.pair,
                                    "idx": nf.index, "kind": nf.kind, "cpu": nf.cpu,
                                    "ready_s": nf.ready_s, "first_tx_s": nf.first_tx_s,
                                    "polls": nf.polls, "empty_polls": nf.empty_polls,
                                    "queues": json.dumps(nf.queues) if nf.queues else None})
        for port in nf.ports:
            self._insert("nf_ports", {
                "point_id": point_id, "name": nf.name, "port": port.port,
                "rx_packets": port.rx_packets, "tx_packets": port.tx_packets,
                "tx_refused": port.tx_refused, "delayed": port.delayed,
                **{f"dropped_{k}": port.dropped.get(k, 0) for k in DROP_REASONS}})

    def _insert(self, table: str, row: dict[str, Any]) -> int:
        cols = ", ".join(f'"{c}"' for c in row)   # a field may be an SQL word (limit)
        marks = ", ".join("?" for _ in row)
        cur = self.db.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", list(row.values()))
        return cur.lastrowid

    # -- reading ------------------------------------------------------------

    def runs(self) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT r.id, r.started, r.finished, r.status, r.points, r.error, "
            "group_concat(DISTINCT p.switch) AS switches, group_concat(DISTINCT p.api) AS apis, "
            "group_concat(DISTINCT p.mode) AS modes, "
            "count(CASE WHEN p.status = 'done' THEN 1 END) AS stored "
            "FROM runs r LEFT JOIN points p ON p.run_id = r.id GROUP BY r.id ORDER BY r.started")
        return [dict(r) for r in rows]

    def study_runs(self) -> dict[str, str]:
        """The latest run of each study that stored a point: {study: run id}
        (the study a run's plan names: spec.study)."""
        rows = self.db.execute(
            "SELECT r.id, json_extract(r.spec, '$.study') FROM runs r "
            "WHERE json_valid(r.spec) AND json_extract(r.spec, '$.study') IS NOT NULL "
            "AND EXISTS (SELECT 1 FROM points p WHERE p.run_id = r.id AND p.status = 'done') "
            "ORDER BY r.started")
        return {study: run_id for run_id, study in rows}

    def spec(self, run_id: str) -> dict[str, Any] | None:
        """The plan a run stored, without its points: what tells two runs'
        scenarios apart (trend.same_scenario), read cheaply over a long
        series; None for a run stored without one."""
        row = self.db.execute("SELECT spec FROM runs WHERE id = ?", (run_id,)).fetchone()
        return _decoded({"spec": row[0]}, ("spec",))["spec"] if row else None

    def run(self, run_id: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            return None
        run = _decoded(dict(row), ("command", "host", "spec"))
        run["planned"] = run["points"]
        run["points"] = [self._point(dict(p)) for p in self.db.execute(
            "SELECT * FROM points WHERE run_id = ? ORDER BY idx", (run_id,))]
        run["baselines"] = self.baselines(run_id)
        return run

    def _point(self, point: dict[str, Any]) -> dict[str, Any]:
        pid = point["id"]
        point = _decoded(point, ("scenario", "placement", "warnings", "versions",
                                 "latency_histogram", "queues", "switch_facts",
                                 "nf_facts", "vm_facts", "cluster_facts", "hosts", "fault_facts",
                                 "noise_facts", "expect", "switch_cost"))
        point["per_pair"] = [_decoded(dict(r), ("latency_histogram", "profile"))
                             for r in self.db.execute(
            "SELECT * FROM pairs WHERE point_id = ? ORDER BY pair", (pid,))]
        point["endpoints"] = [_decoded(dict(r), ("summary", "latency_histogram"))
                              for r in self.db.execute(
            "SELECT * FROM metrics WHERE point_id = ? ORDER BY pair, role", (pid,))]
        point["counters"] = {r["port"]: {k: r[k] for k in r.keys() if k not in ("point_id", "port")}
                             for r in self.db.execute(
                                 "SELECT * FROM counters WHERE point_id = ? ORDER BY port", (pid,))}
        point["trials"] = [_decoded({k: r[k] for k in r.keys() if k != "point_id"},
                                    ("latency_histogram",)) for r in self.db.execute(
            "SELECT * FROM trials WHERE point_id = ? ORDER BY n", (pid,))]
        point["goals"] = [{k: r[k] for k in r.keys() if k != "point_id"} for r in self.db.execute(
            "SELECT * FROM goals WHERE point_id = ? ORDER BY goal", (pid,))]
        point["soak"] = self.soak(point["run_id"], point["idx"])
        # `nfs` is the scenario's count: the NFs themselves are `nf_results`,
        # each with its `ports`.
        ports: dict[str, list[dict[str, Any]]] = {}
        for r in self.db.execute("SELECT * FROM nf_ports WHERE point_id = ? ORDER BY name, port",
                                 (pid,)):
            ports.setdefault(r["name"], []).append(
                {k: r[k] for k in r.keys() if k not in ("point_id", "name")})
        point["nf_results"] = [
            {**_decoded({k: r[k] for k in r.keys() if k != "point_id"}, ("queues",)),
             "ports": ports.get(r["name"], [])}
            for r in self.db.execute(
                "SELECT * FROM nf_results WHERE point_id = ? ORDER BY pair, idx", (pid,))]
        point["cpu_usage"] = [_decoded({k: r[k] for k in r.keys() if k != "point_id"},
                                       ("threads",))
                              for r in self.db.execute(
                                  "SELECT * FROM cpu_usage WHERE point_id = ? ORDER BY rowid",
                                  (pid,))]
        return point


def _sql(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    if isinstance(value, bool):
        return int(value)
    return value


def _latency(lat) -> dict[str, Any]:
    out: dict[str, Any] = {f"lat_{k}_ns": (lat.ns.get(k) if lat else None) for k in LATENCY_KEYS}
    out["latency_kind"] = lat.kind if lat else None
    out["latency_histogram"] = json.dumps(lat.histogram) if lat else None
    out["latency_hdrh"] = hdrh.blob(lat.histogram, lat.ns.get("max")) if lat else None
    return out


def _totals(p: PairResult) -> dict[str, Any]:
    keys = ("offered_pps", "sent", "received", "lost", "loss_ratio", "tx_pps", "rx_pps", "rx_bps",
            "reordered", "duplicates", "steady_rx_pps", "outage_ns", "outage_lost",
            "conformance_sigma", "conformance_exceeded")
    return {**{k: getattr(p, k) for k in keys}, **_latency(p.latency)}


def _decoded(row: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    for k in keys:
        if isinstance(row.get(k), str):
            row[k] = json.loads(row[k])
    if "latency_hdrh" in row and "latency_histogram" in row:
        return _beside(row, "latency_hdrh", "latency_histogram")
    return row


def _beside(row: dict[str, Any], key: str, after: str) -> dict[str, Any]:
    """`row` with `key` right after `after` (a column added later comes last in
    SELECT *; the JSON shows a histogram's blob next to it)."""
    value = row.pop(key)
    out: dict[str, Any] = {}
    for k, v in row.items():
        out[k] = v
        if k == after:
            out[key] = value
    return out
