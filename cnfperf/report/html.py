"""One self-contained HTML report: plots embedded as data: URIs, inline CSS, no scripts.

A report must open from an e-mail attachment or an air-gapped lab years later,
so nothing in it is fetched: no CDN, no web fonts, no JavaScript.
"""
from __future__ import annotations

import base64
import datetime as _dt
import html
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from cnfperf.report import contention, stalls
from cnfperf.results.model import STALL_MARK


@dataclass
class Table:
    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    note: str = ""


@dataclass(frozen=True)
class Link:
    """A cell's text that leads somewhere (a list of them is a cell too)."""
    text: str
    href: str | None = None   # None: shown as text


@dataclass
class Figure:
    title: str
    path: str            # a PNG file, embedded when rendered
    caption: str = ""


HOW_TO_READ = (
    ("Offered rate", "packets per second the senders were asked for (RFC 2544's offered "
                     "load); 0 or max: as fast as they can."),
    ("Sent rate", "packets per second the senders really put on the wire (tx); it falls "
                  "short of the offered rate when the sender is the bottleneck."),
    ("Received rate", "packets per second the receivers counted over the measured window; "
                      "frames the senders marked as warm-up are left out. Steady rx also "
                      "leaves out the intervals that began in the warm-up and any the traffic "
                      "stopped inside (a run of a few seconds may have none)."),
    ("Loss", "frames sent but never received, as a share of the frames sent, counted from "
             "sequence numbers; reordered and duplicate frames are counted apart."),
    ("NDR / PDR", "the highest offered rate with no loss (NDR) or with loss at most X% (PDR). "
                  "MLRsearch (search csit, rfc2544, tst009) finds every goal in one search and "
                  "gives its conditional throughput: the lower bound's load less the loss of "
                  "its worst good trial, between a lower and an upper bound closer than the "
                  "width; bisect finds one by binary search and a verification trial."),
    ("Generator truth", "whether a trial's senders offered the load asked for: frames a "
                        "port refused are the device's loss; an invalid trial's senders fell "
                        "short on their own (the frames they never sent are no one's "
                        "loss); a goal whose bounds rest on such trials is "
                        "generator-limited."),
    ("Latency at load", "latency trials after a search, at its lowest load (min) and at "
                        "fractions of the rate it found for its last goal (the PDR)."),
    ("Mpps / Gbps", "millions of frames per second; Gbps counts frame bytes including the "
                    "FCS, without preamble and inter-frame gap."),
    ("Latency percentiles", "round-trip time of client/server echoes, or one-way time of a "
                            "single tester's frames (one clock): unlike things, never on one "
                            "axis or in one ranking; each plot, panel and table says which. "
                            "p50 is the median, p99 is exceeded by 1 packet in 100. "
                            "Histograms have ≤1% relative error."),
    ("Repetitions", "with K > 1 repetitions a value is their mean; error bars in plots are "
                    "the sample standard deviation (in the at-a-glance chart the 95% confidence "
                    "interval), ± in tables the 95% confidence interval of the mean (Student t)."),
    ("At a glance", "per frame size, each data plane (or path) at its best, ranked: the "
                    "highest received rate any of its throughput points reached, the lowest "
                    "median of its latency points (round trips and one-way times ranked "
                    "apart); with repetitions, the 95% confidence interval of the mean."),
    (contention.COLUMN, "a point measured with more busy pollers (tester ends, network "
                      "functions, the switch's poll threads) than the cores they ran on: its "
                      "numbers show how the scheduler shared the cores as much as what the data "
                      "plane can do. Drawn hollow (markers) or hatched (bars), flagged in "
                      "tables."),
    ("Stalls", "a gap between two iterations of an engine's polling loop (a tester end's, "
               "an engine NF's) longer than its threshold (200 µs by default): its core was "
               "another's meanwhile. stall ms: the most any poller of the row lost in its "
               "measured window; stall %: that poller's share of its window. A point where "
               f"it is over {100 * STALL_MARK:g} % carries a warning, and its rows are "
               "tinted red."),
    ("VMs", "how many of a point's nodes ran in virtual machines (nf_in, endpoint_in) and "
            "how: kvm (the host's hardware virtualisation) or tcg (QEMU's emulation, a "
            "host without usable KVM: flagged emulated, its numbers are the emulator's as "
            "much as the data plane's)."),
    ("Tester", "split: sender and receiver each an engine of its own; single: one engine "
               "holds both ends of each path (fewer busy pollers). The Points table says which "
               "measured each point and, when chosen for the host, why."),
    ("Log scale", "a value axis is logarithmic where the plot's values span more than 20×: "
                  "equal distances are equal ratios, so 0.3 and 48 Mpps both read. It has no "
                  "0: a point that received nothing is an arrow on the axis' floor."),
    ("% of gen", "with generator_baseline: a throughput point's received rate as a share of "
                 "what its tester moved alone, unpaced, through the lightest link of its api "
                 "before the points (the Generator baselines table); near 100% the point "
                 "measured the generator as much as the data plane."),
    ("Pairs", "sender/receiver (or client/server) container pairs running at the same time; "
              "per-pair is the mean over pairs, total is their sum."),
    ("Path", "what each pair's frames cross: send → 3 × l2 (chain) → recv is three network "
             "functions (NFs) of kind l2 between sender and receiver; a chain puts every NF's "
             "two ports on the data plane's switch, a pipeline joins neighbours directly."),
    ("CPU-bound", "nodes (tester ends, NFs) whose receive loop found frames in at least 95% "
                  "of its polls: it was never ahead of its input, so its core limited the "
                  "rate. Polls are counted from its first frame on, the idle ones after the "
                  "traffic included, so a node at its limit for a short trial may not show."),
    ("Loss along each path", "per pair, from sender to receiver: what each engine sent and "
                             "received (warm-up frames included) and, for a link, what the "
                             "data plane took in and delivered where it counts its ports. "
                             "Lost in a link = sent by one engine − received by the next; in "
                             "an NF = received − forwarded, with its drops by reason "
                             "(other: not IPv4; bad: malformed; no_route; ttl; policer: beyond its "
                             "policer's bucket; shaper: beyond its shaper's queue) and "
                             "tx_refused (its egress ring or socket was full)."),
    ("Conformance of what was received", "per pair, the receiver's arrivals held to the "
                                         "profile (the shaper's rate and bucket, else the "
                                         "policer's): sigma, the smallest bucket in frames "
                                         "the stream conforms to at that rate, and the share "
                                         "of frames a policer of the profile would drop. "
                                         "Arrivals are timed per receive burst. With the "
                                         "engine's shaper: the longest a frame waited in it, "
                                         "against its bound (its queue at its rate)."),
    ("Latency per NF", "over points alike but for their number of NFs, the least-squares slope "
                       "of p50 (and p99) latency over that number: what each NF adds."),
    ("NF startup", "seconds as if the NF's engine started with its container: the "
                   "container's creation plus, from its engine's start, the time to its ports "
                   "up (ready) or to its first forwarded frame (first forward, which waits for "
                   "the senders, started after every NF)."),
)

