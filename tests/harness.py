"""What tests share besides fixtures: where things are, how to run the real
command line, and what a test may require of the host.

A module with a name of its own, not conftest.py: every test directory may
have a conftest.py, and `from conftest import` picks whichever came first.

Missing tools: `make deps` installs every tool a test needs (cnfperf/host/tools.py
names their Debian packages), `make switches` what is built from source
(cnfperf/host/builds.py). Where one is missing, a test skips naming the package or
the build, except under CI=true, where it fails: a green CI run must not hide a
test that never ran. Skips remain for limits of the host only (no root, fewer
cores than a test needs), each with its reason in pytest's summary (-ra).
"""
from __future__ import annotations

import functools
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Callable, Sequence

import pytest

from cnfperf.host import builds, tools
from cnfperf.results.model import STALL_MARK, stalls
from cnfperf.run import declared

REPO = Path(__file__).resolve().parents[1]
ENGINE = REPO / "engine" / "build" / "cnfperf-engine"
EXIT_BUSY = 3        # cnfperf's exit code while another run holds the host lock


def strict() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def missing(why: str) -> None:
    """A test cannot run because something `make deps`/`make build` provides is
    missing: a failure under CI=true, a skip naming it elsewhere."""
    if strict():
        pytest.fail(f"{why} (CI=true: a missing tool or build fails the test)", pytrace=False)
    pytest.skip(why)


def require(*names: str) -> None:
    """Tools (cnfperf/host/tools.py) and builds from source (the plugins declare
    them, run/declared.py collects them: `make switches` makes them), by name."""
    made = builds_by_name()
    problems = tools.problems(*(n for n in names if n not in made), table=declared.tools()) + \
        builds.problems(*(made[n] for n in names if n in made))
    if problems:
        missing("; ".join(problems))


def require_cluster() -> None:
    """What the test cluster needs (`make cluster`'s builds, containerd, the
    CNI plugins, two cores: cluster/node.problems)."""
    from cnfperf.cluster import node
    if problems := node.problems():
        missing("; ".join(problems))


def builds_by_name() -> dict[str, builds.Build]:
    """Every build from source a plugin declares, by name."""
    return {b.name: b for b in declared.builds()}


def engine() -> Path:
    """The built engine (`make build`)."""
    if not ENGINE.exists():
        missing(f"engine not built ({ENGINE.relative_to(REPO)}; make build)")
    return ENGINE


@functools.lru_cache(maxsize=None)
def engine_apis(binary: Path) -> tuple[str, ...]:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=10)
    return tuple(json.loads(out.stdout)["apis"])


def require_api(binary: Path, api: str) -> None:
    if api not in engine_apis(binary):
        missing(f"api {api}: {tools.engine_without(api)}")


def lock_holder() -> str | None:
    """Who holds the host lock now ('run X (pid N)'), or None. Read, not taken:
    a probe's lock would refuse someone else's run for its instant. The file
    outlives a killed holder, so its pid must still be a live cnfperf."""
    from cnfperf.host.lock import LOCK_PATH

    try:
        holder = json.loads(LOCK_PATH.read_text() or "{}")
        cmdline = Path(f"/proc/{int(holder['pid'])}/cmdline").read_bytes()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if b"cnfperf" not in cmdline:
        return None
    command = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    return f"run {holder.get('run', '?')} (pid {holder['pid']}: {command})"


def not_busy(done: subprocess.CompletedProcess | subprocess.Popen, what: str = "cnfperf") -> None:
    """A test's run refused because another run holds the host fails at once,
    naming the holder: waiting for it would hide minutes in the suite's time."""
    if done.returncode == EXIT_BUSY:
        pytest.fail(f"{what}: exit 3, the host lock is held by "
                    f"{lock_holder() or 'a run that has ended since'}", pytrace=False)


def cores(n: int) -> list[int]:
    """n usable cores, or a skip: too few cores is a limit of the host."""
    usable = sorted(os.sched_getaffinity(0))
    if len(usable) < n:
        pytest.skip(f"needs {n} cores, this host has {len(usable)}")
    return usable[:n]


def cnfperf_env(results: Path | None = None, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("CNFPERF_RESULTS", None)
    if results is not None:
        env["CNFPERF_RESULTS"] = str(results)
    env.update(extra)
    return env


def cnfperf_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "cnfperf", *args]


def scenarios(path: Path | None = None, flags: dict | None = None) -> list:
    """The validated scenarios of a file and flags, as `cnfperf run` plans them."""
    from cnfperf.run.checks import load_plan

    return load_plan(path, flags).scenarios


