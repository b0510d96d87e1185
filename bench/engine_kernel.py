#!/usr/bin/env python3
"""Benchmark (not a test): the engine's kernel apis against their usual peers.

On one veth pair between two network namespaces, each sender pinned to CPU 0
and each receiver to CPU 1 (taskset), so every tool gets the same two cores:

  send rate   engine `udp --mmsg`  vs  iperf3 -u -l 18 -b 0 (18-byte payload = a 64-byte frame)
              engine `raw --mmsg`  vs  trafgen (same 64-byte frame, PACKET_TX_RING, 1 process)
  round trip  engine client/server vs  sockperf ping-pong (--full-rtt, 18-byte messages)
              at a fixed rate           vs  sockperf under-load at the same rate (--reply-every 1)

Ping-pong keeps one message in flight: a stall delays one sample, so its tail
looks better than a fixed-rate measurement, where every packet sent during a
stall waits (no coordinated omission). Under-load is sockperf's fixed-rate mode.

Each send rate is the median of --repeat runs (default 5), the four senders
taken in turns (one run of each, then again) so that they share the same
window of whatever else the host does; the round trips run once each
(--no-rtt: not at all). Prints a table (the medians and every run) and the
ratios of the medians. Run as root from the repository:

    python3 bench/engine_kernel.py [--duration 3] [--repeat 5] [--rps] [--no-rtt] [--nice -10] [--json]

On a veth the receiving half of the kernel's work (IP, UDP, socket queues) runs
in softirq on the *sender's* CPU, so by default a "send rate" is mostly the
cost of receiving. --rps steers that work to the receiver's CPU (rps_cpus on
the receiving veth) so that the sender's core pays for sending only.

Numbers depend on the host and on whatever else runs on it: the load average at
the start is printed with the results.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import secrets
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENGINE = REPO / "engine" / "build" / "cnfperf-engine"
SEND_CPU, RECV_CPU = 0, 1
PORT = 9000
# Scheduling priority of every measured process (--nice): on a host shared with
# builds, every tool alike gets its core back before anyone else.
NICE = 0
SENDERS = ("engine udp --mmsg", "iperf3 -u -l 18", "engine raw --mmsg", "trafgen")


class Pair:
    """Two namespaces and a veth between them, IPv6 off; removed on exit."""

    def __init__(self, rps: bool = False) -> None:
        self.rps = rps
        tag = secrets.token_hex(2)
        self.ns = (f"cnfpb{tag}a", f"cnfpb{tag}b")
        self.iface = self.ns
        self.ip = ("198.18.0.1", "198.18.0.2")
        self.mac = ("02:c7:0b:00:00:0a", "02:c7:0b:00:00:0b")

    def __enter__(self) -> "Pair":
        try:
            for ns in self.ns:
                sh("ip", "netns", "add", ns)
                sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                   "net.ipv6.conf.default.disable_ipv6=1")
            sh("ip", "link", "add", self.iface[0], "netns", self.ns[0], "address", self.mac[0], "type", "veth",
               "peer", "name", self.iface[1], "netns", self.ns[1], "address", self.mac[1])
            for i in (0, 1):
                sh("ip", "-n", self.ns[i], "addr", "add", f"{self.ip[i]}/24", "dev", self.iface[i])
                sh("ip", "-n", self.ns[i], "link", "set", self.iface[i], "up")
                sh("ip", "-n", self.ns[i], "link", "set", "lo", "up")
            if self.rps:
                sh("ip", "netns", "exec", self.ns[1], "sh", "-c",
                   f"echo {1 << RECV_CPU:x} > /sys/class/net/{self.iface[1]}/queues/rx-0/rps_cpus")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for ns in self.ns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def run(self, side: int, cpu: int, argv: list) -> list[str]:
        nice = ["nice", "-n", str(NICE)] if NICE else []
        return ["ip", "netns", "exec", self.ns[side], *nice, "taskset", "-c", str(cpu), *map(str, argv)]


def raw_sender(pair: Pair, cpu: int, seconds: float) -> list[str]:
    """An unpaced engine `send --api raw -m` on side 0 for `seconds`, to port 9000 of side 1."""
    return pair.run(0, cpu, [
        ENGINE, "send", "--api", "raw", "-m", "--iface", pair.iface[0], "--src-ip", pair.ip[0],
        "--dst-ip", pair.ip[1], "--dst-mac", pair.mac[1], "--dport", 9000, "--rate", 0,
        "--duration", seconds, "--interval", 0])


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True, timeout=30)


@contextlib.contextmanager
def background(argv: list[str]):
    """A process (and whatever it forks: trafgen does) for the length of a block;
    SIGINT to its process group then, SIGKILL if it lingers."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        yield p
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGINT)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def wait_ready(p: subprocess.Popen) -> None:
    line = p.stdout.readline()
    if not line or json.loads(line)["type"] != "ready":
        raise RuntimeError(f"engine did not get ready: {line}{p.stderr.read()}")


