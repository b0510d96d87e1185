"""A run as it goes, for whoever watches it: events as JSON lines (`--events`)
and Prometheus metrics (`--metrics-port`, run/metrics.py), both made here from
what the runner reports.

Every event is one JSON object: `event` its kind (KINDS), `v` the schema's
version, `time` the wall clock (Unix seconds), `run` the run id, then its
kind's own fields. docs/events.schema.json holds them, and docs/live.md says
what each is; a test holds the events a real run writes to that schema.
Rates are frames per second (a trial's and a soak second's per pair, as
searches count them; a sample's and a point's over all pairs), latencies ns.
"""
from __future__ import annotations

import functools
import json
import sys
import time
from typing import IO, Any, Callable, Protocol, Sequence

from cnfperf import fields
from cnfperf.results.model import PointResult
from cnfperf.run.teardown import Interrupted
from cnfperf.run.trial import Progress
from cnfperf.plan import TestPoint

VERSION = 1
KINDS = ("run_start", "point_start", "sample", "trial", "second", "point_end", "run_end")


def _watching(method: Callable[..., None]) -> Callable[..., None]:
    """A listener's method that never costs the run: what it fails at
    (making an event of what an engine printed, a sink) is said once, and the
    run goes on unwatched in that respect."""
    @functools.wraps(method)
    def safe(self: "Live", *args: Any, **kw: Any) -> None:
        try:
            method(self, *args, **kw)
        except Interrupted:      # a signal that lands while watching stops the run
            raise
        except Exception as e:   # noqa: BLE001 (any failure of watching is the same to the run)
            if method.__name__ not in self.failed:
                self.failed.add(method.__name__)
                self.warn(f"could not make a {method.__name__} event: {e!r}")
    return safe


class Sink(Protocol):
    def __call__(self, event: dict[str, Any]) -> None: ...
    def close(self) -> None: ...


