"""Colours and markers: one per data plane and per NF kind, by the numbers each
declares and its points store, read per report from its own points."""
from __future__ import annotations

import hashlib

import pytest

from cnfperf import nfs
from cnfperf.dataplanes import DATAPLANES
from cnfperf.report import style


def _points() -> list[dict]:
    """A point of every registered data plane, and one of every NF kind named
    as it is, each with the facts the runner stores (switch_facts, nf_facts)."""
    veth = DATAPLANES["veth"].stored()
    return [*({"switch": n, "switch_facts": dp.stored()} for n, dp in DATAPLANES.items()),
            *({"switch": "veth", "switch_facts": veth, "nfs": 1, "nf": k,
               "nf_facts": nfs.kind(k).stored()} for k in nfs.names())]


@pytest.fixture
def styles() -> style.Styles:
    """The styles of a report of those points."""
    return style.learn(_points())


def test_every_data_plane_has_a_colour_and_marker_of_its_own(styles):
    found = [styles.dataplane(name) for name in DATAPLANES]
    assert len(set(found)) == len(DATAPLANES)
    # as long as the palette lasts, the colour alone tells them apart; beyond
    # it, the marker (14 colours and 11 markers: 154 distinct pairs)
    assert len({s.colour for s in found}) == min(len(DATAPLANES), len(style.COLOURS))


def test_nf_kinds_wear_pairs_no_data_plane_wears(styles):
    # every kind cnfperf names has a style of its own, the number its points stored
    assert set(nfs.names()) == set(styles.kinds)
    kinds = [styles.nf_kind(k) for k in nfs.names()]
    assert len(set(kinds)) == len(nfs.names())
    assert not set(kinds) & {styles.dataplane(name) for name in DATAPLANES}


def test_an_nf_kind_is_drawn_by_the_number_its_points_stored():
    """Not by its name: a kind's stored number holds, whatever cnfperf calls
    it today; a kind added later takes its own number and moves no other."""
    before = style.learn(_points())
    later = style.learn([*_points(), {"switch": "veth", "nfs": 1, "nf": "policer",
                                      "nf_facts": {"name": "policer", "style": 11}}])
    assert later.nf_kind("policer") == style.nth(style.PAIRS - 1 - 11)
    assert {k: later.nf_kind(k) for k in nfs.names()} == \
        {k: before.nf_kind(k) for k in nfs.names()}
    assert later.nf_kind("policer") not in {before.nf_kind(k) for k in nfs.names()}
    # a name that stored another number is drawn by that one
    renamed = style.learn([{"nf_facts": {"name": "mirror", "style": 11}}])
    assert renamed.nf_kind("mirror") == later.nf_kind("policer")


def test_the_nf_kinds_keep_the_styles_they_had_by_name():
    """The numbers the kinds declare are the places they had in the palette
    the report kept by name before (counted down from the last pair)."""
    then = ("l2", "mirror", "strip-encap", "l3", "testpmd", "click:mirror", "click:strip-encap")
    styles = style.learn({"nf_facts": nfs.kind(k).stored()} for k in then)
    assert [styles.nf_kind(k) for k in then] == [style.nth(style.PAIRS - 1 - i)
                                                 for i in range(len(then))]


def test_a_kind_with_no_style_hashes(styles):
    """A user's command or Click file stores no number: drawn by a hash of its
    text, the same in every report, among the pairs no number may take."""
    cmd = "cmd:my-nf {iface1} {iface2}"
    assert nfs.kind(cmd).stored() == {"name": cmd, "style": None}
    alone = style.learn([{"nf_facts": nfs.kind(cmd).stored()}])
    assert alone.kinds == {} and alone.nf_kind(cmd) == styles.nf_kind(cmd) == \
        style.Styles().nf_kind(cmd)
    assert styles.nf_kind(cmd) not in {*map(style.nth, range(style.PLANE_STYLES)),
                                       *(style.nth(style.PAIRS - 1 - i)
                                         for i in range(style.KIND_STYLES))}


def test_a_data_plane_added_later_moves_no_other(styles):
    """Its own number: the others keep theirs, and a run stored before reads alike."""
    before = {n: styles.dataplane(n) for n in DATAPLANES}
    later = style.learn([*_points(), {"switch": "new-switch",
                                      "switch_facts": {"name": "new-switch", "style": 31}}])
    assert later.dataplane("new-switch") == style.nth(31)
    assert later.dataplane("new-switch") not in before.values()
    assert {n: later.dataplane(n) for n in DATAPLANES} == before
    assert later.rank("new-switch 2×l2") == 31 < later.rank("no-number-switch")


def test_what_one_report_learns_stays_in_it(styles):
    """Styles are the report's own: another report, of other points, knows
    nothing of them (nothing learned is kept between reports)."""
    mine = style.learn([{"switch": "new-switch",
                         "switch_facts": {"name": "new-switch", "style": 31}}])
    assert mine.dataplane("new-switch") == style.nth(31)
    assert style.learn([]).dataplane("new-switch") != style.nth(31)
    assert "new-switch" not in style.learn(_points()).planes
    # a report of several runs: what each stored
    both = style.learn([*_points(), {"switch": "new-switch",
                                     "switch_facts": {"name": "new-switch", "style": 31}}])
    assert both.dataplane("new-switch") == style.nth(31) and \
        both.dataplane("ovs") == styles.dataplane("ovs")