def one_pair(rx_pps: float, p50_ns: float | None = 40e3, p99_ns: float | None = 200e3):
    """A PointResult of one pair that sent and received rx_pps frames in 1 s, its
    one-way latency p50 and p99 (None: none measured): what a store's tests add."""
    from cnfperf.results import model

    lat = None if p99_ns is None else model.Latency("one_way", 1000,
                                                    {"p50": p50_ns, "p99": p99_ns}, [])
    pair = model.PairResult(0, 0.0, int(rx_pps), int(rx_pps), 0, 0.0, rx_pps, rx_pps,
                            rx_pps * 512, 0, 0, lat)
    return model.PointResult([pair], model.total([pair]), [], {})


def placed_pair(**fields):
    """(scenario, its first pair as placed, each of the pair's ends attached to
    an interface of its own name) of one scenario given by fields."""
    from cnfperf import nfs
    from cnfperf.dataplanes.base import Attachment
    from cnfperf.plan import place

    [s] = scenarios(None, fields)
    pair = place(s, "1a2b", host_cpus=(0, 1), nf=nfs.find(s.nf)).pairs[0]
    return s, pair, {ep.name: Attachment(mac=ep.mac, iface=ep.name) for ep in pair.endpoints}


def option(args: list[str], name: str) -> str | None:
    """The value after `name` on a command line, None without it."""
    return args[args.index(name) + 1] if name in args else None


def older_store(directory: Path, version: int) -> sqlite3.Connection:
    """A results database as cnfperf left it at schema `version`, with one done
    run 'beef': the caller adds its points, commits and closes, then opens it
    with Store (which migrates it)."""
    from cnfperf.results.store import _MIGRATIONS, _functions
    db = sqlite3.connect(directory / "cnfperf.db")
    _functions(db)      # what its steps call (hdrh_blob)
    for script in _MIGRATIONS[:version]:
        db.executescript(script)
    db.execute(f"PRAGMA user_version = {version}")
    db.execute("INSERT INTO runs (id, started, status) VALUES ('beef', 1, 'done')")
    return db


def migrated_run(directory: Path, version: int, *inserts: str) -> dict:
    """Run 'beef' as Store reads it after migrating a database left at schema
    `version` (older_store) with the rows the `inserts` add."""
    from cnfperf.results.store import Store
    db = older_store(directory, version)
    for sql in inserts:
        db.execute(sql)
    db.commit()
    db.close()
    store = Store(directory)
    try:
        return store.run("beef")
    finally:
        store.close()


def inventory(directory: Path, wires: int) -> Path:
    """hosts.toml naming one other host, `dut` (an address nothing answers at,
    a key nothing logs in with), and `wires` wires between it and local: what
    checks ask of a point across hosts, without connecting."""
    key = directory / "key"
    key.write_text("not a real key: nothing connects here\n")
    key.chmod(0o600)
    (directory / "known_hosts").write_text("")
    cables = "".join(f'[[wire]]\na = "local:tw{i}a"\nb = "dut:tw{i}b"\n\n' for i in range(wires))
    path = directory / "hosts.toml"
    path.write_text(f'[[host]]\nname = "dut"\naddress = "192.0.2.1"\nkey = "{key}"\n'
                    f'known_hosts = "{directory / "known_hosts"}"\n\n{cables}')
    return path


GENERATORS = ("send", "client", "tester")


def skipped(point: dict, pair: int) -> int:
    """Frames a pair's generator left out of its schedule in the window: on a
    shared host a stall (the core taken away for milliseconds) puts it further
    behind than its pacer catches up, and the rest is forgiven and counted
    (the engine summary's tx_skipped), not sent in a flood."""
    return sum(int(e["summary"].get("tx_skipped") or 0) for e in _generators(point, pair))


