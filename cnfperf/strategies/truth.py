"""Generator truth: did a trial's senders offer the load they were asked for?

FD.io CSIT fails a trial whose generator needed longer than asked ("duration
stretching") rather than trust it. cnfperf's senders stop on time and forgive
what a stall made them miss (engine/README.md, the pacer), so a shortfall shows
as frames the schedule held that never left. Whose shortfall it is decides
what it means:
- the senders' ports refused frames (a full ring or socket): the device behind
  them could not take the load; the frames never sent are the device's loss;
- no port refused any: the generator itself fell behind (its core was taken
  away). Beyond the scenario's generator_tolerance the trial is invalid: it did
  not offer the load it stands for, and its loss, whatever it is, is not the
  device's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cnfperf.results.model import PointResult

SENDERS = ("send", "client", "tester")


@dataclass
class Truth:
    intended: int        # frames the load asked for over the duration, all pairs
    sent: int
    refused: int         # sends the ports refused (retried: engine/README.md)
    skipped: int         # frames the senders' schedule forgave after stalls
    stretch: float       # the senders' longest measured window over the duration, - 1
    valid: bool
    why: str             # why not valid ("" when valid)

    @property
    def counted(self) -> int:
        """The frames the search counts the trial's loss against: the intended
        ones when the device refused what was not sent (or the generator's
        shortfall cannot be trusted), else the ones sent."""
        return self.intended if self.refused or not self.valid else self.sent


def truth(r: PointResult, pps: float, duration: float, burst: int = 1,
          tolerance: float = 0.01) -> Truth:
    """The truth of a trial at `pps` per pair for `duration` seconds in bursts
    of `burst` (0 pps: unpaced, nothing was intended but what left), whose
    senders may miss `tolerance` of the frames (and of the duration) on their
    own. A sender sends whole bursts, so up to one burst short is its
    schedule's grain, not a shortfall."""
    senders = [m for m in r.endpoints if m.role in SENDERS]
    sent = sum(m.tx_packets for m in senders)
    refused = sum(int(m.summary.get("tx_refused") or 0) for m in senders)
    skipped = sum(int(m.summary.get("tx_skipped") or 0) for m in senders)
    window = max((m.seconds for m in senders), default=0.0)
    stretch = window / duration - 1 if duration > 0 else 0.0
    intended = round(pps * duration) * len(senders) if pps > 0 else sent
    missing = intended - sent - burst * len(senders)
    short = missing / intended if intended else 0.0
    why = ""
    if stretch > tolerance:
        why = f"the senders took {window:.3f} s to send a {duration:g} s trial"
    elif short > tolerance and not refused:
        why = (f"the senders sent {100 * sent / intended:.1f}% of the {intended} frames asked "
               "for, with no port refusing any: the generator fell behind")
    return Truth(intended, sent, refused, skipped, stretch, not why, why)
