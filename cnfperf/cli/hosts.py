"""`cnfperf doctor`, `cleanup`, `lab`, `cluster` and `agent`: this host and
the others, and what runs left on them."""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cnfperf import SystemFailure, UserError, fields
from cnfperf.run import checks, survey
from cnfperf.run.agent import main as run_agent
from cnfperf.run.cleanup import cleanup, cluster_runs
from cnfperf.runtimes.pod import pods
from cnfperf.runtimes.pod.pods import ClusterError
from cnfperf.run.lab import serve as lab_serve
from cnfperf.run.cluster import serve as cluster_serve
from cnfperf.cluster import node as cluster_node
from cnfperf.remote import lab as remote_lab
from cnfperf.remote.inventory import NAME as INVENTORY_NAME, load as load_inventory
from cnfperf.engine import find_engine
from cnfperf.host.facts import render as render_host
from cnfperf.run.declared import gather
from cnfperf.cli.common import EXIT_BUSY, EXIT_FAILURE, find_run, open_store, results_and_json


def add(sub: Any) -> None:
    """Its commands, on the command line's subparsers."""
    doctor = sub.add_parser("doctor", help="what this host offers and which data planes work")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.add_argument("--hosts", metavar="FILE", type=Path,
                        help="also every host of this inventory (reached over SSH, its agent, "
                             "what it runs) and every wire (a frame sent on one end must "
                             "arrive at the other)")
    doctor.set_defaults(func=_doctor)

    clean = sub.add_parser("cleanup", help="remove what killed runs left behind")
    clean.add_argument("run", nargs="?", metavar="RUN_ID",
                       help="only this run's leftovers, or latest's (default: every run's)")
    clean.add_argument("--force", action="store_true",
                       help="even while a run holds the host lock")
    clean.add_argument("--hosts", metavar="FILE", type=Path,
                       help="also on every host of this inventory (over SSH)")
    clean.add_argument("--cluster", metavar="FILE", type=Path,
                       help="also the namespaces runs left on the Kubernetes cluster of this "
                            "kubeconfig (their pods and attachments)")
    clean.add_argument("--images", action="store_true",
                       help="with --cluster: also cnfperf's images imported into this node's "
                            "containerd (the next pod imports its own again)")
    results_and_json(clean, json_flag=False)
    clean.set_defaults(func=_cleanup)

    lab = sub.add_parser(
        "lab", help="an emulated host to run on without the hardware (SR-IOV NICs, a 6.12 "
                    "kernel), kept until Ctrl-C",
        description="Boots a host that is a QEMU guest under TCG (the vm runtime's), reached "
                    "over SSH as any host is, with emulated SR-IOV NICs (QEMU's igb) and "
                    "Debian's 6.12 kernel (netkit, kernel OVS, tc police), cabled to this "
                    f"machine; writes its inventory to {remote_lab.INVENTORY} and keeps it "
                    "until Ctrl-C. Then: cnfperf run --hosts that file --tester-host NAME "
                    "--dut-host NAME --switch sriov --sriov-pf pf0 --api raw (docs/hosts.md).")
    lab.add_argument("--name", default="dut", help="the host's name in the inventory "
                                                   "(default dut)")
    lab.add_argument("--wires", type=int, default=2,
                     help=f"wires between this machine (local) and the host: a tap here, an "
                          f"emulated NIC there (igb, or virtio with --pfs 0; "
                          f"0-{remote_lab.MAX_WIRES}; default 2)")
    lab.add_argument("--pfs", type=int, default=1,
                     help=f"the host's emulated SR-IOV NICs, pf0… (7 VFs each; "
                          f"0-{remote_lab.MAX_PFS}; default 1)")
    lab.set_defaults(func=_lab)

    cluster = sub.add_parser(
        "cluster", help="a Kubernetes test cluster on this machine (make cluster's "
                        "builds, Multus), kept until Ctrl-C",
        description="Starts a Kubernetes with this machine as its node: etcd, the API server, "
                    "controller manager, scheduler and kubelet that `make cluster` built, a "
                    "containerd of its own, Multus as the node's CNI plugin, the static CPU "
                    "manager (core 0 reserved); with --hosts, the inventory's hosts join as "
                    "nodes too. Prints its kubeconfig and keeps it until Ctrl-C, then leaves "
                    "nothing of it (docs/kubernetes.md).")
    cluster.add_argument("--hosts", metavar="FILE", type=Path,
                         help="an inventory (hosts.toml, e.g. cnfperf lab's) whose hosts join "
                              "the cluster as nodes named like them, through their agents; "
                              "they leave when it stops")
    cluster.add_argument("--hugepages", metavar="MB", type=int, default=0,
                         help="2 MB hugepages added to each node's pool before its kubelet "
                              "starts, which its pods then ask for as hugepages-2Mi (a DPDK "
                              "pod's memory); given back when it stops (default 0: pods mount "
                              "their data plane's hugepages from the host)")
    cluster.set_defaults(func=_cluster)

    agent = sub.add_parser("agent", help="a host's part of a run, for a controller on another "
                                         "host (it starts this over SSH; JSON lines on stdin "
                                         "and stdout)")
    agent.set_defaults(func=lambda _args: run_agent())


