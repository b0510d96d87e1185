"""cnfperf: how fast can network functions in Linux containers talk to each other?"""

__version__ = "0.1.0"

# Every run's resources (netns, links, containers, files) start with this, so that
# `cnfperf cleanup` can find what a killed run left without any state of its own.
PREFIX = "cnfp"


class UserError(Exception):
    """Bad input: reported as one line naming the field, exit code 2, before anything exists."""

    def __init__(self, field: str, why: str):
        super().__init__(f"{field}: {why}")
        self.field = field
        self.why = why


class SystemFailure(Exception):
    """The host or a component failed: exit code 1 after teardown, saying what failed."""
