"""cluster/build.sh's modes, without building: the shared rules of the cache
(builds/cache.sh) are the switch builds' tests' (test_switch_build_script.py)."""
from __future__ import annotations

import os
import subprocess

from harness import REPO

SCRIPT = REPO / "cluster" / "build.sh"
NAMES = ("crictl", "etcd", "kubernetes", "multus")


def _run(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CNFPERF_CLUSTER_BUILDS": str(tmp_path / "prefix"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          timeout=60)


def test_check_says_each_build_is_not_built_and_fails(tmp_path):
    done = _run(tmp_path, "--check")
    assert done.returncode == 1, done
    assert done.stdout.splitlines() == [f"cluster: {n}: not built" for n in NAMES]
    assert not (tmp_path / "prefix").exists() and not (tmp_path / "cache").exists()


def test_an_unknown_name_or_a_named_prune_is_refused_before_anything_is_made(tmp_path):
    for args, said in ((["etcdd"], "unknown build etcdd (one of: crictl etcd kubernetes multus)"),
                       (["--prune", "etcd"], "--prune takes no NAME")):
        done = _run(tmp_path, *args)
        assert (done.returncode, done.stderr) == (2, f"cluster: {said}\n"), done
    assert not (tmp_path / "prefix").exists() and not (tmp_path / "cache").exists()


def test_without_go_nothing_is_built_in_one_line_or_it_fails_under_ci(tmp_path, monkeypatch):
    monkeypatch.setenv("GO", str(tmp_path / "no-go"))
    monkeypatch.delenv("CI", raising=False)
    done = _run(tmp_path, "etcd")
    assert done.returncode == 0, done
    assert done.stdout.splitlines()[-1].startswith("cluster: etcd: skipped: no Go toolchain")
    assert not (tmp_path / "prefix" / "etcd").exists()
    monkeypatch.setenv("CI", "true")
    done = _run(tmp_path, "etcd")
    assert done.returncode == 2 and "CI=true: not skipped" in done.stderr, done
