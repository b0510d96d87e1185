"""Commands and processes (cnfperf/host/system.py): one error type, one line saying
what was done, the command and what it said; processes as /proc shows them."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cnfperf import SystemFailure
from cnfperf.host.system import (CommandFailed, first_error_line, mounts, proc_stat, run,
                            signal_all, spawn, wait_gone, _unescape)


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_output_comes_back():
    assert run(_python("print('hello')")) == "hello\n"


def test_a_failure_is_one_line_naming_what_the_command_and_its_last_words():
    with pytest.raises(CommandFailed) as err:
        run(_python("import sys; sys.stderr.write('noise\\nlast words\\n'); sys.exit(3)"),
            what="say goodbye")
    message = str(err.value)
    assert message.startswith("say goodbye: `") and message.endswith("` failed: last words")
    assert "\n" not in message
    assert isinstance(err.value, SystemFailure), "exit code 1, like every host failure"
    assert err.value.returncode == 3 and "noise" in err.value.stderr


def test_silence_is_reported_by_its_exit_code():
    with pytest.raises(CommandFailed, match="failed: exit code 2, no output"):
        run(_python("raise SystemExit(2)"))


def test_failure_can_be_accepted():
    assert run(_python("print('partial'); raise SystemExit(1)"), check=False) == "partial\n"


def test_a_missing_tool_is_named_with_its_package(tmp_path):
    with pytest.raises(CommandFailed, match=r"^capture: trafgen not found \(Debian package "
                                            r"netsniff-ng\)$"):
        run(["trafgen", "--version"], what="capture", env={"PATH": "/nonexistent"})
    with pytest.raises(CommandFailed, match="could not be started"):
        run([str(tmp_path / "tool")], check=False)


def test_a_command_that_does_not_finish_is_stopped():
    with pytest.raises(CommandFailed, match=r"`sleep 5` did not finish in 0.2 s"):
        run(["sleep", "5"], timeout=0.2)


def test_a_log_file_takes_the_output(tmp_path):
    log = tmp_path / "out.log"
    with pytest.raises(CommandFailed, match="failed: it went wrong"):
        run(_python("import sys; print('it went wrong', file=sys.stderr); sys.exit(1)"),
            log=log)
    assert log.read_text() == "it went wrong\n"


def test_the_logfmt_message_is_the_error_line():
    stderr = ('time="2024-01-01T00:00:00Z" level=warning msg="deprecated"\n'
              'time="2024-01-01T00:00:00Z" level=error msg="container \\"x\\" does not exist"\n')
    assert first_error_line(stderr) == 'container "x" does not exist'
    assert first_error_line("plain failure\n") == "plain failure"
    assert first_error_line("") == "(no error output)"


def test_a_process_that_cannot_start_raises_the_same_error(tmp_path):
    engine = str(tmp_path / "engine")
    with pytest.raises(CommandFailed, match=f"^engine: `{engine}` could not be started"):
        spawn([engine], what="engine")


def test_a_process_is_known_by_state_and_start_time_until_reaped():
    child = spawn(["sleep", "30"], cpus=[min(os.sched_getaffinity(0))],
                  stdout=subprocess.DEVNULL)
    stat = proc_stat(child.pid)
    assert stat is not None and stat.running and stat.start_time.isdigit()
    assert os.sched_getaffinity(child.pid) == {min(os.sched_getaffinity(0))}
    signal_all([child.pid], 9)
    assert wait_gone([child.pid], 5), "a zombie counts as gone"
    assert proc_stat(child.pid).state == "Z"
    child.wait()
    assert proc_stat(child.pid) is None
    signal_all([child.pid], 9)   # gone: no error


def test_mount_points_are_unescaped():
    assert _unescape("/run/a\\040b\\011c") == "/run/a b\tc"
    assert any(m.point == "/" for m in mounts())


def test_a_process_started_by_a_background_cnfperf_still_stops_on_sigint():
    """A cnfperf started by `… &` in a script has SIGINT ignored; what it starts
    does not inherit that, so a shell that traps INT (a cmd: NF) stops on it."""
    import signal
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)   # as a background job starts
    try:
        child = spawn(["sh", "-c", 'trap "echo stopped; exit 0" INT; echo up; '
                                   'while :; do sleep 0.05; done'],
                      stdout=subprocess.PIPE)
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        assert child.stdout.readline() == b"up\n"
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=5) == 0 and child.stdout.read() == b"stopped\n"
    finally:
        child.kill()
        child.wait()
