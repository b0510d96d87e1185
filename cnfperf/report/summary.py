"""What a stored run says, as tables of plain values: the terminal (tables.py) and
the HTML report (build.py) render the same numbers.

Each function takes a run as the results store returns it and gives
(title, headers, rows), or None when the run has nothing of that kind.
Rates are in kpps, latencies in µs.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

from cnfperf import fields
from cnfperf.experiments import stats
from cnfperf.plan import describe_path, hosts_said, roles, run_prefix
from cnfperf.report import baselines, contention, emulation, kinds, stalls

Table = tuple[str, list[str], list[list[Any]]]

# Fields that tell points apart in a label, in the order a reader scans them.
LABEL_FIELDS = tuple(f.name for f in fields.labelled())


def done_points(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's finished points."""
    return [p for p in run.get("points", []) if p.get("status") == "done"]


def varying(points: Sequence[dict[str, Any]], names: Sequence[str] = LABEL_FIELDS) -> list[str]:
    """Fields whose value differs between points (the run's sweep axes), then
    pairs' own values that do (pair.1.rate: a profile's)."""
    return [f for f in [*names, *profiled(points)]
            if len({str(_param(p, f)) for p in points}) > 1]


def profiled(points: Sequence[dict[str, Any]]) -> list[str]:
    """The pairs' own values the points' scenarios hold, as pair.N.FIELD."""
    found = {f"{fields.PROFILE}.{index}.{name}"
             for p in points for index, own in ((p.get("scenario") or {}).get(fields.PROFILE)
                                                or {}).items() for name in own}
    return sorted(found, key=lambda n: (fields.profiled(n)[0],
                                        fields.PER_PAIR.index(fields.profiled(n)[1])))


def param(point: dict[str, Any], name: str) -> Any:
    """A scenario field of a stored point, or a pair's own value (pair.1.rate)."""
    return _param(point, name)


def _param(point: dict[str, Any], name: str) -> Any:
    """A scenario field of a stored point: the scenario's own value (True, "ndr")
    over the column's (1, text in a REAL column); a pair's own (pair.1.rate):
    its profile's, else the point's, None where the point has no such pair."""
    scenario = point.get("scenario") or {}
    if (own := fields.profiled(name)) is not None:
        index, field = own
        if index >= int(_param(point, "pairs") or 1):
            return None
        mine = (scenario.get(fields.PROFILE) or {}).get(str(index)) or {}
        return mine[field] if field in mine else _param(point, field)
    return scenario[name] if name in scenario else point.get(name)


def label(point: dict[str, Any], names: Sequence[str]) -> str:
    """`vhost dpdk latency size=64 mmsg=no`: values that name themselves bare."""
    table = fields.by_name()
    parts = []
    for name in names:
        v, f = _param(point, name), table.get(name)
        if f and f.label == "bare":
            parts.append(str(v))
        elif v is None and fields.profiled(name):
            parts.append(f"{name}=–")   # no such pair in this point
        else:
            parts.append(f"{name}={fields.show(name, v)}")
    return " ".join(parts) or str(point.get("switch", ""))


def _kpps(pps: float | None) -> float | None:
    return None if pps is None else pps / 1e3


