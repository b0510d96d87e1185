"""PNG plots of a run, from plain rows (dicts) as a results query returns them
(rows.py says their shape).

Repetitions of a point are averaged; error bars show their sample stddev.
Every function returns the PNG path; NoData is raised when the rows hold
nothing that plot can show.
"""
from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Sequence

from matplotlib.lines import Line2D

from cnfperf import fields
from cnfperf.experiments import reference, stats
from cnfperf.report import axes as value_axes
from cnfperf.report import failover_plot, interference, interference_plot, kinds
from cnfperf.report.draw import (DASHES, NoData, Pen, Plot, figure, finish, grid, legend,
                                 rows_grid,
                                 save, size_axis, time_axis)
from cnfperf.report.rows import (Row, avg, best, contended, curve_fields, curve_label,
                                 fixed_rate, is_latency, sorted_unique, throughput_rows,
                                 varying, varying_per_switch)


# --- the paper's values ---------------------------------------------------------

# A published value: a hollow diamond in its curve's colour, bigger than a
# measured point's marker (hollow round markers say CPU contention).
PAPER_MARK = dict(marker="D", ms=9, mfc="none", mew=1.6, ls="none", zorder=6)
PAPER = "paper"


def _matches(ref: reference.Row, row: Row, x: str) -> bool:
    """The plot row is of the point the reference row names (but for the x
    axis' field); a field the row does not carry does not decide."""
    for k, v in ref.at.items():
        got = row.get("dataplane", row.get("switch")) if k == "switch" else row.get(k)
        if k != x and (k in row or k == "switch") and not reference.same(v, got):
            return False
    return True


def paper_marks(ax, pen: Pen, rows: Sequence[Row], paper: Sequence[reference.Row], x: str,
                metrics: dict[str, str], per_pair: bool = False,
                labelled: bool = True) -> list[float]:
    """The paper's values of `metrics` ({metric: its legend label}) drawn on
    `ax` at their `at`'s value of `x`, each in the colour of the curve whose
    rows it matches (none: not drawn); rates per pair where the plot's are.
    Not `labelled`: the plot's legend is made of handles (paper_handle).
    Returns the values drawn (the value axis' span takes them)."""
    drawn: list[float] = []
    seen: set[str] = set()
    for ref in paper:
        if ref.per or ref.metric not in metrics or x not in ref.at:
            continue
        mine = [r for r in rows if _matches(ref, r, x)]
        if not mine:
            continue
        y = ref.value * ref.factor / (int(mine[0].get("pairs") or 1) if per_pair else 1)
        label = metrics[ref.metric] if labelled else "_paper"
        ax.plot([ref.at[x]], [y], mec=pen.colour(str(mine[0]["switch"])), **PAPER_MARK,
                label=label if label not in seen else "_paper", clip_on=False)
        seen.add(label)
        drawn.append(y)
    return drawn


def paper_handle(label: str = PAPER) -> Line2D:
    look = {k: v for k, v in PAPER_MARK.items() if k != "zorder"}
    return Line2D([], [], mec="0.3", **look, label=label)


# --- the plots ----------------------------------------------------------------

