"""Network functions in a run's paths, as tables of plain values (summary.py's
shape: (title, headers, rows), or None when the run has none of that kind).

- Loss localisation: along each pair's path, what every hop received and sent,
  and where frames were lost: in a link (between two engines; where the data
  plane counts its ports, before, inside or after it; with the udp api, in the
  receiving end's kernel: udp_errors.py) or inside an NF (its drops by reason,
  what its egress port refused). Paths without NFs are shown when an end's
  kernel dropped datagrams and the path lost frames.
- Latency per NF: over points that differ only in `nfs`, the least-squares
  slope of p50 and p99 latency over the number of NFs.
- NF startup: each NF's ready and first-forward times, and per point the slowest.

Counting along a path. Engines count what they send and receive; an NF counts
every frame, warm-up ones included, so a sender's frames are its measured ones
plus its warm-up ones (warmup_tx_packets; a receiver's: warmup_packets). Results
stored before the engine reported warmup_tx_packets do not say what a client or
single tester sent in its warm-up: the link after it is then not compared (its
loss shows as –).
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Sequence

from cnfperf import fields
from cnfperf.host import kernel_drops, udp_errors
from cnfperf.report import contention, routing
from cnfperf.results.model import DROP_REASONS, busy_ratio
from cnfperf.report.summary import (Table, _param, done_points, label, nf_labels, node, path,
                                    short_name, varying)

SENDERS = ("send", "client", "tester")
RECEIVERS = ("recv", "server", "tester")


@dataclass
class Hop:
    """One step of a pair's path: an engine (the ends, an NF) or the link between two."""

    what: str                  # send | link | nf | recv | total
    name: str                  # as shown
    rx: int | None = None      # frames in (a link: what its data plane took in)
    tx: int | None = None      # frames out (a link: what its data plane delivered)
    lost: int | None = None    # frames lost here; None: the counts do not compare
    why: list[str] = field(default_factory=list)
    # "rx", "tx": a count its data plane does not keep (OVS's `?`), shown as ?
    unknown: tuple[str, ...] = ()

    def shown(self, what: str) -> int | str | None:
        """rx or tx as the table shows it: ? where the data plane did not know
        it, None (–) where nothing counted it."""
        return "?" if what in self.unknown else getattr(self, what)


def _n(value: int) -> str:
    return f"{value:,}"


def _ends(point: dict[str, Any], pair: int) -> tuple[dict | None, dict | None]:
    """The metrics rows of the pair's sending and receiving engine (one row for a
    single tester)."""
    mine = [e for e in point.get("endpoints") or [] if e["pair"] == pair]
    sender = next((e for e in mine if e["role"] in SENDERS), None)
    receiver = next((e for e in mine if e["role"] in RECEIVERS), None)
    return sender, receiver


def _sent(e: dict | None) -> tuple[int | None, bool]:
    """(frames the end put on its link, whether that count is exact): measured
    plus warm-up. A client's or tester's summary from before the engine said
    what its warm-up sent (warmup_tx_packets) is exact only without a warm-up."""
    if e is None:
        return None, False
    summary = e.get("summary") or {}
    warm = summary.get("warmup_tx_packets")
    if warm is None:
        warm = e.get("warmup_packets") or 0
        if e["role"] != "send":
            return e["tx_packets"] or 0, warm == 0
    return (e["tx_packets"] or 0) + warm, True


def _received(e: dict | None) -> tuple[int | None, bool]:
    """(frames the end took off its link, whether exact): measured plus warm-up,
    which every receiving role's warmup_packets counts."""
    if e is None:
        return None, False
    return (e["rx_packets"] or 0) + (e.get("warmup_packets") or 0), True


def _port_names(point: dict[str, Any], pair: int) -> list[str]:
    """The ports along the pair's path, two per link (placement: plan.Pair); []
    when the point did not store its placement."""
    for p in point.get("placement") or []:
        if isinstance(p, dict) and p.get("index") == pair and "sender" in p:
            middle = [port["name"] for nf in p.get("nfs") or [] for port in nf["ports"]]
            # A one-port NF (mirror) sends frames back, as a reflecting switch does
            # (forward = reflect): the path returns to the sender.
            back = p["sender"] if len(middle) % 2 or point.get("forward") == "reflect" \
                else p["receiver"]
            return [p["sender"]["name"], *middle, back["name"]]
    return []