def stop_summary(p: subprocess.Popen) -> dict:
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    return summary_of(out, err, p.returncode)


def summary_of(out: str, err: str, rc: int) -> dict:
    found = [json.loads(line) for line in out.splitlines() if '"summary"' in line]
    if rc != 0 or not found:
        raise RuntimeError(f"engine exited {rc}: {err.strip()}")
    return found[0]


# ---------------------------------------------------------------- send rates

def engine_send(pair: Pair, api: str, duration: float) -> dict:
    """Unpaced sender on CPU 0, receiver (same api, busy polling) on CPU 1."""
    ends = []
    for side in (0, 1):
        me = ["--src-ip", pair.ip[side], "--sport", PORT, "-m"]
        ends.append(["--api", api, "--iface", pair.iface[side], *me] if api == "raw" else ["--api", api, *me])
    recv = pair.run(1, RECV_CPU, [ENGINE, "recv", *ends[1], "--duration", 0, "--interval", 0])
    send = pair.run(0, SEND_CPU, [ENGINE, "send", *ends[0], "--dst-ip", pair.ip[1], "--dport", PORT,
                                  "--dst-mac", pair.mac[1], "--rate", 0, "--duration", duration,
                                  "--warmup", 0.5, "--interval", 0])
    with background(recv) as rx:
        wait_ready(rx)
        done = subprocess.run(send, capture_output=True, text=True, timeout=duration + 30)
        sent = summary_of(done.stdout, done.stderr, done.returncode)
        time.sleep(0.3)
        got = stop_summary(rx)
    return {"sent_pps": sent["tx_pps"], "received_pps": got["rx_packets"] / sent["duration_s"],
            "refused": sent["tx_refused"], "lost": sent["tx_packets"] - got["rx_packets"]}


def iperf3_send(pair: Pair, duration: float) -> dict:
    server = pair.run(1, RECV_CPU, ["iperf3", "-s", "-1", "-J", "-B", pair.ip[1]])
    client = pair.run(0, SEND_CPU, ["iperf3", "-c", pair.ip[1], "-u", "-l", 18, "-b", 0, "-t", duration,
                                    "-J", "--get-server-output"])
    with background(server):
        time.sleep(0.5)
        done = subprocess.run(client, capture_output=True, text=True, timeout=duration + 30)
    res = json.loads(done.stdout)
    if "error" in res:
        raise RuntimeError(f"iperf3: {res['error']}")
    sent = res["end"]["sum"]
    srv = res["server_output_json"]["end"]["sum"]
    received = srv["packets"] - srv["lost_packets"]
    return {"sent_pps": sent["packets"] / sent["seconds"], "received_pps": received / srv["seconds"],
            "refused": None, "lost": srv["lost_packets"]}


def frame_bytes(pair: Pair) -> bytes:
    """The engine's own 64-byte frame (60 without FCS), for trafgen to repeat."""
    def mac(s: str) -> bytes:
        return bytes(int(x, 16) for x in s.split(":"))
    src, dst = (bytes(map(int, ip.split("."))) for ip in pair.ip)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 46, 0, 0x4000, 64, 17, 0, src, dst)
    csum = sum(struct.unpack("!10H", ip))
    while csum >> 16:
        csum = (csum & 0xFFFF) + (csum >> 16)
    ip = ip[:10] + struct.pack("!H", ~csum & 0xFFFF) + ip[12:]
    udp = struct.pack("!HHHH", PORT, PORT, 26, 0)
    payload = struct.pack("!HQQ", 0xCF7E, 0, 0)
    return mac(pair.mac[1]) + mac(pair.mac[0]) + b"\x08\x00" + ip + udp + payload


def trafgen_send(pair: Pair, duration: float) -> dict:
    frame = frame_bytes(pair)
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", prefix="cnfpb") as cfg:
        cfg.write("{ " + ", ".join(f"0x{b:02x}" for b in frame) + " }\n")
        cfg.flush()
        recv = pair.run(1, RECV_CPU, [ENGINE, "recv", "--api", "raw", "--iface", pair.iface[1], "--src-ip",
                                      pair.ip[1], "--sport", PORT, "-m", "--duration", 0, "--interval", 0])
        gen = pair.run(0, SEND_CPU, ["trafgen", "-o", pair.iface[0], "-i", cfg.name, "-P", 1, "-C", "-Q"])
        with background(recv) as rx:
            wait_ready(rx)
            with background(gen) as tg:
                t0 = time.monotonic()
                time.sleep(duration)
                os.killpg(tg.pid, signal.SIGINT)   # the sending child, not just the parent
                out, err = tg.communicate(timeout=20)
                seconds = time.monotonic() - t0
            time.sleep(0.3)
            got = stop_summary(rx)
    m = re.search(r"(\d+) packets outgoing", out + err)
    if not m:
        fatal = [line for line in (out + err).splitlines() if "failed" in line.lower()]
        raise RuntimeError(f"trafgen: {fatal[-1] if fatal else 'printed no packet count'}")
    sent = int(m.group(1))
    # trafgen's frames carry the engine's header with number and time 0: bad to its
    # sequence tracking (sent before the receiver started), counted all the same
    received = got["rx_packets"] + got["warmup_packets"] + got["bad"]
    return {"sent_pps": sent / seconds, "received_pps": received / seconds, "refused": None,
            "lost": sent - received}