def _us(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e3


def _percent(ratio: float | None) -> float | None:
    """A ratio as a percentage; None (shown –) where none was stored, never 0."""
    return None if ratio is None else 100 * ratio


def images(run: dict[str, Any]) -> str | None:
    """The container images the run's points ran in, with their sizes: `tester
    ends: busybox+engine+dpdk 8.9 MB; network functions: engine-static 1.5 MB`
    (the engine's network functions on dpdk share the ends' image; the others
    have one of their own: minimal, or tools for testpmd and commands). None if
    no point stored one."""
    seen: dict[str, dict[str, None]] = {"tester ends": {}, "network functions": {}}
    for p in run.get("points", []):
        for who, key in (("tester ends", "image"), ("network functions", "nf_image")):
            if p.get(f"{key}_name"):
                seen[who][_image(p[f"{key}_name"], p.get(f"{key}_size"))] = None
    parts = [f"{who}: {', '.join(found)}" for who, found in seen.items() if found]
    return "; ".join(parts) or None


def _image(name: str, size: int | None) -> str:
    if name == "host":   # the netns runtime: no image, the host's binaries
        return "host binaries (no image)"
    return name if size is None else f"{name} {size / 1e6:.1f} MB"


def switch_host(run: dict[str, Any], point: dict[str, Any]) -> dict[str, Any]:
    """The facts of the host the point's switch ran on: another host's, as
    the point stored them (its `hosts`), where its dut_host is one; else the
    run's own."""
    dut = (point.get("scenario") or {}).get("dut_host") or fields.LOCAL
    other = (point.get("hosts") or {}).get(dut) if dut != fields.LOCAL else None
    return other if isinstance(other, dict) else (run.get("host") or {})


def path(point: dict[str, Any]) -> str:
    """`send → 3 × l2 (chain) → recv`, as the plan said it (TestPoint.path)."""
    sender, receiver = roles(contention.tester(point) or "split",
                             str(_param(point, "mode") or "throughput"))
    nfs = int(_param(point, "nfs") or 0)
    text = describe_path(sender, nfs, str(_param(point, "nf")), point.get("shape"), receiver,
                         str(_param(point, "nf_in") or "container"),
                         str(_param(point, "endpoint_in") or "container"))
    return text + hosts_said(str(_param(point, "tester_host") or fields.LOCAL),
                             str(_param(point, "dut_host") or fields.LOCAL),
                             str(_param(point, "nf_host") or "") if nfs else "")


def short_name(point: dict[str, Any], name: str) -> str:
    """A node's name without the run's prefix: `n001`, `p0r`."""
    return name.removeprefix(run_prefix(str(point.get("run_id", "")))) or name


def nf_labels(point: dict[str, Any]) -> dict[str, str]:
    """Each NF's name as its graph gave it (`top`), else without the run's
    prefix (`n001`), by its node name (the stored placement's)."""
    return {nf["name"]: nf.get("label") or short_name(point, nf["name"])
            for pair in point.get("placement") or [] if isinstance(pair, dict)
            for nf in pair.get("nfs") or []}


def node(point: dict[str, Any], name: str) -> str:
    """A node of the point as a reader finds it: `n001 (nf 2)`, `p0r (recv)`,
    its name without the run's prefix, and what it is."""
    short = short_name(point, name)
    for nf in point.get("nf_results") or []:
        if nf["name"] == name:
            return f"{short} (nf {nf['idx'] + 1})"
    role = next((e["role"] for e in point.get("endpoints") or [] if e["endpoint"] == name), "")
    return f"{short} ({role})" if role else short


def cpu_bound(point: dict[str, Any]) -> str:
    """The nodes whose poller found frames in nearly every poll (model.CPU_BOUND_BUSY);
    "–" when the point predates the check."""
    if point.get("cpu_bound") is None:
        return "–"
    return ", ".join(node(point, n) for n in point["cpu_bound"].split(",") if n) or "none"


def _mb(size: Any) -> float | None:
    return None if size is None else size / 1e6


def _pollers(point: dict[str, Any]) -> str:
    found = contention.share(point)
    return f"{found.pollers} / {found.cores}" if found else "–"


def points(run: dict[str, Any], brief: bool = False) -> Table | None:
    """Each point's path, the nodes that were CPU-bound, its tester (and why),
    its busy pollers against its cores, and its images' sizes (the NF image's
    once the store has it). `brief`: only when a point has NFs or a CPU-bound
    node (the terminal's run table already lists every point)."""
    done = done_points(run)
    if not done or brief and not any(_param(p, "nfs") or p.get("cpu_bound") for p in done):
        return None
    axes = varying(done) or ["switch"]
    nf_image = any(p.get("nf_image_size") is not None for p in done)
    vms = emulation.any_vms(done)
    rows = [[label(p, axes), p.get("rep", 0) + 1, path(p), cpu_bound(p),
             contention.tester_said(p), _pollers(p), contention.contended(p),
             *([emulation.said(p)] if vms else []),
             _mb(p.get("image_size")), *([_mb(p.get("nf_image_size"))] if nf_image else [])]
            for p in done]
    return ("Points", ["point", "rep", "path", "CPU-bound", "tester", "busy pollers / cores",
                       contention.COLUMN, *([emulation.COLUMN] if vms else []), "image MB",
                       *(["NF image MB"] if nf_image else [])],
            rows)


def _flag(run: dict[str, Any]) -> bool:
    """Whether the run's tables need a CPU contended column: a point was."""
    return any(contention.contended(p) for p in done_points(run))


def repetitions(run: dict[str, Any]) -> Table | None:
    """Points measured K > 1 times: mean, sample stddev and 95% CI of the mean."""
    points = done_points(run)
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        groups[p.get("grp") or p.get("key") or str(p["idx"])].append(p)
    if not any(len(g) > 1 for g in groups.values()):
        return None
    axes = varying(points) or ["switch"]
    rows = []
    for members in groups.values():
        # a repetition without a value (not stored) is left out, never counted as 0
        rates = [m["rx_pps"] for m in members if m.get("rx_pps") is not None]
        losses = [100 * m["loss_ratio"] for m in members if m.get("loss_ratio") is not None]
        rx = stats.summarize(rates) if rates else stats.Summary(0, None, None, None, None)
        rows.append([label(members[0], axes), rx.n, _kpps(rx.mean), _kpps(rx.stddev),
                     _kpps(rx.ci_low), _kpps(rx.ci_high),
                     stats.mean(losses) if losses else None])
    return ("Repetitions", ["point", "n", "rx kpps mean", "stddev", "95% CI low", "95% CI high",
                            "loss % mean"], rows)


def throughput(run: dict[str, Any]) -> Table | None:
    """One row per pair and, with several pairs, their total: per-pair and total side by side."""
    points = [p for p in done_points(run) if p.get("mode") != "latency"]
    if not points:
        return None
    axes = varying(done_points(run)) or ["switch"]
    flag = _flag(run)
    own = any((p.get("scenario") or {}).get(fields.PROFILE) for p in points)
    gen = baselines.any_share(points)   # generator_baseline
    rows = []
    for p in points:
        pairs = p.get("per_pair") or []
        entries = [(str(pair["pair"]), pair) for pair in pairs]
        if len(pairs) > 1:
            entries.append(("all", p))
        for name, r in entries:
            # the share is the point's: on its only pair's row, or its total's
            share = baselines.percent(p) if name == "all" or len(pairs) == 1 else None
            rows.append([label(p, axes), p.get("rep", 0) + 1, name,
                         *([asked(p, name)] if own else []),
                         *([contention.contended(p)] if flag else []), _kpps(r["tx_pps"]),
                         _kpps(r["rx_pps"]), _kpps(r.get("steady_rx_pps")), r["sent"],
                         r["received"], _percent(r["loss_ratio"]), *_stalls(p, name),
                         None if r["rx_bps"] is None else r["rx_bps"] / 1e6,
                         *([share] if gen else [])])
    return ("Throughput", ["point", "rep", "pair", *(["own values"] if own else []),
                           *([contention.COLUMN] if flag else []),
                           "tx kpps", "rx kpps", "steady rx kpps", "sent", "received", "loss %",
                           stalls.COLUMN, stalls.SHARE, "rx Mbit/s",
                           *([baselines.COLUMN] if gen else [])], rows)


def _stalls(point: dict[str, Any], pair: str) -> tuple[float | None, float | None]:
    """The most a poller of the pair (`all`: of the point) lost to stalls: ms and %."""
    which = None if pair == "all" else int(pair)
    found = stalls.share(point, which)
    return stalls.ms(point, which), None if found is None else 100 * found


def asked(point: dict[str, Any], pair: str) -> str:
    """A pair's own values, where they differ from its point's (its profile):
    `rate=200k size=64`; "" for a pair without, and for the total."""
    own = ((point.get("scenario") or {}).get(fields.PROFILE) or {}).get(pair) or {}
    return " ".join(f"{k}={fields.show(k, v)}" for k, v in own.items())


def conformance(run: dict[str, Any]) -> Table | None:
    """Per pair, what its receiver got held to the contract (the shaper's rate and
    bucket, else the policer's): the smallest bucket it conforms to at that
    rate, and the share of frames beyond the contract's bucket."""
    points = [p for p in done_points(run)
              if any(pp.get("conformance_sigma") is not None for pp in p.get("per_pair") or [])]
    if not points:
        return None
    axes = varying(done_points(run)) or ["switch"]
    rows = []
    for p in points:
        shaper = _param(p, "shaper") not in (None, "none")
        by = "shaper" if shaper else "policer"
        for pair in p.get("per_pair") or []:
            if pair.get("conformance_sigma") is None:
                continue
            rows.append([label(p, axes), p.get("rep", 0) + 1, str(pair["pair"]), by,
                         _kpps(_param(p, f"{by}_rate")), _param(p, f"{by}_bucket"),
                         pair["conformance_sigma"], _percent(pair["conformance_exceeded"]),
                         *_waits(p, pair["pair"])])
    return ("Conformance of what was received", ["point", "rep", "pair", "contract",
                                                 "rate kpps", "bucket", "sigma (frames)",
                                                 "beyond the bucket %", "longest wait ms",
                                                 "bound ms"], rows)


def _waits(point: dict[str, Any], pair: int) -> tuple[float | None, float | None]:
    """The longest a frame waited in the engine NFs' shapers on the pair's path
    (their summaries' delay_max_ns), and its bound: the queue at the rate."""
    waits = [e["summary"]["shaper"]["delay_max_ns"] for e in point.get("endpoints") or []
             if e.get("pair") == pair and e.get("role") == "nf"
             and isinstance((e.get("summary") or {}).get("shaper"), dict)]
    if not waits:
        return None, None
    rate = _param(point, "shaper_rate") or 0
    return max(waits) / 1e6, 1e3 * _param(point, "shaper_queue") / rate if rate else None


def latency(run: dict[str, Any]) -> Table | None:
    """Latency percentiles, each row saying its kind: a round trip (a split
    tester's latency points) or one way (a single tester's, and a throughput
    point's receiver)."""
    points = [p for p in done_points(run) if p.get("lat_p50_ns") is not None]
    if not points:
        return None
    axes = varying(done_points(run)) or ["switch"]
    flag = _flag(run)
    rows = [[label(p, axes), p.get("rep", 0) + 1, *([contention.contended(p)] if flag else []),
             kinds.said(p.get("latency_kind")),
             p.get("per_pair") and sum(pp.get("received") or 0 for pp in p["per_pair"]),
             *_stalls(p, "all"),
             *(_us(p.get(f"lat_{k}_ns")) for k in ("min", "mean", "p50", "p90", "p99", "p999",
                                                     "max"))]
            for p in points]
    return ("Latency", ["point", "rep", *([contention.COLUMN] if flag else []), "kind", "samples",
                        stalls.COLUMN, stalls.SHARE, "min µs", "mean µs", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs",
                        "max µs"], rows)


def _ms(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e6


def faults(run: dict[str, Any]) -> Table | None:
    """Each point with a fault (fault_facts): what went down where, when and for
    how long (± the spread of its commands), how long putting back a router's
    routes took after the ups (restore), and per pair the outage its counting
    end measured (the longest gap in time, less one frame interval) and the
    frames lost in it; `outage − down` near 0 is a path that lost exactly what
    was sent while the port was down (near restore: while its routes were
    gone too). Where routing daemons ran (frr), when the first said a session
    went down after the cut (noticed ms), and which said what."""
    points = [p for p in done_points(run) if p.get("fault_facts")]
    if not points:
        return None
    axes = varying(done_points(run)) or ["switch"]
    daemons = any("noticed_ms" in p["fault_facts"] for p in points)
    rows = []
    for p in points:
        f = p["fault_facts"]
        for pair in p.get("per_pair") or []:
            outage = pair.get("outage_ns")
            rows.append([label(p, axes), p.get("rep", 0) + 1, pair["pair"], f.get("target"),
                         f.get("at"), f.get("down_at_s"), _ms(f.get("down_ns")),
                         _ms(f.get("spread_ns")), _ms(f.get("restore_ns")), _ms(outage),
                         pair.get("outage_lost"),
                         None if outage is None else _ms(outage - f.get("down_ns", 0))])
            if daemons:
                rows[-1] += [f.get("noticed_ms"), f.get("noticed")]
    return ("Faults", ["point", "rep", "pair", "fault", "at", "down at s", "down ms",
                       "± ms", "restore ms", "outage ms", "frames lost", "outage − down ms",
                       *(["noticed ms", "noticed by"] if daemons else [])], rows)


def noises(run: dict[str, Any]) -> Table | None:
    """Each point's noisy neighbour as it ran (noise_facts): stress-ng's bogo
    operations, or a command and its last line of output (all of it in the
    trial directory's noise.out)."""
    points = [p for p in done_points(run) if p.get("noise_facts")]
    if not points:
        return None
    axes = varying(done_points(run)) or ["switch"]
    rows = []
    for p in points:
        n = p["noise_facts"]
        did = ", ".join(f"{k} {v:,.0f} bogo ops" for k, v in (n.get("bogo_ops") or {}).items()) \
            if n.get("kind") != "cmd" else ((n.get("tail") or [""])[-1])[:80]
        rows.append([label(p, axes), p.get("rep", 0) + 1, n.get("kind"),
                     ",".join(map(str, n.get("cores") or [])),
                     n.get("command", ""), did])
    return ("Noisy neighbours", ["point", "rep", "kind", "cores", "command", "it did"], rows)


def failures(run: dict[str, Any]) -> Table | None:
    failed = [p for p in run.get("points", []) if p.get("status") != "done"]
    if not failed:
        return None
    axes = varying(run.get("points", [])) or ["switch"]
    return ("Points that did not finish", ["point", "status", "error"],
            [[label(p, axes), p["status"], p.get("error") or ""] for p in failed])


def hosts(run: dict[str, Any]) -> Table | None:
    """The other hosts the run's points ran on (tester_host, dut_host, nf_host)
    and what each was, as the point stored it; None for a run on one host."""
    seen: dict[str, dict[str, Any]] = {}
    count: dict[str, int] = defaultdict(int)
    for p in run.get("points", []):
        for name, facts in (p.get("hosts") or {}).items():
            seen[name] = facts
            count[name] += 1
    if not seen:
        return None
    rows = [[name, f"{f.get('user')}@{f.get('address')}:{f.get('port')}", f.get("kernel"),
             f"{f.get('cpu_model')} × {f.get('cores')}", f.get("cnfperf"), f.get("engine"),
             f.get("clock"), count[name]] for name, f in seen.items()]
    return ("Other hosts", ["host", "reached as", "kernel", "CPU", "cnfperf", "engine",
                            "clock", "points"], rows)


def two_clocks(points: Sequence[dict[str, Any]]) -> str:
    """Why throughput points whose tester's ends ran on two hosts (tester_host
    a+b) have no one-way latency; "" when none did. A latency point keeps
    its round trip: the client's own clock."""
    found = [p for p in points if p.get("mode") != "latency" and p.get("status") == "done"
             and len(set(str(_param(p, "tester_host") or "").split("+"))) > 1]
    if not found:
        return ""
    which = ", ".join(str(p["idx"] + 1) for p in found)
    hosts = ", ".join(dict.fromkeys(str(_param(p, "tester_host")) for p in found))
    return (f"no one-way latency (point{'s' if len(found) > 1 else ''} {which}): the tester's "
            f"ends are on two hosts' clocks (tester_host {hosts}); a latency point's round "
            "trip is on its client's own clock")


def all_tables(run: dict[str, Any], more: Sequence[Table] = (),
               searched: Sequence[Table] = ()) -> list[Table]:
    """Every table of a run's report, in its order; `searched` (the searches'
    tables, report/searches.py) after the repetitions, `more` (the network
    functions' tables, report/nfs.py; CPU per node, report/cpu.py) before the
    failures."""
    return [t for t in (points(run), throughput(run), conformance(run), repetitions(run),
                        *searched, latency(run), faults(run), noises(run), *more, hosts(run),
                        failures(run)) if t]
