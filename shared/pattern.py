"""The pattern form: the one language-neutral input of the engine.

Every query language is a front-end that turns its text into a ``Pattern`` (CEQL's
parser does today; MATCH_RECOGNIZE and the RDF languages will); the compiler (CEA
construction, the predicate compilers, ``cerfleet.plan``) consumes nothing else, and
no module of this form imports a front-end.

The contract:

* **Three layers**, as in the CORE paper (Fig. 2, §2): value expressions over one
  event (``Expr``), unary predicates on one event (``Pred``), and CEL formulas
  (``Formula``) that combine event types, variables, sequencing, disjunction,
  iteration and filters. ``Pattern`` is a formula with its options: projection
  (``select``), selection strategy, input streams, partitioning, window,
  consumption, limit and the declared event schemas.
* **Semantics** are the CORE paper's: a formula denotes a set of complex events
  (sets of positions) with valuations binding each variable to positions; a
  ``FilterAtom`` holds when every event bound to its variable satisfies its
  predicate; ``Seq`` is non-contiguous sequencing, ``Plus`` non-contiguous
  iteration. Options are applied after the formula, in the order partitioning →
  window → strategy → consumption → limit.
* **Nodes are immutable values**: frozen dataclasses, hashable, equal when they say
  the same thing. Each carries the source ``Span`` it came from (any front-end's own
  line and column) so that errors found after parsing point at the text; spans never
  take part in equality.
* **Extension**: an operator is a new node kind in one of the three unions (``Expr``,
  ``Pred``, ``Formula``), never a flag on an existing kind: contiguity, absence and
  conjunction are new ``Formula`` kinds; predicates comparing several events, lagged
  values (``PREV``) and graph-pattern matches are new ``Pred``/``Expr`` kinds. A
  consumer that meets a kind it does not handle raises ``TypeError`` naming it, so a
  front-end can never silently produce something the compiler ignores.
* **Names**: event types and variables are plain strings; a variable named like an
  event type is bound to the events of that type (CEL's ``R`` is ``R AS R``).
  Attribute names are event field names, resolved per event at evaluation time.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

# --------------------------------------------------------------------------- spans


@dataclass(frozen=True)
class Span:
    """1-based line and column of the first character, and of one past the last."""

    line: int
    column: int
    end_line: int
    end_column: int


def _span() -> Any:
    # A fresh Field per use: spans locate errors but never take part in equality.
    return field(default=None, compare=False, repr=False)


# --------------------------------------------------------------- value expressions

Scalar = str | int | float | bool


@dataclass(frozen=True)
class Attr:
    """An attribute of the event under test, e.g. ``price``."""

    name: str
    span: Span | None = _span()


@dataclass(frozen=True)
class Const:
    """A literal: number, string (quotes removed, escapes resolved) or boolean."""

    value: Scalar
    span: Span | None = _span()


@dataclass(frozen=True)
class Arith:
    """Binary arithmetic, ``op`` one of ``+ - * / %``."""

    op: str
    left: Expr
    right: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class Neg:
    """Unary minus."""

    operand: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class Prev:
    """``PREV(attr, n)``: ``attr`` of the n-th previous event of the event's partition
    substream (missing if none): a property of the stream, so still unary."""

    attr: str
    n: int = 1
    span: Span | None = _span()


Expr = Attr | Const | Arith | Neg | Prev

# ---------------------------------------------------------------- unary predicates


@dataclass(frozen=True)
class Compare:
    """``left op right``; ``op`` is normalised to one of ``= != < <= > >=``
    (the parser maps ``==`` to ``=`` and ``<>`` to ``!=``)."""

    op: str
    left: Expr
    right: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class InList:
    """``expr [NOT] IN (v1, v2, ...)``."""

    expr: Expr
    values: tuple[Const, ...]
    negated: bool = False
    span: Span | None = _span()


@dataclass(frozen=True)
class InRange:
    """``expr [NOT] IN RANGE(low, high)``: ``low <= expr <= high``."""

    expr: Expr
    low: Const
    high: Const
    negated: bool = False
    span: Span | None = _span()


@dataclass(frozen=True)
class Like:
    """``expr [NOT] LIKE 'regex'``: the whole string value must match the regex."""

    expr: Expr
    pattern: str
    negated: bool = False
    span: Span | None = _span()


@dataclass(frozen=True)
class BoolLit:
    """``TRUE`` or ``FALSE`` used as a whole predicate."""

    value: bool
    span: Span | None = _span()


@dataclass(frozen=True)
class PNot:
    operand: Pred
    span: Span | None = _span()


@dataclass(frozen=True)
class PAnd:
    left: Pred
    right: Pred
    span: Span | None = _span()


@dataclass(frozen=True)
class POr:
    left: Pred
    right: Pred
    span: Span | None = _span()


Pred = Compare | InList | InRange | Like | BoolLit | PNot | PAnd | POr

# ------------------------------------------------------------------------- filters


@dataclass(frozen=True)
class FilterAtom:
    """``var[pred]``: every event bound to ``var`` must satisfy ``pred``."""

    var: str
    pred: Pred
    span: Span | None = _span()


@dataclass(frozen=True)
class FilterAnd:
    left: FilterExpr
    right: FilterExpr
    span: Span | None = _span()


@dataclass(frozen=True)
class FilterOr:
    left: FilterExpr
    right: FilterExpr
    span: Span | None = _span()


FilterExpr = FilterAtom | FilterAnd | FilterOr

# ---------------------------------------------------------------------- CEL formulas


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


Formula = EventType | As | Seq | Or | Plus | Filter | Contiguous | ContiguousPlus | AnyEvent

# ------------------------------------------------------------------------ clauses


class Strategy(enum.Enum):
    ALL = "ALL"
    NEXT = "NEXT"
    LAST = "LAST"
    MAX = "MAX"
    STRICT = "STRICT"


class Consume(enum.Enum):
    NONE = "NONE"
    ANY = "ANY"
    PARTITION = "PARTITION"


class WindowKind(enum.Enum):
    EVENTS = "EVENTS"  # positions in the (partition's) stream
    TIME = "TIME"  # the --time-field timestamp, in milliseconds
    ATTRIBUTE = "ATTRIBUTE"  # a numeric attribute of the events


TIME_UNITS_MS: dict[str, int] = {
    "MILLISECONDS": 1,
    "SECONDS": 1000,
    "MINUTES": 60_000,
    "HOURS": 3_600_000,
}


@dataclass(frozen=True)
class Window:
    """``WITHIN amount EVENTS``, ``WITHIN amount UNIT`` or ``WITHIN amount [attr]``.

    ``unit`` is the upper-case time unit for TIME windows (a key of TIME_UNITS_MS),
    ``attr`` the attribute for ATTRIBUTE windows.
    """

    kind: WindowKind
    amount: int | float
    unit: str | None = None
    attr: str | None = None
    span: Span | None = _span()

    @property
    def epsilon(self) -> int | float:
        """The bound ε on ``clock(end) - clock(start)``, in the clock's own unit."""
        if self.kind is WindowKind.TIME:
            assert self.unit is not None
            return self.amount * TIME_UNITS_MS[self.unit]
        return self.amount


