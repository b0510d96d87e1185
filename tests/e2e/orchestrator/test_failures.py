"""A step that fails mid-run: the message says what failed and what was cleaned up,
and the host is as it was."""
from __future__ import annotations

import json
import os

import pytest

pytestmark = pytest.mark.e2e

# An executable that answers --version like the engine and then fails to open its
# interface, as a real engine does on a broken data plane. It runs under the netns
# runtime, which takes the host's binary as is.
BROKEN_ENGINE = """#!/bin/sh
if [ "$1" = "--version" ]; then echo '{"version":"broken","apis":["udp","raw"]}'; exit 0; fi
echo "cnfperf-engine: --iface $4: no such device" >&2
exit 1
"""


def test_engine_failure_is_reported_and_cleaned_up(tmp_path, cli, results, no_leftovers):
    engine = tmp_path / "cnfperf-engine"
    engine.write_text(BROKEN_ENGINE)
    engine.chmod(0o755)
    done = cli("run", "--switch", "bridge", "--api", "raw", "--pairs", "2", "--tester", "split",
               "--runtime", "netns", "--duration", "1", CNFPERF_ENGINE=str(engine))
    assert done.returncode == 1
    err = done.stderr
    assert "failed: engine recv in cnfp" in err and "before it was ready" in err
    assert "no such device" in err, "the engine's own message is passed on"
    assert "cleaned up: " in err and "netns ×4" in err and "container ×4" in err
    assert "data-plane" in err and "nothing was left behind" in err

    run_id = err.split("error: run ", 1)[1].split()[0]
    shown = json.loads(cli("results", "show", run_id, "--json", check=True).stdout)
    assert shown["status"] == "failed"
    assert shown["points"][0]["status"] == "failed"
    assert "before it was ready" in shown["points"][0]["error"]


def test_unusable_engine_fails_before_anything_is_created(tmp_path, cli, results,
                                                          no_leftovers):
    engine = tmp_path / "cnfperf-engine"
    engine.write_text("#!/bin/sh\nexit 1\n")
    engine.chmod(0o755)
    done = cli("run", "--duration", "1", CNFPERF_ENGINE=str(engine))
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("cnfperf: error: this host cannot run the scenario: engine:")
    assert not results.exists()
    assert not os.path.exists(engine.parent / "runs")