_CSS = """
:root { --fg:#1d2330; --muted:#5b6578; --line:#d9dee7; --accent:#2457a6; --bg:#ffffff;
        --stripe:#f5f7fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--fg); background: var(--bg); }
header { padding: 28px 40px 18px; border-bottom: 3px solid var(--accent); background: #f0f4fb; }
header h1 { margin: 0 0 4px; font-size: 26px; }
header p { margin: 0; color: var(--muted); }
header p.notice { margin-top: 10px; padding: 8px 12px; color: #5c3c00; background: #fff4d6;
                  border-left: 4px solid #e69f00; border-radius: 3px; max-width: 1100px; }
main { padding: 8px 40px 40px; max-width: 1400px; }
nav { margin: 16px 0; font-size: 14px; }
nav a { margin-right: 14px; color: var(--accent); text-decoration: none; }
h2 { margin-top: 36px; padding-bottom: 4px; border-bottom: 1px solid var(--line); font-size: 20px; }
h3 { font-size: 16px; margin: 22px 0 8px; }
figure { margin: 18px 0 30px; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 6px; }
table { border-collapse: collapse; margin: 8px 0 6px; font-size: 13px; }
th, td { padding: 4px 10px; border-bottom: 1px solid var(--line); text-align: left;
         white-space: nowrap; }
th { background: #e9eef6; position: sticky; top: 0; }
tbody tr:nth-child(even) { background: var(--stripe); }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr.contended { background: #fff4d6; }
tbody tr.stalled { background: #fde8e8; }
.scroll { overflow-x: auto; max-width: 100%; }
.note { color: var(--muted); font-size: 13px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 18px; font-size: 14px; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; }
dl.glossary dt { font-weight: 600; margin-top: 8px; }
dl.glossary dd { margin: 0 0 0 18px; }
ul.differences { max-width: 1100px; font-size: 14px; }
footer { color: var(--muted); font-size: 12px; padding: 20px 40px; border-top: 1px solid var(--line); }
@media print { th { position: static; } figure { break-inside: avoid; } }
"""


def fmt(value: Any) -> str:
    """A table cell: numbers to 4 significant digits with thousands separators."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value == 0 or value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    return str(value)


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _slug(text: str) -> str:
    """`At a glance: throughput` → `at-a-glance-throughput`."""
    words = "".join(c if c.isalnum() else " " for c in text.lower()).split()
    return "-".join(words) or "section"


def embed_png(path: str | Path) -> str:
    data = Path(path).read_bytes()
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        raise ValueError(f"{path}: not a PNG file")
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _facts(facts: Mapping[str, Any]) -> str:
    if not facts:
        return '<p class="note">none recorded</p>'
    items = "".join(f"<dt>{_esc(k)}</dt><dd>{_esc(fmt(v))}</dd>" for k, v in facts.items())
    return f'<dl class="facts">{items}</dl>'


def _flagged(t: Table, row: Sequence[Any]) -> bool:
    """Whether the row says yes in the table's CPU contended column (tinted)."""
    if contention.COLUMN not in t.columns:
        return False
    value = row[list(t.columns).index(contention.COLUMN)]
    return value is True or isinstance(value, str) and value.startswith("yes")


