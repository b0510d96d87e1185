"""This host: what it offers (facts, tools, builds, cgroups, hugepages), the
commands cnfperf runs on it (system), and what cnfperf holds on it while it
runs (the host lock and the journal of what was created)."""
