"""A run: its preflight checks, the runner over a plan's points, a point's
testbed and trials, the CPU it used, a noisy neighbour, and teardown and
cleanup of everything a run created."""