class Live:
    """The runner's listener: each call becomes an event handed to every sink.
    A sink that fails (a closed pipe, a full disk) is dropped with one
    warning: watching a run must never cost it. `cpu`: samples carry each
    node's CPU use (a read of /proc a second: only when a sink shows it)."""

    def __init__(self, sinks: Sequence[Sink], cpu: bool = False,
                 warn: Callable[[str], None] = lambda text: print(
                     f"cnfperf: warning: {text}", file=sys.stderr)):
        self.sinks = list(sinks)
        self.cpu = cpu
        self.warn = warn
        self.run_id = ""
        self.failed: set[str] = set()   # the methods that failed once (_watching)

    def emit(self, kind: str, **fields: Any) -> None:
        event = {"event": kind, "v": VERSION, "time": round(time.time(), 3), "run": self.run_id,
                 **fields}
        for sink in list(self.sinks):
            try:
                sink(event)
            except Interrupted:
                raise
            except Exception as e:   # noqa: BLE001 (any sink's failure is the same to the run)
                self.sinks.remove(sink)
                self.warn(f"stopped sending events to {sink}: {e}")

    @_watching
    def run_start(self, run_id: str, points: int, todo: int, resumed: bool,
                  command: Sequence[str]) -> None:
        self.run_id = run_id
        self.emit("run_start", points=points, todo=todo, resumed=resumed, command=list(command))

    @_watching
    def point_start(self, point: TestPoint) -> None:
        s = point.scenario
        self.emit("point_start", point=point.index, points=point.total, rep=point.rep,
                  key=point.key,
                  label=" ".join([s.describe(), *fields.undescribed(point.label)]),
                  switch=s.switch, api=s.api, mode=s.mode, pairs=s.pairs, size=s.size,
                  rate=s.rate.value(), nfs=s.nfs)

    @_watching
    def progress(self, p: Progress) -> None:
        """A measuring tick with news becomes a sample, a trial's result a trial."""
        if p.phase == "measuring" and p.pairs is not None:
            pairs = [_sampled(x) for x in p.pairs]
            extra = {"nodes": p.cpu()} if self.cpu and p.cpu is not None else {}
            self.emit("sample", point=p.point.index, trial=p.detail,
                      elapsed_s=round(p.elapsed, 3),
                      rx_pps=sum(x["rx_pps"] or 0 for x in pairs), pairs=pairs, **extra)
        elif p.phase == "measured" and p.result is not None and p.scenario is not None:
            t, n = p.result.total, len(p.result.pairs) or 1
            self.emit("trial", point=p.point.index, trial=p.detail,
                      offered_pps=p.scenario.rate.pps, duration_s=p.scenario.duration,
                      tx_pps=t.tx_pps / n, rx_pps=t.rx_pps / n, loss_ratio=t.loss_ratio,
                      lost=t.lost, **_latency(t.latency))

    @_watching
    def seconds(self, point: TestPoint, rows: list[dict[str, Any]]) -> None:
        """A soak's seconds, as they are stored."""
        pairs = len(point.pairs) or 1
        for r in rows:   # per pair, as the soak's offered rate is
            rx = None if r["rx_pps"] is None else r["rx_pps"] / pairs
            self.emit("second", point=point.index, n=r["n"], segment=r["segment"],
                      at_s=r["at_s"], offered_pps=r["offered_pps"], rx_pps=rx,
                      lost=r["lost"], loss_ratio=r["loss_ratio"], p50_ns=r["lat_p50_ns"],
                      p99_ns=r["lat_p99_ns"], max_ns=r["lat_max_ns"])

    @_watching
    def point_end(self, point: TestPoint, status: str, seconds: float,
                  result: PointResult | None = None, found: dict[str, Any] | None = None,
                  error: str | None = None) -> None:
        t = result.total if result else None
        search = (found or {}).get("search") or {}
        self.emit("point_end", point=point.index, status=status, error=error,
                  seconds=round(seconds, 3), rx_pps=t.rx_pps if t else None,
                  tx_pps=t.tx_pps if t else None, loss_ratio=t.loss_ratio if t else None,
                  lost=t.lost if t else None, sent=t.sent if t else None,
                  received=t.received if t else None,
                  rate_pps=search.get("rate_pps"),
                  **_latency(t.latency if t else None))

    @_watching
    def run_end(self, status: str, done: int, error: str | None = None) -> None:
        self.emit("run_end", status=status, done=done, error=error)

    def close(self) -> None:
        for sink in self.sinks:
            try:
                sink.close()
            except Exception as e:   # noqa: BLE001
                self.warn(f"could not close {sink}: {e}")


def _latency(lat: Any) -> dict[str, float | None]:
    ns = lat.ns if lat else {}
    return {"p50_ns": ns.get("p50"), "p99_ns": ns.get("p99"), "max_ns": ns.get("max")}


def _sampled(x: dict[str, Any]) -> dict[str, Any]:
    """A pair's latest interval (trial.Progress.pairs) as a sample has it."""
    lat = x.get("latency") or {}
    rx, lost = int(x.get("rx_packets") or 0), max(0, int(x.get("lost") or 0))
    return {"pair": x["pair"], "phase": x.get("phase"), "interval_s": x.get("interval_s"),
            "tx_pps": x.get("tx_pps"),
            "rx_pps": x.get("rx_pps"), "lost": lost,
            "loss_ratio": lost / (rx + lost) if rx + lost else 0.0,
            "p50_ns": lat.get("p50_ns"), "p99_ns": lat.get("p99_ns"),
            "max_ns": lat.get("max_ns")}


class EventsFile:
    """Events as JSON lines on a stream (a file, or stdout for `-`), each
    flushed as it is written: a reader follows the run line by line."""

    def __init__(self, stream: IO[str], name: str):
        self.stream = stream
        self.name = name

    def __call__(self, event: dict[str, Any]) -> None:
        self.stream.write(json.dumps(event, default=str) + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.stream is not sys.stdout:
            self.stream.close()

    def __str__(self) -> str:
        return self.name
