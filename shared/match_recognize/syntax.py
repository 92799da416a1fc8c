"""The MATCH_RECOGNIZE syntax tree: what the parser reads, before any mapping.

The row pattern, the DEFINE conditions and the MEASURES stay in this form after
compilation too: the output stage re-matches each complex event's rows against the
row pattern to label them (``labels``) and evaluates the MEASURES (``measures``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cerfleet.errors import MatchRecognizeError
from cerfleet.pattern import Span


def _span() -> Any:
    return field(default=None, compare=False, repr=False)


# ------------------------------------------------------------------ row pattern


@dataclass(frozen=True)
class Var:
    name: str
    span: Span | None = _span()


@dataclass(frozen=True)
class Cat:
    left: Regex
    right: Regex
    span: Span | None = _span()


@dataclass(frozen=True)
class Alt:
    left: Regex
    right: Regex
    span: Span | None = _span()


@dataclass(frozen=True)
class Quant:
    """``body{low,high}`` (high None: unbounded); ``*``, ``+``, ``?`` are ``{0,}``,
    ``{1,}``, ``{0,1}``. ``greedy`` is False for the reluctant forms (``*?`` ...)."""

    body: Regex
    low: int
    high: int | None
    greedy: bool = True
    text: str = ""
    span: Span | None = _span()


Regex = Var | Cat | Alt | Quant

# ------------------------------------------------------------------ expressions


@dataclass(frozen=True)
class Col:
    """``var.attr`` or a bare ``attr`` (var None)."""

    var: str | None
    attr: str
    span: Span | None = _span()


@dataclass(frozen=True)
class Lit:
    value: str | int | float | bool
    span: Span | None = _span()


@dataclass(frozen=True)
class Bin:
    """Arithmetic (``+ - * / %``), comparison (``= != < <= > >=``) or ``AND``/``OR``."""

    op: str
    left: Expr
    right: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class Unary:
    """``-`` (negation) or ``NOT``."""

    op: str
    operand: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class Star:
    """``*`` or ``v.*`` as the argument of COUNT."""

    var: str | None
    span: Span | None = _span()


@dataclass(frozen=True)
class Call:
    """``NAME(args)``, the name upper-cased."""

    name: str
    args: tuple[Expr | Star, ...]
    span: Span | None = _span()


Expr = Col | Lit | Bin | Unary | Call

COMPARISONS = frozenset({"=", "!=", "<", "<=", ">", ">="})
LOGICAL = frozenset({"AND", "OR"})

# ------------------------------------------------------------------ the query


@dataclass(frozen=True)
class Measure:
    name: str
    expr: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class Define:
    var: str
    cond: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class Query:
    """A whole ``SELECT * FROM stream MATCH_RECOGNIZE (...)``.

    ``rows`` is ``ONE`` (ONE ROW PER MATCH, the default), ``ALL`` (ALL ROWS PER MATCH)
    or ``MATCHES`` (Esper's ALL MATCHES); ``skip`` is ``(kind, var)`` with kind one of
    ``PAST LAST ROW``, ``TO NEXT ROW``, ``TO CURRENT ROW``, ``TO FIRST``, ``TO LAST``
    (None: no AFTER MATCH clause); ``within`` is ``(amount, unit)``.
    """

    source: str
    stream: str
    regex: Regex
    partition: tuple[Col, ...] = ()
    order: tuple[Col, ...] = ()
    measures: tuple[Measure, ...] = ()
    rows: str = "ONE"
    skip: tuple[str, str | None] | None = None
    within: tuple[int, str] | None = None
    defines: tuple[Define, ...] = ()
    rows_span: Span | None = _span()
    skip_span: Span | None = _span()
    within_span: Span | None = _span()

    def fail(self, message: str, span: Span | None, expected: str | None = None) -> None:
        """Raise ``MatchRecognizeError`` at ``span`` (the query's start when None)."""
        raise error(self.source, message, span, expected)


def error(
    source: str, message: str, span: Span | None, expected: str | None = None
) -> MatchRecognizeError:
    if span is None:
        return MatchRecognizeError(message, line=1, column=1, source=source, expected=expected)
    length = span.end_column - span.column if span.end_line == span.line else 1
    return MatchRecognizeError(
        message,
        line=span.line,
        column=span.column,
        source=source,
        length=length,
        expected=expected,
    )
