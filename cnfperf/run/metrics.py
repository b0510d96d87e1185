"""Prometheus metrics of a run as it goes (`--metrics-port`): a sink of its
events (run/live.py) that keeps gauges and serves them over HTTP with the
`prometheus_client` package, in its text format or OpenMetrics, as the
scraper asks.

The running point's per-pair rates, loss and latency quantiles, and each
node's CPU use (another host's nodes read there), are its latest sample's (about one a second);
each finished point's received rate and loss stay for the run. Every series
is labelled with the run, the point (its index in the run, from 0) and the
data plane (`switch`). docs/grafana-dashboard.json shows them.
"""
from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

POINT = ("run", "point", "switch")
PAIR = (*POINT, "pair")
QUANTILES = {"p50_ns": "0.5", "p99_ns": "0.99", "max_ns": "1"}


class Metrics:
    """The gauges, fed by events; `serve` opens the port (OSError when it
    cannot: the caller says so before the run), `close` shuts it."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry(auto_describe=True)
        self.rx = Gauge("cnfperf_rx_packets_per_second", "received, the pair's latest interval",
                        PAIR, registry=r)
        self.tx = Gauge("cnfperf_tx_packets_per_second", "sent, the pair's latest interval",
                        PAIR, registry=r)
        self.loss = Gauge("cnfperf_loss_ratio", "lost over lost and received, the pair's "
                          "latest interval", PAIR, registry=r)
        self.latency = Gauge("cnfperf_latency_seconds", "latency of the pair's latest interval "
                             "(quantile 1: its longest)", (*PAIR, "quantile"), registry=r)
        self.cpu = Gauge("cnfperf_node_cpu_cores", "a node's CPU use since the last sample, in "
                         "cores", (*POINT, "node"), registry=r)
        self.points = Gauge("cnfperf_points", "the run's points", ("run",), registry=r)
        self.current = Gauge("cnfperf_point", "the point being measured (its index, from 0)",
                             ("run",), registry=r)
        self.finished = Counter("cnfperf_points_finished", "points finished, by status",
                                ("run", "status"), registry=r)
        self.point_rx = Gauge("cnfperf_point_rx_packets_per_second",
                              "a finished point's received rate, all pairs", POINT, registry=r)
        self.point_loss = Gauge("cnfperf_point_loss_ratio", "a finished point's loss ratio",
                                POINT, registry=r)
        self.switch = ""
        self.server: Any = None

    def serve(self, port: int, address: str = "") -> None:
        self.server, _ = start_http_server(port, address or "0.0.0.0", registry=self.registry)

    def __call__(self, event: dict[str, Any]) -> None:
        kind, run = event["event"], event["run"]
        if kind == "run_start":
            self.points.labels(run).set(event["points"])
        elif kind == "point_start":
            # only the running point's live series are served
            for g in (self.rx, self.tx, self.loss, self.latency, self.cpu):
                g.clear()
            self.switch = str(event["switch"])
            self.current.labels(run).set(event["point"])
        elif kind == "sample":
            where = (run, str(event["point"]), self.switch)
            for p in event["pairs"]:
                at = (*where, str(p["pair"]))
                for gauge, key in ((self.rx, "rx_pps"), (self.tx, "tx_pps"),
                                   (self.loss, "loss_ratio")):
                    if p.get(key) is not None:
                        gauge.labels(*at).set(p[key])
                for key, q in QUANTILES.items():
                    if p.get(key) is not None:
                        self.latency.labels(*at, q).set(p[key] / 1e9)
            for node, cores in (event.get("nodes") or {}).items():
                self.cpu.labels(*where, node).set(cores)
        elif kind == "point_end":
            where = (run, str(event["point"]), self.switch)
            self.finished.labels(run, event["status"]).inc()
            if event.get("rx_pps") is not None:
                self.point_rx.labels(*where).set(event["rx_pps"])
                self.point_loss.labels(*where).set(event["loss_ratio"] or 0.0)

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def __str__(self) -> str:
        return "the metrics endpoint"