def rx_vs_offered(rows: Iterable[Row], path: str | Path) -> str:
    """Received vs sent rate per data plane (the reference framework's Fig. 5.1,
    "offered" there), one panel per frame size and burst. The x axis is what left
    the senders (tx), not the rate they were asked for: a sender that cannot keep
    up shows where it stopped. Both axes turn logarithmic together, so that the
    diagonal stays one."""
    runs = [r for r in throughput_rows(rows) if fixed_rate(r.get("rate"))]
    if not runs:
        raise NoData("received vs offered: no throughput rows at fixed rates")
    panels = sorted_unique((r.get("size"), r.get("burst")) for r in runs)
    split = varying_per_switch(runs, curve_fields(("size", "burst")))
    keys = ["switch", *split, "rate"]
    pen = Pen(runs, [tuple(r.get(k) for k in keys[:-1]) for r in runs])
    fig, axes = grid(len(panels))
    for ax, (size, burst) in zip(axes, panels):
        mine = [r for r in runs if (r.get("size"), r.get("burst")) == (size, burst)]
        rx, sent, hollow = avg(mine, keys, "rx_pps"), avg(mine, keys, "sent_pps"), \
            contended(mine, keys)
        values: list[float] = []
        for series in pen.curves(k[:-1] for k in rx):
            pts = sorted((sent.get((*series, rate), (rate, 0))[0] or rate, *rx[(*series, rate)],
                          hollow[(*series, rate)])
                         for rate in (k[-1] for k in rx if k[:-1] == series))
            xs, ys = [p[0] / 1e6 for p in pts], [p[1] / 1e6 for p in pts]
            values += xs + ys
            pen.curve(ax, series[0], xs, ys, [p[2] / 1e6 for p in pts], [p[3] for p in pts],
                      ls=pen.dash(series),
                      label=curve_label(series[0], dict(zip(split, series[1:]))))
        # x takes y's values too: the same scale both ways keeps the diagonal one
        log = value_axes.values_axis(ax, values, "x")
        low, top = ax.get_xlim() if log else (0, max(values))
        ax.plot([low, top], [low, top], ls="--", color="0.6", lw=1, label="received = sent")
        ax.set_xlabel(value_axes.with_scale("sent rate (Mpps)", log))
        finish(ax, f"{size} B frames, burst {burst}", values, "received rate (Mpps)")
    fig.suptitle("Received vs sent rate", fontsize=11)
    pen.footnote(fig)
    return save(fig, path)


def throughput_vs_size(rows: Iterable[Row], path: str | Path,
                       paper: Sequence[reference.Row] = ()) -> str:
    """Maximum received rate vs frame size in Mpps and Gbps, log x (Figs. 5.2, 5.3, 5.5).

    Maximum = the best of the rates tried for that size (a search's found rate
    counts); with several pairs the rate is per pair, as the reference
    framework's M. Gbps counts frame bytes (with FCS), not preamble and gap."""
    runs = throughput_rows(rows)
    if not runs:
        raise NoData("throughput vs size: no throughput rows")
    split = varying_per_switch(runs, curve_fields(("size",)))
    top = best(runs, ["switch", *split, "size", "rate"], "rx_pps_per_pair")
    sizes = sorted_unique(k[-1] for k in top)
    per_pair = any(r["pairs"] > 1 for r in runs)
    fig = figure(2, height=4.2)
    ax_pps, ax_bps = fig.subplots(1, 2)
    pen = Pen(runs, [k[:-1] for k in top])
    all_series = pen.curves(k[:-1] for k in top)
    mpps, gbps = [], []
    for series in all_series:
        pts = sorted((k[-1], *top[k]) for k in top if k[:-1] == series)
        sizes_, hollow = [p[0] for p in pts], [p[3] for p in pts]
        style = dict(ls=pen.dash(series),
                     label=curve_label(series[0], dict(zip(split, series[1:]))))
        ys = [p[1] / 1e6 for p in pts]
        pen.curve(ax_pps, series[0], sizes_, ys, [p[2] / 1e6 for p in pts], hollow, **style)
        bits = [p[1] * p[0] * 8 / 1e9 for p in pts]
        pen.curve(ax_bps, series[0], sizes_, bits, [p[2] * p[0] * 8 / 1e9 for p in pts],
                  hollow, **style)
        mpps += ys
        gbps += bits
    in_pps = paper_marks(ax_pps, pen, runs, paper, "size",
                         {m: PAPER for m in ("rx_mpps", "ndr_mpps", "pdr_mpps")}, per_pair)
    in_bps = paper_marks(ax_bps, pen, runs, paper, "size", {"rx_gbps": PAPER}, per_pair)
    if in_pps and not in_bps:   # the figure's one legend is the right panel's
        ax_bps.add_line(paper_handle())
    mpps += in_pps
    gbps += in_bps
    unit = " per pair" if per_pair else ""
    for ax, ylabel, title, values in (
            (ax_pps, f"max received rate{unit} (Mpps)", "packets", mpps),
            (ax_bps, f"max received rate{unit} (Gbps)", "bits (frame bytes)", gbps)):
        size_axis(ax, sizes)
        finish(ax, f"Maximum throughput vs frame size: {title}", values, ylabel,
               key=ax is ax_bps)   # the same curves: keyed once, on the right
    pen.footnote(fig)
    return save(fig, path)