# ---------------------------------------------------------------- round trip

def engine_rtt(pair: Pair, duration: float, rate: int) -> dict:
    """Waiting for packets in the kernel (--poll interrupt, as sockperf's blocking
    defaults), one packet per burst; the client's two threads share CPU 0, the
    server has CPU 1."""
    srv = pair.run(1, RECV_CPU, [ENGINE, "server", "--src-ip", pair.ip[1], "--sport", PORT,
                                 "--poll", "interrupt",
                                 "--duration", 0, "--interval", 0])
    cli = pair.run(0, SEND_CPU, [ENGINE, "client", "--src-ip", pair.ip[0], "--dst-ip", pair.ip[1], "--dport",
                                 PORT, "--poll", "interrupt", "-b", 1, "--rate", rate, "--duration", duration, "--warmup", 0.5,
                                 "--interval", 0, "--cpu", SEND_CPU, "--rx-cpu", SEND_CPU])
    with background(srv) as s:
        wait_ready(s)
        done = subprocess.run(cli, capture_output=True, text=True, timeout=duration + 30)
        stop_summary(s)
    lat = summary_of(done.stdout, done.stderr, done.returncode)["latency"]
    return {k: lat[f"{k}_ns"] / 1000 for k in ("p50", "p99", "mean")} | {"count": lat["count"]}


def sockperf_rtt(pair: Pair, duration: float, rate: int | None = None) -> dict:
    """Ping-pong, or under-load at `rate` messages per second with every one answered."""
    srv = pair.run(1, RECV_CPU, ["sockperf", "sr", "-i", pair.ip[1], "-p", PORT])
    mode = ["pp"] if rate is None else ["ul", "--mps", rate, "--reply-every", 1]
    cli = pair.run(0, SEND_CPU, ["sockperf", *mode, "-i", pair.ip[1], "-p", PORT, "-m", 18, "-t", duration,
                                 "--full-rtt"])
    with background(srv):
        time.sleep(0.5)
        done = subprocess.run(cli, capture_output=True, text=True, timeout=duration + 30)
    text = done.stdout + done.stderr
    pct = {float(p): float(v) for p, v in re.findall(r"percentile\s+([\d.]+)\s*=\s*([\d.]+)", text)}
    avg = re.search(r"avg-rtt\s*=\s*([\d.]+)", text)
    count = re.search(r"(\d+) observations", text) or re.search(r"ReceivedMessages=(\d+)", text)
    if 50.0 not in pct or not avg:
        raise RuntimeError(f"sockperf output not understood:\n{text}")
    return {"p50": pct[50.0], "p99": pct[99.0], "mean": float(avg.group(1)),
            "count": int(count.group(1)) if count else None}


# ---------------------------------------------------------------- report

def host_facts() -> str:
    model = "?"
    with contextlib.suppress(OSError):
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = os.getloadavg()[0]
    return (f"{model}, {os.cpu_count()} cores, Linux {platform.release()}; "
            f"senders on CPU {SEND_CPU}, receivers on CPU {RECV_CPU}; load average {load:.2f} at start")


def ratio(a: dict, b: dict, key: str) -> str:
    x, y = a.get(key), b.get(key)
    return f"{x / y:.2f}x" if x and y else "-"


def medians(runs: list[dict]) -> dict:
    """The median of each rate over the runs that did not fail; the first error otherwise."""
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return runs[0]
    out = {k: statistics.median(r[k] for r in ok) for k in ("sent_pps", "received_pps")}
    return out | {"runs": [r["sent_pps"] for r in ok], "failed": len(runs) - len(ok)}


