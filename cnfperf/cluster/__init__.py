"""Kubernetes: the test cluster cnfperf starts on this machine (node.py,
from cluster/build.sh's builds) and what cnfperf asks of a cluster, its
own or a user's (pods.py: namespaces, attachments, pods, commands in them)."""


class ClusterError(Exception):
    """A cluster cannot start here, or refused or failed what cnfperf asked: one line."""
