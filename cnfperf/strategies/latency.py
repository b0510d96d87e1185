"""Latency at load: after a search, a trial at each load of the scenario's
`latency_at`, the search's lowest load (min) and fractions of the rate it
found (for MLRsearch, the last goal's: the one that allows most loss, the PDR),
as FD.io CSIT measures latency at 0, 10, 50 and 90 % of its PDR."""
from __future__ import annotations

from typing import Callable


def loads(text: str) -> list[tuple[str, float]]:
    """`latency_at` read: [(as written, fraction)], min as 0; ValueError("latency_at: why")."""
    if text.strip().lower() == "none":
        return []
    out = []
    for part in (p.strip().lower() for p in text.split("+")):
        if part == "min":
            out.append(("min", 0.0))
            continue
        try:
            pct = float(part.removesuffix("%"))
        except ValueError:
            raise ValueError(f"latency_at: {part!r} is neither min nor a percentage "
                             "(min+10%+50%+90%, or none)") from None
        if not part.endswith("%") or not 0 < pct <= 100:
            raise ValueError(f"latency_at: {part!r} must be a percentage in (0, 100] "
                             "of the rate found, like 50%")
        out.append((part, pct / 100))
    return out


def run(text: str, lowest: float, found: float | None, what: str,
        trial: Callable[[float, float], object], say: Callable[[str], None]) -> None:
    """`trial(pps, fraction)` at each load of `text`; `found` is the rate the
    search found (None: none, and so no latency trials), `what` the goal it is."""
    wanted = loads(text)
    if wanted and not found:
        say(f"no latency trials: the search found no rate for {what}")
        return
    for _, fraction in wanted:
        trial(lowest if fraction == 0 else fraction * found, fraction)
