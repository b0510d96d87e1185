"""Pods on a Kubernetes cluster as cnfperf's containers (nf_in,
endpoint_in or switch_in = pod): pods.py (namespaces, attachments, pods
and commands in them, through the `kubernetes` client), process.py (a command in a pod as a
Popen), images.py (cnfperf's images imported into a node's containerd)."""