def _doctor(args: argparse.Namespace) -> int:
    host = gather(find_engine(), compare=True)
    matrix = checks.matrix(host)
    inventory = load_inventory(args.hosts) if args.hosts else None
    found = survey.check_hosts(inventory, host) if inventory else None
    if args.json:
        extra = {} if found is None else {
            "hosts": [asdict(h) for h in found[0]], "wires": [asdict(w) for w in found[1]]}
        print(json.dumps({"host": host.to_dict(), **matrix, **extra}, indent=1))
    else:
        print(render_host(host, matrix))
        if found is not None:
            print(_render_hosts(*found))
    if found is not None and not all(c.ok for c in (*found[0], *found[1])):
        return EXIT_FAILURE
    return 0


def _render_hosts(hosts: list, wires: list) -> str:
    lines = ["hosts"]
    for h in hosts:
        what = (f"unusable: {h.problem}" if h.problem else
                f"ok  {h.facts.get('kernel', '')}; runs {', '.join(h.planes) or 'no data plane'}")
        lines.append(f"  {h.name:<10} {h.address:<28} {what}")
    lines.append("wires")
    for w in wires:
        said = f"ok  {w.note}" if w.ok and w.note else "ok" if w.ok else w.problem
        lines.append(f"  {w.wire:<36} {said}")
    return "\n".join(lines)


