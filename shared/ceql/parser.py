"""CEQL text to ``pattern.Pattern``.

Three steps: lark's basic lexer splits the text into identifiers, literals and
punctuation; ``lexer`` turns identifiers into keywords and marks the tokens
of FILTER clauses (grammar.lark says why); the LALR parser builds a tree that
``_ToAst`` turns into ``cerfleet.pattern`` nodes, each with its source span.
Every syntax error becomes a ``CEQLError`` naming what was expected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedToken, VisitError
from lark.tree import Meta

from cerfleet import pattern
from cerfleet.ceql.analysis import check
from cerfleet.ceql.lexer import CEQLLexer, Malformed
from cerfleet.ceql.syntax_errors import (
    unexpected_character,
    unexpected_token,
)
from cerfleet.errors import CEQLError

__all__ = ["parse", "parse_and_check"]

_PARSER = Lark.open_from_package(
    __name__.rpartition(".")[0],
    "grammar.lark",
    parser="lalr",
    lexer=CEQLLexer,
    propagate_positions=True,
    maybe_placeholders=True,
)

# --------------------------------------------------------- tree to AST


def _span(meta: Meta) -> pattern.Span:
    return pattern.Span(meta.line, meta.column, meta.end_line, meta.end_column)


def _tspan(tok: Token) -> pattern.Span:
    return pattern.Span(tok.line or 1, tok.column or 1, tok.end_line or 1, tok.end_column or 1)


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}


def _unquote(lexeme: str) -> str:
    # Unknown escapes keep their backslash, so regexes like '\d+' read naturally.
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], m[0]), lexeme[1:-1], flags=re.S)


_COMPARISONS = {"==": "=", "<>": "!="}


@dataclass(frozen=True)
class _Names:
    """Identifiers of a clause (SELECT list, FROM list, PARTITION BY) with their spans."""

    names: tuple[str, ...]
    spans: tuple[pattern.Span | None, ...]

    @classmethod
    def of(cls, tokens: Iterable[Token]) -> _Names:
        toks = [t for t in tokens if isinstance(t, Token) and t.type == "NAME"]
        return cls(tuple(t.value for t in toks), tuple(_tspan(t) for t in toks))


@dataclass(frozen=True)
class _Select:
    strategy: pattern.Strategy
    variables: _Names | None  # None: SELECT *


@v_args(meta=True)
class _ToAst(Transformer[Token, Any]):
    """Builds AST nodes bottom-up; children are the already transformed nodes."""

    def __init__(self, source: str) -> None:
        super().__init__()
        self._source = source

    # ---- query and clauses

    def start(self, meta: Meta, children: list[Any]) -> pattern.Pattern:
        *decls, select, from_, _where, where, partition, within, consume, limit = children
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
            select_spans=select.variables.spans if select.variables else (),
            stream_spans=from_.spans,
            partition_spans=partition.spans if partition else (),
            limit_span=_tspan(limit) if limit else None,
        )

    def declaration(self, meta: Meta, children: list[Any]) -> pattern.StreamDecl:
        _declare, _stream, name, *events = children
        return pattern.StreamDecl(name.value, tuple(events), _tspan(name))

    def event_decl(self, meta: Meta, children: list[Any]) -> pattern.EventDecl:
        _event, name, *attrs = children
        return pattern.EventDecl(name.value, tuple(a for a in attrs if a is not None), _tspan(name))

    def attr_decl(self, meta: Meta, children: list[Token]) -> tuple[str, pattern.AttrType]:
        name, type_ = children
        try:
            return name.value, pattern.AttrType(type_.value.lower())
        except ValueError:
            raise self._error(
                f"unknown attribute type '{type_.value}'",
                type_,
                "one of: " + ", ".join(t.value for t in pattern.AttrType),
            ) from None

    def select(self, meta: Meta, children: list[Any]) -> _Select:
        _select, strategy, *rest = children
        star = any(isinstance(t, Token) and t.type == "STAR" for t in rest)
        return _Select(strategy or pattern.Strategy.ALL, None if star else _Names.of(rest))

    def strategy(self, meta: Meta, children: list[Token]) -> pattern.Strategy:
        return pattern.Strategy[children[0].type]

    def from_clause(self, meta: Meta, children: list[Token]) -> _Names:
        return _Names.of(children)

    def partition(self, meta: Meta, children: list[Any]) -> _Names:
        groups: list[_Names] = children[2:]
        return _Names(
            tuple(n for g in groups for n in g.names), tuple(s for g in groups for s in g.spans)
        )

    def attr_group(self, meta: Meta, children: list[Token]) -> _Names:
        return _Names.of(children)

    def within_events(self, meta: Meta, children: list[Any]) -> pattern.Window:
        return pattern.Window(pattern.WindowKind.EVENTS, children[1].value, span=_span(meta))

    def within_time(self, meta: Meta, children: list[Any]) -> pattern.Window:
        unit = children[2].value.upper()
        unit = unit if unit.endswith("S") else unit + "S"
        return pattern.Window(
            pattern.WindowKind.TIME, children[1].value, unit=unit, span=_span(meta)
        )

    def within_attr(self, meta: Meta, children: list[Any]) -> pattern.Window:
        amount, attr = children[1].value, children[2].value
        return pattern.Window(pattern.WindowKind.ATTRIBUTE, amount, attr=attr, span=_span(meta))

    def consume(self, meta: Meta, children: list[Token]) -> pattern.Consume:
        return pattern.Consume[children[2].type]

    def limit(self, meta: Meta, children: list[Token]) -> Token:
        return children[1]  # ``start`` needs its span as well as its value

    # ---- CEL formulas

    def event_type(self, meta: Meta, children: list[Token]) -> pattern.EventType:
        return pattern.EventType(children[0].value, _tspan(children[0]))

    def as_(self, meta: Meta, children: list[Any]) -> pattern.As:
        formula, _as, var = children
        return pattern.As(formula, var.value, _tspan(var))

    def plus(self, meta: Meta, children: list[Any]) -> pattern.Plus:
        return pattern.Plus(children[0], _span(meta))

    def seq(self, meta: Meta, children: list[Any]) -> pattern.Seq:
        return pattern.Seq(children[0], children[1], _span(meta))

    def or_(self, meta: Meta, children: list[Any]) -> pattern.Or:
        return pattern.Or(children[0], children[2], _span(meta))

    def filtered(self, meta: Meta, children: list[Any]) -> pattern.Filter:
        return pattern.Filter(children[0], children[2], _span(meta))

    # ---- filters

    def filter_or(self, meta: Meta, children: list[Any]) -> pattern.FilterOr:
        return pattern.FilterOr(children[0], children[2], _span(meta))

    def filter_and(self, meta: Meta, children: list[Any]) -> pattern.FilterAnd:
        return pattern.FilterAnd(children[0], children[2], _span(meta))

    def filter_atom(self, meta: Meta, children: list[Any]) -> pattern.FilterExpr:
        result: pattern.FilterExpr = children[1]  # FILTER_LPAR filter ")"
        return result

    def atom(self, meta: Meta, children: list[Any]) -> pattern.FilterAtom:
        var, pred = children
        return pattern.FilterAtom(var.value, pred, _tspan(var))

    # ---- predicates

    def p_or(self, meta: Meta, children: list[Any]) -> pattern.POr:
        return pattern.POr(children[0], children[2], _span(meta))

    def p_and(self, meta: Meta, children: list[Any]) -> pattern.PAnd:
        return pattern.PAnd(children[0], children[2], _span(meta))

    def p_not(self, meta: Meta, children: list[Any]) -> pattern.PNot:
        return pattern.PNot(children[1], _span(meta))

    def compare(self, meta: Meta, children: list[Any]) -> pattern.Compare:
        left, op, right = children
        return pattern.Compare(_COMPARISONS.get(op.value, op.value), left, right, _span(meta))

    def in_list(self, meta: Meta, children: list[Any]) -> pattern.InList:
        expr, negated, _in, *values = children
        return pattern.InList(expr, tuple(values), negated is not None, _span(meta))

    def in_range(self, meta: Meta, children: list[Any]) -> pattern.InRange:
        expr, negated, _in, _range, low, high = children
        return pattern.InRange(expr, low, high, negated is not None, _span(meta))

    def like(self, meta: Meta, children: list[Any]) -> pattern.Like:
        expr, negated, _like, regex = children
        return pattern.Like(expr, _unquote(regex.value), negated is not None, _span(meta))

    def bool_pred(self, meta: Meta, children: list[pattern.Const]) -> pattern.BoolLit:
        return pattern.BoolLit(bool(children[0].value), _span(meta))

    # ---- value expressions and literals

    def arith(self, meta: Meta, children: list[Any]) -> pattern.Arith:
        left, op, right = children
        return pattern.Arith(op.value, left, right, _span(meta))

    def neg(self, meta: Meta, children: list[Any]) -> pattern.Expr:
        operand = children[1]
        if isinstance(operand, pattern.Const) and not isinstance(operand.value, str | bool):
            return pattern.Const(-operand.value, _span(meta))  # `-5` is a literal
        return pattern.Neg(operand, _span(meta))

    def attr(self, meta: Meta, children: list[Token]) -> pattern.Attr:
        return pattern.Attr(children[0].value, _tspan(children[0]))

    def string(self, meta: Meta, children: list[Token]) -> pattern.Const:
        return pattern.Const(_unquote(children[0].value), _tspan(children[0]))

    def number(self, meta: Meta, children: list[Token]) -> pattern.Const:
        tok = children[0]
        value = int(tok.value) if tok.type == "INT" else float(tok.value)
        return pattern.Const(value, _tspan(tok))

    def boolean(self, meta: Meta, children: list[Token]) -> pattern.Const:
        return pattern.Const(children[0].type == "TRUE", _tspan(children[0]))

    def number_lit(self, meta: Meta, children: list[Any]) -> pattern.Const:
        minus, number = children
        return pattern.Const(-number.value, _span(meta)) if minus is not None else number

    def string_lit(self, meta: Meta, children: list[Any]) -> pattern.Const:
        return self.string(meta, children)

    def bool_lit(self, meta: Meta, children: list[pattern.Const]) -> pattern.Const:
        return children[0]

    def _error(self, message: str, tok: Token, expected: str) -> CEQLError:
        return CEQLError(
            message,
            line=tok.line or 1,
            column=tok.column or 1,
            length=len(tok.value),
            source=self._source,
            expected=expected,
        )


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