def _link(point: dict[str, Any], up: str | None, down: str | None, sent: int | None,
          got: int | None, exact: bool, name: str) -> Hop:
    """The link from port `up` to port `down`: what the upstream engine sent, what
    the downstream one received, and between them the data plane's counts."""
    hop = Hop("link", name, lost=sent - got if exact and None not in (sent, got) else None)
    if hop.lost is None:
        hop.why.append("an end's count is missing" if None in (sent, got) else
                       "not compared: the sender did not say what its warm-up sent")
    counters = point.get("counters") or {}
    # whose view its data plane's counters take (DataPlane.counter_view), as
    # stored with the point; a point stored without it: the switch's
    node_view = (point.get("switch_facts") or {}).get("counter_view") == "node"
    a = up and (counters.get(f"{up}h") or counters.get(up))
    b = down and (counters.get(f"{down}h") or counters.get(down))
    if a and b:
        # In = what entered the data plane from `up`, out = what it handed to `down`;
        # a count stored NULL is one the data plane does not keep: unknown, not 0.
        if node_view:
            hop.rx, hop.tx = a.get("tx_packets"), b.get("rx_packets")
            drops = (a.get("tx_dropped"), b.get("rx_dropped"))
        else:
            hop.rx, hop.tx = a.get("rx_packets"), b.get("tx_packets")
            drops = (a.get("rx_dropped"), b.get("tx_dropped"))
        hop.unknown = tuple(k for k in ("rx", "tx") if getattr(hop, k) is None)
        if hop.lost:
            parts = [("before the data plane", _minus(sent, hop.rx)),
                     ("in the data plane", _minus(hop.rx, hop.tx)),
                     ("after the data plane", _minus(hop.tx, got))]
            hop.why += [f"{where} {_n(n)}" for where, n in parts if n]
        dropped = sum(n for n in drops if n is not None)
        if dropped:
            hop.why.append(f"its drop counters {_n(dropped)}")
        if None in drops:
            hop.why.append("a drop counter unknown (?)")
    return hop


