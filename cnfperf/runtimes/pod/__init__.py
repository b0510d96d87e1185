"""Pods on a Kubernetes cluster as cnfperf's containers (nf_in,
endpoint_in or switch_in = pod): pods.py (namespaces, attachments, pods and
commands in them, through the `kubernetes` client), process.py (a command in
a pod as a Popen), ports.py (how a pod takes a node's links), images.py
(cnfperf's images imported into a node's containerd, or pushed to a
registry)."""