def main() -> int:
    global NICE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per run (default 3)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per sender; a rate is their median (default 5)")
    ap.add_argument("--rtt-rate", type=int, default=10000, help="engine client rate in pps (default 10000)")
    ap.add_argument("--rps", action="store_true", help="receive processing on the receiver's CPU (see above)")
    ap.add_argument("--no-rtt", action="store_true", help="send rates only")
    ap.add_argument("--nice", type=int, default=0, help="run every measured process at this nice value")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("engine_kernel.py: needs root (namespaces, raw sockets)", file=sys.stderr)
        return 2
    if not ENGINE.exists():
        print(f"engine_kernel.py: build the engine first ({ENGINE.relative_to(REPO)})", file=sys.stderr)
        return 2
    missing = [t for t in ("iperf3", "trafgen", "sockperf", "taskset", "nice") if not shutil.which(t)]
    if missing:
        print(f"engine_kernel.py: missing tools: {', '.join(missing)}", file=sys.stderr)
        return 2
    if (os.cpu_count() or 1) < 2:
        print("engine_kernel.py: needs two CPUs", file=sys.stderr)
        return 2
    if args.repeat < 1:
        print("engine_kernel.py: --repeat must be at least 1", file=sys.stderr)
        return 2
    NICE = args.nice

    facts = host_facts() + ("; RPS to the receiver's CPU" if args.rps else "") + \
        (f"; nice {NICE}" if NICE else "")
    sends = {
        "engine udp --mmsg": lambda p: engine_send(p, "udp", args.duration),
        "iperf3 -u -l 18": lambda p: iperf3_send(p, args.duration),
        "engine raw --mmsg": lambda p: engine_send(p, "raw", args.duration),
        "trafgen": lambda p: trafgen_send(p, args.duration),
    }
    rtts = {
        "engine client/server": lambda p: engine_rtt(p, args.duration, args.rtt_rate),
        "sockperf ping-pong": lambda p: sockperf_rtt(p, args.duration),
        "sockperf under-load": lambda p: sockperf_rtt(p, args.duration, args.rtt_rate),
    }

    def attempt(run, pair: Pair) -> dict:
        try:
            return run(pair)
        except (RuntimeError, subprocess.SubprocessError, json.JSONDecodeError, KeyError) as e:
            return {"error": str(e).strip().splitlines()[0]}

    runs: dict[str, list[dict]] = {name: [] for name in sends}
    res: dict[str, dict] = {}
    with Pair(args.rps) as pair:
        for _ in range(args.repeat):
            for name, run in sends.items():
                runs[name].append(attempt(run, pair))
        if not args.no_rtt:
            for name, run in rtts.items():
                res[name] = attempt(run, pair)
    res |= {name: medians(r) for name, r in runs.items()}

    if args.json:
        print(json.dumps({"host": facts, "duration_s": args.duration, "repeat": args.repeat, "results": res,
                          "runs": runs}, indent=1))
        return 0
    print(f"# {facts}; {args.duration:g} s per run, 64-byte frames, send rates: median of {args.repeat}"
          + ("" if args.no_rtt else f"; RTT at {args.rtt_rate} pps"))
    print(f"{'sender':24} {'sent kpps':>10} {'received kpps':>14}  runs (sent kpps)")
    for name in SENDERS:
        r = res[name]
        if "error" in r:
            print(f"{name:24} failed: {r['error']}")
        else:
            each = " ".join(f"{x / 1e3:.0f}" for x in r["runs"])
            failed = f"  ({r['failed']} failed)" if r["failed"] else ""
            print(f"{name:24} {r['sent_pps'] / 1e3:10.1f} {r['received_pps'] / 1e3:14.1f}  {each}{failed}")
    if not args.no_rtt:
        print(f"\n{'round trip':24} {'p50 us':>10} {'p99 us':>10} {'mean us':>10}")
        for name in rtts:
            r = res[name]
            if "error" in r:
                print(f"{name:24} failed: {r['error']}")
            else:
                print(f"{name:24} {r['p50']:10.1f} {r['p99']:10.1f} {r['mean']:10.1f}")
    u, i, w, t = (res[k] for k in SENDERS)
    print(f"\nratios of the medians (aim: udp --mmsg >= iperf3, raw --mmsg >= trafgen"
          + ("" if args.no_rtt else ", RTT <= sockperf's") + ")")
    print(f"  udp --mmsg / iperf3   sent {ratio(u, i, 'sent_pps')}  received {ratio(u, i, 'received_pps')}")
    print(f"  raw --mmsg / trafgen  sent {ratio(w, t, 'sent_pps')}  received {ratio(w, t, 'received_pps')}")
    if not args.no_rtt:
        e, s, ul = res["engine client/server"], res["sockperf ping-pong"], res["sockperf under-load"]
        print(f"  RTT engine / sockperf ping-pong   p50 {ratio(e, s, 'p50')}  p99 {ratio(e, s, 'p99')}"
              f"  mean {ratio(e, s, 'mean')}")
        print(f"  RTT engine / sockperf under-load  p50 {ratio(e, ul, 'p50')}  p99 {ratio(e, ul, 'p99')}"
              f"  mean {ratio(e, ul, 'mean')}   (both {args.rtt_rate} pps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
