"""One colour and one marker per data plane, and per network function kind, the
same in every plot of every report.

A data plane's style is the number it declares (DataPlane.style, below
PLANE_STYLES), an NF kind's the number its kind declares (NfKind.style, below
KIND_STYLES), each stored with every point (switch_facts, nf_facts): a report
reads them from its own points (learn: a Styles), never from today's data
planes and kinds, nor from another report's, so OVS is the same indigo X
beside veth as beside VPP, in an old run as in a new one, and a data plane or
NF kind added later takes a number of its own without moving the others.

The i-th style is COLOURS[i mod 14] with MARKERS[i mod 11]: 14 and 11 share no
factor, so the first 154 styles are distinct pairs and the first 14 distinct
colours. The colours are Okabe and Ito's and Paul Tol's colour-blind-safe
qualitative sets (yellows left out: they vanish on white); the marker tells
apart what a colour-blind reader might still confuse. Data plane n wears the
n-th pair, NF kind n the n-th counted down from the last of the 154, so a kind
never wears a data plane's pair; a name that has no number (a cmd: NF, a data
plane of a run stored without its facts) hashes into the pairs left between
them.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

COLOURS = (
    "#0072B2",  # blue          (Okabe-Ito)
    "#E69F00",  # orange        (Okabe-Ito)
    "#009E73",  # bluish green  (Okabe-Ito)
    "#CC79A7",  # reddish purple (Okabe-Ito)
    "#D55E00",  # vermillion    (Okabe-Ito)
    "#56B4E9",  # sky blue      (Okabe-Ito)
    "#332288",  # indigo        (Tol muted)
    "#999933",  # olive         (Tol muted)
    "#882255",  # wine          (Tol muted)
    "#44AA99",  # teal          (Tol muted)
    "#000000",  # black
    "#AA4499",  # purple        (Tol muted)
    "#117733",  # green         (Tol muted)
    "#888888",  # grey
)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "p", "h", "<", ">")
PAIRS = len(COLOURS) * len(MARKERS)   # distinct (colour, marker) pairs
# The styles 0 … PLANE_STYLES - 1 are the data planes' own numbers (DataPlane.style);
# the last KIND_STYLES, counted down, the NF kinds' (NfKind.style).
PLANE_STYLES = 32
KIND_STYLES = 16
# Before data planes and NF kinds declared their numbers, the 12 data planes
# wore the first pairs and the 7 NF kinds the last: a name without a number
# hashed into the pairs between. It still does, to keep the style it had
# (a user's cmd: NF), unless that pair is now kept for numbers (_reserved).
_HASHED_BETWEEN = (12, PAIRS - 7)


@dataclass(frozen=True)
class Style:
    colour: str
    marker: str


def nth(i: int) -> Style:
    return Style(COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)])


def _number(facts: Any, below: int) -> int | None:
    """The style number stored facts hold, when they hold one in range."""
    n = facts.get("style") if isinstance(facts, Mapping) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and 0 <= n < below else None


@dataclass(frozen=True)
class Styles:
    """The styles of one report: each data plane's and NF kind's number, as its
    points stored them (learn). A number is a data plane's (a kind's) for
    good, so what one run says holds for every run of the report; nothing of
    it outlives the report."""

    planes: Mapping[str, int] = field(default_factory=dict)   # data plane -> its number
    kinds: Mapping[str, int] = field(default_factory=dict)    # `nf` value -> its number

    def dataplane(self, name: str) -> Style:
        """The data plane's style: the number its points stored."""
        return nth(self.planes[name]) if name in self.planes else _unknown(name)

    def nf_kind(self, kind: str) -> Style:
        """The NF kind's style: the number its points stored, counted down from
        the last pair (cmd:… and click:FILE NFs by a hash of their text)."""
        return nth(PAIRS - 1 - self.kinds[kind]) if kind in self.kinds else _unknown(kind)

    def rank(self, name: str) -> int:
        """Where a curve (named after its data plane first) comes in legends and
        tables: by its data plane's style number, so each report lists data
        planes alike; one without a number after those with one."""
        return self.planes.get(name.split(" ", 1)[0], PLANE_STYLES)

    def for_curves(self, rows: Iterable[Mapping[str, Any]]) -> Callable[[str], Style]:
        """style_of(curve name) for one plot's rows (rows.py: `switch` names the
        curve, `dataplane` its data plane, `nf`/`nfs` its network functions):
        the data plane's style; when every curve runs on one data plane and
        their NF kinds differ, the NF kind's (a path without NFs keeps the data
        plane's)."""
        curves: dict[str, tuple[str, str | None]] = {}
        for r in rows:
            name = str(r.get("switch"))
            curves[name] = (str(r.get("dataplane") or name.split(" ", 1)[0]),
                            str(r["nf"]) if r.get("nfs") and r.get("nf") else None)
        by_nf = (len({d for d, _ in curves.values()}) == 1 and
                 len({k for _, k in curves.values()}) > 1)

        def style_of(name: str) -> Style:
            dp, kind = curves.get(name, (name.split(" ", 1)[0], None))
            return self.nf_kind(kind) if by_nf and kind else self.dataplane(dp)
        return style_of


