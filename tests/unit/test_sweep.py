"""Sweep parsing, expansion order, point keys, study files and ETA."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from cnfperf.experiments import studies, sweep
from cnfperf import fields
from cnfperf.experiments.sweep import Progress, expand, expand_study, parse_values
from cnfperf.rate import parse as parse_rate

STUDIES = Path(__file__).resolve().parents[2] / "studies"


@pytest.mark.parametrize("field, raw, expected", [
    ("size", "64,128,1500", [64, 128, 1500]),
    ("size", "64:64:512", [64, 128, 192, 256, 320, 384, 448, 512]),
    ("size", "64:100:300", [64, 164, 264]),            # max off the grid is not added
    ("size", [64, "128:128:256", 1500], [64, 128, 256, 1500]),
    ("size", "64, 64 ,128", [64, 128]),                # repeats dropped, order kept
    ("size", 1500, [1500]),
    ("burst", [4, 32, 128], [4, 32, 128]),
    ("duration", "0.1:0.1:0.5", [0.1, 0.2, 0.3, 0.4, 0.5]),   # no float drift at the end
    ("duration", 2.0, [2]),
    ("mmsg", [False, "true"], [False, True]),
    ("touch", "yes,off", [True, False]),
    ("switch", "veth, bridge", ["veth", "bridge"]),
    ("cpus", "0-1", ["0-1"]),
    ("cpus", [0, 2], [[0, 2]]),                        # a TOML cpu list is one value
    ("cpus", ["0-1", "2-3"], ["0-1", "2-3"]),
    # a command's commas are its own where the text starts with one; a kind
    # before it is a value of its own
    ("nf", "cmd:taskset -c 0,1 my-nf {iface1}", ["cmd:taskset -c 0,1 my-nf {iface1}"]),
    ("nf", "l2,cmd:my-nf --in {iface1}", ["l2", "cmd:my-nf --in {iface1}"]),
    ("nf", "l2, l3", ["l2", "l3"]),
])
def test_values(field, raw, expected):
    assert parse_values(field, raw) == expected


@pytest.mark.parametrize("raw, expected", [
    ("1M", 1_000_000), ("500k", 500_000), ("2.5M", 2_500_000), ("1Mpps", 1_000_000),
    ("1000", 1000), (0, 0), ("1G", 10**9), (250.5, 250.5), ("1e3", 1000),
    ("ndr", "ndr"), ("NDR", "ndr"), ("pdr", "pdr:0.5%"), ("pdr:0.1%", "pdr:0.1%"),
    ("pdr+ndr", "ndr+pdr:0.5%"), ("NDR+pdr:1%+pdr:0.5%", "ndr+pdr:0.5%+pdr:1%"),
    ("pdr:2", "pdr:2%"),
])
def test_rate_values(raw, expected):
    assert parse_values("rate", raw) == [expected]


def test_rate_range_and_mix():
    assert parse_values("rate", "1M:1M:3M,ndr") == [1_000_000, 2_000_000, 3_000_000, "ndr"]
    assert parse_values("rate", ["500k", "ndr", "pdr:1%"]) == [500_000, "ndr", "pdr:1%"]


def test_rate_kinds():
    assert parse_rate("ndr").is_search and parse_rate("ndr").loss == 0
    assert parse_rate("pdr:0.5%").loss == pytest.approx(0.005)
    assert parse_rate("pdr").loss == pytest.approx(0.005)
    assert parse_rate("ndr+pdr").losses == (0, 0.005)
    assert not parse_rate("2M").is_search and parse_rate("2M").pps == 2e6


@pytest.mark.parametrize("field, raw, message", [
    ("size", "64:0:512", "size: '64:0:512': step must be > 0"),
    ("size", "512:64:64", "min is larger than max"),
    ("size", "64.5", "size: '64.5' is not a whole number"),
    ("size", "64:32.5:512", "whole numbers"),
    ("size", "64:nan:512", "size: '64:nan:512': min, step and max must be finite"),
    ("duration", "1:x:3", "duration: '1:x:3' is not min:step:max"),
    ("size", "abc", "size: 'abc' is not a whole number"),
    ("size", "64,,128", "size: empty item"),
    ("size", [], "size: empty list"),
    ("size", [[64]], "nested lists"),
    ("size", "1:1:5000", "size: '1:1:5000' gives 5000 values"),
    ("burst", True, "burst: True is not a whole number"),
    ("rate", "5X", "rate: '5X' is not a rate"),
    ("rate", "-1", "rate: '-1' is not a rate"),
    ("rate", "pdr:150%", "rate: 'pdr:150%': the pdr loss must be between 0 and 100%"),
    ("rate", "pdr:x", "rate: 'pdr:x' is not pdr:X%"),
    ("rate", "3M:0:5M", "rate: '3M:0:5M': step must be > 0"),
    ("duration", "soon", "duration: 'soon' is not a number"),
    ("duration", "inf", "duration: 'inf' is not a finite number"),
    ("mmsg", "maybe", "mmsg: 'maybe' is not yes or no"),
    ("switch", " ", "switch: empty"),
])
def test_bad_values_name_the_field(field, raw, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_values(field, raw)


def test_product_order_data_plane_outermost_rate_innermost():
    plan = expand({"rate": "1M,2M", "size": "64,1500", "switch": "veth,bridge", "duration": 1})
    order = [(p.params["switch"], p.params["size"], p.params["rate"]) for p in plan.points]
    assert order == [
        ("veth", 64, 1_000_000), ("veth", 64, 2_000_000),
        ("veth", 1500, 1_000_000), ("veth", 1500, 2_000_000),
        ("bridge", 64, 1_000_000), ("bridge", 64, 2_000_000),
        ("bridge", 1500, 1_000_000), ("bridge", 1500, 2_000_000),
    ]
    assert list(plan.axes) == ["switch", "size", "rate"]
    assert plan.fixed == {"duration": 1}
    assert [p.index for p in plan.points] == list(range(8))


def test_unknown_fields_follow_known_ones_by_name():
    plan = expand({"zeta": "a,b", "alpha": "x,y", "size": "64,128"})
    assert list(plan.axes) == ["size", "alpha", "zeta"]


def test_repetitions_are_innermost_and_share_a_group():
    plan = expand({"switch": "veth", "size": "64,128", "repeat": 3})
    assert [(p.params["size"], p.rep) for p in plan.points] == [
        (64, 0), (64, 1), (64, 2), (128, 0), (128, 1), (128, 2)]
    groups = [p.group for p in plan.points]
    assert groups[0] == groups[1] == groups[2] != groups[3]
    assert len({p.key for p in plan.points}) == 6
    assert "repeat" not in plan.axes and "repeat" not in plan.fixed
    assert plan.repeat == 3


def test_repeat_takes_one_value():
    with pytest.raises(ValueError, match="repeat: takes one value"):
        expand({"size": 64, "repeat": "2,3"})
    with pytest.raises(ValueError, match="repeat: 0 must be >= 1"):
        expand({"size": 64, "repeat": 0})


def test_keys_are_stable_and_depend_on_every_parameter():
    a = expand({"switch": "veth", "size": "64,128", "duration": 1})
    b = expand({"duration": 1.0, "size": [64, 128], "switch": "veth"})   # other spelling
    assert [p.key for p in a.points] == [p.key for p in b.points]
    c = expand({"switch": "veth", "size": "64,128", "duration": 2})
    assert not {p.key for p in a.points} & {p.key for p in c.points}
    # same key in another process: no Python hash randomisation in it
    assert a.points[0].key == sweep.point_hash({"duration": 1, "size": 64, "switch": "veth"}) + "-0"


def test_canonical_form_decides_the_key():
    defaults = {"switch": "veth", "duration": 10, "warmup": 1}

    def canonical(params):
        return {**defaults, **params}

    implicit = expand({"size": "64,128"}, canonical=canonical)
    explicit = expand({"size": "64,128", "duration": 10}, canonical=canonical)
    assert [p.key for p in implicit.points] == [p.key for p in explicit.points]
    assert implicit.points[0].params == {"size": 64}        # the point keeps what was asked

    def invalid(params):
        raise ValueError(f"size: {params['size']} is below 64")

    with pytest.raises(ValueError, match="size: 60 is below 64"):
        expand({"size": "60,64"}, canonical=invalid)


def test_resume_skips_finished_points():
    plan = expand({"switch": "veth,bridge", "size": "64,1500"})
    done = [p.key for p in plan.points[:3]]
    rest = Progress(plan, done).todo
    assert [p.index for p in rest] == [3]
    assert Progress(plan, []).todo == plan.points


def test_keep_filter_lists_skipped_points_with_reason():
    def keep(params):
        if params["switch"] == "ovs" and params["api"] != "dpdk":
            return f"ovs api={params['api']}: ovs serves api dpdk"
        return None
    plan = expand({"switch": "veth,ovs", "api": "udp,dpdk"}, keep=keep)
    assert [(p.params["switch"], p.params["api"]) for p in plan.points] == [
        ("veth", "udp"), ("veth", "dpdk"), ("ovs", "dpdk")]
    assert plan.skipped == [({"switch": "ovs", "api": "udp"}, "ovs api=udp: ovs serves api dpdk")]
    assert "  skipped ovs api=udp: ovs serves api dpdk" in plan.describe().splitlines()


def test_values_that_run_as_one_point_are_measured_once():
    """Two points whose scenarios hash alike (tester = auto and the tester it
    picks) are one key: the later is skipped, naming the earlier, not run twice."""
    def canonical(params):
        return {**params, "tester": "single" if params["tester"] == "auto" else params["tester"]}

    plan = expand({"size": "64,128", "tester": "auto,single,split", "repeat": 2},
                  canonical=canonical)
    assert sorted((p.params["size"], p.params["tester"]) for p in plan.points[::2]) == [
        (64, "auto"), (64, "split"), (128, "auto"), (128, "split")]
    assert len({p.key for p in plan.points}) == len(plan.points) == 8
    assert sorted(plan.skipped, key=lambda s: s[0]["size"]) == [
        ({"size": 64, "tester": "single"}, "tester=single: the same point as tester=auto"),
        ({"size": 128, "tester": "single"}, "tester=single: the same point as tester=auto")]
    assert "  skipped tester=single: the same point as tester=auto" in plan.describe()


def test_a_data_plane_left_out_is_one_line_however_many_points_it_had():
    def keep(params):
        return ("testpmd: dpdk-testpmd not found (Debian package dpdk-dev)"
                if params["switch"] == "testpmd" else None)
    plan = expand({"switch": "veth,testpmd", "size": "64,1500", "mode": "throughput,latency"},
                  keep=keep)
    assert len(plan.points) == 4 and len(plan.skipped) == 4
    assert plan.skip_notes() == ["skipped testpmd: dpdk-testpmd not found (Debian package dpdk-dev)"]


def test_too_many_points_refused():
    with pytest.raises(ValueError, match="sweep: .* points"):
        expand({"size": "64:1:1063", "burst": "1:1:200"})


def test_describe_for_dry_run():
    text = expand({"switch": "veth,bridge", "size": 64, "repeat": 2}).describe()
    assert text.splitlines()[0] == "4 points (2 x 2 repetitions)"
    assert "  switch: veth, bridge" in text
    assert "  fixed: size=64" in text


def test_study_parts_do_not_multiply_and_keep_switches_together():
    doc = {
        "switch": ["veth", "bridge"], "size": [64, 1500], "duration": 3,
        "quick": {"duration": 1},
        "part": [{"mode": "throughput"},
                 {"mode": "latency", "rate": 1000, "burst": [4, 32], "quick": {"burst": 4}}],
    }
    full = expand_study(doc)
    assert len(full.points) == 2 * 2 + 2 * 2 * 2
    switches = [p.params["switch"] for p in full.points]
    assert switches == ["veth"] * 6 + ["bridge"] * 6
    assert {p.params["duration"] for p in full.points} == {3}
    assert "rate" not in full.points[0].params           # throughput part left rate alone
    quick = expand_study(doc, quick=True)
    assert len(quick.points) == 2 * 2 + 2 * 2
    assert {p.params["duration"] for p in quick.points} == {1}
    assert {p.params.get("burst") for p in quick.points if p.params["mode"] == "latency"} == {4}
    assert [p.index for p in quick.points] == list(range(len(quick.points)))


def test_each_point_is_labelled_with_its_own_parts_repetitions():
    plan = expand_study({"size": 64, "part": [{"mode": "throughput", "repeat": 2},
                                              {"mode": "latency", "repeat": 10}]})
    labels = [p.label(plan.axes) for p in plan.points]
    assert labels[:3] == ["mode=throughput rep=1/2", "mode=throughput rep=2/2",
                          "mode=latency rep=1/10"]
    assert labels[-1] == "mode=latency rep=10/10" and len(labels) == 12
    assert plan.describe().splitlines()[0] == "12 points (1 x 2, 1 x 10 repetitions)"
    once = expand_study({"part": [{"mode": "throughput"}, {"mode": "latency", "repeat": 3}]})
    assert [p.label(once.axes) for p in once.points][0] == "mode=throughput"


def test_a_point_two_parts_plan_is_repeated_as_often_as_the_most_either_asks():
    """Parts that coincide (a flag set what told them apart) make one point,
    labelled alike, counted once."""
    plan = expand_study({"size": 64, "part": [{"repeat": 1}, {"size": "64,128", "repeat": 3}]})
    labels = [p.label(plan.axes) for p in plan.points]
    assert labels == [f"size={size} rep={r}/3" for size in (64, 128) for r in (1, 2, 3)]
    assert [p.rep for p in plan.points] == [0, 1, 2] * 2
    assert [p.index for p in plan.points] == list(range(6))
    assert len({p.key for p in plan.points}) == 6
    assert plan.describe().splitlines()[0] == "6 points (2 x 3 repetitions)"
    fewer = expand_study({"size": 64, "part": [{"repeat": 3}, {"repeat": 2}]})
    assert [p.label(fewer.axes) for p in fewer.points] == ["rep=1/3", "rep=2/3", "rep=3/3"]


def test_flags_override_the_top_level_quick_and_every_part():
    doc = {"size": 64, "quick": {"size": 128, "duration": 1},
           "part": [{"size": 256, "quick": {"size": 512}}, {"mode": "latency"}]}
    flagged = sweep.override(doc, {"size": "1500", "burst": None})
    assert flagged == {"size": "1500", "quick": {"duration": 1},
                       "part": [{"quick": {}}, {"mode": "latency"}]}
    assert doc["part"][0] == {"size": 256, "quick": {"size": 512}}, "the file's own is kept"
    assert {p.params["size"] for p in expand_study(flagged, quick=True).points} == {1500}


def test_study_tables_must_be_tables():
    with pytest.raises(ValueError, match="quick: must be a table"):
        expand_study({"size": 64, "quick": 3})
    with pytest.raises(ValueError, match=r"part: must be an array of tables"):
        expand_study({"size": 64, "part": {"mode": "latency"}})
    with pytest.raises(ValueError, match=r"study.title: must be text \(got 3\)"):
        expand_study({"size": 64, "study": {"title": 3}})
    with pytest.raises(ValueError, match=r"study.figure: unknown key"):
        expand_study({"size": 64, "study": {"figure": "5"}})
    with pytest.raises(ValueError, match=r"study.plots: must be a list of plot names"):
        expand_study({"size": 64, "study": {"plots": ["latency_cdf", 3]}})


@pytest.mark.parametrize("path", sorted(STUDIES.glob("*.toml")), ids=lambda p: p.name)
def test_every_study_file_expands(path):
    text = path.read_text()
    assert text.lstrip().startswith("#"), "a study says what it reproduces in its first lines"
    doc = tomllib.loads(text)
    assert {"title", "reproduces", "plots"} <= set(doc["study"]) <= set(studies.TABLE)
    assert doc["study"]["title"] and doc["study"]["reproduces"]
    assert "quick" in doc
    full, quick = expand_study(doc), expand_study(doc, quick=True)
    assert 0 < len(quick.points) <= len(full.points)
    for plan in (full, quick):
        for p in plan.points:
            # a pair's own value (pair.1.rate) is its field's
            names = {(fields.profiled(n) or (0, n))[1] for n in p.params}
            assert names <= set(fields.kinds()), p.params
    # the quick variant stays short on a shared 2-core host
    quick_seconds = sum(sweep.nominal_seconds(p.params) for p in quick.points)
    assert quick_seconds < 15 * 60


def test_studies_exist_for_each_published_figure():
    names = {p.stem for p in STUDIES.glob("*.toml")}
    assert {"fig5_1_rx_vs_offered", "fig5_2_throughput_burst32", "fig5_3_throughput_burst256",
            "fig5_5_7_pairs", "fig5_9_10_rtt", "table5_2_sockets", "shootout"} <= names


def test_eta_learns_from_finished_points():
    plan = expand({"size": "64,128,256,512", "duration": 2, "warmup": 1})
    progress = Progress(plan)
    assert progress.eta() is None
    assert progress.line(plan.points[0]) == "[1/4] size=64"
    progress.done(plan.points[0], 6.0)            # 3 s nominal took 6 s: overhead x2
    assert progress.eta() == pytest.approx(3 * 6.0)
    progress.done(plan.points[1], 4.0)
    assert progress.eta() == pytest.approx(2 * 3 * (10.0 / 6.0))
    assert progress.line(plan.points[2]) == "[3/4] size=256  eta 10s"


def test_eta_weights_points_by_their_duration_and_counts_resumed_points():
    plan = expand({"size": "64,128", "duration": "1,10"})
    progress = Progress(plan, done_keys=[plan.points[0].key])
    assert progress.finished == 1
    progress.done(plan.points[1], 20.0)           # 10 s point took 20 s
    assert progress.eta() == pytest.approx((1 + 10) * 2.0)
    assert progress.line(plan.points[2]).startswith("[3/4] size=128 duration=1")


def test_search_points_expect_longer():
    assert sweep.nominal_seconds({"duration": 2, "rate": "ndr"}) == 20
    assert sweep.nominal_seconds({"duration": 2, "rate": 1000, "warmup": 0.5}) == 2.5


def test_format_seconds():
    assert sweep.format_seconds(9.6) == "10s"
    assert sweep.format_seconds(125) == "2m05s"
    assert sweep.format_seconds(3 * 3600 + 120) == "3h02m"
