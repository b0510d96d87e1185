"""The test cluster (cnfperf/cluster/node.py), started once for the tests of
this folder that ask for it, and what they make on it.

    def test_x(cluster, namespace): ...     # a namespace of the test's own

Its builds come from `make cluster`; missing, a test fails under CI=true and
is skipped naming them elsewhere (harness.missing)."""
from __future__ import annotations

import itertools

import pytest

import harness
import leak
from cnfperf.cluster import node, pods
from cnfperf.run.cluster import kept

_names = itertools.count()


def require_cluster_parts() -> None:
    if problems := node.problems():
        harness.missing("; ".join(problems))


@pytest.fixture(scope="package")
def cluster():
    require_cluster_parts()
    with leak.assert_no_leftovers(), kept() as made:
        yield made


@pytest.fixture(scope="package")
def api(cluster):
    return pods.connect(cluster.kubeconfig)


@pytest.fixture
def namespace(api):
    """A namespace for the test, deleted (with all in it, on the node too) after it."""
    name = f"cnfptest-{next(_names)}"
    pods.create_namespace(api, name, {"cnfperf.test": "yes"})
    yield name
    pods.delete_namespace(api, name)
