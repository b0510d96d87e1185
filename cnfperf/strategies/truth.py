"""Generator truth: did a trial's senders offer the load they were asked for?

FD.io CSIT fails a trial whose generator needed longer than asked ("duration
stretching") rather than trust it. cnfperf's senders stop on time and forgive
what a stall made them miss (engine/README.md, the pacer), so a shortfall shows
as frames the schedule held that never left. Whose shortfall it is decides
what it means:
- as many as the senders' ports refused (a full ring or socket: each refusal
  held a frame back a turn) are the device's: it could not take the load, and
  those frames count as its loss;
- the rest are the generator's own: it fell behind (its core was taken away).
  Beyond the scenario's generator_tolerance (and one burst, a schedule's grain)
  the trial is invalid: it did not offer the load it stands for. The frames it
  never sent are not the device's loss either: its loss is still counted
  against what left, and a result that stands on such trials says so
  (generator_limited). Counting them as lost instead (MLRsearch's own default,
  to steer below "irregular" loads) fails where the shortfall does not shrink
  with the load: a host whose pollers fill every core stalls them for a slice
  now and then at any load, and the search would sink to its floor.
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
        """The frames the search counts the trial's loss against: those sent and
        those the device refused (never those the generator missed on its own)."""
        return self.sent + min(max(0, self.intended - self.sent), self.refused)

    def loss(self, lost: int) -> float:
        """The trial's loss ratio as every search counts it: the frames the
        device lost (`lost` of those sent) and those it refused, against
        `counted`."""
        if self.counted <= 0:
            return 0.0
        return max(0.0, 1 - (self.sent - lost) / self.counted)


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
    unsent = max(0, intended - sent)
    own = unsent - min(unsent, refused) - burst * len(senders)
    short = own / intended if intended else 0.0
    why = ""
    if stretch > tolerance:
        why = f"the senders took {window:.3f} s to send a {duration:g} s trial"
    elif short > tolerance:
        why = (f"the senders sent {100 * sent / intended:.1f}% of the {intended} frames asked "
               f"for, their ports refused {refused}: the generator fell behind")
    return Truth(intended, sent, refused, skipped, stretch, not why, why)
