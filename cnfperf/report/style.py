"""One colour and one marker per data plane, and per network function kind, the
same in every plot of every report.

A data plane's style is the number it declares (DataPlane.style, below
PLANE_STYLES), stored with every point it served (switch_facts): the report
reads it from the run (learn), never from today's data planes, so OVS is the
same indigo X beside veth as beside VPP, in an old run as in a new one, and a
data plane added later takes a number of its own without moving the others.
NF kinds take theirs by place in NF_STYLES, by the stored `nf` value.

The i-th style is COLOURS[i mod 14] with MARKERS[i mod 11]: 14 and 11 share no
factor, so the first 154 styles are distinct pairs and the first 14 distinct
colours. The colours are Okabe and Ito's and Paul Tol's colour-blind-safe
qualitative sets (yellows left out: they vanish on white); the marker tells
apart what a colour-blind reader might still confuse. NF kinds count down from
the last of the 154, so a kind never wears a data plane's pair; a name that has
no number (a cmd: NF, a data plane of a run stored without its facts) hashes
into the pairs left between them.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
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
# The styles 0 … PLANE_STYLES - 1 are the data planes' own numbers (DataPlane.style).
PLANE_STYLES = 32
# The NF kinds with a style of their own, by the stored `nf` value: a palette,
# read from what a run stored, not the kinds cnfperf registers today (an old
# run's kind keeps its style; a kind not listed hashes like a cmd: NF). Append
# only: a name's place is its style.
NF_STYLES = ("l2", "mirror", "strip-encap", "l3", "testpmd", "click:mirror",
             "click:strip-encap")


@dataclass(frozen=True)
class Style:
    colour: str
    marker: str


def nth(i: int) -> Style:
    return Style(COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)])


# data plane name -> its style number, as the points read so far stored it
_planes: dict[str, int] = {}


def learn(points: Iterable[Mapping[str, Any]]) -> None:
    """Note the style number of each point's data plane, as stored with it
    (switch_facts: DataPlane.stored). A number is a data plane's for good, so
    what one run says holds for every run of a report."""
    for p in points:
        facts = p.get("switch_facts")
        if isinstance(facts, Mapping) and isinstance(facts.get("style"), int) \
                and 0 <= facts["style"] < PLANE_STYLES:
            _planes.setdefault(str(facts.get("name") or p.get("switch")), facts["style"])


def _unknown(name: str) -> Style:
    """A name without a number (a user's own NF, a data plane of a run stored
    without its facts): a style of its own as far as a hash goes, the same in
    every report, among the pairs no data plane or NF kind wears."""
    taken = {*range(PLANE_STYLES), *range(PAIRS - len(NF_STYLES), PAIRS)}
    free = [i for i in range(PAIRS) if i not in taken]
    return nth(free[int(hashlib.sha1(name.encode()).hexdigest(), 16) % len(free)])


def dataplane(name: str) -> Style:
    """The data plane's style: the number its points stored (learn)."""
    return nth(_planes[name]) if name in _planes else _unknown(name)


def nf_kind(kind: str) -> Style:
    """The NF kind's style: by its place in NF_STYLES, counted down from the
    last pair (cmd:… and click:FILE NFs by a hash of their text)."""
    if kind in NF_STYLES:
        return nth(PAIRS - 1 - NF_STYLES.index(kind))
    return _unknown(kind)


def rank(name: str) -> int:
    """Where a curve (named after its data plane first) comes in legends and
    tables: by its data plane's style number, so each report lists data planes
    alike; one without a number after those with one."""
    return _planes.get(name.split(" ", 1)[0], PLANE_STYLES)


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


def for_curves(rows: Iterable[Mapping[str, Any]]) -> Callable[[str], Style]:
    """style_of(curve name) for one plot's rows (rows.py: `switch` names the curve,
    `dataplane` its data plane, `nf`/`nfs` its network functions): the data
    plane's style; when every curve runs on one data plane and their NF kinds
    differ, the NF kind's (a path without NFs keeps the data plane's)."""
    curves: dict[str, tuple[str, str | None]] = {}
    for r in rows:
        name = str(r.get("switch"))
        curves[name] = (str(r.get("dataplane") or name.split(" ", 1)[0]),
                        str(r["nf"]) if r.get("nfs") and r.get("nf") else None)
    by_nf = (len({d for d, _ in curves.values()}) == 1 and
             len({k for _, k in curves.values()}) > 1)

    def style_of(name: str) -> Style:
        dp, kind = curves.get(name, (name.split(" ", 1)[0], None))
        return nf_kind(kind) if by_nf and kind else dataplane(dp)
    return style_of
