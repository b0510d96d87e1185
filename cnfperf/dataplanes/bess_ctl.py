"""BESS's control, driven through its own Python API (pybess, gRPC).

Run by Debian's python3 (which has python3-grpcio and python3-protobuf, the
versions the build generated pybess's messages for), never imported by
cnfperf, with the BESS build's directory first on its path:

    python3 bess_ctl.py BUILD_DIR GRPC_URL

It connects to bessd (waiting for it to listen), says `{"ready": VERSION}`,
then answers one JSON request per line of its stdin with one JSON line:
{"ok": RESULT} or {"error": MESSAGE}. Requests:

    {"do": "setup", "workers": [[wid, core], ...], "ports": {NAME: VDEV, ...},
     "links": [{"ports": [A, B], "macs": [MAC_A, MAC_B] or null, "worker": WID}, ...],
     "reflect": [{"port": P, "worker": WID}, ...]}
        Each port a PMDPort on its vdev. Each link with MACs: an L2Forward
        whose entries are its two ends' MACs (each to the PortOut of its
        port), fed by both ends' PortIncs; without: each end's PortInc
        straight to the other end's PortOut. Every module of a link on one
        worker. Each reflector: PortInc(P) -> MACSwap -> PortOut(P). Then
        every worker resumes. RESULT: null.
    {"do": "modules"}
        RESULT: every module as bessd holds it, read back from it:
        {NAME: {"class": MCLASS, "to": [the module each output gate goes to]}}.
    {"do": "stats", "ports": [NAME, ...]}
        RESULT: {NAME: [inc packets, inc dropped, out packets, out dropped]}.
    {"do": "usage"}
        RESULT: {TC: [count, cycles, packets]} for each worker's root traffic
        class, accumulated since it was made: its tasks' runs, the TSC cycles
        they took (an empty poll's too) and the packets they took in.
    {"do": "quit"}
        Says {"ok": null} and exits; bessd stays up (its process is cnfperf's).
Its stdout carries these lines alone: what pybess or gRPC print goes to its
stderr (cnfperf keeps it in a file).
"""
import json
import sys
import time

# Shorter than cnfperf's wait for its first line, so its own error line comes first.
CONNECT_TIMEOUT = 20


def _connect(bess, url: str):
    deadline = time.monotonic() + CONNECT_TIMEOUT
    while True:
        try:
            bess.connect(grpc_url=url)
            return
        except bess.RPCError:
            # not listening yet: bessd opens its socket once DPDK is up
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def setup(bess, req: dict) -> None:
    bess.pause_all()
    for wid, core in req["workers"]:
        bess.add_worker(wid, core)
    for name, vdev in req["ports"].items():
        bess.create_port("PMDPort", name, {"vdev": vdev})
    for k, link in enumerate(req["links"]):
        a, b = link["ports"]
        for port in (a, b):
            bess.create_module("PortInc", f"in_{port}", {"port": port})
            bess.create_module("PortOut", f"out_{port}", {"port": port})
        if link["macs"] is None:   # port to port
            bess.connect_modules(f"in_{a}", f"out_{b}", 0, 0)
            bess.connect_modules(f"in_{b}", f"out_{a}", 0, 0)
        else:
            fwd = f"l2fwd{k}"
            bess.create_module("L2Forward", fwd, {})
            for gate, port in enumerate((a, b)):
                bess.connect_modules(f"in_{port}", fwd, 0, 0)
                bess.connect_modules(fwd, f"out_{port}", gate, 0)
            entries = [{"addr": mac, "gate": gate} for gate, mac in enumerate(link["macs"])]
            bess.run_module_command(fwd, "add", "L2ForwardCommandAddArg", {"entries": entries})
        for port in (a, b):
            bess.attach_task(f"in_{port}", wid=link["worker"])
    for r in req.get("reflect", ()):
        port = r["port"]
        swap = f"macswap_{port}"
        bess.create_module("PortInc", f"in_{port}", {"port": port})
        bess.create_module("MACSwap", swap, {})
        bess.create_module("PortOut", f"out_{port}", {"port": port})
        bess.connect_modules(f"in_{port}", swap, 0, 0)
        bess.connect_modules(swap, f"out_{port}", 0, 0)
        bess.attach_task(f"in_{port}", wid=r["worker"])
    bess.resume_all()


def modules(bess, req: dict) -> dict:
    found = {}
    for m in bess.list_modules().modules:
        info = bess.get_module_info(m.name)
        found[m.name] = {"class": m.mclass,
                         "to": [g.name for g in sorted(info.ogates, key=lambda g: g.ogate)]}
    return found


def stats(bess, req: dict) -> dict:
    found = {}
    for name in req["ports"]:
        s = bess.get_port_stats(name)
        found[name] = [s.inc.packets, s.inc.dropped, s.out.packets, s.out.dropped]
    return found


def usage(bess, req: dict) -> dict:
    found = {}
    for status in bess.list_tcs().classes_status:
        if not status.parent:   # a worker's root: its leaves' usage adds up there
            name = getattr(status, "class").name
            s = bess.get_tc_stats(name)
            found[name] = [s.count, s.cycles, s.packets]
    return found


def main() -> int:
    build, url = sys.argv[1], sys.argv[2]
    # Its replies alone on stdout: pybess prints (placement checks) and gRPC
    # logs go to stderr.
    out, sys.stdout = sys.stdout, sys.stderr

    def say(reply: dict) -> None:
        print(json.dumps(reply), file=out, flush=True)

    sys.path.insert(0, build)
    try:
        from pybess.bess import BESS   # the build's, generated for this python's grpc
        bess = BESS()
        _connect(bess, url)
        version = bess.get_version().version
    except Exception as e:   # noqa: BLE001 (any failure is the one line cnfperf shows)
        say({"error": f"cannot reach bessd at {url}: {type(e).__name__}: {e}"})
        return 1
    say({"ready": version})
    for line in sys.stdin:
        req = json.loads(line)
        if req["do"] == "quit":
            say({"ok": None})
            break
        try:
            say({"ok": {"setup": setup, "modules": modules, "stats": stats,
                          "usage": usage}[req["do"]](bess, req)})
        except Exception as e:   # noqa: BLE001
            say({"error": f"{req['do']}: {type(e).__name__}: {e}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
