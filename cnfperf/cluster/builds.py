"""The test cluster's daemons as cluster/build.sh built them (`make
cluster`): each build's folder, CNFPERF_CLUSTER_BUILDS/NAME (default:
.cluster in the checkout cnfperf runs from), holds bin/ (and share/), with
NAME.stamp beside it, written last."""
from __future__ import annotations

import os
from pathlib import Path

PREFIX_ENV = "CNFPERF_CLUSTER_BUILDS"
CHECKOUT = Path(__file__).resolve().parents[2]
# Each build and the programs it must hold (the first: program()'s default).
BUILDS = {
    "kubernetes": ("bin/kubelet", "bin/kube-apiserver", "bin/kube-controller-manager",
                   "bin/kube-scheduler", "bin/pause"),
    "etcd": ("bin/etcd",),
    "multus": ("bin/multus", "share/multus-daemonset.yml"),
    "crictl": ("bin/crictl",),
}


def prefix() -> Path:
    env = os.environ.get(PREFIX_ENV)
    return Path(env) if env else CHECKOUT / ".cluster"


def program(name: str, path: str | None = None) -> Path:
    return prefix() / name / (path or BUILDS[name][0])


def problems() -> list[str]:
    """One line per build that is missing, naming what makes it."""
    found = []
    for name, programs in BUILDS.items():
        lacks = [p for p in programs if not (prefix() / name / p).is_file()]
        if lacks or not (prefix() / f"{name}.stamp").is_file():
            what = f"{prefix() / name / lacks[0]} missing" if lacks else \
                f"no {prefix() / name}.stamp"
            found.append(f"{name} not built ({what}: make cluster, or cluster/build.sh {name})")
    return found