class AttrType(enum.Enum):
    INT = "int"
    DOUBLE = "double"
    STRING = "string"
    BOOLEAN = "boolean"
    PRIMARY_TIME = "primary_time"


@dataclass(frozen=True)
class EventDecl:
    name: str
    attributes: tuple[tuple[str, AttrType], ...]
    span: Span | None = _span()


@dataclass(frozen=True)
class StreamDecl:
    """A declared stream: the schema of each event type it carries (CEQL's
    ``DECLARE STREAM S { EVENT E { a: type, ... }, ... }``)."""

    name: str
    events: tuple[EventDecl, ...]
    span: Span | None = _span()


@dataclass(frozen=True)
class Pattern:
    """A whole pattern: the formula ``where`` and the options around it.

    ``select`` is None for ``SELECT *`` and otherwise the projected variables in
    source order. ``partition_by`` flattens ``[a, b], [c]`` to ``(a, b, c)``.
    ``limit`` is ``LIMIT n`` (None: unlimited).
    """

    where: Formula
    select: tuple[str, ...] | None = None
    strategy: Strategy = Strategy.ALL
    streams: tuple[str, ...] = ()
    partition_by: tuple[str, ...] = ()
    within: Window | None = None
    consume: Consume = Consume.NONE
    limit: int | None = None
    declarations: tuple[StreamDecl, ...] = ()
    select_spans: tuple[Span | None, ...] = field(default=(), compare=False, repr=False)
    # Parallel to ``streams`` and ``partition_by``, and the ``n`` of ``LIMIT n``,
    # so semantic errors about them can point at the text.
    stream_spans: tuple[Span | None, ...] = field(default=(), compare=False, repr=False)
    partition_spans: tuple[Span | None, ...] = field(default=(), compare=False, repr=False)
    limit_span: Span | None = field(default=None, compare=False, repr=False)
