"""RSEP-QL's syntax tree: named windows on streams, basic event patterns (BEPs) on
them, and the event pattern inside MATCH (SEQ and its selection policies, FIRST,
LAST) with its consumption policy."""

from __future__ import annotations

from dataclasses import dataclass, field

from cerfleet import pattern
from cerfleet.errors import RsepqlError
from cerfleet.pattern import Span


@dataclass(frozen=True)
class Window:
    """``FROM NAMED <stream> WIN [...] AS <name>``: ``kind`` is ``range`` (the sliding
    time window W^τ of width ``ms``, sliding by ``step_ms``, or by the time unit when
    None), ``landmark`` (W^λ from the instant ``ms``) or ``identity`` (no ``WIN``:
    W^id, every item so far)."""

    name: str
    stream: str
    kind: str
    ms: int = 0
    step_ms: int | None = None
    step_span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Bep:
    """``EVENT ON <window> { triples FILTER(...) } AS name``."""

    name: str
    window: str
    triples: tuple[pattern.TriplePattern, ...]
    filters: tuple[pattern.Pred, ...]
    span: Span | None = None

    def variables(self) -> frozenset[str]:
        return frozenset(
            t.name for triple in self.triples for t in triple if isinstance(t, pattern.GraphVar)
        )


@dataclass(frozen=True)
class Ref:
    """A BEP named in MATCH."""

    name: str
    span: Span | None = None


@dataclass(frozen=True)
class Seq:
    """``left SEQ right``; ``policy`` is ``""`` (unrestricted, Eq. (7)), ``"c"``
    (chronological, Eq. (10)), ``"r"`` (recent, Eq. (11)) or ``"n"`` (C-SPARQL's
    naive sequencing, Eq. (9))."""

    left: Expr
    right: Expr
    policy: str = ""
    span: Span | None = None


@dataclass(frozen=True)
class Pick:
    """``FIRST E`` (Eq. (5)) or ``LAST E`` (Eq. (6)): ``which`` is ``first`` or
    ``last``."""

    which: str
    operand: Expr
    span: Span | None = None


Expr = Ref | Seq | Pick


def refs(expr: Expr) -> list[str]:
    """The BEP names of ``expr``, left to right."""
    if isinstance(expr, Ref):
        return [expr.name]
    if isinstance(expr, Pick):
        return refs(expr.operand)
    return refs(expr.left) + refs(expr.right)


def selective(expr: Expr) -> Seq | Pick | None:
    """The first FIRST, LAST or policy SEQ of ``expr``, if any."""
    if isinstance(expr, Ref):
        return None
    if isinstance(expr, Pick) or expr.policy:
        return expr
    return selective(expr.left) or selective(expr.right)


@dataclass(frozen=True)
class Query:
    """``select`` None is ``SELECT *``; ``expr`` the event pattern of MATCH and
    ``chain`` its BEP names in order (for an unrestricted SEQ, the chain of strictly
    later items: SEQ is associative under Eq. (7)); ``consuming`` the consumption
    policy P^c = P^r of ``MATCH CONSUMING`` (Section 4.4)."""

    select: tuple[str, ...] | None
    windows: dict[str, Window]
    events: dict[str, Bep]
    chain: tuple[str, ...]
    expr: Expr | None = None
    consuming: bool = False
    consuming_span: Span | None = field(default=None, compare=False)

    def selected(self) -> tuple[str, ...]:
        """The variables a result row holds: SELECT's, or for ``SELECT *`` each BEP's
        variables in chain order (sorted within a BEP), once each."""
        if self.select is not None:
            return self.select
        names: list[str] = []
        for name in self.chain:
            names.extend(sorted(self.events[name].variables() - set(names)))
        return tuple(names)

    def stream_of(self, event: str) -> str:
        return self.windows[self.events[event].window].stream

    def stepped(self) -> list[Window]:
        """The windows with a STEP: their closes are the evaluation times."""
        return [w for w in self.windows.values() if w.step_ms is not None]

    def per_evaluation(self) -> bool:
        """True when the query chooses among an evaluation's matches or consumes
        input (``rsepql.evaluation`` runs it); False when it is an unrestricted SEQ
        chain, which the automata run (with a STEP window, ``rsepql.closes`` holds
        each result until the close that reports it)."""
        return self.consuming or (self.expr is not None and selective(self.expr) is not None)


def error(text: str, message: str, span: Span | None, expected: str | None = None) -> RsepqlError:
    """An ``RsepqlError`` at ``span`` (line 1, column 1 when unknown)."""
    line, column, length = 1, 1, 1
    if span is not None:
        line, column = span.line, span.column
        length = span.end_column - span.column if span.end_line == span.line else 1
    return RsepqlError(
        message, line=line, column=column, source=text, length=max(length, 1), expected=expected
    )
