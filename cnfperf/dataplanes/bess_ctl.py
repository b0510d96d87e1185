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
        every worker resumes. RESULT: the modules that forward, by name, each
        with its ports.
    {"do": "stats", "ports": [NAME, ...]}
        RESULT: {NAME: [inc packets, inc dropped, out packets, out dropped]}.
    {"do": "quit"}
        Says {"ok": null} and exits; bessd stays up (its process is cnfperf's).
"""
import json
import sys
import time

CONNECT_TIMEOUT = 60


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


def setup(bess, req: dict) -> dict:
    bess.pause_all()
    for wid, core in req["workers"]:
        bess.add_worker(wid, core)
    for name, vdev in req["ports"].items():
        bess.create_port("PMDPort", name, {"vdev": vdev})
    made = {}
    for k, link in enumerate(req["links"]):
        a, b = link["ports"]
        for port in (a, b):
            bess.create_module("PortInc", f"in_{port}", {"port": port})
            bess.create_module("PortOut", f"out_{port}", {"port": port})
        if link["macs"] is None:   # port to port
            bess.connect_modules(f"in_{a}", f"out_{b}", 0, 0)
            bess.connect_modules(f"in_{b}", f"out_{a}", 0, 0)
            made[f"in_{a}"], made[f"in_{b}"] = [a, b], [b, a]
        else:
            fwd = f"l2fwd{k}"
            bess.create_module("L2Forward", fwd, {})
            for gate, port in enumerate((a, b)):
                bess.connect_modules(f"in_{port}", fwd, 0, 0)
                bess.connect_modules(fwd, f"out_{port}", gate, 0)
            entries = [{"addr": mac, "gate": gate} for gate, mac in enumerate(link["macs"])]
            bess.run_module_command(fwd, "add", "L2ForwardCommandAddArg", {"entries": entries})
            made[fwd] = [a, b]
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
        made[swap] = [port]
    bess.resume_all()
    return made


def stats(bess, req: dict) -> dict:
    found = {}
    for name in req["ports"]:
        s = bess.get_port_stats(name)
        found[name] = [s.inc.packets, s.inc.dropped, s.out.packets, s.out.dropped]
    return found


def main() -> int:
    build, url = sys.argv[1], sys.argv[2]
    sys.path.insert(0, build)
    from pybess.bess import BESS   # the build's, generated for this python's grpc
    bess = BESS()
    try:
        _connect(bess, url)
        version = bess.get_version().version
    except Exception as e:   # noqa: BLE001 (any failure is the one line cnfperf shows)
        print(json.dumps({"error": f"cannot reach bessd at {url}: {e}"}), flush=True)
        return 1
    print(json.dumps({"ready": version}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        if req["do"] == "quit":
            print(json.dumps({"ok": None}), flush=True)
            break
        try:
            result = {"setup": setup, "stats": stats}[req["do"]](bess, req)
            print(json.dumps({"ok": result}), flush=True)
        except Exception as e:   # noqa: BLE001
            print(json.dumps({"error": f"{req['do']}: {e}"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