def scalability(rows: Iterable[Row], path: str | Path) -> str:
    """Per-pair mean and total received rate vs number of pairs (Figs. 5.6, 5.7),
    one row of panels per frame size."""
    runs = throughput_rows(rows)
    if not runs:
        raise NoData("scalability: no throughput rows")
    sizes = sorted_unique(r.get("size") for r in runs)
    fig = figure(2, len(sizes))
    axes = fig.subplots(len(sizes), 2, squeeze=False)
    pen = Pen(runs)
    for (ax_pair, ax_total), size in zip(axes, sizes):
        mine = [r for r in runs if r.get("size") == size]
        for value, ax, ylabel, title in (
                ("rx_pps_per_pair", ax_pair, "received rate per pair (Mpps)", "mean per pair"),
                ("rx_pps", ax_total, "total received rate (Mpps)", "total of all pairs")):
            top = best(mine, ("switch", "pairs", "rate"), value)
            values: list[float] = []
            for switch in pen.curves(k[0] for k in top):
                pts = sorted((k[1], *top[k]) for k in top if k[0] == switch)
                ys = [p[1] / 1e6 for p in pts]
                pen.curve(ax, switch, [p[0] for p in pts], ys, [p[2] / 1e6 for p in pts],
                          [p[3] for p in pts], label=switch)
                values += ys
            ax.set_xticks(sorted_unique(r["pairs"] for r in mine))
            ax.set_xlabel("pairs (sender/receiver)")
            finish(ax, f"{size} B: {title}", values, ylabel)
    pen.footnote(fig)
    return save(fig, path)


def _latency_stats(rows: Sequence[Row], keys: Sequence[str]) -> dict[tuple, dict[str, float]]:
    """{point values: {"p50": ns, "p99": ns, "mean": ns, "contended": 0/1}};
    histograms of repetitions merged."""
    groups: dict[tuple, list[Row]] = defaultdict(list)
    for r in rows:
        groups[tuple(r.get(k) for k in keys)].append(r)
    out = {}
    for k, members in groups.items():
        hists = [m["hist"] for m in members if m.get("hist")]
        if hists:
            merged = stats.merge_histograms(hists)
            values = {**stats.percentiles(merged, (50, 90, 99, 99.9)), "mean": stats.hist_mean(merged)}
        else:
            values = {}
            for name in ("p50", "p90", "p99", "p999", "mean"):
                vals = [float(m[f"lat_{name}_ns"]) for m in members
                        if m.get(f"lat_{name}_ns") is not None]
                if vals:
                    values[name] = stats.mean(vals)
        out[k] = {n: v for n, v in values.items() if v is not None}
        if out[k] and any(m.get("contended") for m in members):
            out[k]["contended"] = 1
    return out


_STAT_STYLE = {"p50": "-", "mean": "-.", "p90": ":", "p99": "--", "p999": (0, (1, 1))}
# The paper's latency values a latency plot draws, and their legend's words.
_PAPER_LATENCY = {f"latency_{k}_us": f"{PAPER} {k}" for k in ("p50", "p99", "mean")}


