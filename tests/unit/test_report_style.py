"""Colours and markers: one per data plane and per NF kind, from the registries."""
from __future__ import annotations

import pytest

from cnfperf import nfs
from cnfperf.dataplanes import DATAPLANES
from cnfperf.report import style


@pytest.fixture(autouse=True)
def stored_runs():
    """The report knows a data plane's style from what its points stored
    (switch_facts): here, a point of every registered one."""
    style.learn([{"switch": n, "switch_facts": dp.stored()} for n, dp in DATAPLANES.items()])


def test_every_data_plane_has_a_colour_and_marker_of_its_own():
    styles = [style.dataplane(name) for name in DATAPLANES]
    assert len(set(styles)) == len(DATAPLANES)
    # as long as the palette lasts, the colour alone tells them apart
    assert len(DATAPLANES) <= len(style.COLOURS)
    assert len({s.colour for s in styles}) == len(DATAPLANES)


def test_nf_kinds_wear_pairs_no_data_plane_wears():
    # every kind cnfperf names has a style of its own (report/style.py's palette)
    assert set(nfs.names()) <= set(style.NF_STYLES)
    kinds = [style.nf_kind(k) for k in nfs.names()]
    assert len(set(kinds)) == len(nfs.names())
    assert not set(kinds) & {style.dataplane(name) for name in DATAPLANES}


def test_a_data_plane_added_later_moves_no_other(monkeypatch):
    """Its own number: the others keep theirs, and a run stored before reads alike."""
    before = {n: style.dataplane(n) for n in DATAPLANES}
    monkeypatch.setattr(style, "_planes", dict(style._planes))
    style.learn([{"switch": "new-switch", "switch_facts": {"name": "new-switch", "style": 12}}])
    assert style.dataplane("new-switch") == style.nth(12)
    assert style.dataplane("new-switch") not in before.values()
    assert {n: style.dataplane(n) for n in DATAPLANES} == before
    assert style.rank("new-switch 2×l2") == 12 < style.rank("no-number-switch")


def test_styles_are_the_same_in_every_report():
    # by the number the data plane declares and its points stored
    assert style.dataplane("ovs") == style.nth(DATAPLANES["ovs"].style)
    assert style.for_curves([])("ovs 3×l2 single") == style.dataplane("ovs")
    assert style.dataplane("no-such-switch") == style.dataplane("no-such-switch")
    assert style.nf_kind("cmd:my-nf {in} {out}") == style.nf_kind("cmd:my-nf {in} {out}")


def test_the_report_reads_no_data_plane_of_today():
    """A stored run is read through what it stored: report/ imports no data plane."""
    import ast
    from pathlib import Path
    for path in Path(style.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                    [a.name for a in node.names]
                assert not any(n.startswith("cnfperf.dataplanes") for n in names), path.name


def test_a_name_no_registry_holds_never_wears_a_registered_style():
    """A user's cmd: NF or a data plane stored without its number beside the registered ones."""
    registered = {*(style.dataplane(n) for n in DATAPLANES),
                  *(style.nf_kind(k) for k in nfs.names())}
    names = [f"cmd:nf{i} {{in}} {{out}}" for i in range(500)] + [f"switch{i}" for i in range(500)]
    assert not {style.nf_kind(n) for n in names[:500]} & registered
    assert not {style.dataplane(n) for n in names[500:]} & registered
    # and they still spread over what is left
    assert len({style.dataplane(n) for n in names}) > style.PAIRS - style.PLANE_STYLES - \
        len(style.NF_STYLES) - 20


def test_the_docstring_says_ovs_as_it_is_drawn():
    ovs = style.dataplane("ovs")
    assert (ovs.colour, ovs.marker) == ("#332288", "X")       # COLOURS' indigo
    assert "OVS is the same indigo X" in " ".join(style.__doc__.split())


def test_the_first_pairs_are_all_distinct():
    assert len({style.nth(i) for i in range(style.PAIRS)}) == style.PAIRS


def test_curves_of_one_data_plane_are_told_apart_by_nf_kind():
    rows = [dict(switch="ovs no NF", dataplane="ovs", nfs=0, nf="l2"),
            dict(switch="ovs 1×mirror", dataplane="ovs", nfs=1, nf="mirror"),
            dict(switch="ovs 1×click:mirror", dataplane="ovs", nfs=1, nf="click:mirror")]
    of = style.for_curves(rows)
    assert of("ovs no NF") == style.dataplane("ovs")
    assert of("ovs 1×mirror") == style.nf_kind("mirror")
    assert of("ovs 1×click:mirror") == style.nf_kind("click:mirror")
    # two data planes: each curve wears its data plane's style (line styles tell the rest)
    rows.append(dict(switch="memif 1×mirror", dataplane="memif", nfs=1, nf="mirror"))
    of = style.for_curves(rows)
    assert of("ovs 1×mirror") == of("ovs no NF") == style.dataplane("ovs")
    assert of("memif 1×mirror") == style.dataplane("memif")


def test_curves_of_one_style_take_shades_of_its_colour():
    from cnfperf.report.draw import Pen
    rows = [dict(switch="ovs no NF", dataplane="ovs", nfs=0, nf="l2"),
            dict(switch="ovs 1×l2", dataplane="ovs", nfs=1, nf="l2"),
            dict(switch="ovs 3×l2", dataplane="ovs", nfs=3, nf="l2"),
            dict(switch="memif 1×l2", dataplane="memif", nfs=1, nf="l2")]
    pen = Pen(rows)
    ovs = [pen.colour(r["switch"]) for r in rows[:3]]
    assert style.dataplane("ovs").colour in ovs and len(set(ovs)) == 3
    assert pen.colour("memif 1×l2") == style.dataplane("memif").colour
    # a dark colour has lighter shades only: none of them black again
    assert len({style.shade("#000000", k) for k in range(len(style.LIGHTER))}) == \
        len(style.LIGHTER)
