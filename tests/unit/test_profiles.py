"""A profile per pair: [pair.N] tables and --pair N.FIELD=VALUES make pairs
differ (an aggressor beside a victim); each pair's engines follow its own
values; the store keeps what each pair was asked; the report computes the
victim's interference from stored rows. Nothing here starts a container."""
from __future__ import annotations

import pytest

from cnfperf import UserError, nfs as nf_kinds
from cnfperf.cli import main
from cnfperf.dataplanes.base import Attachment
from cnfperf.engine import argv, nf_argv
from cnfperf.experiments.sweep import point_hash
from cnfperf.plan import place
from cnfperf.report import interference, summary
from cnfperf.report.rows import rows_from_run
from cnfperf.results import model
from cnfperf.results.store import Store
from cnfperf.run.checks import load_plan
from cnfperf.scenario import Scenario, canonical, profile, validate
from harness import scenarios


def _plan(tmp_path, text: str, flags: dict | None = None, quick: bool = False):
    path = tmp_path / "s.toml"
    path.write_text(text)
    return load_plan(path, flags, quick=quick)


def _own(s) -> dict:
    return {index: dict(values) for index, values in s.pair}


# -- reading: tables, dotted keys, parts, flags ------------------------------------

def test_a_pair_table_and_dotted_keys_give_the_pair_its_own_values(tmp_path):
    table = _plan(tmp_path, 'pairs = 2\nrate = "10k"\n[pair.1]\nrate = "50k"\nburst = 4\n')
    dotted = _plan(tmp_path, 'pairs = 2\nrate = "10k"\npair.1.rate = "50k"\npair.1.burst = 4\n')
    for swept in (table, dotted):
        [s] = swept.scenarios
        assert s.rate.pps == 10_000 and s.burst == 32
        assert s.of_pair(1).rate.pps == 50_000 and s.of_pair(1).burst == 4
        assert s.of_pair(0) is s   # pair 0 has no profile: the point's values
        assert s.model_dump(mode="json")["pair"] == {"1": {"rate": 50000, "burst": 4}}
    assert table.plan.points[0].key == dotted.plan.points[0].key


def test_a_pairs_values_sweep_like_a_fields_and_merge_field_by_field_from_parts(tmp_path):
    swept = _plan(tmp_path, 'pairs = 2\nrate = "20k"\npair.1.burst = 4\n'
                            '[[part]]\npair.1.rate = ["20k", "50k", 0]\n')
    assert [s.of_pair(1).rate.pps for s in swept.scenarios] == [20_000, 50_000, 0]
    assert all(s.of_pair(1).burst == 4 for s in swept.scenarios)
    # the pair's own values where they differ from the point's
    assert [set(_own(s)[1]) for s in swept.scenarios] == [{"burst"}, {"rate", "burst"}] * 1 + \
        [{"rate", "burst"}]
    assert swept.plan.axes["pair.1.rate"] == [20000, 50000, 0]


def test_a_profile_on_a_part_that_has_one_pair_is_refused(tmp_path):
    with pytest.raises(UserError, match=r"^pair\.1: no such pair: pairs = 1"):
        _plan(tmp_path, 'pair.1.rate = "5k"\n[[part]]\npairs = 1\n[[part]]\npairs = 2\n')


def test_the_victim_alone_and_beside_an_aggressor_in_one_study(tmp_path):
    swept = _plan(tmp_path, 'rate = "20k"\n[[part]]\npairs = 1\n'
                            '[[part]]\npairs = 2\npair.1.rate = ["50k", 0]\n'
                            '[part.quick]\npair.1.rate = "100k"\n', quick=True)
    assert [(s.pairs, s.of_pair(1).rate.pps) for s in swept.scenarios] == \
        [(1, 20_000), (2, 100_000)]