def _stalled(t: Table, row: Sequence[Any]) -> bool:
    """Whether a poller of the row lost more than the mark to stalls (tinted)."""
    if stalls.SHARE not in t.columns:
        return False
    value = row[list(t.columns).index(stalls.SHARE)]
    return isinstance(value, (int, float)) and value > 100 * STALL_MARK


def _cell(v: Any) -> str:
    if isinstance(v, list) and v and all(isinstance(x, Link) for x in v):
        return "<td>" + " ".join(f'<a href="{_esc(x.href)}">{_esc(x.text)}</a>' if x.href
                                 else _esc(x.text) for x in v) + "</td>"
    return f'<td class="num">{_esc(fmt(v))}</td>' if _is_num(v) else f"<td>{_esc(fmt(v))}</td>"


def _table(t: Table) -> str:
    head = "".join(f"<th>{_esc(c)}</th>" for c in t.columns)
    body = []
    for row in t.rows:
        cells = "".join(_cell(v) for v in row)
        tint = "contended" if _flagged(t, row) else "stalled" if _stalled(t, row) else ""
        body.append(f'<tr class="{tint}">{cells}</tr>' if tint else f"<tr>{cells}</tr>")
    note = f'<p class="note">{_esc(t.note)}</p>' if t.note else ""
    return (f'<h3 id="{_slug(t.title)}">{_esc(t.title)}</h3>'
            f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>{note}')


def _figure(f: Figure) -> str:
    caption = f" {_esc(f.caption)}" if f.caption else ""
    return (f'<figure id="{_slug(f.title)}"><img src="{embed_png(f.path)}" alt="{_esc(f.title)}">'
            f"<figcaption><strong>{_esc(f.title)}.</strong>{caption}</figcaption></figure>")


def render(title: str, *, figures: Iterable[Figure] = (), tables: Iterable[Table] = (),
           params: Mapping[str, Any] | None = None, host: Mapping[str, Any] | None = None,
           summary: str = "", generated: _dt.datetime | None = None,
           glance: Iterable[Figure | Table] = (), notice: str = "",
           paper: Iterable[Table] = (), differences: Sequence[str] = ()) -> str:
    """The report as one HTML string: `glance` (figures and tables) first, under
    the header and its `notice` (what a reader must know before any number);
    then a study's `paper` tables and its `differences` from the paper."""
    figures, tables, glance, paper = list(figures), list(tables), list(glance), list(paper)
    generated = generated or _dt.datetime.now().astimezone()
    sections = [("At a glance", glance), ("Paper vs here", [*paper, *differences]),
                ("Plots", figures), ("Tables", tables)]
    nav = "".join(f'<a href="#{_slug(name)}">{name}</a>' for name, items in sections if items)
    nav += '<a href="#parameters">Parameters</a><a href="#host">Host</a>' \
           '<a href="#how-to-read-this">How to read this</a>'
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<header><h1>{_esc(title)}</h1>"
        f"<p>{_esc(summary) + ' · ' if summary else ''}generated "
        f"{_esc(generated.strftime('%Y-%m-%d %H:%M %Z'))}</p>"
        + (f'<p class="notice">{_esc(notice)}</p>' if notice else "") + "</header>",
        f"<main><nav>{nav}</nav>",
    ]
    if glance:
        parts.append('<h2 id="at-a-glance">At a glance</h2>')
        parts.extend(_figure(g) if isinstance(g, Figure) else _table(g) for g in glance)
    if paper or differences:
        parts.append('<h2 id="paper-vs-here">Paper vs here</h2>')
        parts.extend(_table(t) for t in paper)
        if differences:
            items = "".join(f"<li>{_esc(d)}</li>" for d in differences)
            parts.append('<h3 id="differences-from-the-paper">Differences from the paper</h3>'
                         f'<ul class="differences">{items}</ul>')
    if figures:
        parts.append('<h2 id="plots">Plots</h2>')
        parts.extend(_figure(f) for f in figures)
    if tables:
        parts.append('<h2 id="tables">Tables</h2>')
        parts.extend(_table(t) for t in tables)
    parts.append(f'<h2 id="parameters">Parameters</h2>{_facts(params or {})}')
    parts.append(f'<h2 id="host">Host</h2>{_facts(host or {})}')
    glossary = "".join(f"<dt>{_esc(k)}</dt><dd>{_esc(v)}</dd>" for k, v in HOW_TO_READ)
    parts.append(f'<h2 id="how-to-read-this">How to read this</h2><dl class="glossary">{glossary}</dl>')
    parts.append("</main><footer>cnfperf report: a single file; images are embedded, "
                 "nothing is loaded from elsewhere.</footer></body></html>")
    return "\n".join(parts)


def write(path: str | Path, title: str, **kw: Any) -> str:
    """Write render(title, **kw) to path; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(title, **kw), encoding="utf-8")
    return str(path)
