"""The test cluster (cnfperf/cluster/node.py), started once for the tests of
a module that ask for it (module scope: a folder without __init__.py is no
package, and a "package" fixture of its would live until the session's end,
its daemons busy beside every later test), and what they make on it.

    def test_x(cluster, namespace): ...     # a namespace of the test's own

Its builds come from `make cluster`; missing, a test fails under CI=true and
is skipped naming them elsewhere (harness.missing)."""
from __future__ import annotations

import itertools

import pytest

import harness
import leak
from cnfperf.host.hugepages import pool_state
from cnfperf.runtimes.pod import pods
from cnfperf.run.cluster import kept

_names = itertools.count()


# What a module's largest point asks of a node that accounts hugepages:
# OVS-DPDK's pod (384 MB) and an NF pod's (64 MB).
NODE_HUGEPAGES_MB = 512


@pytest.fixture(scope="module")
def cluster():
    """A node that offers no hugepages (DPDK pods mount the data plane's) on a
    host whose pool is empty; on one that holds some already (reserved at
    boot), its kubelet offers those and DPDK pods ask for theirs: enough of
    them, then, not whatever the host held."""
    harness.require_cluster()
    extra = NODE_HUGEPAGES_MB if pool_state().total else 0
    with leak.assert_no_leftovers(), kept(hugepages_mb=extra) as made:
        yield made


@pytest.fixture(scope="module")
def api(cluster):
    return pods.connect(cluster.kubeconfig)


@pytest.fixture
def namespace(api):
    """A namespace for the test, deleted (with all in it, on the node too) after it."""
    name = f"cnfptest-{next(_names)}"
    pods.create_namespace(api, name, {"cnfperf.test": "yes"})
    yield name
    pods.delete_namespace(api, name)
