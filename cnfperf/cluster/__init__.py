"""Kubernetes: the test cluster cnfperf starts on this machine (node.py,
from cluster/build.sh's builds). What cnfperf asks of a cluster, its own or
a user's, is the pod runtime's (runtimes/pod/)."""
