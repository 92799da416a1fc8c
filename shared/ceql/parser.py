"""CEQL text to ``pattern.Pattern``.

Three steps: lark's basic lexer splits the text into identifiers, literals and
punctuation; ``lexer`` turns identifiers into keywords and marks the tokens
of FILTER clauses (grammar.lark says why); the LALR parser builds a tree that
``_ToAst`` turns into ``cerfleet.pattern`` nodes, each with its source span.
Every syntax error becomes a ``CEQLError`` naming what was expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lark import Lark, Token, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedToken, VisitError
from lark.tree import Meta

from cerfleet import pattern
from cerfleet.ceql.analysis import check
from cerfleet.ceql.declaration_tree import DeclarationTree, Names, plural
from cerfleet.ceql.lexer import CEQLLexer, Malformed
from cerfleet.ceql.predicate_tree import span_of, token_span
from cerfleet.ceql.syntax_errors import (
    unexpected_character,
    unexpected_token,
)
from cerfleet.errors import CEQLError

__all__ = ["parse", "parse_and_check"]

# Building the LALR tables took 0.13 s of every ``cerfleet run``; lark keeps them in a
# file in the temporary directory, named by a hash of the grammar, the options and
# lark's version (so any change rebuilds it), and loads them in 0.01 s. A missing,
# stale or unwritable cache only costs the build.
_PARSER = Lark.open_from_package(
    __name__.rpartition(".")[0],
    "grammar.lark",
    parser="lalr",
    lexer=CEQLLexer,
    propagate_positions=True,
    maybe_placeholders=True,
    cache=True,
)

# --------------------------------------------------------- tree to AST


@dataclass(frozen=True)
class _Select:
    strategy: pattern.Strategy
    variables: Names | None  # None: SELECT *


@v_args(meta=True)
class _ToAst(DeclarationTree):
    """Builds AST nodes bottom-up; children are the already transformed nodes."""

    # ---- query and clauses

    def start(self, meta: Meta, children: list[Any]) -> pattern.Pattern:
        *decls, select, from_, _where, where, partition, within, consume, limit = children
        quarantines = tuple(q for d in decls if isinstance(d, tuple) for q in d)
        decls = [d for d in decls if isinstance(d, pattern.StreamDecl)]
        return pattern.Pattern(
            where=where,
            select=select.variables.names if select.variables else None,
            strategy=select.strategy,
            streams=from_.names,
            partition_by=partition.names if partition else (),
            within=within,
            consume=consume or pattern.Consume.NONE,
            limit=int(limit.value) if limit else None,
            declarations=tuple(decls),
            quarantines=quarantines,
            select_spans=select.variables.spans if select.variables else (),
            stream_spans=from_.spans,
            partition_spans=partition.spans if partition else (),
            limit_span=token_span(limit) if limit else None,
        )

    def select(self, meta: Meta, children: list[Any]) -> _Select:
        _select, strategy, *rest = children
        star = any(isinstance(t, Token) and t.type == "STAR" for t in rest)
        return _Select(strategy or pattern.Strategy.ALL, None if star else Names.of(rest))

    def strategy(self, meta: Meta, children: list[Token]) -> pattern.Strategy:
        return pattern.Strategy[children[0].type.replace("ANY", "ALL")]

    def from_clause(self, meta: Meta, children: list[Token]) -> Names:
        return Names.of(children)

    def partition(self, meta: Meta, children: list[Any]) -> Names:
        groups: list[Names] = children[2:]
        return Names(
            tuple(n for g in groups for n in g.names), tuple(s for g in groups for s in g.spans)
        )

    def attr_group(self, meta: Meta, children: list[Token]) -> Names:
        return Names.of(children)

    def within_events(self, meta: Meta, children: list[Any]) -> pattern.Window:
        return pattern.Window(pattern.WindowKind.EVENTS, children[1].value, span=span_of(meta))

    def within_time(self, meta: Meta, children: list[Any]) -> pattern.Window:
        numbers, units = children[1::2], children[2::2]
        parts = [(n.value, plural(u)) for n, u in zip(numbers, units, strict=True)]
        if len(parts) == 1:
            amount, unit = parts[0]
            return pattern.Window(pattern.WindowKind.TIME, amount, unit=unit, span=span_of(meta))
        # `WITHIN 1 HOURS 30 MINUTES`: the spans add up (in milliseconds).
        total = sum(amount * pattern.TIME_UNITS_MS[unit] for amount, unit in parts)
        if isinstance(total, float) and total.is_integer():
            total = int(total)
        return pattern.Window(
            pattern.WindowKind.TIME, total, unit="MILLISECONDS", span=span_of(meta)
        )

    def within_attr(self, meta: Meta, children: list[Any]) -> pattern.Window:
        amount, attr = children[1].value, children[2].value
        return pattern.Window(pattern.WindowKind.ATTRIBUTE, amount, attr=attr, span=span_of(meta))

    def consume(self, meta: Meta, children: list[Token]) -> pattern.Consume:
        return pattern.Consume[children[2].type]

    def limit(self, meta: Meta, children: list[Token]) -> Token:
        return children[1]  # ``start`` needs its span as well as its value

    # ---- CEL formulas

    def event_type(self, meta: Meta, children: list[Token]) -> pattern.EventType:
        return pattern.EventType(children[0].value, token_span(children[0]))

    def as_(self, meta: Meta, children: list[Any]) -> pattern.As:
        formula, _as, var = children
        return pattern.As(formula, var.value, token_span(var))

    def plus(self, meta: Meta, children: list[Any]) -> pattern.Plus:
        return pattern.Plus(children[0], span_of(meta))

    def seq(self, meta: Meta, children: list[Any]) -> pattern.Seq:
        return pattern.Seq(children[0], children[1], span_of(meta))

    def not_event(self, meta: Meta, children: list[Any]) -> pattern.NotEvent:
        _not, (etype, pred) = children
        return pattern.NotEvent(etype, pred, span_of(meta))

    def absent(self, meta: Meta, children: list[Any]) -> pattern.Absent:
        left, _bang, (etype, pred), right = children
        return pattern.Absent(left, etype, pred, right, span_of(meta))

    def negated_type(self, meta: Meta, children: list[Token]) -> tuple[str, None]:
        return children[0].value, None

    def negated_filtered(self, meta: Meta, children: list[Any]) -> tuple[str, pattern.Pred]:
        name, _filter, filter_ = children
        return name.value, self._own_predicate(name, filter_)

    def negated_qualified(self, meta: Meta, children: list[Any]) -> tuple[str, pattern.Pred]:
        stream, _gt, name, *filtered = children
        qualifier: pattern.Pred = pattern.InStream((stream.value,), span_of(meta))
        if filtered:
            own = self._own_predicate(name, filtered[1])
            qualifier = pattern.PAnd(qualifier, own, span_of(meta))
        return name.value, qualifier

    negated_qualified_filtered = negated_qualified

    def _own_predicate(self, name: Token, filter_: pattern.FilterExpr) -> pattern.Pred:
        """A filter of the excluded event's own type as one predicate on that event
        (AND and OR of atoms on one event are AND and OR of their predicates)."""
        if isinstance(filter_, pattern.FilterAtom):
            if filter_.var != name.value:
                raise CEQLError(
                    f"NOT({name.value} FILTER ...) filters its own event only",
                    line=filter_.span.line if filter_.span else name.line or 1,
                    column=filter_.span.column if filter_.span else name.column or 1,
                    source=self._source,
                    expected=f"{name.value}[...]",
                )
            return filter_.pred
        if isinstance(filter_, pattern.Correlation):
            span = filter_.span
            raise CEQLError(
                f"NOT({name.value} FILTER ...) cannot compare events with each other",
                line=span.line if span else name.line or 1,
                column=span.column if span else name.column or 1,
                source=self._source,
                expected=f"{name.value}[...]",
            )
        left = self._own_predicate(name, filter_.left)
        right = self._own_predicate(name, filter_.right)
        if isinstance(filter_, pattern.FilterAnd):
            return pattern.PAnd(left, right, filter_.span)
        return pattern.POr(left, right, filter_.span)

    def qualified(self, meta: Meta, children: list[Any]) -> pattern.Filter:
        """``S>E``: the event type E filtered on its own event by its stream."""
        stream, _gt, name = children
        span = span_of(meta)
        qualifier = pattern.InStream((stream.value,), span)
        atom = pattern.FilterAtom(name.value, qualifier, span)
        return pattern.Filter(pattern.EventType(name.value, token_span(name)), atom, span)

    def cseq(self, meta: Meta, children: list[Any]) -> pattern.Contiguous:
        return pattern.Contiguous(children[0], children[1], span_of(meta))

    def cplus(self, meta: Meta, children: list[Any]) -> pattern.ContiguousPlus:
        return pattern.ContiguousPlus(children[0], span_of(meta))

    def or_(self, meta: Meta, children: list[Any]) -> pattern.Or:
        return pattern.Or(children[0], children[2], span_of(meta))

    def and_(self, meta: Meta, children: list[Any]) -> pattern.And:
        return pattern.And(children[0], children[2], span_of(meta))

    def filtered(self, meta: Meta, children: list[Any]) -> pattern.Filter:
        return pattern.Filter(children[0], children[2], span_of(meta))

    # ---- filters

    def filter_or(self, meta: Meta, children: list[Any]) -> pattern.FilterOr:
        return pattern.FilterOr(children[0], children[2], span_of(meta))

    def filter_and(self, meta: Meta, children: list[Any]) -> pattern.FilterAnd:
        return pattern.FilterAnd(children[0], children[2], span_of(meta))

    def filter_atom(self, meta: Meta, children: list[Any]) -> pattern.FilterExpr:
        result: pattern.FilterExpr = children[1]  # FILTER_LPAR filter ")"
        return result

    def atom(self, meta: Meta, children: list[Any]) -> pattern.FilterAtom:
        var, pred = children
        return pattern.FilterAtom(var.value, pred, token_span(var))

    # ---- predicates


# ---------------------------------------------------------------- API

_SURROGATE = re.compile("[\ud800-\udfff]")

# Nesting of the parse tree (parentheses, chained operators, stacked FILTERs) beyond
# which a query is refused: every later stage walks the tree recursively, and a query
# text, which anyone with access to the registry can write, must not be able to
# exhaust the interpreter's stack. Real queries stay far below.
MAX_DEPTH = 200


def _check_depth(tree: Tree, text: str) -> None:
    """``CEQLError`` at the first node nested deeper than ``MAX_DEPTH``."""
    stack: list[tuple[Tree, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            meta = node.meta
            line = 1 if meta.empty else meta.line
            column = 1 if meta.empty else meta.column
            raise CEQLError(
                f"query nested too deeply (more than {MAX_DEPTH} levels of parentheses, "
                "chained operators or FILTERs)",
                line=line,
                column=column,
                source=text,
                expected="a flatter query",
            )
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tree))


def parse(text: str) -> pattern.Pattern:
    """Parse a CEQL query; raise ``CEQLError`` (with position and expectation) if malformed."""
    surrogate = _SURROGATE.search(text)
    if surrogate is not None:
        # Only a Python caller can pass one (files and JSON decode to valid Unicode), but
        # the query text is hashed and printed as UTF-8 later on.
        before = text[: surrogate.start()]
        raise CEQLError(
            "not valid Unicode: a lone surrogate",
            line=before.count("\n") + 1,
            column=surrogate.start() - (before.rfind("\n") + 1) + 1,
            source=text,
            expected="text that is valid Unicode",
        )
    try:
        tree = _PARSER.parse(text)
    except Malformed as exc:
        tok = exc.token
        raise CEQLError(
            exc.message,
            line=tok.line or 1,
            column=tok.column or 1,
            length=len(tok.value),
            source=text,
            expected=exc.expected,
        ) from None
    except UnexpectedToken as exc:
        raise unexpected_token(_PARSER, exc, text) from None
    except UnexpectedCharacters as exc:
        raise unexpected_character(_PARSER, exc, text) from None
    _check_depth(tree, text)
    try:
        query: pattern.Pattern = _ToAst(text).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, CEQLError):
            raise exc.orig_exc from None
        raise
    return query


def parse_and_check(text: str) -> pattern.Pattern:
    """``parse`` then ``analysis.check``: a query that is also semantically sound."""
    query = parse(text)
    check(query, text)
    return query
