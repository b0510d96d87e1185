"""How an engine waits for packets (`poll`, the engine's --poll): each mode with
what cnfperf plans by, so that no module compares a mode's name.

The engine's own table is engine/src/core/poll.c (struct poll_props), and
`cnfperf-engine --describe` prints it; this copy is needed before any engine
runs (the `poll` field's choices, the docs), and tests/unit/test_engine_describe.py
holds the two equal, name by name and property by property.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PollMode:
    name: str
    spins: bool       # an empty poll may be followed by another at once: a busy poller
    sleeps: bool      # sleeps or waits when idle; senders sleep between bursts
    paced: bool       # follows the traffic's pace, seeded by a receiver's --rate
    interrupts: bool  # waits for the ports' Rx interrupts: a port needs them


POLL_MODES = (
    # spin: lowest latency, a core each
    PollMode("busy", spins=True, sleeps=False, paced=False, interrupts=False),
    # sleep until shortly before the next packet is due at the traffic's pace,
    # then wait for it
    PollMode("adaptive", spins=True, sleeps=True, paced=True, interrupts=False),
    # sleep until a packet arrives (blocking sockets, DPDK Rx interrupts)
    PollMode("interrupt", spins=False, sleeps=True, paced=False, interrupts=True),
)
POLLS = tuple(m.name for m in POLL_MODES)
BUSY, ADAPTIVE, INTERRUPT = POLLS
# What the engine does without --poll (its options' default): argv leaves it out.
ENGINE_DEFAULT = BUSY

_BY_NAME = {m.name: m for m in POLL_MODES}


def mode(name: str) -> PollMode:
    """The mode of a `poll` value (the scenario has validated it)."""
    return _BY_NAME[name]
