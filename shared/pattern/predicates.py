"""The pattern form's first two layers: value expressions over one event (``Expr``) and
unary predicates on one event (``Pred``), the filter atoms that bind them to variables
(``FilterExpr``), and the source spans every node carries (``Span``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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


@dataclass(frozen=True)
class VarAttr:
    """``x[attr]`` in a correlation: ``attr`` of an event bound to variable ``x``;
    ``back=1`` (CEQL's ``PREV(x)[attr]``): of the event bound to ``x`` just before it
    in the same instance of the filtered formula (SASE's ``x[i-1].attr``)."""

    var: str
    attr: str
    back: int = 0
    span: Span | None = _span()


@dataclass(frozen=True)
class RunningAttr:
    """``attr`` of a row of the match so far, as seen by the checked event bound to
    ``at`` (the standard's running semantics for MATCH_RECOGNIZE's DEFINE): among the
    events of the complex event up to and including the checked one that are bound to
    ``var`` (None: to any variable), the ``n``-th from the last (``last``) or from the
    first; missing if there are not that many. ``LAST(v.attr)`` in DEFINE ``v`` is the
    checked event itself (n = 0), ``LAST(a.attr)`` the last event bound to ``a``
    before it. Only in a ``Correlation`` over the whole formula."""

    at: str
    var: str | None
    attr: str
    last: bool = True
    n: int = 0
    span: Span | None = _span()


Expr = Attr | Const | Arith | Neg | Prev | VarAttr | RunningAttr


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


@dataclass(frozen=True)
class InStream:
    """The event belongs to one of ``streams`` (CEQL's ``S>E`` qualifier). Which field
    names an event's stream is an option of the run, not of the query: the compiler
    resolves this against it (``cerfleet.stream_qualifiers``)."""

    streams: tuple[str, ...]
    span: Span | None = _span()


@dataclass(frozen=True)
class GraphVar:
    """A variable of a graph pattern (``?x`` without its ``?``)."""

    name: str


@dataclass(frozen=True)
class GraphIri:
    """An IRI of a graph pattern, in full."""

    value: str


@dataclass(frozen=True)
class GraphLiteral:
    """A literal of a graph pattern: a number, or a string (any other datatype's
    lexical form)."""

    value: Scalar


GraphTerm = GraphVar | GraphIri | GraphLiteral
TriplePattern = tuple[GraphTerm, GraphTerm, GraphTerm]


@dataclass(frozen=True)
class GraphMatch:
    """A graph-pattern match (a SPARQL basic graph pattern with filters) on the RDF
    graph the event carries for ``stream``, optionally joined with the static graph
    ``background`` through ``background_triples``: true when it has a solution.

    ``filter`` reads the pattern's own variables (``Attr(name)`` is the variable
    ``name``). The solutions are computed once per event, whatever the number of runs
    that look at it; the output stage reads them back.

    ``optional``: groups of triple patterns left-joined (SPARQL's OPTIONAL), in order,
    after the other patterns and before ``filter``; ``absent``: groups that must have
    no match extending a solution (SPARQL's ``FILTER NOT EXISTS``), checked with
    ``filter``.

    ``export``: when set, each variable that has one value in every solution is also
    written into the event as the attribute ``export + name`` (a variable whose
    solutions disagree gets none), so that correlations (``VarAttr``) can compare the
    matches of different events.
    """

    stream: str
    triples: tuple[TriplePattern, ...]
    filter: Pred | None = None
    background: str | None = None
    background_triples: tuple[TriplePattern, ...] = ()
    export: str | None = None
    optional: tuple[tuple[TriplePattern, ...], ...] = ()
    absent: tuple[tuple[TriplePattern, ...], ...] = ()
    span: Span | None = _span()


Pred = Compare | InList | InRange | Like | BoolLit | PNot | PAnd | POr | InStream | GraphMatch


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


@dataclass(frozen=True)
class Correlation:
    """A filter atom comparing events bound to different variables: ``pred`` reads
    attributes through ``VarAttr`` only (never ``Attr``). It holds when ``pred`` holds
    for every combination of the events bound to the variables it names, each variable
    defined inside the filtered formula taken within one instance of it (one iteration
    of every ``+`` around the filter), each variable defined outside it within the
    instance of the lowest enclosing formula that defines it (Foundations' valuations,
    with CORE's sets of positions per variable).

    A *running* correlation reads ``RunningAttr`` (all of one ``at``) and may read the
    checked event's own attributes through ``Attr`` and ``Prev``: it holds when ``pred``
    holds at every event bound to ``at``, each read taken over the complex event's
    events up to that one (MATCH_RECOGNIZE's DEFINE on other rows of the match)."""

    pred: Pred
    span: Span | None = _span()


FilterExpr = FilterAtom | FilterAnd | FilterOr | Correlation
