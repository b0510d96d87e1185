"""What the benchmarks share: one cnfperf point run as a user runs it, read back
from the store, and how many pollers shared how many cores."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = REPO / ".venv" / "bin" / "python"


def cnfperf(results: Path, *args: str) -> dict:
    """One run's stored point (the only one), or exit with cnfperf's own error."""
    [point] = stored_run(results, *args)["points"]
    return point


def stored_run(results: Path, *args: str) -> dict:
    """`cnfperf run ARGS` as stored (results show --json), or exit with cnfperf's own error."""
    env = dict(os.environ, CNFPERF_RESULTS=str(results))
    python = str(PYTHON) if PYTHON.exists() else sys.executable
    done = subprocess.run([python, "-m", "cnfperf", "run", *args, "--json"], cwd=REPO, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}, nothing on stderr"])[-1]
        sys.exit(f"cnfperf run {' '.join(args)}: {last}")
    run_id = json.loads(done.stdout)["outcome"]["run_id"]
    shown = subprocess.run([python, "-m", "cnfperf", "results", "show", run_id, "--json"],
                           cwd=REPO, env=env, capture_output=True, text=True, check=True)
    return json.loads(shown.stdout)


def pollers(point: dict) -> str:
    """`4 pollers / 2 cores`: the plan's count, stored with the point."""
    if point.get("pollers") is not None and point.get("point_cores"):
        return f"{point['pollers']} pollers / {point['point_cores']} cores"
    for warning in json.loads(point.get("warnings") or "[]") if isinstance(
            point.get("warnings"), str) else point.get("warnings") or []:
        m = re.match(r"(\d+) busy(?:-polling threads| pollers) share (\d+) cores", warning)
        if m:
            return f"{m[1]} pollers / {m[2]} cores"
    return f"pollers within {os.cpu_count()} cores"