# What assert_sent holds a sender to. Its frames sent: rate × duration within
# SENT_TOLERANCE (the window's edges: the first tick's burst, a catch-up of up
# to 4 bursts, a measured window a little longer or shorter than asked).
# Separately, the frames its schedule skipped (stalls: skipped()), which it
# never sent: at most SKIPPED_SHARE of them, or the point's
# generator_tolerance where that is larger, and one burst (a schedule's grain):
# the rule the product judges a trial by (strategies/truth.py). A larger share
# the generator's own stalls explain (the engine measured its loop losing its
# core for that share of the window: stall_share) is this host's, not the
# generator's: on a shared 2-core VM a 1-s window now and then loses 20-60 ms,
# and under the hypervisor's steal 100 ms. Past the product's mark (STALL_MARK)
# the point must carry the product's warning (STALL_WARNING) and its sender is
# held to its whole schedule (sent + skipped) and to sending at least
# CONTENDED_SENT_SHARE of it, as a contended one (below). Skipped
# frames are a shortfall, never frames sent.
SENT_TOLERANCE = 0.1
SKIPPED_SHARE = 0.02
# `paced = False`: the sender or its frames are inside an emulated guest (TCG
# on this host): the emulator takes the guest's core away for tens of
# milliseconds and its NIC's queues refuse sends while it is behind (the host's
# performance, not cnfperf's). Such a sender still covers its schedule (sent +
# skipped within SENT_TOLERANCE of it), but sends at least EMULATED_SENT_SHARE
# of it only: a quarter, what the slowest emulated path here (a VM tester end
# on its kernel's NICs) keeps; one that sent nothing, or on another guest's
# NIC, still fails.
EMULATED_SENT_SHARE = 0.25
# A point with more busy pollers than cores (its `pollers` over `point_cores`)
# is contended by design, and the product says so on the point ("N busy
# pollers share M cores"): its senders lose their cores for whole time slices
# (5 pollers on 2 cores: 50-70 % of each window here) and their pacers skip.
# Such a sender is held to its whole schedule (sent + skipped within
# SENT_TOLERANCE) and to sending at least CONTENDED_SENT_SHARE of it; the point
# must carry the product's warning. A point whose pollers fit is held to
# SKIPPED_SHARE as above.
CONTENDED_SENT_SHARE = 0.5
CONTENDED_WARNING = "busy pollers share"
STALL_WARNING = "marks the point"


def skipped_bound(point: dict, pair: int, frames: float) -> float:
    """The most frames a pair's generator may skip in a point that asked for
    `frames` of it: SKIPPED_SHARE, the point's generator_tolerance, or the share
    of its window its own stalls took (stalled()), and one burst."""
    tolerance = (point.get("scenario") or {}).get("generator_tolerance") or 0.0
    bursts = [int(e["summary"].get("burst") or 1) for e in _generators(point, pair)]
    share = max(SKIPPED_SHARE, tolerance, stalled(point, pair))
    return share * frames + max(bursts, default=1)


def stalled(point: dict, pair: int) -> float:
    """The most of its window a pair's generator lost to stalls (the engine's
    stall_share), 0 when none was measured."""
    return max((e.get("stall_share") or 0.0 for e in _generators(point, pair)), default=0.0)


def _generators(point: dict, pair: int) -> list[dict]:
    return [e for e in point["endpoints"]
            if e["pair"] == pair and e["role"] in GENERATORS and e.get("summary")]


def contended(point: dict) -> bool:
    """More busy pollers than cores: the point is contended by design."""
    return (point.get("pollers") or 0) > (point.get("point_cores") or 0) > 0


def assert_sent(point: dict, pair: dict, frames: float, paced: bool = True) -> None:
    """A pair's sender sent the `frames` its rate and duration ask for (within
    SENT_TOLERANCE) and skipped few of its schedule (skipped_bound): a sender
    that sent a part and forgave the rest fails, saying both. `paced = False`:
    into or from an emulated guest (EMULATED_SENT_SHARE); a contended point
    (contended(): CONTENDED_SENT_SHARE, and the product's warning on it)."""
    who = f"pair {pair['pair']}"
    if paced and contended(point):
        assert any(CONTENDED_WARNING in w for w in point.get("warnings") or ()), \
            (f"{point['pollers']} busy pollers on {point['point_cores']} cores, and no "
             f"warning says so: {point.get('warnings')}")
        _held(pair["sent"], skipped(point, pair["pair"]), frames, 0, False,
              f"{who} (contended: {point['pollers']} busy pollers on {point['point_cores']} "
              "cores)", CONTENDED_SENT_SHARE)
        return
    lost = stalled(point, pair["pair"])
    marked = paced and lost > STALL_MARK
    if marked:
        assert any(STALL_WARNING in w for w in point.get("warnings") or ()), \
            (f"pair {pair['pair']}'s generator lost {100 * lost:.1f} % of its window to "
             f"stalls, and no warning marks the point: {point.get('warnings')}")
    _held(pair["sent"], skipped(point, pair["pair"]), frames,
          skipped_bound(point, pair["pair"], frames), paced,
          f"{who} (its generator stalled {100 * lost:.1f} % of its window)", whole=marked)


# --- a switch's counters against its ends' ----------------------------------------

