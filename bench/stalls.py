#!/usr/bin/env python3
"""Stalls of a single tester's two busy pollers on this host: the engine alone,
and the same point under cnfperf (this checkout's orchestrator, and with
--before DIR another checkout's, say main before a change).

The point: `cnfperf run --switch vhost --api dpdk --tester single --nfs 1`, a
tester (cpu 0) sending as fast as it can through an l2 engine NF (cpu 1) and
taking its frames back: two busy pollers, one per core (--switch ovs: the
tester through OVS-DPDK, whose PMD thread is the second). Alone, the bench starts
those two engines itself with the argv cnfperf gives them (vhost-user sockets
and hugepages of its own) and blocks in wait() while they run: nothing else of
ours wakes up. Under cnfperf the orchestrator runs the point as a user does.
Every run uses this checkout's engine (CNFPERF_ENGINE), which counts stalls
(engine/README.md, `stalls`: gaps over 200 µs between two polls, in the
measured window); a row is the median over --repeat runs per poller of the
stalls per second of window, the ms lost per second and the longest stall.
Runs take turns (one of each row, then again), so all rows share the same
window of whatever else the host does; each row also shows the host's load
average when its runs began and the steal time per second of the hypervisor.
With --perf each run is also traced (perf record of every core's context
switches and forks) and the bench says who ran on the pollers' cores while a
poller was switched out in the window, in ms per second: the tasks that
descend from the run's own root (the bench, or the cnfperf process: its
threads, the switch and the containers it started, the engines' other
threads) apart from the rest of the host. Interrupts and the hypervisor's
steal do not switch tasks, so they show in the engine's stalls only.
Not a test: run it as root, on a host as quiet as you can get:

    python3 bench/stalls.py [--seconds 5] [--repeat 3] [--before DIR] [--switch ovs] [--perf]
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.engine_dpdk import ENGINE, hugepages, machine, processes, records  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
# the point, by data plane: vhost (an engine NF between the tester's two
# ports: the engines alone can run it too) or ovs (the tester through OVS-DPDK,
# whose PMD thread is the second poller: under cnfperf only)
POINTS = {"vhost": ("--switch", "vhost", "--api", "dpdk", "--tester", "single", "--nfs", "1"),
          "ovs": ("--switch", "ovs", "--api", "dpdk", "--tester", "single")}
TESTER_CPU, NF_CPU = 0, 1
WARMUP = 1
LOCK_TRIES, LOCK_WAIT_S = 30, 10
MAC = {"t1": "02:00:5e:0a:00:01", "t2": "02:00:5e:0a:00:02", "nf1": "02:00:5e:0a:00:10"}


def steal_s() -> float:
    """Steal time of every core so far, seconds (/proc/stat's 8th column)."""
    with open("/proc/stat") as f:
        return int(f.readline().split()[8]) / os.sysconf("SC_CLK_TCK")


def load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


# ------------------------------------------------------------------ who ran (--perf)

SWITCH = re.compile(r"\[(\d+)\]\s+([\d.]+):\s+prev_comm=(.*?) prev_pid=(\d+) prev_prio=-?\d+ "
                    r"prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)")
FORK = re.compile(r"comm=(.*?) pid=(\d+) child_comm=(.*?) child_pid=(\d+)")


@contextlib.contextmanager
def traced(path: Path | None):
    """perf record of every core's context switches and forks, on CLOCK_MONOTONIC."""
    if path is None:
        yield
        return
    proc = subprocess.Popen(["perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-a", "-o", str(path),
                             "-e", "sched:sched_switch", "-e", "sched:sched_process_fork"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)   # recording before anything starts
    try:
        yield
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait()


def window(recs: list[dict]) -> tuple[float, float]:
    """The generator's measured window on CLOCK_MONOTONIC (its `start` record is
    wall clock): from the end of its warm-up, duration_s long."""
    start = next(r for r in recs if r["type"] == "start")
    summary = next(r for r in reversed(recs) if r["type"] == "summary")
    offset = time.clock_gettime(time.CLOCK_REALTIME) - time.clock_gettime(time.CLOCK_MONOTONIC)
    opens = start["wall_ns"] / 1e9 - offset + start["warmup_s"]
    return opens, opens + summary["duration_s"]


def who_ran(path: Path, root: int, span: tuple[float, float]) -> collections.Counter:
    """Seconds each task ran on a poller's core while that poller (an engine's
    main thread, an OVS PMD) was switched out in `span`, by (ours, comm): ours
    = a descendant of `root`."""
    text = subprocess.run(["perf", "script", "-i", str(path), "-F", "cpu,time,trace"],
                          capture_output=True, text=True).stdout
    children: dict[int, set[int]] = collections.defaultdict(set)
    by_cpu: dict[int, list] = collections.defaultdict(list)
    for line in text.splitlines():
        if m := SWITCH.search(line):
            by_cpu[int(m[1])].append((float(m[2]), m[3], int(m[4]), m[5], m[6], int(m[7])))
        elif f := FORK.search(line):
            children[int(f[2])].add(int(f[4]))
    ours, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in ours:
            ours.add(pid)
            todo += children.get(pid, ())
    polls = lambda comm: comm == "cnfperf-engine" or comm.startswith("pmd")  # noqa: E731
    ran: collections.Counter = collections.Counter()
    for events in by_cpu.values():
        out, running, since = None, None, 0.0
        for t, prev, prev_pid, state, nxt, nxt_pid in events:
            if not span[0] <= t <= span[1]:
                continue
            if out is not None and running is not None:
                ran[running] += t - since
            if out is None and polls(prev) and state.startswith("R"):   # preempted, not asleep
                out = prev_pid
            running, since = ((nxt_pid in ours, nxt) if nxt_pid else None), t
            if nxt_pid == out:
                out, running = None, None
    return ran


def stalls(summary: dict) -> dict[str, float]:
    """Per second of the engine's window: stalls, ms lost; the longest, ms."""
    s, seconds = summary["stalls"], summary["duration_s"] or 1e-9
    return {"per_s": s["count"] / seconds, "ms_per_s": s["total_ns"] / 1e6 / seconds,
            "max_ms": s["max_ns"] / 1e6}


def eal(prefix: str, huge: Path, vdevs: list[str]) -> list[str]:
    """The EAL arguments cnfperf gives an engine on vhost (Testbed.eal_args)."""
    out = ["--", "--file-prefix", prefix, "--huge-dir", str(huge), "--in-memory",
           "--single-file-segments", "--socket-mem", "128", "--socket-limit", "128", "--no-pci",
           "--no-telemetry", "--iova-mode", "va"]
    for v in vdevs:
        out += ["--vdev", v]
    return out


def alone(seconds: float) -> tuple[dict[str, dict[str, float]], list[dict], int]:
    """The point's two engines, started here, nothing of cnfperf around them:
    their stalls, the tester's records, the root of what ran (the bench)."""
    with tempfile.TemporaryDirectory(prefix="cnfpstall") as tmp, hugepages(160):
        huge = Path(tmp) / "huge"
        huge.mkdir()
        subprocess.run(["mount", "-t", "hugetlbfs", "none", str(huge)], check=True)
        try:
            sock = [f"{tmp}/l{i}.sock" for i in (0, 1)]
            nf = [str(ENGINE), "nf", "--nf", "l2", "--api", "dpdk", "--port", "0", "--port2", "1",
                  "--dst-mac", MAC["t1"], "--dst-mac2", MAC["t2"], "--size", "64", "--burst", "32",
                  "--cpu", str(NF_CPU), "--interval", "1", "--duration", "0",
                  *eal("cnfpstalln", huge, [f"net_vhost{i},iface={s},queues=1"
                                            for i, s in enumerate(sock)])]
            tester = [str(ENGINE), "tester", "--api", "dpdk", "--port", "0", "--port2", "1",
                      "--src-mac", MAC["t1"], "--src-ip", "10.77.0.1", "--sport", "10000",
                      "--dst-mac", MAC["nf1"], "--dst-ip", "10.77.0.2", "--dport", "9000",
                      "--size", "64", "--burst", "32", "--cpu", str(TESTER_CPU), "--interval", "1",
                      "--rate", "0", "--duration", f"{seconds:g}", "--warmup", str(WARMUP),
                      "--settle", "3",
                      *eal("cnfpstallt", huge, [
                          f"net_virtio_user{i},path={s},mac={MAC[f't{i + 1}']},queues=1"
                          for i, s in enumerate(sock)])]
            with processes() as start:
                n = start(nf)
                n.wait_for(r'"type": "ready"')
                t = start(tester)
                t.proc.wait()   # blocks: no look at anything while they run
                out = {"tester": records(t.stop()), "nf": records(n.stop())}
        finally:
            subprocess.run(["umount", str(huge)], check=False)
    return ({role: stalls(next(r for r in recs if r["type"] == "summary"))
             for role, recs in out.items()}, out["tester"], os.getpid())


def under_cnfperf(checkout: Path, point: tuple[str, ...], seconds: float) -> tuple[dict[str, dict[str, float]],
                                                          list[dict], int]:
    """The point as `cnfperf run` runs it from `checkout`, read back from the
    engines' own records in its run directory (an older cnfperf stores no
    stalls); the tester's records, and the root of what ran (cnfperf)."""
    with tempfile.TemporaryDirectory(prefix="cnfpstall") as results:
        env = dict(os.environ, CNFPERF_RESULTS=results, CNFPERF_ENGINE=str(ENGINE),
                   PYTHONPATH=str(checkout))
        python = checkout / ".venv" / "bin" / "python"
        python = python if python.exists() else Path(sys.executable)
        for _ in range(LOCK_TRIES):   # another run holds the host lock (exit 3): wait for it
            proc = subprocess.Popen([str(python), "-m", "cnfperf", "run", *point, "--duration",
                                     f"{seconds:g}", "--json"], cwd=checkout, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            out, err = proc.communicate()
            if proc.returncode != 3:
                break
            time.sleep(LOCK_WAIT_S)
        if proc.returncode != 0:
            last = (err.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            sys.exit(f"cnfperf run ({checkout}): {last}")
        run_id = json.loads(out)["outcome"]["run_id"]
        found, tester = {}, []
        for path in (Path(results) / "runs" / run_id / "point0").glob("*.jsonl"):
            recs = records(path.read_text())
            summary = next(r for r in reversed(recs) if r["type"] == "summary")
            found[summary["role"]] = stalls(summary)
            tester = recs if summary["role"] == "tester" else tester
    return found, tester, proc.pid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before", type=Path, help="another checkout's cnfperf, for a row of its own")
    ap.add_argument("--switch", choices=POINTS, default="vhost",
                    help="the point's data plane (ovs: no run of the engines alone)")
    ap.add_argument("--perf", action="store_true",
                    help="who ran on the pollers' cores while they were switched out (perf)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: hugepages, vhost-user, the host lock")
    if not ENGINE.exists():
        sys.exit(f"no engine at {ENGINE}: build it (meson setup engine/build engine && ninja -C engine/build)")
    point = POINTS[args.switch]
    rows = {"engine alone": lambda: alone(args.seconds)} if args.switch == "vhost" else {}
    rows["cnfperf (this checkout)"] = lambda: under_cnfperf(REPO, point, args.seconds)
    if args.before:
        rows["cnfperf (--before)"] = lambda: under_cnfperf(args.before.resolve(), point,
                                                           args.seconds)
    seen: dict[str, list[dict]] = {name: [] for name in rows}
    loads: dict[str, list[float]] = {name: [] for name in rows}
    steals: dict[str, list[float]] = {name: [] for name in rows}
    ran: dict[str, collections.Counter] = {name: collections.Counter() for name in rows}
    with tempfile.TemporaryDirectory(prefix="cnfpstall") as tmp:
        trace = Path(tmp) / "perf.data" if args.perf else None
        for _ in range(args.repeat):
            for name, measure in rows.items():
                loads[name].append(load())
                s0, t0 = steal_s(), time.monotonic()
                with traced(trace):
                    found, tester, root = measure()
                seen[name].append(found)
                steals[name].append(1e3 * (steal_s() - s0) / (time.monotonic() - t0))
                if trace:
                    span = window(tester)
                    for key, s in who_ran(trace, root, span).items():
                        ran[name][key] += s / (span[1] - span[0]) / args.repeat
    print(f"host: {machine()}")
    second = f"l2 NF on cpu {NF_CPU}" if args.switch == "vhost" else "OVS's PMD thread"
    print(f"pollers: 2 busy (single tester on cpu {TESTER_CPU}, {second}) / {os.cpu_count()} "
          f"cores; {' '.join(point)}; 64 B, max rate, {args.seconds:g} s window; "
          f"median of {args.repeat}")
    print(f"{'run':<26} {'poller':<7} {'stalls/s':>9} {'ms/s':>7} {'longest ms':>11} "
          f"{'load':>5} {'steal ms/s':>11}")
    for name, runs in seen.items():
        for role in ("tester", "nf"):
            got = [r[role] for r in runs if role in r]
            if not got:   # OVS's PMD counts no stalls of its own
                continue
            med = {k: statistics.median(g[k] for g in got) for k in ("per_s", "ms_per_s", "max_ms")}
            print(f"{name:<26} {role:<7} {med['per_s']:>9.1f} {med['ms_per_s']:>7.1f} "
                  f"{med['max_ms']:>11.2f} {statistics.median(loads[name]):>5.2f} "
                  f"{statistics.median(steals[name]):>11.1f}")
    if not args.perf:
        return
    print("who ran on the pollers' cores while a poller was switched out (ms per s of window, "
          "both cores, mean of the runs): ours (the run's own tree) | the rest of the host")
    for name, found in ran.items():
        def said(mine: bool) -> str:
            part = {comm: s for (o, comm), s in found.items() if o == mine}
            top = ", ".join(f"{c} {1e3 * s:.2f}" for c, s in
                            sorted(part.items(), key=lambda kv: -kv[1])[:5])
            return f"{1e3 * sum(part.values()):.2f} ({top})"
        print(f"  {name}: {said(True)} | {said(False)}")


if __name__ == "__main__":
    main()