def test_styles_are_the_same_in_every_report(styles):
    # by the number the data plane declares and its points stored
    assert styles.dataplane("ovs") == style.nth(DATAPLANES["ovs"].style)
    assert styles.for_curves([])("ovs 3×l2 single") == styles.dataplane("ovs")
    assert styles.dataplane("no-such-switch") == style.Styles().dataplane("no-such-switch")
    assert styles.nf_kind("cmd:my-nf {in} {out}") == styles.nf_kind("cmd:my-nf {in} {out}")


def test_the_report_reads_no_data_plane_or_nf_kind_of_today():
    """A stored run is read through what it stored: report/ imports no data
    plane and no NF kind."""
    import ast
    from pathlib import Path
    for path in Path(style.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                    [a.name for a in node.names]
                assert not any(n.startswith(("cnfperf.dataplanes", "cnfperf.nfs"))
                               for n in names), path.name


def test_a_name_no_registry_holds_never_wears_a_registered_style(styles):
    """A user's cmd: NF or a data plane stored without its number beside the registered ones."""
    registered = {*(styles.dataplane(n) for n in DATAPLANES),
                  *(styles.nf_kind(k) for k in nfs.names())}
    names = [f"cmd:nf{i} {{in}} {{out}}" for i in range(500)] + [f"switch{i}" for i in range(500)]
    assert not {styles.nf_kind(n) for n in names[:500]} & registered
    assert not {styles.dataplane(n) for n in names[500:]} & registered
    # and they still spread over what is left
    assert len({styles.dataplane(n) for n in names}) > style.PAIRS - style.PLANE_STYLES - \
        style.KIND_STYLES - 20


def _before_numbers(name: str) -> style.Style:
    """A name's style when the 12 data planes wore the first pairs and the 7
    NF kinds the last by their place in the registries, and a name without
    either hashed into the pairs between."""
    free = list(range(12, style.PAIRS - 7))
    return style.nth(free[int(hashlib.sha1(name.encode()).hexdigest(), 16) % len(free)])


def test_a_users_nf_keeps_the_style_it_had_unless_its_pair_is_kept_for_numbers():
    names = [f"cmd:nf{i} --in {{iface1}} --out {{iface2}}" for i in range(400)]
    reserved = {*map(style.nth, range(style.PLANE_STYLES)),
                *(style.nth(style.PAIRS - 1 - i) for i in range(style.KIND_STYLES))}
    kept = [n for n in names if _before_numbers(n) not in reserved]
    assert all(style.Styles().nf_kind(n) == _before_numbers(n) for n in kept)
    # most do: the pairs kept for numbers since are 29 of the 135 hashed into
    assert len(kept) > 0.7 * len(names)
    assert not {style.Styles().nf_kind(n) for n in names} & reserved


def test_the_docstring_says_ovs_as_it_is_drawn(styles):
    ovs = styles.dataplane("ovs")
    assert (ovs.colour, ovs.marker) == ("#332288", "X")       # COLOURS' indigo
    assert "OVS is the same indigo X" in " ".join(style.__doc__.split())


def test_the_first_pairs_are_all_distinct():
    assert len({style.nth(i) for i in range(style.PAIRS)}) == style.PAIRS


def _curves(*rows: dict) -> list[dict]:
    """Plot rows as rows.rows_from_run makes them: with their points' facts."""
    return [{**r, "switch_facts": DATAPLANES[r["dataplane"]].stored(),
             "nf_facts": nfs.kind(r["nf"]).stored() if r["nfs"] else None} for r in rows]


def test_curves_of_one_data_plane_are_told_apart_by_nf_kind(styles):
    rows = _curves(dict(switch="ovs no NF", dataplane="ovs", nfs=0, nf="l2"),
                   dict(switch="ovs 1×mirror", dataplane="ovs", nfs=1, nf="mirror"),
                   dict(switch="ovs 1×click:mirror", dataplane="ovs", nfs=1, nf="click:mirror"))
    of = style.learn(rows).for_curves(rows)
    assert of("ovs no NF") == styles.dataplane("ovs")
    assert of("ovs 1×mirror") == styles.nf_kind("mirror")
    assert of("ovs 1×click:mirror") == styles.nf_kind("click:mirror")
    # two data planes: each curve wears its data plane's style (line styles tell the rest)
    rows += _curves(dict(switch="memif 1×mirror", dataplane="memif", nfs=1, nf="mirror"))
    of = style.learn(rows).for_curves(rows)
    assert of("ovs 1×mirror") == of("ovs no NF") == styles.dataplane("ovs")
    assert of("memif 1×mirror") == styles.dataplane("memif")


def test_curves_of_one_style_take_shades_of_its_colour(styles):
    from cnfperf.report.draw import Pen
    rows = _curves(dict(switch="ovs no NF", dataplane="ovs", nfs=0, nf="l2"),
                   dict(switch="ovs 1×l2", dataplane="ovs", nfs=1, nf="l2"),
                   dict(switch="ovs 3×l2", dataplane="ovs", nfs=3, nf="l2"),
                   dict(switch="memif 1×l2", dataplane="memif", nfs=1, nf="l2"))
    pen = Pen(rows)
    ovs = [pen.colour(r["switch"]) for r in rows[:3]]
    assert styles.dataplane("ovs").colour in ovs and len(set(ovs)) == 3
    assert pen.colour("memif 1×l2") == styles.dataplane("memif").colour
    # a dark colour has lighter shades only: none of them black again
    assert len({style.shade("#000000", k) for k in range(len(style.LIGHTER))}) == \
        len(style.LIGHTER)