def test_the_flag_sets_a_pairs_value_over_the_files(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text('pairs = 2\n[[part]]\npair.1.rate = "50k"\npair.1.burst = 4\n')
    assert main(["run", str(path), "--pair", "1.rate=10k,20k", "--dry-run"]) == 0
    lines = [l for l in capsys.readouterr().out.splitlines() if l.strip().startswith("[")]
    assert [l.split("pair.1.rate=")[1].split()[0] for l in lines] == ["10k", "20k"]
    [s, _] = load_plan(path, {"pair.1.rate": "10k,20k"}).scenarios
    assert s.of_pair(1).burst == 4   # the flag wins over pair 1's rate alone


@pytest.mark.parametrize("argv_, why", [
    (["--pairs", "1", "--pair", "1.rate=5k"], "pair.1: no such pair: pairs = 1"),
    (["--pairs", "2", "--pair", "1.api=raw"], "pair.1.api: not a field a pair sets for itself"),
    (["--pairs", "2", "--pair", "1.bogus=1"], "pair.1.bogus: unknown field"),
    (["--pairs", "2", "--pair", "1:rate=5k"], "expected N.FIELD=VALUES"),
    (["--pairs", "2", "--pair", "1.burst=0"], "pair.1.burst: Input should be greater than"),
    (["--pairs", "2", "--pair", "1.size=1500"], "pair.1.size: 1500 is larger than size (64)"),
    (["--pairs", "2", "--pair", "1.rate=ndr"], "pair.1.rate: ndr: a pair's own rate is a fixed"),
    (["--pairs", "2", "--rate", "ndr", "--pair", "1.rate=5k"], "rate: ndr: a search is not run "
                                                               "with pairs' own profiles"),
    (["--pairs", "2", "--soak", "60", "--pair", "1.rate=5k"], "soak: 60: a soak stores its "
                                                              "seconds at one rate per pair"),
])
def test_a_bad_profile_is_one_line_and_exit_2_before_anything(argv_, why, capsys, tmp_path):
    assert main(["run", "--switch", "bridge", *argv_, "--results", str(tmp_path),
                 "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert why in err and len(err.splitlines()) == 1
    assert not any(tmp_path.iterdir())   # no store, no run directory


@pytest.mark.parametrize("text, why", [
    ("pair = 3\n", "pair: must be tables of a pair's own values"),
    ("[pair.x]\nrate = 1\n", "pair.x: a pair's profile is named by its index"),
    ("pair.1 = 3\n", "pair.1: must be a table of the pair's own values"),
])
def test_a_pair_table_that_is_not_one_is_named(text, why, tmp_path):
    with pytest.raises(UserError) as e:
        _plan(tmp_path, "pairs = 2\n" + text)
    assert why in str(e.value)


def test_a_pair_in_latency_mode_gets_latencys_defaults_unless_it_says():
    s = validate({"pairs": 2, "pair.0.mode": "latency", "pair.1.rate": "50k"})
    victim, aggressor = s.of_pair(0), s.of_pair(1)
    assert (victim.mode, victim.rate.pps, victim.burst, victim.poll) == \
        ("latency", 1000, 1, "interrupt")
    assert (aggressor.mode, aggressor.rate.pps, aggressor.burst) == ("throughput", 50_000, 32)
    assert victim.nf_api == s.nf_api   # the NFs' api is the point's


def test_pairs_alike_keep_their_keys_and_a_profile_makes_another_point():
    plain = validate({"pairs": 2, "rate": "10k"})
    assert "pair" not in canonical(plain)   # as before profiles: stored runs resume
    same = validate({"pairs": 2, "rate": "10k", "pair.1.rate": "10k"})
    assert same.pair == () and canonical(same) == canonical(plain)
    assert canonical(validate({"pairs": 2, "rate": "10k", "pair.1.rate": "20k"})) != \
        canonical(plain)


def test_a_stored_scenario_reads_back_with_its_profile():
    s = validate({"pairs": 3, "pair.2.rate": "5k", "pair.2.flows": 4, "pair.1.touch": True})
    again = Scenario.model_validate(s.model_dump())
    assert again == s and again.of_pair(2).flows == 4 and again.of_pair(1).touch


# -- each pair's engines follow its profile --------------------------------------

def _point(**fields):
    [s] = scenarios(None, fields)
    point = place(s, "1a2b", host_cpus=(0, 1), nf=nf_kinds.find(s.nf) if s.nfs else None)
    return s, point


def _opt(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_each_pairs_engines_follow_its_own_profile():
    s, point = _point(api="raw", pairs=3, rate="20k", size=1500, flows=2, tester="split",
                      **{"pair.1.rate": "0", "pair.1.size": 64, "pair.1.flows": 8,
                         "pair.1.burst": 4, "pair.2.mode": "latency", "pair.2.touch": "yes"})
    tx = {}
    for pair in point.pairs:
        snd, rcv = pair.sender, pair.receiver
        tx[pair.index] = argv("e", snd, [Attachment(mac=snd.mac, iface=snd.name)], rcv,
                              rcv.mac, s)
    assert (_opt(tx[0], "--rate"), _opt(tx[0], "--size"), _opt(tx[0], "--flows"),
            _opt(tx[0], "--burst")) == ("20000", "1500", "2", "32")
    assert (_opt(tx[1], "--rate"), _opt(tx[1], "--size"), _opt(tx[1], "--flows"),
            _opt(tx[1], "--burst")) == ("0", "64", "8", "4")
    # pair 2 in latency mode: a client, one frame a burst (latency's default), at
    # the rate the point gave every pair
    assert tx[2][1] == "client" and point.pairs[2].receiver.role == "server"
    assert (_opt(tx[2], "--rate"), _opt(tx[2], "--burst")) == ("20000", "1")
    assert "--touch" in tx[2] and "--touch" not in tx[0]
    assert "--poll" not in tx[0] and _opt(tx[2], "--poll") == "interrupt"
    # source ports: each pair's flows after the pairs' before it
    assert [p.sender.udp_port for p in point.pairs] == [10000, 10002, 10010]


def test_a_pairs_nf_follows_its_profile():
    s, point = _point(api="raw", pairs=2, nfs=1, nf="l2", size=1500,
                      **{"pair.1.size": 128, "pair.1.burst": 8})
    sizes = []
    for pair in point.pairs:
        [nf] = pair.nfs
        args = nf_argv("e", nf, [Attachment(mac=p.mac, iface=p.name) for p in nf.ports],
                       ("m1", "m2"), s)
        sizes.append((_opt(args, "--size"), _opt(args, "--burst")))
    assert sizes == [("1500", "32"), ("128", "8")]


def test_a_pair_that_polls_adds_to_the_busy_pollers_of_one_that_sleeps():
    _, asleep = _point(pairs=2, poll="interrupt", tester="split")
    _, mixed = _point(pairs=2, poll="interrupt", tester="split", **{"pair.1.poll": "busy"})
    assert (asleep.pollers, mixed.pollers) == (0, 2)


# -- stored, and the interference computed from the stored rows -----------------

def _pair(index: int, offered: float, sent: int, received: int, p99: float, seconds: float = 1.0,
          profile: dict | None = None) -> model.PairResult:
    lost = sent - received
    latency = model.Latency("one_way", received, {k: p99 for k in model.LATENCY_KEYS},
                            [[int(p99) - 100, int(p99), received]])
    return model.PairResult(pair=index, offered_pps=offered, sent=sent, received=received,
                            lost=lost, loss_ratio=lost / sent, tx_pps=sent / seconds,
                            rx_pps=received / seconds, rx_bps=received * 512 / seconds,
                            reordered=0, duplicates=0, latency=latency, profile=profile)


def _stored(tmp_path, points) -> dict:
    """A run of `points`: (scenario flags, pairs' results[, repetition]) each, as the
    store keeps it (what the trial hands it: each pair's profile where they differ)."""
    store = Store(tmp_path)
    store.begin_run("1a2b", ["cnfperf", "study"], len(points), tmp_path / "r", {}, "0.1.0")
    for idx, (flags, pairs, *rep) in enumerate(points):
        s = validate({"switch": "bridge", "rate": "20k", "tester": "split", **flags})
        for p in pairs:
            p.profile = profile(s, p.pair) if s.pair else None
        result = model.PointResult(pairs=pairs, total=model.total(pairs), endpoints=[],
                                   counters={})
        group = point_hash(canonical(s))
        store.add_point("1a2b", idx, s.model_dump(), status="done", started=1.0,
                        result=result, key=f"{group}-{rep[0] if rep else 0}", group=str(group),
                        rep=rep[0] if rep else 0)
    store.finish_run("1a2b", "done")
    return store.run("1a2b")


def _interference_run(tmp_path) -> dict:
    return _stored(tmp_path, [
        ({"pairs": 1}, [_pair(0, 20e3, 20_000, 20_000, 50e3)]),
        ({"pairs": 2, "pair.1.rate": "50k"},
         [_pair(0, 20e3, 20_000, 19_000, 80e3), _pair(1, 50e3, 50_000, 49_000, 90e3)]),
        ({"pairs": 2, "pair.1.rate": "0"},
         [_pair(0, 20e3, 20_000, 10_000, 500e3), _pair(1, 0, 300_000, 150_000, 900e3)]),
    ])


def test_the_store_keeps_what_each_pair_was_asked(tmp_path):
    run = _interference_run(tmp_path)
    alone, beside, _ = run["points"]
    assert [p["profile"] for p in alone["per_pair"]] == [None]   # pairs alike: the scenario's
    assert [p["profile"]["rate"] for p in beside["per_pair"]] == [20000, 50000]
    assert beside["per_pair"][1]["profile"]["size"] == 64
    assert beside["scenario"]["pair"] == {"1": {"rate": 50000}}


def test_the_victims_interference_from_stored_rows(tmp_path):
    found = interference.entries(rows_from_run(_interference_run(tmp_path)))
    assert [(e.aggressors, e.asked_pps) for e in found] == [(1, 50e3), (1, None)]
    paced, unpaced = found
    assert paced.alone.rx_pps == 20_000 and paced.beside.rx_pps == 19_000
    assert paced.rx_change == pytest.approx(-0.05)
    assert (paced.alone.loss_ratio, paced.beside.loss_ratio) == (0.0, pytest.approx(0.05))
    assert paced.alone.p99_ns == 50e3 and paced.p99_ratio == pytest.approx(80 / 50)
    assert unpaced.sent_pps == 300_000 and unpaced.beside.loss_ratio == pytest.approx(0.5)
    title, headers, rows = interference.table(found)
    assert title == "Interference" and rows[1][2] == "max" and rows[0][2] == 50.0
    assert rows[0][headers.index("rx change %")] == pytest.approx(-5.0)


def test_repetitions_average_and_another_victim_is_not_compared(tmp_path):
    run = _stored(tmp_path, [
        ({"pairs": 1}, [_pair(0, 20e3, 20_000, 20_000, 50e3)]),
        ({"pairs": 1, "size": 128}, [_pair(0, 20e3, 20_000, 20_000, 50e3)]),
        ({"pairs": 2, "pair.1.rate": "50k"},
         [_pair(0, 20e3, 20_000, 18_000, 80e3), _pair(1, 50e3, 50_000, 50_000, 90e3)]),
        ({"pairs": 2, "pair.1.rate": "50k"},
         [_pair(0, 20e3, 20_000, 16_000, 60e3), _pair(1, 50e3, 50_000, 50_000, 90e3)], 1),
        # a victim with no alone point: left out
        ({"pairs": 2, "size": 256, "pair.1.rate": "50k"},
         [_pair(0, 20e3, 20_000, 18_000, 80e3), _pair(1, 50e3, 50_000, 50_000, 90e3)]),
    ])
    [entry] = interference.entries(rows_from_run(run))
    assert entry.beside.n == 2 and entry.beside.rx_pps == 17_000
    assert entry.beside.p99_ns == 70e3 and entry.alone.n == 1


def test_no_alone_point_no_interference(tmp_path):
    run = _stored(tmp_path, [({"pairs": 2, "pair.1.rate": "50k"},
                              [_pair(0, 20e3, 20_000, 18_000, 80e3),
                               _pair(1, 50e3, 50_000, 50_000, 90e3)])])
    assert interference.entries(rows_from_run(run)) == []
    assert interference.table([]) is None


def test_labels_tell_points_apart_by_a_pairs_own_values(tmp_path):
    points = summary.done_points(_interference_run(tmp_path))
    axes = summary.varying(points)
    assert axes == ["pairs", "pair.1.rate"]
    assert [summary.label(p, axes) for p in points] == \
        ["pairs=1 pair.1.rate=–", "pairs=2 pair.1.rate=50k", "pairs=2 pair.1.rate=max"]


def test_the_interference_plot_is_drawn(tmp_path):
    from cnfperf.report import plots
    rows = rows_from_run(_interference_run(tmp_path))
    [made] = plots.make(rows, tmp_path, ["interference"])
    assert made.name == "interference" and (tmp_path / "interference.png").stat().st_size > 0
    assert "interference" in [p.name for p in plots.make_all(rows, tmp_path / "all")]


def test_the_tables_and_the_csv_say_what_each_pair_was_asked(tmp_path):
    import csv
    import io
    from cnfperf.report import export
    run = _interference_run(tmp_path)
    title, headers, rows = summary.throughput(run)
    own = headers.index("own values")
    assert [(r[2], r[own]) for r in rows] == [("0", ""), ("0", ""), ("1", "rate=50k"),
                                              ("all", ""), ("0", ""), ("1", "rate=max"),
                                              ("all", "")]
    text = io.StringIO()
    export.write_csv(run, text)
    got = [(r["idx"], r["pair"], r["rate"]) for r in csv.DictReader(io.StringIO(text.getvalue()))]
    # a pair's own rate in its row, the point's in its total's and where pairs are alike
    assert [(pair, rate) for idx, pair, rate in got if idx == "1"] == \
        [("0", "20000.0"), ("1", "50000.0"), ("all", "20000.0")]
    assert [(pair, rate) for idx, pair, rate in got if idx == "2"][1] == ("1", "0.0")


def test_the_run_table_has_a_column_for_a_pairs_own_swept_value(tmp_path):
    from cnfperf.report.tables import run_table
    run = _interference_run(tmp_path)
    # a total with an unpaced pair is unpaced too
    assert [p["offered_pps"] for p in run["points"]] == [20e3, 70e3, 0]
    lines = run_table(run).splitlines()
    assert "pair.1.rate" in lines[0]
    at = lines[0].index("pair.1.rate")
    assert [l[at:at + 11].strip() for l in lines[2:] if l[:at].strip()] == ["–", "50k", "max"]