def rtt_vs_size(rows: Iterable[Row], path: str | Path,
                show: Sequence[str] = ("p50", "p99"), paper: Sequence[reference.Row] = ()) -> str:
    """Latency percentiles vs frame size (Figs. 5.9, 5.10), a panel per latency
    kind and burst: round trips (a split tester's client) and one-way times (a
    single tester's) never share an axis, and each panel's title says which. The
    paper's values go on the panel whose points they match."""
    rows = [r for r in rows if is_latency(r)]
    rows = [{**r, "kind": kinds.of(r)} for r in rows]
    table = _latency_stats(rows, ("kind", "switch", "burst", "size"))
    if not any(table.values()):
        raise NoData("rtt vs size: no latency rows")
    per_kind = [[(kind, b) for b in sorted_unique(k[2] for k in table
                                                  if k[0] == kind and table[k])]
                for kind in kinds.present(rows)]
    per_kind = [p for p in per_kind if p]
    fig, groups = rows_grid([len(p) for p in per_kind])   # a row of panels per kind
    axes = [ax for group in groups for ax in group]
    panels = [p for group in per_kind for p in group]
    pen = Pen(rows)
    for ax, (kind, burst) in zip(axes, panels):
        mine = {k[1:]: v for k, v in table.items() if k[0] == kind and k[2] == burst and v}
        switches = pen.curves(k[0] for k in mine)
        values: list[float] = []
        for switch in switches:
            pts = sorted((k[2], mine[k]) for k in mine if k[0] == switch)
            for name in show:
                xy = [(size, v[name] / 1e3, bool(v.get("contended"))) for size, v in pts
                      if name in v]
                if xy:
                    xs, ys, hollow = zip(*xy)
                    pen.curve(ax, switch, xs, ys, hollow=hollow, ls=_STAT_STYLE.get(name, "-"))
                    values += ys
        marks = paper_marks(ax, pen, [r for r in rows if r["kind"] == kind
                                      and r.get("burst") == burst], paper, "size",
                            _PAPER_LATENCY, labelled=False)
        values += marks
        size_axis(ax, sorted_unique(k[2] for k in mine))
        handles = [pen.handle(s) for s in switches]
        handles += [Line2D([], [], color="0.3", ls=_STAT_STYLE.get(n, "-"), label=n) for n in show]
        # which statistic the paper gave (its mean beside our p50 and p99, say)
        said = sorted({_PAPER_LATENCY[r.metric] for r in paper
                       if r.metric in _PAPER_LATENCY and "size" in r.at and not r.per})
        handles += [paper_handle(" · ".join(said) or PAPER)] if marks else []
        legend(ax, handles=handles)
        finish(ax, f"{_title(kind)} vs frame size, burst {burst}", values,
               f"{kinds.TIME[kind]} (µs)")
    pen.footnote(fig)
    return save(fig, path)


def _title(kind: str) -> str:
    """A panel's title's kind: `Round-trip time`, `One-way latency`."""
    return kinds.TIME[kind][0].upper() + kinds.TIME[kind][1:]


MAX_CDF_PANELS = 6
CONTENDED = " (CPU-contended)"   # a CDF curve's label when its points were


def latency_cdf(rows: Iterable[Row], path: str | Path) -> str:
    """Cumulative distribution of latency: one panel per latency kind (round trip,
    one way: never one axis), frame size and burst, one curve per data plane,
    histograms of repetitions merged. With more than MAX_CDF_PANELS combinations
    of a kind, only its smallest burst at its smallest and largest frame size are
    drawn (the rest are in the tables). A curve has no markers to hollow: one
    measured under contention says so in its label."""
    rows = [{**r, "kind": kinds.of(r)} for r in rows if is_latency(r) and r.get("hist")]
    if not rows:
        raise NoData("latency CDF: no latency histograms")
    per_kind = []
    for kind in kinds.present(rows):
        mine = sorted_unique((r.get("size"), r.get("burst")) for r in rows if r["kind"] == kind)
        if len(mine) > MAX_CDF_PANELS:
            burst = min(b for _, b in mine)
            sizes = [s for s, b in mine if b == burst]
            mine = sorted_unique([(min(sizes), burst), (max(sizes), burst)])
        per_kind.append([(kind, size, burst) for size, burst in mine])
    # a row of panels per kind
    fig, groups = rows_grid([len(p) for p in per_kind], width=5.6, height=4.0)
    axes = [ax for group in groups for ax in group]
    panels = [p for group in per_kind for p in group]
    pen = Pen(rows)
    for ax, (kind, size, burst) in zip(axes, panels):
        groups: dict[str, list] = defaultdict(list)
        here = [r for r in rows if (r["kind"], r.get("size"), r.get("burst")) == (kind, size, burst)]
        hollow = contended(here, ("switch",))
        for r in here:
            groups[r["switch"]].append(r["hist"])
        xs_all: list[float] = []
        for switch in pen.curves(groups):
            curve = stats.cdf(stats.merge_histograms(groups[switch]))
            if curve:
                xs = [max(x, 1.0) / 1e3 for x, _ in curve]
                ax.step(xs, [y for _, y in curve], where="post",
                        color=pen.colour(switch),
                        label=switch + (CONTENDED if hollow[(switch,)] else ""))
                xs_all += xs
        time_axis(ax, xs_all)
        ax.set_xlabel(f"{kinds.TIME[kind]} (µs, log scale)")
        ax.set_ylabel(f"fraction of packets ≤ {kinds.SHORT[kind]}")
        ax.set_ylim(0, 1.01)
        ax.grid(True, which="major", alpha=0.3)
        ax.set_title(f"{_title(kind)} distribution, {size} B frames, burst {burst}", fontsize=10)
        legend(ax, title="data plane")
    return save(fig, path)


