#!/usr/bin/env python3
"""Engine `dpdk` send -> recv over vhost-user vs dpdk-testpmd txonly -> rxonly.

Same link (net_virtio_user sender -> net_vhost receiver, one queue, PMD default
rings), same cores (sender on cpu 0, receiver on cpu 1), same frames (64 B on
the wire, burst 32). testpmd stamps nothing; the engine writes a sequence
number and a timestamp into every frame and checks both on receipt. Then each
sender alone into net_null (a PMD that frees what it is given): what sending
costs a core, without a link or a receiver to wait for.

The rows: testpmd's pair twice (the second, A/A, shows what the host's noise
alone moves a ratio by); the engine's pair; the engine's sender into testpmd's
rxonly, the reference for the engine's receiver (the same sender, so the
receiver alone differs: rxonly frees what it gets, the engine checks every
frame's sequence number and timestamp and takes its latency). --mixed adds
testpmd's txonly into the engine's receiver (testpmd's frames are not the
engine's: classified and counted, not checked); --baseline ENGINE adds
another engine binary's rows (one built from main, say).

Each run's rate is the median of the per-second samples each tool prints
(testpmd's Rx-pps/Tx-pps, the engine's interval records), the first partial
second left out; a row is the median of --repeat runs, the runs of every row
taken in turns (one of each, then again), so all rows share the same window
of whatever else the host does. Not a test: run it as root on a host as quiet
as you can get:

    python3 bench/engine_dpdk.py [--seconds 5] [--repeat 5] [--baseline ENGINE] [--mixed] [--nice -10]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
ENGINE = REPO / "engine" / "build" / "cnfperf-engine"
SENDER_CPU, RECEIVER_CPU = 0, 1
SIZE, BURST = 64, 32
HUGEPAGES = 160                      # two processes x -m 128, plus slack
EAL_MEM_MB = "128"
SRC_MAC, DST_MAC = "02:00:5e:09:00:01", "02:00:5e:09:00:02"
TESTPMD_PAIR = "testpmd txonly -> rxonly"
TESTPMD_AGAIN = "testpmd txonly -> rxonly, A/A"   # the same row again: what noise alone moves
INTO_RXONLY = "engine send -> testpmd rxonly"     # the engine's receiver's reference: same sender


# ------------------------------------------------------------------ host

@contextlib.contextmanager
def hugepages(count: int):
    """Adds `count` 2 MB pages to the pool and takes exactly those back after."""
    nr = Path("/proc/sys/vm/nr_hugepages")
    before = int(nr.read_text())
    nr.write_text(str(before + count))
    try:
        if int(nr.read_text()) < before + count:
            sys.exit(f"could not reserve {count} more 2 MB hugepages")
        yield
    finally:
        nr.write_text(str(max(0, int(nr.read_text()) - count)))


def busy_share(seconds: float = 1.0) -> float:
    """Share of all CPU time used while we sleep: what other work costs us."""
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    t0, i0 = snap()
    time.sleep(seconds)
    t1, i1 = snap()
    return 1 - (i1 - i0) / max(1, t1 - t0)


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                  if line.startswith("model name")), "?")
    dpdk = subprocess.run(["pkg-config", "--modversion", "libdpdk"], capture_output=True, text=True).stdout.strip()
    return f"{os.cpu_count()} cores ({model}), Linux {os.uname().release}, DPDK {dpdk or '?'}"


def median_steady(samples: list[float]) -> float:
    """Median of the samples after the first non-zero one (a partial second)."""
    live = [s for s in samples if s > 0]
    steady = live[1:] if len(live) > 2 else live
    return statistics.median(steady) if steady else 0.0


# ------------------------------------------------------------------ processes

# Scheduling priority of the measured processes (--nice): on a host shared with
# builds, both tools alike get their cores back before anyone else.
NICE = 0


@dataclass
class Proc:
    argv: list[str]
    netns: str | None = None
    out: Path = field(init=False)

    def __post_init__(self):
        fd, name = tempfile.mkstemp(prefix="cnfpbench-", suffix=".log")
        self.out = Path(name)
        cmd = (["ip", "netns", "exec", self.netns] if self.netns else []) + self.argv
        if NICE:
            cmd = ["nice", "-n", str(NICE), *cmd]
        # own process group: tools that fork (trafgen) stop as a whole
        self.proc = subprocess.Popen(cmd, stdout=fd, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        os.close(fd)

    def text(self) -> str:
        return self.out.read_text(errors="replace")

    def wait_for(self, pattern: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.argv[0]} did not print {pattern!r}:\n{self.text()[-2000:]}")
            time.sleep(0.05)

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 30) -> str:
        self.signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.proc.wait()
        text = self.text()
        self.out.unlink(missing_ok=True)
        return text

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.proc.wait()
        self.out.unlink(missing_ok=True)


@contextlib.contextmanager
def processes():
    started: list[Proc] = []

    def start(argv: list[str], netns: str | None = None) -> Proc:
        p = Proc([str(a) for a in argv], netns)
        started.append(p)
        return p
    try:
        yield start
    finally:
        for p in reversed(started):
            p.kill()


def eal(prefix: str, cpu: int, vdev: str) -> list[str]:
    return ["--lcores", f"0@{cpu}", "--file-prefix", prefix, "-m", EAL_MEM_MB, "--no-pci",
            "--in-memory", "--single-file-segments", "--no-telemetry", "--vdev", vdev]


# ------------------------------------------------------------------ tools

def records(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))
    return out


@dataclass
class Tool:
    """One end of a measured pair: how to start it, when it is ready, what it measured."""
    argv: list[str]
    ready: str                              # regex on its output
    rates: Callable[[str], list[float]]     # per-second samples from its output
    runs_out: bool = False                  # ends by itself (engine sender: --duration)
    netns: str | None = None
    prefix: str | None = None               # testpmd leaves /var/run/dpdk/PREFIX behind
    stamps: bool = False                    # engine sender: sequence and timestamp in every frame
    checks: bool = False                    # engine receiver: checks them


def testpmd(mode: str, cpu: int, vdev: str, netns: str | None = None) -> Tool:
    prefix = f"cnfpb{os.urandom(2).hex()}"
    e = eal(prefix, cpu, vdev)
    e[1] = f"0@{cpu},1@{cpu}"    # a forwarding lcore besides the main one, which only prints
    key = "Tx-pps" if mode == "txonly" else "Rx-pps"
    return Tool(["dpdk-testpmd", *e, "--", f"--forward-mode={mode}", f"--burst={BURST}",
                 f"--txpkts={SIZE - 4}", "--stats-period=1", "--total-num-mbufs=8192", "--no-lsc-interrupt"],
                r"Port statistics", lambda t: [float(v) for v in re.findall(key + r":\s+(\d+)", t)],
                netns=netns, prefix=prefix)


def engine_recv(engine: Path, api: list[str], netns: str | None = None, every_frame: bool = False) -> Tool:
    """every_frame: count frames that are not the engine's too (testpmd's have no magic)."""
    def rates(text: str) -> list[float]:
        ivals = [r for r in records(text) if r["type"] == "interval"]
        if every_frame:
            return [(r["rx_packets"] + r["bad"] + r["other"]) / r["interval_s"] for r in ivals]
        return [r["rx_pps"] for r in ivals]
    return Tool([engine, "recv", *api, "--src-ip", "10.99.9.2", "--sport", "9000", "--cpu", str(RECEIVER_CPU),
                 "--duration", "0", "--size", str(SIZE), "--burst", str(BURST), "--interval", "1"],
                r'"type": ?"ready"', rates, netns=netns, checks=not every_frame)


def engine_send(engine: Path, api: list[str], seconds: float, netns: str | None = None) -> Tool:
    return Tool([engine, "send", *api, "--src-ip", "10.99.9.1", "--dst-ip", "10.99.9.2", "--dport", "9000",
                 "--src-mac", SRC_MAC, "--dst-mac", DST_MAC, "--cpu", str(SENDER_CPU), "--rate", "0",
                 "--duration", str(seconds), "--size", str(SIZE), "--burst", str(BURST), "--interval", "1"],
                r'"type": ?"ready"',
                lambda t: [r["tx_pps"] for r in records(t) if r["type"] == "interval"],
                runs_out=True, netns=netns, stamps=True)


def with_eal(tool: Tool, args: list[str]) -> Tool:
    tool.argv += ["--", *args]
    return tool


@dataclass
class Result:
    name: str
    tx_pps: float
    rx_pps: float
    note: str = ""


def run_pair(name: str, rx: Tool, tx: Tool, seconds: float, tx_first: bool = False) -> Result:
    """Receiver first (the vhost side owns the socket), then the sender; rates from both."""
    with processes() as start:
        first, second = (tx, rx) if tx_first else (rx, tx)
        p1 = start(first.argv, first.netns)
        p1.wait_for(first.ready)
        p2 = start(second.argv, second.netns)
        if not second.runs_out:
            p2.wait_for(second.ready)
        ptx, prx = (p1, p2) if tx_first else (p2, p1)
        if tx.runs_out:
            ptx.proc.wait(timeout=seconds + 60)
        else:
            time.sleep(seconds)
        tx_text = ptx.stop()
        time.sleep(0.5)
        rx_text = prx.stop()
    for t in (rx, tx):
        if t.prefix:
            shutil.rmtree(f"/var/run/dpdk/{t.prefix}", ignore_errors=True)
    note = ""
    rx_sum = next((r for r in records(rx_text) if r.get("type") == "summary"), None)
    if rx_sum and tx.stamps and rx.checks:
        bad = rx_sum["lost"] or rx_sum["bad"]
        note = f"lost {rx_sum['lost']}, bad {rx_sum['bad']}" if bad else "every frame checked"
    return Result(name, median_steady(tx.rates(tx_text)), median_steady(rx.rates(rx_text)), note)


def print_table(title: str, rows: list[Result], baseline: str) -> None:
    base = next(r.rx_pps for r in rows if r.name == baseline)
    width = max(len(r.name) for r in rows) + 2
    print(f"\n{title}")
    print(f"{'':{width}} {'tx Mpps':>8} {'rx Mpps':>8} {'rx / ' + baseline.split()[0]:>14}  note")
    for r in rows:
        ratio = f"{r.rx_pps / base:.2f}" if base else "-"
        print(f"{r.name:{width}} {r.tx_pps / 1e6:8.2f} {r.rx_pps / 1e6:8.2f} {ratio:>14}  {r.note}")


def keep_best(rows: dict[str, Result], r: Result) -> None:
    if r.name not in rows or r.rx_pps > rows[r.name].rx_pps:
        rows[r.name] = r


def run_alone(name: str, tx: Tool, seconds: float) -> Result:
    """A sender on its own (net_null): its tx rate, nothing received."""
    with processes() as start:
        p = start(tx.argv, tx.netns)
        if tx.runs_out:
            p.proc.wait(timeout=seconds + 60)
        else:
            p.wait_for(tx.ready)
            time.sleep(seconds)
        text = p.stop()
    if tx.prefix:
        shutil.rmtree(f"/var/run/dpdk/{tx.prefix}", ignore_errors=True)
    return Result(name, median_steady(tx.rates(text)), 0.0)


@dataclass
class Runs:
    """Every run of one row, and their medians."""
    name: str
    runs: list[Result] = field(default_factory=list)

    def tx(self) -> float:
        return statistics.median(r.tx_pps for r in self.runs)

    def rx(self) -> float:
        return statistics.median(r.rx_pps for r in self.runs)

    def note(self) -> str:
        notes = sorted({r.note for r in self.runs if r.note})
        return "; ".join(notes)


def print_runs(title: str, rows: list[Runs], base: str, key: str) -> None:
    """Medians, each run's rate, and the ratio of the medians to the base row's."""
    get = (lambda r: r.rx()) if key == "rx" else (lambda r: r.tx())
    one = (lambda r: r.rx_pps) if key == "rx" else (lambda r: r.tx_pps)
    ref = next((get(r) for r in rows if r.name == base), 0.0)
    width = max(len(r.name) for r in rows) + 2
    print(f"\n{title}")
    print(f"{'':{width}} {'tx Mpps':>8} {'rx Mpps':>8} {key + ' / ' + base.split()[0]:>13}  runs ({key} Mpps)  note")
    for r in rows:
        ratio = f"{get(r) / ref:.2f}" if ref else "-"
        runs = " ".join(f"{one(x) / 1e6:.2f}" for x in r.runs)
        print(f"{r.name:{width}} {r.tx() / 1e6:8.2f} {r.rx() / 1e6:8.2f} {ratio:>13}  {runs}  {r.note()}")


def check_engine(engine: Path, api: str) -> list[str]:
    apis = json.loads(subprocess.run([engine, "--version"], capture_output=True, text=True).stdout)["apis"]
    if api not in apis:
        sys.exit(f"{engine} has no {api} api ({apis})")
    return apis


# ------------------------------------------------------------------ main

def main() -> None:
    global NICE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5, help="seconds per run (default 5)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per row; a row is their median (default 5)")
    ap.add_argument("--engine", type=Path, default=ENGINE)
    ap.add_argument("--baseline", type=Path, help="another engine binary to compare with (e.g. built from main)")
    ap.add_argument("--mixed", action="store_true", help="also testpmd txonly -> engine recv")
    ap.add_argument("--nice", type=int, default=0, help="run every measured process at this nice value")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (hugepages, vhost-user sockets)")
    if not shutil.which("dpdk-testpmd"):
        sys.exit("dpdk-testpmd not found (Debian: apt install dpdk)")
    if args.repeat < 1 or args.seconds < 2:
        sys.exit("--repeat must be at least 1 and --seconds at least 2")
    check_engine(args.engine, "dpdk")
    if args.baseline:
        check_engine(args.baseline, "dpdk")
    NICE = args.nice

    print(f"host: {machine()}; sender on cpu {SENDER_CPU}, receiver on cpu {RECEIVER_CPU}; "
          f"{SIZE} B frames, burst {BURST}, {args.seconds:g} s per run, median of {args.repeat}"
          + (f", nice {NICE}" if NICE else ""))
    busy = busy_share()
    if busy > 0.1:
        print(f"warning: {busy:.0%} of the CPU is busy before we start: numbers will be low")

    engines = [("engine", args.engine)] + ([("baseline", args.baseline)] if args.baseline else [])
    s = args.seconds
    dpdk = ["--api", "dpdk"]
    pairs: dict[str, Runs] = {}
    alone: dict[str, Runs] = {}

    def add(rows: dict[str, Runs], r: Result) -> None:
        rows.setdefault(r.name, Runs(r.name)).runs.append(r)

    with hugepages(HUGEPAGES), tempfile.TemporaryDirectory(prefix="cnfpbench-") as tmp:
        sock = f"{tmp}/vhost.sock"
        vhost = f"net_vhost0,iface={sock},queues=1"
        virtio = f"net_virtio_user0,path={sock},queues=1,mac={SRC_MAC}"
        null = "net_null0"

        def engine_eal(cpu: int, vdev: str) -> list[str]:
            return eal(f"cnfpb{os.urandom(2).hex()}", cpu, vdev)

        def send(binary: Path, vdev: str) -> Tool:
            return with_eal(engine_send(binary, dpdk, s), engine_eal(SENDER_CPU, vdev))

        def recv(binary: Path, every_frame: bool = False) -> Tool:
            return with_eal(engine_recv(binary, dpdk, every_frame=every_frame), engine_eal(RECEIVER_CPU, vhost))

        for _ in range(args.repeat):
            for name in (TESTPMD_PAIR, TESTPMD_AGAIN):
                add(pairs, run_pair(name, testpmd("rxonly", RECEIVER_CPU, vhost),
                                    testpmd("txonly", SENDER_CPU, virtio), s))
            for label, binary in engines:
                add(pairs, run_pair(f"{label} send -> recv", recv(binary), send(binary, virtio), s))
            add(pairs, run_pair(INTO_RXONLY, testpmd("rxonly", RECEIVER_CPU, vhost), send(args.engine, virtio), s))
            if args.mixed:
                add(pairs, run_pair("testpmd txonly -> engine recv", recv(args.engine, every_frame=True),
                                    testpmd("txonly", SENDER_CPU, virtio), s))
            add(alone, run_alone("testpmd txonly alone", testpmd("txonly", SENDER_CPU, null), s))
            for label, binary in engines:
                add(alone, run_alone(f"{label} send alone", send(binary, null), s))
    print_runs("vhost-user: virtio_user (sender, cpu 0) -> net_vhost (receiver, cpu 1)",
               list(pairs.values()), TESTPMD_PAIR, "rx")
    print_runs(f"net_null: the sender alone (cpu {SENDER_CPU})", list(alone.values()), "testpmd txonly alone", "tx")
    print()
    ratios = [(pairs, TESTPMD_AGAIN, TESTPMD_PAIR, "rx", "A/A: the host's noise"),
              (pairs, "engine send -> recv", TESTPMD_PAIR, "rx", "the pair"),
              (pairs, "engine send -> recv", INTO_RXONLY, "rx", "the receiver: same sender, every frame checked"),
              (alone, "engine send alone", "testpmd txonly alone", "tx", "the sender alone")]
    if args.baseline:
        ratios += [(pairs, "engine send -> recv", "baseline send -> recv", "rx", "against the baseline"),
                   (alone, "engine send alone", "baseline send alone", "tx", "against the baseline")]
    for rows, mine, ref, key, what in ratios:
        rate = (lambda r: r.rx()) if key == "rx" else (lambda r: r.tx())
        if rate(rows[ref]):
            print(f"ratio {mine} / {ref}: {rate(rows[mine]) / rate(rows[ref]):.2f} "
                  f"({what}; {key} Mpps, medians of {args.repeat})")


if __name__ == "__main__":
    main()
