"""A value the store does not have (NULL) prints as – in the text tables and
the report's, never as 0: a missing loss is not "no loss", a missing rate not
a measured 0 (nor "max")."""
from __future__ import annotations

from cnfperf.report import html, searches, summary
from cnfperf.report.tables import MISSING, run_table, summary_table

PAIR = {"pair": 0, "offered_pps": 10_000.0, "tx_pps": 10_000.0, "rx_pps": 9_000.0,
        "sent": 10_000, "received": 9_000, "loss_ratio": 0.1, "rx_bps": 4.6e6,
        "steady_rx_pps": None, "latency_kind": "rtt", "lat_p50_ns": 20_000, "lat_p99_ns": 40_000,
        "lat_max_ns": 90_000}
MISSED = dict(PAIR, offered_pps=None, rx_pps=None, received=None, loss_ratio=None, rx_bps=None,
              lat_p50_ns=None, lat_p99_ns=None, lat_max_ns=None)


def _point(idx: int, pair: dict, **over) -> dict:
    return {"idx": idx, "status": "done", "switch": "veth", "api": "raw", "mode": "throughput",
            "tester": "split", "rate": 10_000, "size": 64, "rep": 0, "per_pair": [pair],
            **{k: v for k, v in pair.items() if k != "pair"}, **over}


def _cells(table: str, row: int) -> list[str]:
    return table.splitlines()[2 + row].split()


def test_the_run_table_prints_a_missing_rate_or_loss_as_a_dash():
    table = run_table({"points": [_point(0, PAIR), _point(1, MISSED, size=1500)]})
    measured, missing = _cells(table, 0)[6:], _cells(table, 1)[6:]
    assert measured == ["10k", "10.0", "9.0", "10000", "9000", "10.000", MISSING, "4.6", "round",
                        "trip",
                        "20.0", "40.0", "90.0"], table
    # offered, rx kpps, received, loss %, rx Mbit/s and the latencies (and so
    # their kind): none stored; no stall stored for either
    assert missing == [MISSING, "10.0", MISSING, "10000", *[MISSING] * 8], table


def test_the_report_tables_print_a_missing_loss_as_a_dash_in_text_and_html():
    run = {"id": "1a2b", "points": [_point(0, PAIR), _point(1, MISSED, size=1500)]}
    title, headers, rows = summary.throughput(run)
    loss = headers.index("loss %")
    assert [r[loss] for r in rows] == [10.0, None]
    text = summary_table((title, headers, rows))
    assert text.splitlines()[-1].split()[loss + 1] == MISSING      # the label is two words
    assert html.fmt(None) == MISSING


def test_a_search_trial_without_an_offered_rate_or_loss_prints_a_dash_not_max_or_0():
    trial = {"n": 1, "phase": "search", "offered_pps": None, "duration": 1.0, "tx_pps": None,
             "rx_pps": None, "sent": None, "received": None, "loss_ratio": None,
             "passed": None, "valid": None}
    point = _point(0, PAIR, trials=[trial, dict(trial, n=2, offered_pps=0, loss_ratio=0.0)])
    _, headers, rows = searches.trials({"points": [point]})
    offered, loss = headers.index("offered kpps"), headers.index("loss % of sent")
    assert [(r[offered], r[loss]) for r in rows] == [(None, None), ("max", 0.0)]
