"""Other hosts, driven over SSH: the inventory (inventory.py) that names them
and the wires between them, the SSH connection (ssh.py), and the controller's
side of the cnfperf agent each host runs for a run (client.py)."""
