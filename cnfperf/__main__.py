"""The entry point (`cnfperf`, `python -m cnfperf`): signals first, then the imports.

A run started as a script's background job (`cnfperf run … &`, a CI step) inherits
SIGINT ignored, and Python leaves an ignored SIGINT ignored: without this, a SIGINT
would be lost until the run installs its own handlers, a second or more later on a
busy host, after the imports below. Until the command line takes over nothing
exists to tear down, so a SIGINT then leaves at once, as the signal's exit code."""
import os
import signal
import sys


def _leave(signum: int, _frame: object) -> None:
    os.write(2, b"cnfperf: interrupted\n")
    os._exit(128 + signum)


def main() -> int:
    signal.signal(signal.SIGINT, _leave)
    from cnfperf import cli   # the heavy part: every layer's modules

    # From here the command line's own handling: KeyboardInterrupt, then the
    # run's handlers (run/teardown.py), which tear down what exists.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