def throughput_bars(rows: Iterable[Row], path: str | Path,
                    by: Sequence[str] = ("switch", "api", "mmsg", "size")) -> str:
    """Best received rate per combination of the `by` fields that vary (Table 5.2
    as bars); a bar measured under contention is hatched and hollow."""
    runs = throughput_rows(rows)
    if not runs:
        raise NoData("throughput bars: no throughput rows")
    split = [k for k in by if k == "switch" or k in varying(runs, by)]
    top = best(runs, [*split, "rate"], "rx_pps")
    pen = Pen(runs)
    keys = pen.curves(top)
    # a path's words a line each (`macvlan` / `1×router` / `nf_routes=256`): a bar
    # is narrower than its path's name
    labels = ["\n".join(f"{n}={fields.show(n, v)}" if n != "switch" else str(v).replace(" ", "\n")
                        for n, v in zip(split, k))
              for k in keys]
    longest = max(len(line) for label in labels for line in label.split("\n"))
    fig = figure(1, width=max(5.0, max(0.9, 0.075 * longest) * len(keys) + 2), height=4.0)
    ax = fig.subplots()
    for i, k in enumerate(keys):
        pen.bar(ax, str(k[0]), i, top[k][0] / 1e3, top[k][1] / 1e3, top[k][2])
    ax.set_xticks(range(len(keys)), labels, fontsize=8)
    ax.set_title("Maximum throughput per configuration", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    log = value_axes.values_axis(ax, [top[k][0] / 1e3 for k in keys], "y")
    ax.set_ylabel(value_axes.with_scale("max received rate (kpps)", log))
    pen.footnote(fig)
    return save(fig, path)


def vs_quota(rows: Iterable[Row], path: str | Path, paper: Sequence[reference.Row] = ()) -> str:
    """Throughput and latency (p50, p99) vs the CPU quota that varies in the run
    (switch, NF or tester ends': paper 000's TC2), one curve per data plane (and
    frame size, where it varies); latency a panel per kind (round trip, one way:
    never one axis)."""
    rows = list(rows)
    varied = [q for q in fields.QUOTAS if len({r.get(q) for r in rows} - {None}) > 1]
    if not varied:
        raise NoData("vs quota: no quota varies in the run")
    quota = varied[0]
    # Each quota is its own series elsewhere (rows_from_run); here it is the x axis.
    rows = [{**r, "switch": re.sub(rf" {quota}=\S+", "", str(r.get("switch")))} for r in rows]
    runs = [r for r in throughput_rows(rows) if r.get(quota) is not None]
    lat = [{**r, "kind": kinds.of(r)} for r in rows
           if is_latency(r) and r.get(quota) is not None]
    present = kinds.present(lat) or ["rtt"]   # an empty latency panel beside, as before
    fig = figure(1 + len(present))
    ax_pps, *ax_lats = fig.subplots(1, 1 + len(present))
    pen = Pen(rows)
    # frame sizes are curves of their own (a dash each): never averaged together
    sizes = sorted_unique(r.get("size") for r in runs)
    keys = ("switch", "size", quota)
    rx, hollow = avg(runs, keys, "rx_pps_per_pair"), contended(runs, keys)
    rates: list[float] = []
    for switch, size in pen.curves(k[:2] for k in rx):
        pts = sorted((k[2], *v, hollow[k]) for k, v in rx.items() if k[:2] == (switch, size))
        ys = [p[1] / 1e6 for p in pts]
        pen.curve(ax_pps, switch, [p[0] for p in pts], ys, [p[2] / 1e6 for p in pts],
                  [p[3] for p in pts], ls=DASHES[sizes.index(size) % len(DASHES)],
                  label=f"{switch} {size} B" if len(sizes) > 1 else switch)
        rates += ys
    rates += paper_marks(ax_pps, pen, runs, paper, quota, {"rx_mpps": PAPER}, per_pair=True)
    panels = [(ax_pps, "received rate per pair (Mpps)", "Throughput", rates)]
    table = _latency_stats(lat, ("kind", "switch", quota))
    for ax_lat, kind in zip(ax_lats, present):
        times: list[float] = []
        mine = {k[1:]: v for k, v in table.items() if k[0] == kind}
        for switch in pen.curves(k[0] for k in mine):
            pts = sorted((k[1], v) for k, v in mine.items() if k[0] == switch)
            for name in ("p50", "p99"):
                xy = [(q, v[name] / 1e3, bool(v.get("contended"))) for q, v in pts if name in v]
                if xy:
                    xs, ys, flags = zip(*xy)
                    pen.curve(ax_lat, switch, xs, ys, hollow=flags, ls=_STAT_STYLE[name],
                              label=f"{switch} {name}")
                    times += ys
        times += paper_marks(ax_lat, pen, [r for r in lat if r["kind"] == kind], paper, quota,
                             _PAPER_LATENCY)
        panels.append((ax_lat, f"{kinds.TIME[kind]} (µs)", _title(kind), times))
    for ax, ylabel, title, values in panels:
        ax.set_xlabel(f"{quota} (% of one core)")
        ax.set_xlim(left=0)
        finish(ax, f"{title} vs CPU quota", values, ylabel)
    pen.footnote(fig)
    return save(fig, path)


PLOTS = {
    "rx_vs_offered": ("Received vs sent rate", rx_vs_offered),
    "throughput_vs_size": ("Maximum throughput vs frame size", throughput_vs_size),
    "scalability": ("Throughput vs number of pairs", scalability),
    "throughput_bars": ("Maximum throughput per configuration", throughput_bars),
    "rtt_vs_size": ("Latency vs frame size", rtt_vs_size),
    "latency_cdf": ("Latency distribution (CDF)", latency_cdf),
    "vs_quota": ("Throughput and latency vs CPU quota", vs_quota),
    "interference": ("Interference: the victim alone and beside its aggressors",
                     interference_plot.victim),
    "failover": ("Outage after a cut per configuration", failover_plot.failover),
}


# The plots that draw a study's published values beside its own (`paper`).
WITH_PAPER = ("throughput_vs_size", "rtt_vs_size", "vs_quota")


def make(rows: Sequence[Row], out_dir: str | Path, names: Sequence[str],
         paper: Sequence[reference.Row] = ()) -> list[Plot]:
    """The named plots (a study's `plots` list), skipping those the rows cannot
    support; those of WITH_PAPER with the `paper`'s values that match their curves."""
    unknown = [n for n in names if n not in PLOTS]
    if unknown:
        raise ValueError(f"plots: unknown {', '.join(unknown)}; known: {', '.join(PLOTS)}")
    made = []
    for name in names:
        title, draw = PLOTS[name]
        given = {"paper": paper} if name in WITH_PAPER and paper else {}
        try:
            made.append(Plot(name, title, draw(rows, Path(out_dir) / f"{name}.png", **given)))
        except NoData:
            continue
    return made


def make_all(rows: Sequence[Row], out_dir: str | Path,
             paper: Sequence[reference.Row] = ()) -> list[Plot]:
    """Every plot the rows can support, each as out_dir/NAME.png."""
    out_dir = Path(out_dir)
    runs = throughput_rows(rows)
    lat = [r for r in rows if is_latency(r)]
    fixed_rates = {(r.get("switch"), r.get("size"), r.get("burst"), r.get("rate"))
                   for r in runs if fixed_rate(r.get("rate"))}
    curves = defaultdict(int)
    for sw, size, burst, _ in fixed_rates:
        curves[(sw, size, burst)] += 1
    wanted = []
    if any(n > 1 for n in curves.values()):
        wanted.append("rx_vs_offered")
    if len({r.get("size") for r in runs}) > 1:
        wanted.append("throughput_vs_size")
    if len({r.get("pairs") for r in runs}) > 1:
        wanted.append("scalability")
    if runs and not wanted:
        wanted.append("throughput_bars")
    if len({r.get("size") for r in lat}) > 1:
        wanted.append("rtt_vs_size")
    if any(r.get("hist") for r in lat):
        wanted.append("latency_cdf")
    if any(len({r.get(q) for r in rows} - {None}) > 1 for q in fields.QUOTAS):
        wanted.append("vs_quota")
    if interference.tenants(rows) and interference.entries(rows):
        wanted.append("interference")
    if any(r.get("fault_facts") and r.get("outage_ns") is not None for r in rows):
        wanted.append("failover")
    return make(rows, out_dir, wanted, paper)
