"""What cnfperf asks of a Kubernetes cluster, its own or a user's: pods.py
(namespaces, attachments, pods and commands in them, through the
`kubernetes` client), process.py (a command in a pod as a Popen), images.py
(cnfperf's images imported into a node's containerd)."""