def learn(points: Iterable[Mapping[str, Any]]) -> Styles:
    """The styles the points (or plot rows, rows.py, which carry their
    point's facts) stored: their data planes' (switch_facts:
    DataPlane.stored) and NF kinds' (nf_facts: NfKind.stored). The first
    number stored for a name holds."""
    planes: dict[str, int] = {}
    kinds: dict[str, int] = {}
    for p in points:
        facts, nf = p.get("switch_facts"), p.get("nf_facts")
        if (n := _number(facts, PLANE_STYLES)) is not None:
            name = facts.get("name") or p.get("dataplane") or p.get("switch")
            planes.setdefault(str(name), n)
        if (n := _number(nf, KIND_STYLES)) is not None and nf.get("name"):
            kinds.setdefault(str(nf["name"]), n)
    return Styles(planes, kinds)


def _reserved(i: int) -> bool:
    """Whether the i-th pair is kept for a data plane's or NF kind's number."""
    return i < PLANE_STYLES or i >= PAIRS - KIND_STYLES


def _unknown(name: str) -> Style:
    """A name without a number (a user's own NF, a data plane of a run stored
    without its facts): a style of its own as far as a hash goes, the same in
    every report, among the pairs no data plane or NF kind may wear: the one
    it hashed to before numbers were stored (_HASHED_BETWEEN), unless that
    pair is now kept for a number, else one hashed among the free ones."""
    h = int(hashlib.sha1(name.encode()).hexdigest(), 16)
    low, high = _HASHED_BETWEEN
    i = low + h % (high - low)
    if _reserved(i):
        free = [j for j in range(PAIRS) if not _reserved(j)]
        i = free[h % len(free)]
    return nth(i)


# Curves of one style (one data plane's paths) keep its hue, each a shade of its own:
# mixed toward black (< 0) or white (> 0) by these fractions, in turn; a dark
# colour (indigo, black) has no darker shades to give, only lighter ones.
SHADES = (0.0, -0.45, 0.5, -0.7, 0.75)
LIGHTER = (0.0, 0.3, 0.55, 0.7, 0.8)
DARK = 0.35   # a colour whose mean channel is below this is dark


def shade(colour: str, k: int) -> str:
    """The k-th shade of a colour (SHADES, or LIGHTER for a dark one)."""
    from matplotlib.colors import to_hex, to_rgb
    rgb = to_rgb(colour)
    steps = LIGHTER if sum(rgb) / 3 < DARK else SHADES
    f = steps[k % len(steps)]
    if not f:
        return colour
    target = 1.0 if f > 0 else 0.0
    return to_hex(tuple(c + (target - c) * abs(f) for c in rgb))
