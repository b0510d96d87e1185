"""Watching a run: the Prometheus metrics fed by its events (served by
prometheus_client, read back by its parser), the Grafana dashboard that shows
them, the events file, and the flags' mistakes (one line, exit 2, before the
run). The runner's events are test_runner.py's; real runs' are the e2e tests'."""
from __future__ import annotations

import io
import json
import re
import socket
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cnfperf.cli import EXIT_USAGE, main
from cnfperf.run import live
from cnfperf.run.metrics import Metrics
from harness import REPO


def _events(run: str = "ab12") -> list[dict]:
    def e(kind, **fields):
        return {"event": kind, "v": 1, "time": 1.0, "run": run, **fields}
    pair = {"pair": 0, "phase": "measure", "interval_s": 1.0, "tx_pps": 5000.0,
            "rx_pps": 4900.0, "lost": 100, "loss_ratio": 0.02, "p50_ns": 40e3,
            "p99_ns": 90e3, "max_ns": 120e3}
    return [e("run_start", points=2, todo=2, resumed=False, command=["cnfperf"]),
            e("point_start", point=0, points=2, switch="ovs"),
            e("sample", point=0, trial="", elapsed_s=1.0, rx_pps=4900.0, pairs=[pair],
              nodes={"cnfpab12p0s": 0.99}),
            e("point_end", point=0, status="done", rx_pps=4950.0, loss_ratio=0.01),
            e("point_start", point=1, points=2, switch="vpp"),
            e("sample", point=1, trial="", elapsed_s=1.0, rx_pps=3000.0,
              pairs=[{**pair, "pair": 1, "rx_pps": 3000.0}])]


def _served(metrics: Metrics) -> dict[tuple, float]:
    from prometheus_client import generate_latest
    out = {}
    for family in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_serve_the_running_points_series_and_each_finished_points_result():
    metrics = Metrics()
    for event in _events()[:4]:
        metrics(event)
    served = _served(metrics)
    at = (("pair", "0"), ("point", "0"), ("run", "ab12"), ("switch", "ovs"))
    assert served[("cnfperf_rx_packets_per_second", at)] == 4900.0
    assert served[("cnfperf_tx_packets_per_second", at)] == 5000.0
    assert served[("cnfperf_loss_ratio", at)] == 0.02
    assert served[("cnfperf_latency_seconds", tuple(sorted((*at, ("quantile", "0.99")))))] \
        == pytest.approx(90e-6)
    node = (("node", "cnfpab12p0s"), ("point", "0"), ("run", "ab12"), ("switch", "ovs"))
    assert served[("cnfperf_node_cpu_cores", node)] == 0.99
    assert served[("cnfperf_points", (("run", "ab12"),))] == 2
    assert served[("cnfperf_points_finished_total", (("run", "ab12"), ("status", "done")))] == 1
    point = (("point", "0"), ("run", "ab12"), ("switch", "ovs"))
    assert served[("cnfperf_point_rx_packets_per_second", point)] == 4950.0
    # the next point: the first one's live series go, its result stays
    for event in _events()[4:]:
        metrics(event)
    served = _served(metrics)
    live_rx = {labels for name, labels in served if name == "cnfperf_rx_packets_per_second"}
    assert live_rx == {(("pair", "1"), ("point", "1"), ("run", "ab12"), ("switch", "vpp"))}
    assert ("cnfperf_point_rx_packets_per_second", point) in served
    assert served[("cnfperf_point", (("run", "ab12"),))] == 1


def test_metrics_are_served_over_http_until_closed():
    metrics = Metrics()
    metrics.serve(0, "127.0.0.1")
    port = metrics.server.server_port
    try:
        for event in _events()[:3]:
            metrics(event)
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
        assert b'cnfperf_rx_packets_per_second{pair="0",point="0",run="ab12",switch="ovs"} ' \
               b'4900.0' in text
    finally:
        metrics.close()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_the_grafana_dashboard_asks_for_metrics_that_are_served():
    dashboard = json.loads((REPO / "docs" / "grafana-dashboard.json").read_text())
    metrics = Metrics()
    for event in _events()[:4]:
        metrics(event)
    served = {name for name, _ in _served(metrics)}
    asked = {name for panel in dashboard["panels"] for target in panel["targets"]
             for name in re.findall(r"\bcnfperf_[a-z_]+", target["expr"])}
    assert asked and asked <= served, asked - served
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
    assert {v["name"] for v in dashboard["templating"]["list"]} == {"datasource", "run"}


def test_an_events_file_holds_one_flushed_json_object_per_line():
    stream = io.StringIO()
    watching = live.Live([live.EventsFile(stream, "a file")])
    watching.run_id = "ab12"
    watching.run_end("done", 3)
    [line] = stream.getvalue().splitlines()
    event = json.loads(line)
    assert event["event"] == "run_end" and event["done"] == 3 and event["run"] == "ab12"
    assert set(live.KINDS) == {k["properties"]["event"]["const"] for k in json.loads(
        (REPO / "docs" / "events.schema.json").read_text())["oneOf"]}


def test_the_watching_flags_mistakes_are_refused_before_the_run(tmp_path, capsys):
    base = ["run", "--switch", "veth", "--results", str(tmp_path)]
    assert main([*base, "--events", "-", "--json"]) == EXIT_USAGE
    assert "--events: - puts the events on stdout, where --json goes" in capsys.readouterr().err
    assert main([*base, "--events", str(tmp_path / "no" / "such" / "dir.jsonl")]) == EXIT_USAGE
    assert "--events: cannot write" in capsys.readouterr().err
    assert main([*base, "--metrics-port", "99999"]) == EXIT_USAGE
    assert "--metrics-port: '99999': expected PORT or ADDR:PORT" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main([*base, "--metrics-port", f"127.0.0.1:{port}"]) == EXIT_USAGE
    assert f"--metrics-port: cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
    assert not (tmp_path / "cnfperf.db").exists()


def test_an_event_that_cannot_be_made_is_said_once_and_never_costs_the_run():
    """What an engine printed oddly (an interval without its pair) makes no
    sample: one warning, no exception to the runner, and the rest still flows."""
    from types import SimpleNamespace
    from cnfperf.run.trial import Progress
    said: list[str] = []
    events: list[dict] = []
    sink = type("Sink", (), {"__call__": lambda self, e: events.append(e),
                             "close": lambda self: None})()
    watching = live.Live([sink], warn=said.append)
    point = SimpleNamespace(index=0)
    odd = Progress(point, "measuring", 1.0, 2.0, pairs=[{"rx_pps": 5.0}])   # no "pair"
    watching.progress(odd)
    watching.progress(odd)
    assert len(said) == 1 and "progress" in said[0] and events == []
    watching.run_end("done", 1)
    assert [e["event"] for e in events] == ["run_end"]


def test_a_signal_that_lands_while_watching_stops_the_run():
    """The run's Interrupted passes through a watcher and a sink: neither says
    it failed, nor is the sink dropped."""
    import signal
    from cnfperf.run.teardown import Interrupted
    said: list[str] = []

    class Landing:
        def __call__(self, event):
            raise Interrupted(signal.SIGINT)

        def close(self):
            pass
    sink = Landing()
    watching = live.Live([sink], warn=said.append)
    with pytest.raises(Interrupted):
        watching.run_end("done", 1)
    assert said == [] and watching.sinks == [sink] and watching.failed == set()