def _cleanup(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        raise UserError("cleanup", "needs root (network namespaces, containers)")
    if args.run == "latest":
        args.run = find_run(open_store(args), "latest", "RUN_ID")
    if args.run is not None and not re.fullmatch(r"[0-9a-f]{4}", args.run):
        raise UserError("RUN_ID", f"{args.run!r} is not a run id (4 hex digits, as "
                                  "`cnfperf results list` shows)")
    if args.images and args.cluster is None:
        raise UserError("--images", "the images of a cluster's node: name it with --cluster FILE")
    swept: tuple[list[str], list[str]] = ([], [])
    if args.cluster is not None:   # first: a cluster that does not answer is bad input
        try:
            swept = cluster_runs(args.cluster, args.run, args.images)
        except ClusterError as e:
            raise UserError("--cluster", str(e)) from None
    if args.hosts:
        removed, failed = survey.cleanup_hosts(load_inventory(args.hosts), args.run, args.force)
    else:
        removed, failed = cleanup(force=args.force, run_id=args.run)
    removed, failed = swept[0] + removed, swept[1] + failed
    for line in removed:
        print(f"removed {line}")
    for line in failed:
        print(f"cnfperf: could not remove {line}", file=sys.stderr)
    if not removed and not failed:
        print("nothing to clean up")
    return EXIT_FAILURE if failed else 0


def _lab(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        raise UserError("lab", "needs root (a VM, taps, network namespaces)")
    if not INVENTORY_NAME.fullmatch(args.name):
        raise UserError("--name", f"{args.name!r} is no host name: [a-z][a-z0-9_-]{{0,31}}")
    if args.name == fields.LOCAL:
        raise UserError("--name", f"{fields.LOCAL!r} is this machine's name in an inventory")
    for flag, value, most in (("--wires", args.wires, remote_lab.MAX_WIRES),
                              ("--pfs", args.pfs, remote_lab.MAX_PFS)):
        if not 0 <= value <= most:
            raise UserError(flag, f"{value} is not within 0-{most}")
    if (pid := remote_lab.owner()) is not None:
        print(f"cnfperf: error: a lab runs already (pid {pid}); its inventory is "
              f"{remote_lab.INVENTORY}", file=sys.stderr)
        return EXIT_BUSY
    engine = find_engine()
    problems = remote_lab.problems(args.pfs > 0) + ([] if engine else ["engine not built "
                                                                       "(make build)"])
    if problems:
        raise SystemFailure("the lab cannot start here: " + "; ".join(problems))

    def say(line: str) -> None:
        print(f"lab: {line}", file=sys.stderr, flush=True)

    def up(made: Any) -> None:
        host = made.hosts[args.name]
        # its wires' NICs have SR-IOV too: the point names its PF
        switch = f"--switch sriov --sriov-pf {remote_lab.PF}0" if args.pfs else "--switch netkit"
        print(f"the lab is up: host {args.name} at {host.address} (root over SSH), "
              f"{args.pfs} emulated SR-IOV NIC(s), {args.wires} wire(s)")
        for a, b in made.wires:
            print(f"  wire {a} - {b}")
        print(f"inventory: {made.inventory}\n"
              f"  cnfperf doctor --hosts {made.inventory}\n"
              f"  cnfperf run --hosts {made.inventory} --tester-host {args.name} "
              f"--dut-host {args.name} {switch} --api raw\n"
              "Ctrl-C stops it.", flush=True)
    signum = lab_serve(args.name, args.wires, args.pfs, engine, say, up)
    say(f"stopped ({signal.Signals(signum).name}): nothing of it is left")
    return 0


def _cluster(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        raise UserError("cluster", "needs root (containerd, the kubelet, cgroups)")
    if args.hugepages < 0:
        raise UserError("--hugepages", f"{args.hugepages}: MB of hugepages, 0 or more")
    inventory = None if args.hosts is None else load_inventory(args.hosts)
    if (pid := cluster_node.KEEPER.owner()) is not None:
        print(f"cnfperf: error: a test cluster runs already (pid {pid}); its kubeconfig is "
              f"{cluster_node.KUBECONFIG}", file=sys.stderr)
        return EXIT_BUSY
    if problems := cluster_node.problems():
        raise SystemFailure("the test cluster cannot start here: " + "; ".join(problems))

    def say(line: str) -> None:
        print(f"cluster: {line}", file=sys.stderr, flush=True)

    def up(made: Any, joined_at: dict[str, str]) -> None:
        nodes = [f"{made.node} (this host)"] + [f"{n} ({a})" for n, a in joined_at.items()]
        # a kubelet offers its host's whole pool: pages there before the cluster too
        offered = pods.hugepages_by_node(pods.connect(made.kubeconfig))
        pool = ""
        if args.hugepages or any(offered.values()):
            added = f" ({args.hugepages} MB added on each)" if args.hugepages else ""
            pool = ("hugepages-2Mi offered to pods: " +
                    ", ".join(f"{n} {mb} MB" for n, mb in sorted(offered.items())) + added + "\n")
        print(f"the test cluster is up: Kubernetes {made.version}, nodes {', '.join(nodes)}\n"
              f"kubeconfig: {made.kubeconfig}\n{pool}"
              f"registry: {made.registry}\n"
              "Ctrl-C stops it.", flush=True)
    signum = cluster_serve(say, up, inventory, args.hugepages)
    say(f"stopped ({signal.Signals(signum).name}): nothing of it is left")
    return 0
