"""The pattern form's CEL formulas (``Formula``): event types, variables, sequencing
(non-contiguous, contiguous, with an absence), disjunction, conjunction, iteration, filters,
negated and type-free events."""

from __future__ import annotations

from dataclasses import dataclass

from cerfleet.pattern.predicates import FilterExpr, Pred, Span, _span


@dataclass(frozen=True)
class EventType:
    """``R``: one event of type R (R is also a variable bound to that event)."""

    name: str
    span: Span | None = _span()


@dataclass(frozen=True)
class As:
    """``φ AS X``: X is bound to every position of φ."""

    formula: Formula
    var: str
    span: Span | None = _span()


@dataclass(frozen=True)
class Seq:
    """``φ1 ; φ2`` (non-contiguous sequencing)."""

    left: Formula
    right: Formula
    span: Span | None = _span()


@dataclass(frozen=True)
class Or:
    left: Formula
    right: Formula
    span: Span | None = _span()


@dataclass(frozen=True)
class Plus:
    """``φ+`` = ``φ OR φ ; φ+`` (non-contiguous iteration)."""

    formula: Formula
    span: Span | None = _span()


@dataclass(frozen=True)
class Contiguous:
    """``φ1 : φ2`` (contiguous sequencing): ``φ1 ; φ2`` with no event of the
    (partition's) stream between φ1's last event and φ2's first."""

    left: Formula
    right: Formula
    span: Span | None = _span()


@dataclass(frozen=True)
class ContiguousPlus:
    """``φ :+`` (contiguous iteration): ``φ OR φ : φ:+``, each iteration starting on
    the event right after the previous one's last."""

    formula: Formula
    span: Span | None = _span()


@dataclass(frozen=True)
class NotEvent:
    """``NOT(R)`` / ``NOT(R FILTER R[p])``: one event that is not an R satisfying p
    (CORE C++'s negated atomic formula). It is bound to no variable of its own: name it
    with ``AS`` to project or filter it."""

    etype: str
    pred: Pred | None = None
    span: Span | None = _span()


@dataclass(frozen=True)
class Absent:
    """``φ1 ; !R ; φ2`` / ``φ1 ; !(R FILTER R[p]) ; φ2``: ``φ1 ; φ2`` with no event
    that is an R satisfying p strictly between φ1's last event and φ2's first (in the
    partition's stream under PARTITION BY)."""

    left: Formula
    etype: str
    pred: Pred | None
    right: Formula
    span: Span | None = _span()


@dataclass(frozen=True)
class And:
    """``φ1 AND φ2`` (pattern conjunction): a φ1 match and a φ2 match that end at the
    same event; the complex event is their union, from the earlier of their starts to
    that common end (their positions may interleave or coincide)."""

    left: Formula
    right: Formula
    span: Span | None = _span()


@dataclass(frozen=True)
class AnyEvent:
    """One event of any type (its type is never read), bound to ``var``: a
    MATCH_RECOGNIZE pattern variable, ``Filter`` adding its DEFINE."""

    var: str
    span: Span | None = _span()


@dataclass(frozen=True)
class Filter:
    """``φ FILTER θ``."""

    formula: Formula
    filter: FilterExpr
    span: Span | None = _span()


Formula = (
    EventType
    | As
    | Seq
    | Or
    | And
    | Plus
    | Filter
    | Contiguous
    | ContiguousPlus
    | NotEvent
    | Absent
    | AnyEvent
)