def zero_loss(point: dict, frames: float) -> dict:
    """The point's one pair: its sender sent the `frames` asked (assert_sent: a
    stall on a contended host may skip a few of its schedule) and lost none."""
    [pair] = point["per_pair"]
    assert_sent(point, pair, frames)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
    return pair


def sent_all(summary: dict) -> int:
    """Every frame an end sent, the warm-up's too (a switch counts them)."""
    return summary["tx_packets"] + summary["warmup_tx_packets"]


def received_all(summary: dict) -> int:
    """Every frame an end received, the warm-up's too."""
    return summary["rx_packets"] + summary["warmup_packets"]


def no_drops(counters: dict) -> None:
    """No port of the switch dropped a frame either way."""
    assert all(c["rx_dropped"] == c["tx_dropped"] == 0 for c in counters.values()), counters


def assert_summary_sent(summary: dict, frames: float) -> None:
    """assert_sent for an engine's own summary (a sender no point stores, such
    as a noise pair's): its tx_packets and tx_skipped, held as a point's
    sender is to the stalls the engine measured (its `stalls` over its
    window): it may skip what they explain, and past STALL_MARK it is held to
    its whole schedule."""
    lost = summary_stalled(summary)
    bound = max(SKIPPED_SHARE, lost) * frames + int(summary.get("burst") or 1)
    _held(summary["tx_packets"], int(summary.get("tx_skipped") or 0), frames, bound, True,
          f"{summary.get('role', 'sender')} (stalled {100 * lost:.1f} % of its window)",
          whole=lost > STALL_MARK)


def summary_stalled(summary: dict) -> float:
    """The share of its window an engine's polling loops lost to stalls, as
    the product reads it (results.model.stalls); 0 when it measured none."""
    return stalls(summary, float(summary.get("duration_s") or 0))["stall_share"] or 0.0


def _held(sent: int, skips: int, frames: float, bound: float, paced: bool, who: str,
          share: float = EMULATED_SENT_SHARE, whole: bool = False) -> None:
    said = (f"{who}: sent {sent}, skipped {skips} of {frames:g} frames asked "
            f"for ({100 * sent / frames:.1f} % sent, {100 * skips / frames:.1f} % skipped)")
    high = (1 + SENT_TOLERANCE) * frames
    if paced:
        low = (1 - SENT_TOLERANCE) * frames
        # a marked point's sender: its schedule whole, what it sent short by its
        # skips, and at least what a contended one sends
        assert low <= sent + (skips if whole else 0) and sent <= high, \
            f"{said}: sent not within {SENT_TOLERANCE:.0%} of the frames asked for"
        assert not whole or sent >= CONTENDED_SENT_SHARE * frames, \
            f"{said}: it sent less than {CONTENDED_SENT_SHARE:.0%}"
        assert skips <= bound, (f"{said}: more than the {bound:g} frames a sender may skip "
                                "(stalls took its core away: the generator did not offer the "
                                "load, a trial strategies/truth.py calls invalid)")
    else:
        assert share * frames <= sent <= high, f"{said}: it sent less than {share:.0%}"
        assert (1 - SENT_TOLERANCE) * frames <= sent + skips <= high, \
            f"{said}: its schedule (sent + skipped) not within {SENT_TOLERANCE:.0%} of it"


def killed_while_measuring(results: Path, run_args: list[str], measuring: Callable[[], None],
                           timeout: float = 300, after: Sequence[str] = ()) -> None:
    """`cnfperf run RUN_ARGS` SIGKILLed once it says it is measuring (after
    the progress lines that say each of `after`, in turn, and `measuring()`
    has looked at what it made), then `cnfperf cleanup`, which must succeed:
    what the kill left is the cleanup's to remove."""
    proc = subprocess.Popen(cnfperf_argv("run", *run_args), cwd=REPO, env=cnfperf_env(results),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + timeout
        for said in (*after, "measuring"):
            while said not in proc.stderr.readline():
                assert proc.poll() is None and time.monotonic() < deadline, \
                    f"the run never said {said!r}"
        measuring()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc.stderr.close()
    done = subprocess.run(cnfperf_argv("cleanup"), cwd=REPO, env=cnfperf_env(results),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def free_port() -> int:
    """A TCP port nothing listens on now (for --metrics-port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port: int) -> dict[str, float]:
    """The metrics endpoint's samples (name{labels} -> value); {} while it does not answer."""
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read()
    except OSError:
        return {}
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.decode().splitlines() if line and not line.startswith("#")}
