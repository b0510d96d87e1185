"""Packet rates: one type from the command line to the engine's argv and back.

A rate is written 1000, 2.5e6, "500k", "2.5M" or "1Mpps" (k = 1e3, M = 1e6,
G = 1e9); 0 means as fast as possible. The offered rate may instead be a
search for the rates of one or more loss ratios, its goals: `ndr` (no loss),
`pdr:X%` (at most X% loss; `pdr` alone: 0.5%, FD.io CSIT's PDR), several joined
by + (`ndr+pdr`: both from one search).
The same words hold in the engine's JSON and in the store: `offered_pps` is the
rate asked for (RFC 2544's offered load), `tx_pps` what really left, `rx_pps`
what arrived.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

DEFAULT_PDR_PERCENT = 0.5
_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}
_NUMBER_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmg]?)(?:pps)?\s*$", re.I)
EXAMPLES = "e.g. 1000, 500k, 2.5M"


@dataclass(frozen=True)
class Rate:
    """A fixed rate in packets per second (0 = as fast as possible) or a search."""

    kind: str = "pps"       # pps | search
    pps: float = 0.0
    losses: tuple[float, ...] = ()   # a search's goals: the loss ratios it finds rates for

    @property
    def is_search(self) -> bool:
        return self.kind != "pps"

    @property
    def loss(self) -> float:
        """The first goal's loss ratio (a one-goal search's: ndr 0)."""
        return self.losses[0] if self.losses else 0.0

    def value(self) -> int | float | str:
        """The plain JSON value a point carries and is keyed by: pps as a number,
        a search as its canonical text ("ndr", "pdr:0.5%", "ndr+pdr:0.5%")."""
        if self.kind == "pps":
            return tidy(self.pps)
        return "+".join(goal_name(loss) for loss in self.losses)

    def argv(self) -> str:
        """The engine's --rate, as exact as the engine reads it (a decimal; a
        search's low trials are below 1 pps at times, and must not round to 0,
        which is unpaced)."""
        return f"{self.pps:.10g}"

    def __str__(self) -> str:
        return show(self.value())


def fixed(pps: float) -> Rate:
    return Rate("pps", pps=float(pps))


def goal_name(loss: float) -> str:
    """A goal as it is written: ndr, pdr:0.5%."""
    return "ndr" if loss == 0 else f"pdr:{tidy(round(loss * 100, 9))}%"


def parse(text: Any, field: str = "rate", search: bool = True, zero: str = "") -> Rate:
    """A Rate from what a user wrote; ValueError("field: why") otherwise.
    `search=False` for fields that take only a fixed rate; `zero` is the word
    that 0 is shown as ("max", "none"), read back as 0."""
    if isinstance(text, Rate):
        rate = text
    elif isinstance(text, bool):
        raise ValueError(f"{field}: {text!r} is not a rate")
    elif isinstance(text, (int, float)):
        rate = _fixed(float(text), text, field)
    elif zero and str(text).strip().lower() == zero:
        rate = fixed(0)
    else:
        rate = _parse_text(str(text).strip().lower(), text, field, search)
    if rate.is_search and not search:
        raise ValueError(f"{field}: {text!r} is a search, not a fixed rate in packets per second")
    return rate


def _parse_text(s: str, text: Any, field: str, search: bool) -> Rate:
    goals = [g.strip() for g in s.split("+")]
    if all(g == "ndr" or g.startswith("pdr") for g in goals):
        losses = [_goal(g, text, field) for g in goals]
        if len(set(losses)) < len(losses):
            raise ValueError(f"{field}: '{text}' names a loss ratio twice")
        return Rate("search", losses=tuple(sorted(losses)))
    return _fixed(number(s, text, field, search), text, field)


def _goal(g: str, text: Any, field: str) -> float:
    """A goal's loss ratio: ndr 0, pdr:X% X/100."""
    if g == "ndr":
        return 0.0
    if g != "pdr" and not g.startswith("pdr:"):
        raise ValueError(f"{field}: '{text}' is not ndr, pdr or pdr:X% (goals joined by +)")
    pct_text = g[4:].rstrip("%").strip() if g != "pdr" else str(DEFAULT_PDR_PERCENT)
    try:
        pct = float(pct_text)
    except ValueError:
        raise ValueError(f"{field}: '{text}' is not pdr:X% (X a loss percentage)") from None
    if not 0 < pct < 100:
        raise ValueError(f"{field}: '{text}': the pdr loss must be between 0 and 100%")
    return pct / 100


def _fixed(pps: float, text: Any, field: str) -> Rate:
    if not math.isfinite(pps) or pps < 0:
        raise ValueError(f"{field}: '{text}' must be a rate >= 0 (0 = as fast as possible)")
    return fixed(pps)


def number(s: str, original: Any, field: str, search: bool = True) -> float:
    """A number with an optional k/M/G suffix (and "pps"), exactly: Decimal, so
    that 2.5M is 2500000 and not 2499999.9999."""
    m = _NUMBER_RE.match(s)
    if not m:
        raise ValueError(f"{field}: '{original}' is not a rate ({EXAMPLES}"
                         + (", ndr, pdr:0.5%, ndr+pdr)" if search else ")"))
    return float(Decimal(m.group(1)) * _SUFFIX[m.group(2).lower()])


def tidy(x: float | int) -> int | float:
    """Integral floats become ints so that 64 and 64.0 hash alike."""
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x


def si(x: float) -> str:
    """The one k/M/G formatter: 500k, 2.5M, 14.84M (4 significant digits)."""
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.4g}{suffix}"
    return f"{x:.4g}"


def show(value: Any) -> str:
    """An offered rate as people read it: a search as its text, 0 as "max", else si()."""
    if isinstance(value, Rate):
        value = value.value()
    if isinstance(value, str):
        return value
    if not value:
        return "max"
    return si(float(value))
