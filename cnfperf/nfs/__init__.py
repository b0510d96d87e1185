"""NF kinds by family: adding one is a file and its entry here (its import
and its row in KINDS).

A value of `nf` belongs to the first family that matches it (NfKind.matches);
the order here is also the order --help and the docs list the kinds in.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from cnfperf import UserError, fields
from cnfperf.nfs.base import Command, NfKind
from cnfperf.nfs.click import ClickKind
from cnfperf.nfs.cmd import CmdKind
from cnfperf.nfs.engine import EngineKind
from cnfperf.nfs.frr import FrrKind
from cnfperf.nfs.image import ImageKind
from cnfperf.nfs.router import RouterKind
from cnfperf.nfs.testpmd import TestPmdKind

if TYPE_CHECKING:
    from cnfperf.scenario import Scenario

KINDS: list[type[NfKind]] = [
    EngineKind,
    TestPmdKind,
    RouterKind,
    FrrKind,
    CmdKind,
    ClickKind,
    ImageKind,
]


def find(nf: str) -> NfKind | None:
    """The kind of an `nf` value, or None for a value no family takes."""
    family = next((k for k in KINDS if k.matches(nf)), None)
    return family(nf) if family is not None else None


def kind(nf: str) -> NfKind:
    """The kind of an `nf` value; UserError (exit 2) naming the field if none."""
    found = find(nf)
    if found is None:
        shown = values()
        raise UserError("nf", f"{nf!r} is not a network function: one of "
                              f"{', '.join(shown[:-1])} or {shown[-1]}")
    return found


def names() -> list[str]:
    """Every value taken as it is, in registry order."""
    return [name for k in KINDS for name in k.names]


def values() -> list[str]:
    """What `nf` may be: every name, then each form with an argument (cmd:TEMPLATE)."""
    return [*names(), *(form for k in KINDS for form in k.forms)]


def bucket_kinds() -> list[str]:
    """The values whose network functions police and shape themselves (NfKind.buckets)."""
    return [name for k in KINDS if k.buckets for name in k.names]


def own_fields_problem(s: Scenario, kind: NfKind | None) -> tuple[str, str] | None:
    """(field, why) for a field of a family's own (NfKind.own_fields) set away
    from its default where the point's NFs (`kind`: None without NFs) are not
    that family's: it would mean nothing."""
    default = {f.name: f.default for f in fields.FIELDS}
    for family in KINDS:
        if family.own_fields and not isinstance(kind, family):
            for name in family.own_fields:
                if getattr(s, name) != default[name]:
                    own = " or ".join(family.names)
                    return name, f"it concerns {own} NFs: nf = {own} with nfs ≥ 1"
    return None


def described() -> str:
    """The kinds as the `nf` field's help lists them."""
    shown = [*names(), *(f"{form} ({what})" for k in KINDS for form, what in k.forms.items())]
    return f"{', '.join(shown[:-1])} or {shown[-1]}"


__all__ = ["KINDS", "Command", "NfKind", "bucket_kinds", "described", "find", "kind", "names",
           "own_fields_problem", "values"]
