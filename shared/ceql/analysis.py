"""Semantic checks on a parsed CEQL query.

``check`` raises a ``CEQLError`` pointing at the offending node for mistakes
the grammar cannot see: unbound variables, empty windows, type clashes, LIKE
patterns outside the accepted (linear-time, RE2) syntax and, when the query
declares its streams (``DECLARE STREAM``), names that the schema does not know.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import NoReturn

from cerfleet import pattern
from cerfleet.cea.regex import LikeSyntaxError, compile_like
from cerfleet.ceql.correlations import check_correlations
from cerfleet.ceql.quarantine import check_quarantines
from cerfleet.errors import CEQLError

__all__ = ["check"]

_NUMERIC = {pattern.AttrType.INT, pattern.AttrType.DOUBLE, pattern.AttrType.PRIMARY_TIME}


def check(query: pattern.Pattern, source: str) -> None:
    """Raise ``CEQLError`` at the first semantic error, in clause order."""
    _Checker(query, source).run()


# -------------------------------------------------------------- bindings


def event_types(formula: pattern.Formula) -> list[str]:
    """The event type names occurring in ``formula``, in source order, once each."""
    names = (node.name for node in _walk(formula) if isinstance(node, pattern.EventType))
    return list(dict.fromkeys(names))


def bindings(formula: pattern.Formula) -> dict[str, list[str]]:
    """Each variable bound in ``formula`` (in source order) -> the event types it can bind.

    ``φ AS x`` binds x to the events of φ; an event type R is itself a variable
    bound to R events.
    """
    bound: dict[str, list[str]] = {}
    for node in _walk(formula):
        if isinstance(node, pattern.EventType):
            name, types = node.name, [node.name]
        elif isinstance(node, pattern.As):
            name, types = node.var, event_types(node.formula)
        else:
            continue
        bound[name] = list(dict.fromkeys([*bound.get(name, []), *types]))
    return bound


def _negated_variables(formula: pattern.Formula) -> set[str]:
    """Variables that can be bound to a NOT(...) event (``NOT(R) AS x``)."""
    return {
        node.var
        for node in _walk(formula)
        if isinstance(node, pattern.As)
        and any(isinstance(inner, pattern.NotEvent) for inner in _walk(node.formula))
    }


def _walk(formula: pattern.Formula) -> Iterator[pattern.Formula]:
    """Every node of ``formula`` in source order (a node right after its operands)."""
    match formula:
        case (
            pattern.As(formula=inner)
            | pattern.Plus(formula=inner)
            | pattern.ContiguousPlus(formula=inner)
            | pattern.Filter(formula=inner)
        ):
            yield from _walk(inner)
        case (
            pattern.Seq(left=left, right=right)
            | pattern.Contiguous(left=left, right=right)
            | pattern.Absent(left=left, right=right)
            | pattern.Or(left=left, right=right)
            | pattern.And(left=left, right=right)
        ):
            yield from _walk(left)
            yield from _walk(right)
    yield formula


def _atoms(filter_: pattern.FilterExpr) -> Iterator[pattern.FilterAtom]:
    if isinstance(filter_, pattern.FilterAtom):
        yield filter_
    elif isinstance(filter_, pattern.Correlation):
        return
    else:
        yield from _atoms(filter_.left)
        yield from _atoms(filter_.right)


def _listing(names: Iterable[str]) -> str:
    return ", ".join(names) or "(none)"


# ---------------------------------------------------------------- schema


@dataclass
class _Schema:
    """The declarations of the streams in FROM, merged: event type -> attribute -> types."""

    events: dict[str, dict[str, set[pattern.AttrType]]] = field(default_factory=dict)

    @classmethod
    def of(cls, decls: Iterable[pattern.StreamDecl]) -> _Schema:
        schema = cls()
        for decl in decls:
            for event in decl.events:
                attrs = schema.events.setdefault(event.name, {})
                for name, type_ in event.attributes:
                    attrs.setdefault(name, set()).add(type_)
        return schema

    def attributes(self, events: Iterable[str]) -> dict[str, set[pattern.AttrType]]:
        merged: dict[str, set[pattern.AttrType]] = {}
        for event in events:
            for name, types in self.events.get(event, {}).items():
                merged.setdefault(name, set()).update(types)
        return merged


def _kind_of_types(types: set[pattern.AttrType]) -> str | None:
    kinds = {"number" if t in _NUMERIC else t.value for t in types}
    return kinds.pop() if len(kinds) == 1 else None


# --------------------------------------------------------------- checker


class _Checker:
    def __init__(self, query: pattern.Pattern, source: str) -> None:
        self.query = query
        self.source = source
        self.schema: _Schema | None = None

    def run(self) -> None:
        q = self.query
        self._select()
        if q.declarations:
            self._streams()
        self._formula()
        self._partition()
        self._window()
        check_quarantines(q, self.fail)
        if q.limit is not None and q.limit <= 0:
            self.fail("LIMIT must be positive", q.limit_span, "a whole number of at least 1")

    def fail(self, message: str, span: pattern.Span | None, expected: str | None) -> NoReturn:
        line, column, length = 1, 1, 1
        if span is not None:
            line, column = span.line, span.column
            if span.end_line == span.line:
                length = span.end_column - span.column
            else:  # underline to the end of the first line
                length = len((self.source.splitlines() or [""])[line - 1]) - column + 1
        raise CEQLError(
            message,
            line=line,
            column=column,
            length=length,
            source=self.source,
            expected=expected,
        )

    def narrow(self, span: pattern.Span | None, fragment: str) -> pattern.Span | None:
        """The part of a one-line ``span`` where ``fragment`` occurs once, else ``span``."""
        if span is None or not fragment or span.end_line != span.line:
            return span
        text = (self.source.splitlines() or [""])[span.line - 1]
        inside = text[span.column - 1 : span.end_column - 1]
        if inside.count(fragment) != 1:
            return span
        column = span.column + inside.index(fragment)
        return replace(span, column=column, end_column=column + len(fragment))

    # ---- clauses

    def _select(self) -> None:
        q = self.query
        bound = bindings(q.where)
        spans = q.select_spans or (None,) * len(q.select or ())
        for var, span in zip(q.select or (), spans, strict=False):
            if var not in bound:
                self.fail(
                    f"unknown variable '{var}' in SELECT",
                    span,
                    f"a variable bound in WHERE: {_listing(bound)}",
                )

    def _streams(self) -> None:
        q = self.query
        declared = {decl.name: decl for decl in q.declarations}
        spans = q.stream_spans or (None,) * len(q.streams)
        for name, span in zip(q.streams, spans, strict=False):
            if name not in declared:
                self.fail(
                    f"unknown stream '{name}' in FROM",
                    span,
                    f"a declared stream: {_listing(declared)}",
                )
        self.schema = _Schema.of(declared[name] for name in q.streams)

    def _formula(self) -> None:
        where = self.query.where
        if self.schema is not None:
            known = self.schema.events
            for node in _walk(where):
                if isinstance(node, pattern.EventType) and node.name not in known:
                    self.fail(
                        f"unknown event type '{node.name}'",
                        node.span,
                        f"an event type of {_listing(self.query.streams)}: {_listing(known)}",
                    )
        for node in _walk(where):
            # The event a NOT(...) or a gap excludes: its own type, its own predicate.
            if isinstance(node, pattern.NotEvent | pattern.Absent):
                if self.schema is not None and node.etype not in self.schema.events:
                    self.fail(
                        f"unknown event type '{node.etype}'",
                        node.span,
                        f"an event type of {_listing(self.query.streams)}: "
                        f"{_listing(self.schema.events)}",
                    )
                if node.pred is not None:
                    _PredicateChecker(self, node.etype, [node.etype]).pred(node.pred)
        for filtered in (node for node in _walk(where) if isinstance(node, pattern.Filter)):
            bound = bindings(filtered.formula)
            negated = _negated_variables(filtered.formula)
            for atom in _atoms(filtered.filter):
                if atom.var not in bound:
                    self.fail(
                        f"unbound variable '{atom.var}' in FILTER",
                        atom.span,
                        f"a variable bound in the filtered formula: {_listing(bound)}",
                    )
                if atom.var in negated:
                    self.fail(
                        f"'{atom.var}' may be bound to a NOT(...) event, which FILTER "
                        "cannot narrow",
                        atom.span,
                        "the condition inside NOT(... FILTER ...)",
                    )
                _PredicateChecker(self, atom.var, bound[atom.var]).pred(atom.pred)
            check_correlations(
                self.fail, filtered.filter, bound, bindings(where), _negated_variables(where)
            )

    def _partition(self) -> None:
        q = self.query
        spans = q.partition_spans or (None,) * len(q.partition_by)
        for attr, span in zip(q.partition_by, spans, strict=False):
            self._known_attribute(attr, span, "PARTITION BY")

    def _window(self) -> None:
        window = self.query.within
        if window is None:
            return
        # ε may be 0: a complex event whose events share one instant (or one position).
        if window.amount < 0:
            self.fail("WITHIN needs an amount of at least 0", window.span, "a number of 0 or more")
        try:
            finite = math.isfinite(float(window.epsilon))
        except OverflowError:
            finite = False
        if not finite:
            self.fail("WITHIN amount too large", window.span, "a window below 1e308 ms")
        if window.kind is pattern.WindowKind.EVENTS and not float(window.amount).is_integer():
            self.fail("WITHIN ... EVENTS counts events", window.span, "a whole number of events")
        if window.kind is pattern.WindowKind.ATTRIBUTE and window.attr is not None:
            types = self._known_attribute(window.attr, window.span, "WITHIN")
            if types and not types & _NUMERIC:
                self.fail(
                    f"window attribute '{window.attr}' is not numeric",
                    window.span,
                    "an int, double or primary_time attribute",
                )

    def _known_attribute(
        self, attr: str, span: pattern.Span | None, clause: str
    ) -> set[pattern.AttrType]:
        """The declared types of ``attr`` over all event types (fails if it has none)."""
        if self.schema is None:
            return set()
        every = self.schema.attributes(self.schema.events)
        if attr not in every:
            self.fail(
                f"unknown attribute '{attr}' in {clause}",
                span,
                f"an attribute of a declared event type: {_listing(sorted(every))}",
            )
        return every[attr]


class _PredicateChecker:
    """Checks one ``x[pred]``: attribute names and the kinds of values compared."""

    def __init__(self, checker: _Checker, var: str, events: list[str]) -> None:
        self.checker = checker
        self.var = var
        self.events = events
        schema = checker.schema
        self.attrs = schema.attributes(events) if schema is not None else None

    def pred(self, pred: pattern.Pred) -> None:
        match pred:
            case pattern.PAnd(left=left, right=right) | pattern.POr(left=left, right=right):
                self.pred(left)
                self.pred(right)
            case pattern.PNot(operand=operand):
                self.pred(operand)
            case pattern.InStream(streams=streams, span=span):
                for stream in streams:
                    if stream not in self.checker.query.streams:
                        self.checker.fail(
                            f"stream '{stream}' is not in FROM",
                            span,
                            f"one of the streams in FROM: {_listing(self.checker.query.streams)}",
                        )
            case pattern.Compare(op=op, left=left, right=right):
                left_kind, right_kind = self.kind(left), self.kind(right)
                if left_kind and right_kind and left_kind != right_kind:
                    self.checker.fail(
                        f"cannot compare a {left_kind} with a {right_kind}",
                        right.span,
                        f"a {left_kind} on the right of '{op}'",
                    )
            case pattern.InList(expr=expr, values=values):
                # Without a known kind for expr, the first value sets it for the rest.
                kind = self.kind(expr) or (self.kind(values[0]) if values else None)
                for value in values:
                    self._same_kind(kind, value, "in the IN list")
            case pattern.InRange(expr=expr, low=low, high=high):
                self._same_kind("number", expr, "before IN RANGE")
                for bound in (low, high):
                    self._same_kind("number", bound, "as a RANGE bound")
            case pattern.Like(expr=expr, pattern=regex, span=span):
                self._same_kind("string", expr, "before LIKE")
                try:
                    compile_like(regex)
                except LikeSyntaxError as exc:
                    self.checker.fail(
                        f"invalid regular expression after LIKE: {exc.reason}",
                        self.checker.narrow(span, exc.fragment),
                        "a regular expression in RE2 syntax, without backreferences or look-around",
                    )

    def kind(self, expr: pattern.Expr) -> str | None:
        """The kind of ``expr`` (number, string, boolean) if known statically; checks it too."""
        match expr:
            case pattern.Const(value=bool()):
                return "boolean"
            case pattern.Const(value=str()):
                return "string"
            case pattern.Const():
                return "number"
            case pattern.Attr(name=name, span=span):
                if self.attrs is None:
                    return None
                if name not in self.attrs:
                    self.checker.fail(
                        f"unknown attribute '{name}' for '{self.var}'",
                        span,
                        f"an attribute of {_listing(self.events)}: {_listing(sorted(self.attrs))}",
                    )
                return _kind_of_types(self.attrs[name])
            case pattern.Neg(operand=operand):
                self._same_kind("number", operand, "after '-'")
            case pattern.Arith(op=op, left=left, right=right):
                self._same_kind("number", left, f"before '{op}'")
                self._same_kind("number", right, f"after '{op}'")
        return "number"

    def _same_kind(self, want: str | None, expr: pattern.Expr, where: str) -> None:
        got = self.kind(expr)
        if want is not None and got is not None and got != want:
            self.checker.fail(f"a {got} cannot stand {where}", expr.span, f"a {want}")