def _minus(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a - b


def _nf(point: dict[str, Any], nf: dict[str, Any], total: int) -> Hop:
    """An NF forwarding the pair's frames: in at port 1, out at port 2."""
    ports = {p["port"]: p for p in nf.get("ports") or []}
    name = f"nf {nf['idx'] + 1} of {total}: {nf['kind']} {short_name(point, nf['name'])}"
    if not ports:   # a user's command: its counters are its own business
        summary = _summary_of(point, nf["name"])
        if "kernel" not in summary:
            return Hop("nf", name, why=["its own command: no counters read"])
        # a kernel NF's: unreadable, or an interface's counts unknown
        return Hop("nf", name, why=["its kernel's counters could not be read"
                                    if summary["kernel"] is None else
                                    "its interfaces' counts are unknown (?)"])
    ingress, egress = ports.get(1) or {}, ports.get(2) or ports.get(1) or {}
    rx, tx = ingress.get("rx_packets") or 0, egress.get("tx_packets") or 0
    hop = Hop("nf", name, rx=rx, tx=tx, lost=rx - tx)
    counted = 0
    for reason in DROP_REASONS:
        n = ingress.get(f"dropped_{reason}") or 0
        if n:
            hop.why.append(f"{reason} {_n(n)}")
            counted += n
    refused = egress.get("tx_refused") or 0
    if refused:
        hop.why.append(f"tx_refused {_n(refused)}")
        counted += refused
    if hop.lost and hop.lost != counted:
        hop.why.append(f"not counted {_n(hop.lost - counted)}")
    # a kernel NF (router): what else its kernel counted, the host's softnet too
    hop.why += kernel_drops.describe(_kernel_of(point, nf["name"]), ported=True)
    return hop


def _summary_of(point: dict[str, Any], name: str) -> dict[str, Any]:
    """An NF's summary as its metrics row stored it ({} if none)."""
    for e in point.get("endpoints") or []:
        if e.get("endpoint") == name:
            return e.get("summary") or {}
    return {}


def _kernel_of(point: dict[str, Any], name: str) -> dict[str, Any] | None:
    """A kernel NF's counters over the trial (its summary's `kernel`), or None."""
    return _summary_of(point, name).get("kernel")


def _placed(point: dict[str, Any], pair: int) -> dict[str, Any]:
    """The pair's placement as stored (plan.Pair), {} if none."""
    return next((p for p in point.get("placement") or []
                 if isinstance(p, dict) and p.get("index") == pair and "sender" in p), {})


def _graph_hops(point: dict[str, Any], pair: int, nfs: list[dict[str, Any]],
                sent: int | None, got: int | None) -> list[Hop]:
    """A graph's links in its order, then its NFs: a link's frames in are what
    its two ends sent on it, out what they took off it (either way: the NFs
    choose the way, and a server's echoes come back); an NF's, what its ports
    took in and sent on."""
    placed = _placed(point, pair)
    sender, receiver = _ends(point, pair)
    echoed = receiver is not None and receiver["role"] == "server"
    back = got if echoed else 0        # a server echoes every frame it takes
    echoes = _received(sender)[0] if echoed else 0
    results = {n["name"]: {p["port"]: p for p in n.get("ports") or []} for n in nfs}
    labels = nf_labels(point)
    # a routing daemon's own packets (hellos, BFD…) are in its ports' counts
    daemons = bool((point.get("nf_facts") or {}).get("daemons"))
    ends = {placed["sender"]["name"]: ("send", sent, echoes),
            placed["receiver"]["name"]: ("recv", back, got)}

    def counts(port: dict[str, Any]) -> tuple[str, int | None, int | None]:
        if port["name"] in ends:
            return ends[port["name"]]
        mine = results.get(port["node"], {}).get(port.get("slot", 0) + 1)
        shown = f"{labels.get(port['node'], port['node'])}.{port['name'][-1]}"
        return shown, (mine or {}).get("tx_packets"), (mine or {}).get("rx_packets")
    out = []
    for link in placed.get("links") or []:
        (a, a_tx, a_rx), (b, b_tx, b_rx) = counts(link["a"]), counts(link["b"])
        hop = Hop("link", f"link {a} – {b}")
        if None not in (a_tx, a_rx, b_tx, b_rx):
            hop.rx, hop.tx = a_tx + b_tx, a_rx + b_rx
            hop.lost = hop.rx - hop.tx
        else:
            hop.why.append("an end's count is missing")
        out.append(hop)
    if daemons:
        for hop in out:
            if hop.lost:
                hop.why.append("its counts include the routing daemons' packets too")
    for nf in nfs:
        ports = results[nf["name"]].values()
        name = f"nf {nf['idx'] + 1} of {len(nfs)}: {nf['kind']} {labels.get(nf['name'], '')}"
        if not ports:
            out.append(Hop("nf", name, why=["its counters could not be read"]))
            continue
        rx, tx = (sum(p.get(k) or 0 for p in ports) for k in ("rx_packets", "tx_packets"))
        hop = Hop("nf", name, rx=rx, tx=tx, lost=rx - tx)
        if hop.lost and daemons:
            hop.why.append("its daemons' own packets counted in, not forwarded")
        hop.why += kernel_drops.describe(_kernel_of(point, nf["name"]), ported=True)
        out.append(hop)
    return out


def hops(point: dict[str, Any], pair: int) -> list[Hop]:
    """The pair's path from sender to receiver, a hop per engine and per link,
    then the total (sent by the sender, received by the receiver); a graph's
    links, then its NFs."""
    sender, receiver = _ends(point, pair)
    nfs = sorted((n for n in point.get("nf_results") or [] if n["pair"] == pair),
                 key=lambda n: n["idx"])
    names = _port_names(point, pair)
    sent, sent_exact = _sent(sender)
    got, got_exact = _received(receiver)

    def shown(e: dict | None) -> str:
        return node(point, e["endpoint"]) if e else "?"

    out: list[Hop] = [Hop("send", shown(sender), tx=sent)]
    if point.get("shape") == "graph" and _placed(point, pair).get("links"):
        out += _graph_hops(point, pair, nfs, sent, got)
        out.append(Hop("recv", shown(receiver), rx=got))
        return out + [_total(out, sender, sent, got, sent_exact and got_exact)]
    upstream, exact = sent, sent_exact
    for i, nf in enumerate(nfs):
        hop = _nf(point, nf, len(nfs))
        up, down = (names[2 * i], names[2 * i + 1]) if names else (None, None)
        out.append(_link(point, up, down, upstream, hop.rx, exact, f"link → nf {i + 1}"))
        out.append(hop)
        upstream, exact = hop.tx, hop.tx is not None
    up, down = (names[-2], names[-1]) if names else (None, None)
    last = _link(point, up, down, upstream, got, exact and got_exact, "link → receiver")
    if last.lost != 0:   # a lossless link's kernel drops were not the pair's frames
        last.why += _kernel_drops(receiver)
    out.append(last)
    out.append(Hop("recv", shown(receiver), rx=got))
    out.append(_total(out, sender, sent, got, sent_exact and got_exact))
    return out


def _total(out: list[Hop], sender: dict | None, sent: int | None, got: int | None,
           exact: bool) -> Hop:
    """End to end: what the sender sent against what the receiver took, and
    every hop that lost frames."""
    ends_exact = exact and None not in (sent, got)
    total = Hop("total", "end to end", rx=sent, tx=got,
                lost=sent - got if ends_exact else None)
    total.why = [f"{h.name}: {_n(h.lost)}" + (f" ({', '.join(h.why)})" if h.why else "")
                 for h in out if h.lost]
    if sender and sender["role"] == "client" and \
            (sender["rx_packets"] or 0) < (sender["tx_packets"] or 0):   # echoes missing
        total.why += _kernel_drops(sender, "client", "echoes")
    return total


def _kernel_drops(e: dict | None, who: str = "receiver", what: str = "datagrams") -> list[str]:
    """With the udp api: what the end's kernel dropped before its engine saw it."""
    if e is None:
        return []
    return udp_errors.describe(e.get("udp_in_errors"), e.get("udp_in_csum_errors"),
                               e.get("udp_rcvbuf_errors"), who, what)


def _kernel_dropped(point: dict[str, Any]) -> bool:
    return any(e.get("udp_in_errors") for e in point.get("endpoints") or [])


def loss_localisation(run: dict[str, Any], brief: bool = False) -> Table | None:
    """A row per hop of every pair's path. `brief` (the end of a run): only the
    paths that lost frames or could not be compared, else one line saying none did."""
    points = [p for p in done_points(run) if p.get("nf_results") or _kernel_dropped(p)]
    if not points:
        return None
    axes = varying(done_points(run)) or ["switch"]
    rows, paths = [], 0
    for p in points:
        pairs = {n["pair"] for n in p.get("nf_results") or []} or \
            {e["pair"] for e in p.get("endpoints") or []}
        for pair in sorted(pairs):
            path_hops = hops(p, pair)
            paths += 1
            lossless = all(h.lost == 0 for h in path_hops if h.what in ("link", "nf", "total"))
            # a path without NFs is here for its kernel drops: only where it lost frames
            if lossless and (brief or not p.get("nf_results")):
                continue
            rows += [[label(p, axes), p.get("rep", 0) + 1, pair, h.name, h.shown("rx"),
                      h.shown("tx"), h.lost, "; ".join(h.why)] for h in path_hops]
    if not rows:
        return ("Loss along each path", ["paths", "lost"],
                [[paths, "none: every hop's counts agree"]])
    return ("Loss along each path", ["point", "rep", "pair", "hop", "in", "out", "lost",
                                     "where and why"], rows)


# --- latency per NF ------------------------------------------------------------

@dataclass
class Slope:
    """Latency over the number of NFs, for points alike in everything else."""

    point: dict[str, Any]      # one of them, for its label and fields
    shape: str                 # chain | pipeline (pair: only points without NFs)
    kind: str                  # one_way | rtt
    points: list[tuple[int, float, float | None]]   # (nfs, p50 µs, p99 µs) per point
    p50: float                 # µs per NF
    p50_base: float            # µs at 0 NFs (the fit's intercept)
    p99: float | None
    p99_base: float | None
    contended: list[bool] = field(default_factory=list)   # per point: more pollers than cores

    @property
    def switch(self) -> str:
        return str(self.point.get("switch"))


def fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least squares: (slope, intercept) of y = slope · x + intercept."""
    n = len(xs)
    mx, my = math.fsum(xs) / n, math.fsum(ys) / n
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    if not sxx:
        raise ValueError("fit: every x is the same")
    slope = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, my - slope * mx


# Fields a point may differ in and still be on the same curve: the NF count itself.
_ALONG = ("nfs",)


def slopes(run: dict[str, Any]) -> list[Slope]:
    """A Slope per set of points that differ only in `nfs` (repetitions included:
    each is a point of the fit) and measured at least two NF counts."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for p in done_points(run):
        if p.get("lat_p50_ns") is None:
            continue
        key = tuple(str(_param(p, f.name)) for f in fields.stored() if f.name not in _ALONG)
        groups[(*key, p.get("latency_kind"))].append(p)
    out = []
    for members in groups.values():
        xs = [int(_param(p, "nfs") or 0) for p in members]
        if len(set(xs)) < 2:
            continue
        p50 = [p["lat_p50_ns"] / 1e3 for p in members]
        p99 = [None if p.get("lat_p99_ns") is None else p["lat_p99_ns"] / 1e3 for p in members]
        s50, b50 = fit(xs, p50)
        s99, b99 = fit(xs, p99) if None not in p99 else (None, None)
        shape = next((p.get("shape") for p in members if p.get("shape") not in (None, "pair")),
                     None) or "?"
        ordered = sorted(range(len(members)), key=lambda i: (xs[i], p50[i]))
        out.append(Slope(members[0], shape, str(members[0].get("latency_kind")),
                         [(xs[i], p50[i], p99[i]) for i in ordered], s50, b50, s99, b99,
                         [contention.contended(members[i]) for i in ordered]))
    return out


KIND = {"one_way": "one-way", "rtt": "round trip"}


def latency_per_nf(run: dict[str, Any]) -> Table | None:
    found = slopes(run)
    if not found:
        return None
    axes = [f for f in varying(done_points(run)) if f not in _ALONG]
    rows = [[label(s.point, axes) if axes else s.switch, s.switch, s.shape,
             KIND.get(s.kind, s.kind), ", ".join(map(str, sorted({x for x, _, _ in s.points}))),
             len(s.points), s.p50_base, s.p50, s.p99] for s in found]
    return ("Latency per network function", ["configuration", "data plane", "shape", "latency",
                                             "NFs", "points", "p50 µs at 0 NFs",
                                             "p50 µs per NF", "p99 µs per NF"], rows)


# --- startup -------------------------------------------------------------------

def startup(run: dict[str, Any]) -> Table | None:
    """Each NF: ready (container created, engine started, ports up) and its first
    forwarded frame, in seconds; how busy its poller was."""
    points = [p for p in done_points(run) if p.get("nf_results")]
    if not points:
        return None
    axes = varying(done_points(run)) or ["switch"]
    queued = any(nf.get("queues") for p in points for nf in p["nf_results"])
    rows = []
    for p in points:
        for nf in p["nf_results"]:
            busy = busy_ratio(nf)
            rows.append([label(p, axes), p.get("rep", 0) + 1, nf["pair"],
                         f"{nf['idx'] + 1} of {_param(p, 'nfs')}", nf["kind"],
                         short_name(p, nf["name"]), nf["cpu"], nf.get("ready_s"),
                         nf.get("first_tx_s"), None if busy is None else 100 * busy,
                         *([queue_shares(nf.get("queues"))] if queued else [])])
    return ("NF startup and polling", ["point", "rep", "pair", "NF", "kind", "node", "cpu",
                                       "ready s", "first forward s", "busy polls %",
                                       *(["frames per core %"] if queued else [])], rows)


def queue_shares(queues: list[int] | None) -> str:
    """`52 · 48`: the share of its frames each core's thread took (an NF on
    several cores); "" on one."""
    total = sum(queues or ())
    if not total:
        return ""
    return " · ".join(f"{100 * n / total:.0f}" for n in queues)


def _max(values: list[Any]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def startup_per_point(run: dict[str, Any]) -> Table | None:
    """The slowest NF of each point: its path was ready within that long."""
    points = [p for p in done_points(run) if p.get("nf_results")]
    if not points:
        return None
    axes = varying(done_points(run)) or ["switch"]
    rows = [[label(p, axes), p.get("rep", 0) + 1, path(p), len(p["nf_results"]),
             _max([n.get("ready_s") for n in p["nf_results"]]),
             _max([n.get("first_tx_s") for n in p["nf_results"]])] for p in points]
    return ("NF startup per point", ["point", "rep", "path", "NFs", "all ready within s",
                                     "all forwarding within s"], rows)


def all_tables(run: dict[str, Any], brief: bool = False) -> list[Table]:
    """The NF tables; `brief` (the end of a run): lossless paths and each NF's
    startup left to `cnfperf results show` and the report."""
    return [t for t in (loss_localisation(run, brief), latency_per_nf(run),
                        None if brief else startup(run), startup_per_point(run),
                        routing.sessions(run)) if t]
