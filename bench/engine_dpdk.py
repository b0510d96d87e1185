#!/usr/bin/env python3
"""Engine `dpdk` send -> recv over vhost-user vs dpdk-testpmd txonly -> rxonly.

Same link (net_vhost server <- net_virtio_user client, one queue, PMD default
rings), same cores (sender on cpu 0, receiver on cpu 1), same frames (64 B on
the wire, burst 32). testpmd stamps nothing; the engine writes a sequence
number and a timestamp into every frame and checks both on receipt.

Rates are the median of the per-second samples each tool prints (testpmd's
Rx-pps/Tx-pps, the engine's interval records), the first partial second left
out. Not a test: run it on a quiet host, as root:

    python3 bench/engine_dpdk.py [--seconds 5] [--repeat 3]
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

REPO = Path(__file__).resolve().parents[1]
ENGINE = REPO / "engine" / "build" / "cnfperf-engine"
SENDER_CPU, RECEIVER_CPU = 0, 1
SIZE, BURST = 64, 32
HUGEPAGES = 160                      # two processes x -m 128, plus slack
EAL_MEM_MB = "128"


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

@dataclass
class Proc:
    argv: list[str]
    netns: str | None = None
    out: Path = field(init=False)

    def __post_init__(self):
        fd, name = tempfile.mkstemp(prefix="cnfpbench-", suffix=".log")
        self.out = Path(name)
        cmd = (["ip", "netns", "exec", self.netns] if self.netns else []) + self.argv
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


# ------------------------------------------------------------------ the two tools

@dataclass
class Result:
    name: str
    tx_pps: float
    rx_pps: float
    note: str = ""


def testpmd_pair(name: str, rx_vdev: str, tx_vdev: str, seconds: float,
                 rx_ns: str | None = None, tx_ns: str | None = None, tx_first: bool = False) -> Result:
    def argv(mode: str, cpu: int, prefix: str, vdev: str) -> list[str]:
        # testpmd wants a forwarding lcore besides its main one: both on `cpu`,
        # the main one only wakes up to print statistics.
        e = eal(prefix, cpu, vdev)
        e[1] = f"0@{cpu},1@{cpu}"
        return ["dpdk-testpmd", *e, "--", f"--forward-mode={mode}", f"--burst={BURST}",
                f"--txpkts={SIZE - 4}", "--stats-period=1", "--total-num-mbufs=8192", "--no-lsc-interrupt"]
    tag = os.urandom(2).hex()
    with processes() as start:
        rx_argv = argv("rxonly", RECEIVER_CPU, f"cnfpb{tag}r", rx_vdev)
        tx_argv = argv("txonly", SENDER_CPU, f"cnfpb{tag}t", tx_vdev)
        first, second = (tx_argv, tx_ns), (rx_argv, rx_ns)
        if not tx_first:
            first, second = second, first
        p1 = start(*first)
        p1.wait_for(r"Port statistics")
        p2 = start(*second)
        p2.wait_for(r"Port statistics")
        time.sleep(seconds)
        tx, rx = (p1, p2) if tx_first else (p2, p1)
        tx_text = tx.stop()
        time.sleep(0.5)
        rx_text = rx.stop()
    for side in "rt":    # testpmd leaves its (empty) runtime directory behind
        shutil.rmtree(f"/var/run/dpdk/cnfpb{tag}{side}", ignore_errors=True)
    return Result(name, median_steady([float(v) for v in re.findall(r"Tx-pps:\s+(\d+)", tx_text)]),
                  median_steady([float(v) for v in re.findall(r"Rx-pps:\s+(\d+)", rx_text)]))


def engine_pair(name: str, engine: Path, rx_api: list[str], tx_api: list[str], seconds: float,
                rx_ns: str | None = None, tx_ns: str | None = None, tx_first: bool = False,
                rx_eal: list[str] | None = None, tx_eal: list[str] | None = None) -> Result:
    common = ["--size", str(SIZE), "--burst", str(BURST), "--interval", "1"]
    rx_argv = [engine, "recv", *rx_api, "--src-ip", "10.99.9.2", "--sport", "9000", "--cpu", str(RECEIVER_CPU),
               "--duration", "0", *common] + (["--", *rx_eal] if rx_eal else [])
    tx_argv = [engine, "send", *tx_api, "--src-ip", "10.99.9.1", "--dst-ip", "10.99.9.2", "--dport", "9000",
               "--dst-mac", "02:00:5e:09:00:02", "--src-mac", "02:00:5e:09:00:01", "--cpu", str(SENDER_CPU),
               "--rate", "0", "--duration", str(seconds), *common] + (["--", *tx_eal] if tx_eal else [])
    with processes() as start:
        if tx_first:
            tx = start(tx_argv, tx_ns)
            time.sleep(1)
            rx = start(rx_argv, rx_ns)
            rx.wait_for(r'"type": ?"ready"')
        else:
            rx = start(rx_argv, rx_ns)
            rx.wait_for(r'"type": ?"ready"')
            tx = start(tx_argv, tx_ns)
        tx.proc.wait(timeout=seconds + 60)
        tx_recs = records(tx.stop())
        time.sleep(0.5)
        rx_recs = records(rx.stop())
    rx_sum = next((r for r in rx_recs if r["type"] == "summary"), None)
    if rx_sum is None:
        raise RuntimeError(f"{name}: receiver printed no summary")
    lost = rx_sum["lost"]
    return Result(name,
                  median_steady([r["tx_pps"] for r in tx_recs if r["type"] == "interval"]),
                  median_steady([r["rx_pps"] for r in rx_recs if r["type"] == "interval"]),
                  f"lost {lost}, bad {rx_sum['bad']}" if lost or rx_sum["bad"] else "every frame checked")


def records(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))
    return out


def print_table(title: str, rows: list[Result], baseline: str) -> None:
    base = next(r.rx_pps for r in rows if r.name == baseline)
    print(f"\n{title}")
    print(f"{'':32} {'tx Mpps':>8} {'rx Mpps':>8} {'rx vs ' + baseline:>22}  note")
    for r in rows:
        ratio = f"{r.rx_pps / base:.2f}" if base else "-"
        print(f"{r.name:32} {r.tx_pps / 1e6:8.2f} {r.rx_pps / 1e6:8.2f} {ratio:>22}  {r.note}")


# ------------------------------------------------------------------ main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool; the best one counts")
    ap.add_argument("--engine", type=Path, default=ENGINE)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (hugepages, vhost-user sockets)")
    if not shutil.which("dpdk-testpmd"):
        sys.exit("dpdk-testpmd not found (Debian: apt install dpdk)")
    apis = json.loads(subprocess.run([args.engine, "--version"], capture_output=True, text=True).stdout)["apis"]
    if "dpdk" not in apis:
        sys.exit(f"{args.engine} has no dpdk api ({apis})")

    print(f"host: {machine()}; sender on cpu {SENDER_CPU}, receiver on cpu {RECEIVER_CPU}; "
          f"{SIZE} B frames, burst {BURST}, {args.seconds:g} s per run")
    busy = busy_share()
    if busy > 0.1:
        print(f"warning: {busy:.0%} of the CPU is busy before we start: numbers will be low")

    with hugepages(HUGEPAGES), tempfile.TemporaryDirectory(prefix="cnfpbench-") as tmp:
        sock = f"{tmp}/vhost.sock"
        vhost = f"net_vhost0,iface={sock},queues=1"
        virtio = f"net_virtio_user0,path={sock},queues=1,mac=02:00:5e:09:00:01"
        best: dict[str, Result] = {}
        for _ in range(args.repeat):
            for r in (testpmd_pair("testpmd txonly -> rxonly", vhost, virtio, args.seconds),
                      engine_pair("engine dpdk send -> recv", args.engine, ["--api", "dpdk"], ["--api", "dpdk"],
                                  args.seconds,
                                  rx_eal=eal(f"cnfpb{os.urandom(2).hex()}r", RECEIVER_CPU, vhost),
                                  tx_eal=eal(f"cnfpb{os.urandom(2).hex()}t", SENDER_CPU, virtio))):
                if r.name not in best or r.rx_pps > best[r.name].rx_pps:
                    best[r.name] = r
    print_table("vhost-user: virtio_user (sender, cpu 0) -> net_vhost (receiver, cpu 1)",
                list(best.values()), "testpmd txonly -> rxonly")


if __name__ == "__main__":
    main()
