"""Where the engine cnfperf runs is. Below every plugin (host/ is floor 3), so
the host's facts, the data planes and the runtimes find the engine without
importing cnfperf/engine.py (its argv and records, floor 8), which imports them.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

ENGINE_ENV = "CNFPERF_ENGINE"
# The checkout's build (engine/build, `make build`), beside the cnfperf package.
BUILT = Path(__file__).resolve().parents[2] / "engine" / "build" / "cnfperf-engine"


def find_engine() -> Path | None:
    """$CNFPERF_ENGINE, else the build next to this package, else one on $PATH."""
    if os.environ.get(ENGINE_ENV):
        return Path(os.environ[ENGINE_ENV])
    if BUILT.exists():
        return BUILT
    found = shutil.which("cnfperf-engine")
    return Path(found) if found else None
