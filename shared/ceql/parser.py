"""CEQL text to ``ast.Query``.

Three steps: lark's basic lexer splits the text into identifiers, literals and
punctuation; ``_retype`` turns identifiers into keywords and marks the tokens
of FILTER clauses (grammar.lark says why); the LALR parser builds a tree that
``_ToAst`` turns into ``shared.ceql.ast`` nodes, each with its source span.
Every syntax error becomes a ``CEQLError`` naming what was expected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from lark import Lark, Token, Transformer, v_args
from lark.common import LexerConf
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError
from lark.lexer import BasicLexer, Lexer, LexerState
from lark.tree import Meta

from shared.ceql import ast
from shared.ceql.analysis import check
from shared.errors import CEQLError

__all__ = ["parse", "parse_and_check"]

# ------------------------------------------------------------------ keywords

_PLAIN_KEYWORDS = (
    *("SELECT", "FROM", "WHERE", "AS", "OR", "AND", "NOT", "FILTER"),
    *("PARTITION", "BY", "WITHIN", "CONSUME", "LIMIT", "DECLARE", "STREAM"),
    *("ALL", "NEXT", "LAST", "MAX", "STRICT", "ANY", "NONE", "EVENT", "EVENTS"),
    *("IN", "RANGE", "LIKE", "TRUE", "FALSE"),
)

# Upper-cased spelling -> terminal. Singular units are accepted and normalised later.
_KEYWORDS: dict[str, str] = {kw: kw for kw in _PLAIN_KEYWORDS} | {
    unit: "TIME_UNIT" for plural in ast.TIME_UNITS_MS for unit in (plural, plural.removesuffix("S"))
}

# The only keywords that can occur inside [...] (RANGE only right after IN);
# any other keyword spelling there is an attribute name.
_PREDICATE_KEYWORDS = frozenset({"AND", "OR", "NOT", "IN", "LIKE", "TRUE", "FALSE"})

# --------------------------------------------------------- re-typing tokens


class _Malformed(Exception):
    """A lexical problem found while re-typing, turned into a CEQLError by ``parse``."""

    def __init__(self, message: str, token: Token, expected: str) -> None:
        super().__init__(message)
        self.message = message
        self.token = token
        self.expected = expected


def _retyped(tok: Token, kind: str) -> Token:
    return Token.new_borrow_pos(kind, tok.value, tok)


def _is(tokens: list[Token], i: int, kind: str) -> bool:
    return i < len(tokens) and tokens[i].type == kind


def _retype(tokens: list[Token]) -> list[Token]:
    _reject_unclosed_comment(tokens)
    return _mark_filters(_keywords(tokens))


def _reject_unclosed_comment(tokens: list[Token]) -> None:
    # A closed /* ... */ is skipped by the lexer; an unclosed one lexes as '/' '*'.
    for tok, after in pairwise(tokens):
        if (tok.type, after.type) == ("SLASH", "STAR") and after.start_pos == tok.end_pos:
            raise _Malformed("unterminated comment", tok, "'*/' to close the comment")


def _keywords(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    depth = 0  # of [...]
    for i, tok in enumerate(tokens):
        if tok.type == "LSQB":
            depth += 1
        elif tok.type == "RSQB":
            depth = max(0, depth - 1)
        elif tok.type == "NAME":
            kind = _KEYWORDS.get(tok.value.upper())
            if kind is not None and not _attribute_position(tokens, i, kind, depth):
                tok = _retyped(tok, kind)
        out.append(tok)
    return out


def _attribute_position(tokens: list[Token], i: int, kind: str, depth: int) -> bool:
    """Whether the keyword-spelled ``tokens[i]`` stands where only an attribute name can."""
    if depth > 0:
        if kind == "RANGE":
            return not (i > 0 and tokens[i - 1].value.upper() == "IN")
        return kind not in _PREDICATE_KEYWORDS
    return _is(tokens, i + 1, "COLON")  # `name: type` in a schema


def _mark_filters(tokens: list[Token]) -> list[Token]:
    out = list(tokens)
    i = 0
    while i < len(out):
        i = _mark_filter(out, i + 1) if out[i].type == "FILTER" else i + 1
    return out


def _mark_filter(toks: list[Token], i: int) -> int:
    """Re-type, in place, the filter that starts at ``toks[i]``; return the index after it."""
    groups = 0  # open FILTER_LPARs
    want_atom = True
    while i < len(toks):
        tok = toks[i]
        if want_atom:
            if tok.type == "LPAR":
                toks[i] = _retyped(tok, "FILTER_LPAR")
                groups += 1
                i += 1
            elif tok.type == "NAME" and _is(toks, i + 1, "LSQB"):
                toks[i] = _retyped(tok, "FILTER_NAME")
                i = _past_brackets(toks, i + 1)
                want_atom = False
            else:
                return i  # not a filter atom: let the parser report it
        elif tok.type == "RPAR" and groups > 0:
            groups -= 1
            i += 1
        elif tok.type == "AND" or (tok.type == "OR" and (groups > 0 or _starts_atom(toks, i + 1))):
            # AND has no formula-level meaning, so it always continues the filter.
            toks[i] = _retyped(tok, "FILTER_" + tok.type)
            want_atom = True
            i += 1
        else:
            return i  # the formula continues: `; C`, `OR D`, `)`, a clause ...
    return i


def _past_brackets(toks: list[Token], i: int) -> int:
    depth = 0
    for j in range(i, len(toks)):
        depth += {"LSQB": 1, "RSQB": -1}.get(toks[j].type, 0)
        if depth == 0:
            return j + 1
    return len(toks)


def _starts_atom(toks: list[Token], i: int) -> bool:
    """``x[`` or a run of ``(`` before ``x[``: the start of a filter operand."""
    while _is(toks, i, "LPAR"):
        i += 1
    return _is(toks, i, "NAME") and _is(toks, i + 1, "LSQB")


class _CEQLLexer(Lexer):
    """lark's basic lexer followed by ``_retype``."""

    # Ask lark for the (lexer_state, parser_state) call, as its own lexers get.
    __future_interface__ = True

    def __init__(self, conf: LexerConf) -> None:
        self._basic = BasicLexer(conf)

    def lex(self, lexer_state: LexerState, parser_state: Any) -> Iterator[Token]:
        raw: list[Token] = []
        try:
            raw.extend(self._basic.lex(lexer_state, parser_state))
        except UnexpectedCharacters:
            # Feed the good prefix first: a syntax error in it is reported first.
            yield from _retype(raw)
            raise
        yield from _retype(raw)


_PARSER = Lark.open_from_package(
    __name__.rpartition(".")[0],
    "grammar.lark",
    parser="lalr",
    lexer=_CEQLLexer,
    propagate_positions=True,
    maybe_placeholders=True,
)

# ------------------------------------------------------------- error texts

# Readable names, in the order they are listed in "expected one of: ...".
_READABLE: dict[str, str] = {
    "SEMICOLON": "';'",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "STAR": "'*'",
    "SLASH": "'/'",
    "PERCENT": "'%'",
    "CMP_OP": "a comparison operator",
    "COMMA": "','",
    "COLON": "':'",
    "LPAR": "'('",
    "FILTER_LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "FILTER_AND": "'AND'",
    "FILTER_OR": "'OR'",
    **{kw: f"'{kw}'" for kw in _PLAIN_KEYWORDS},
    "TIME_UNIT": "a time unit (MILLISECONDS, SECONDS, MINUTES, HOURS)",
    "NAME": "an identifier",
    "FILTER_NAME": "a filter atom such as x[...]",
    "INT": "a whole number",
    "DECIMAL": "a number",
    "STRING": "a quoted string",
    "$END": "end of query",
}
_ORDER = {name: i for i, name in enumerate(_READABLE)}


def _expected_text(terminals: Iterable[str]) -> str | None:
    names = sorted(set(terminals), key=lambda t: (_ORDER.get(t, len(_ORDER)), t))
    if {"INT", "DECIMAL"} <= set(names):
        names.remove("INT")  # "a number" covers it
    texts = list(dict.fromkeys(_READABLE.get(t, t) for t in names))
    if not texts:
        return None
    return texts[0] if len(texts) == 1 else "one of: " + ", ".join(texts)


def _describe(tok: Token) -> str:
    if tok.type in ("NAME", "FILTER_NAME"):
        return f"identifier '{tok.value}'"
    if tok.type in ("INT", "DECIMAL"):
        return f"number {tok.value}"
    if tok.type == "STRING":
        return f"string {tok.value}"
    return f"'{tok.value}'"


def _accepted_before(source: str, pos: int | None) -> set[str]:
    """The terminals the parser accepts just before offset ``pos`` (None: the end).

    Replays the tokens in front of the error: by the time lark reports an error
    it has already made the reductions the bad token's lookahead asked for
    (LALR state merging allows that), so its own answer can miss valid tokens.
    """
    replay = _PARSER.parse_interactive(source)
    try:
        for tok in replay.iter_parse():  # yields each token before feeding it
            if pos is not None and tok.start_pos is not None and tok.start_pos >= pos:
                break
    except UnexpectedInput:
        pass  # the bad character: the tokens before it are in
    accepted: set[str] = replay.accepts()
    return accepted


def _unexpected_token(exc: UnexpectedToken, source: str) -> CEQLError:
    tok = exc.token
    at_end = tok.type == "$END"
    expected = _expected_text(_accepted_before(source, None if at_end else tok.start_pos))
    if at_end:
        # lark dates $END at the last token; point just past that token instead.
        line = tok.end_line or 1
        column = tok.end_column or 1
        return CEQLError(
            "unexpected end of query", line=line, column=column, source=source, expected=expected
        )
    return CEQLError(
        f"unexpected {_describe(tok)}",
        line=tok.line or 1,
        column=tok.column or 1,
        length=len(tok.value),
        source=source,
        expected=expected,
    )


def _unexpected_character(exc: UnexpectedCharacters, source: str) -> CEQLError:
    expected: str | None
    if exc.char in "'\"":
        message, expected = "unterminated string", f"a closing {exc.char}"
    else:
        message = f"unexpected character {exc.char!r}"
        expected = _expected_text(_accepted_before(source, exc.pos_in_stream))
    return CEQLError(message, line=exc.line, column=exc.column, source=source, expected=expected)


# --------------------------------------------------------- tree to AST


def _span(meta: Meta) -> ast.Span:
    return ast.Span(meta.line, meta.column, meta.end_line, meta.end_column)


def _tspan(tok: Token) -> ast.Span:
    return ast.Span(tok.line or 1, tok.column or 1, tok.end_line or 1, tok.end_column or 1)


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}


def _unquote(lexeme: str) -> str:
    # Unknown escapes keep their backslash, so regexes like '\d+' read naturally.
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], m[0]), lexeme[1:-1], flags=re.S)


_COMPARISONS = {"==": "=", "<>": "!="}


@dataclass(frozen=True)
class _Names:
    """Identifiers of a clause (SELECT list, FROM list, PARTITION BY) with their spans."""

    names: tuple[str, ...]
    spans: tuple[ast.Span | None, ...]

    @classmethod
    def of(cls, tokens: Iterable[Token]) -> _Names:
        toks = [t for t in tokens if isinstance(t, Token) and t.type == "NAME"]
        return cls(tuple(t.value for t in toks), tuple(_tspan(t) for t in toks))


@dataclass(frozen=True)
class _Select:
    strategy: ast.Strategy
    variables: _Names | None  # None: SELECT *


@v_args(meta=True)
class _ToAst(Transformer[Token, Any]):
    """Builds AST nodes bottom-up; children are the already transformed nodes."""

    def __init__(self, source: str) -> None:
        super().__init__()
        self._source = source

    # ---- query and clauses

    def start(self, meta: Meta, children: list[Any]) -> ast.Query:
        *decls, select, from_, _where, where, partition, within, consume, limit = children
        return ast.Query(
            where=where,
            select=select.variables.names if select.variables else None,
            strategy=select.strategy,
            streams=from_.names,
            partition_by=partition.names if partition else (),
            within=within,
            consume=consume or ast.Consume.NONE,
            limit=int(limit.value) if limit else None,
            declarations=tuple(decls),
            select_spans=select.variables.spans if select.variables else (),
            stream_spans=from_.spans,
            partition_spans=partition.spans if partition else (),
            limit_span=_tspan(limit) if limit else None,
        )

    def declaration(self, meta: Meta, children: list[Any]) -> ast.StreamDecl:
        _declare, _stream, name, *events = children
        return ast.StreamDecl(name.value, tuple(events), _tspan(name))

    def event_decl(self, meta: Meta, children: list[Any]) -> ast.EventDecl:
        _event, name, *attrs = children
        return ast.EventDecl(name.value, tuple(a for a in attrs if a is not None), _tspan(name))

    def attr_decl(self, meta: Meta, children: list[Token]) -> tuple[str, ast.AttrType]:
        name, type_ = children
        try:
            return name.value, ast.AttrType(type_.value.lower())
        except ValueError:
            raise self._error(
                f"unknown attribute type '{type_.value}'",
                type_,
                "one of: " + ", ".join(t.value for t in ast.AttrType),
            ) from None

    def select(self, meta: Meta, children: list[Any]) -> _Select:
        _select, strategy, *rest = children
        star = any(isinstance(t, Token) and t.type == "STAR" for t in rest)
        return _Select(strategy or ast.Strategy.ALL, None if star else _Names.of(rest))

    def strategy(self, meta: Meta, children: list[Token]) -> ast.Strategy:
        return ast.Strategy[children[0].type]

    def from_clause(self, meta: Meta, children: list[Token]) -> _Names:
        return _Names.of(children)

    def partition(self, meta: Meta, children: list[Any]) -> _Names:
        groups: list[_Names] = children[2:]
        return _Names(
            tuple(n for g in groups for n in g.names), tuple(s for g in groups for s in g.spans)
        )

    def attr_group(self, meta: Meta, children: list[Token]) -> _Names:
        return _Names.of(children)

    def within_events(self, meta: Meta, children: list[Any]) -> ast.Window:
        return ast.Window(ast.WindowKind.EVENTS, children[1].value, span=_span(meta))

    def within_time(self, meta: Meta, children: list[Any]) -> ast.Window:
        unit = children[2].value.upper()
        unit = unit if unit.endswith("S") else unit + "S"
        return ast.Window(ast.WindowKind.TIME, children[1].value, unit=unit, span=_span(meta))

    def within_attr(self, meta: Meta, children: list[Any]) -> ast.Window:
        amount, attr = children[1].value, children[2].value
        return ast.Window(ast.WindowKind.ATTRIBUTE, amount, attr=attr, span=_span(meta))

    def consume(self, meta: Meta, children: list[Token]) -> ast.Consume:
        return ast.Consume[children[2].type]

    def limit(self, meta: Meta, children: list[Token]) -> Token:
        return children[1]  # ``start`` needs its span as well as its value

    # ---- CEL formulas

    def event_type(self, meta: Meta, children: list[Token]) -> ast.EventType:
        return ast.EventType(children[0].value, _tspan(children[0]))

    def as_(self, meta: Meta, children: list[Any]) -> ast.As:
        formula, _as, var = children
        return ast.As(formula, var.value, _tspan(var))

    def plus(self, meta: Meta, children: list[Any]) -> ast.Plus:
        return ast.Plus(children[0], _span(meta))

    def seq(self, meta: Meta, children: list[Any]) -> ast.Seq:
        return ast.Seq(children[0], children[1], _span(meta))

    def or_(self, meta: Meta, children: list[Any]) -> ast.Or:
        return ast.Or(children[0], children[2], _span(meta))

    def filtered(self, meta: Meta, children: list[Any]) -> ast.Filter:
        return ast.Filter(children[0], children[2], _span(meta))

    # ---- filters

    def filter_or(self, meta: Meta, children: list[Any]) -> ast.FilterOr:
        return ast.FilterOr(children[0], children[2], _span(meta))

    def filter_and(self, meta: Meta, children: list[Any]) -> ast.FilterAnd:
        return ast.FilterAnd(children[0], children[2], _span(meta))

    def filter_atom(self, meta: Meta, children: list[Any]) -> ast.FilterExpr:
        result: ast.FilterExpr = children[1]  # FILTER_LPAR filter ")"
        return result

    def atom(self, meta: Meta, children: list[Any]) -> ast.FilterAtom:
        var, pred = children
        return ast.FilterAtom(var.value, pred, _tspan(var))

    # ---- predicates

    def p_or(self, meta: Meta, children: list[Any]) -> ast.POr:
        return ast.POr(children[0], children[2], _span(meta))

    def p_and(self, meta: Meta, children: list[Any]) -> ast.PAnd:
        return ast.PAnd(children[0], children[2], _span(meta))

    def p_not(self, meta: Meta, children: list[Any]) -> ast.PNot:
        return ast.PNot(children[1], _span(meta))

    def compare(self, meta: Meta, children: list[Any]) -> ast.Compare:
        left, op, right = children
        return ast.Compare(_COMPARISONS.get(op.value, op.value), left, right, _span(meta))

    def in_list(self, meta: Meta, children: list[Any]) -> ast.InList:
        expr, negated, _in, *values = children
        return ast.InList(expr, tuple(values), negated is not None, _span(meta))

    def in_range(self, meta: Meta, children: list[Any]) -> ast.InRange:
        expr, negated, _in, _range, low, high = children
        return ast.InRange(expr, low, high, negated is not None, _span(meta))

    def like(self, meta: Meta, children: list[Any]) -> ast.Like:
        expr, negated, _like, pattern = children
        return ast.Like(expr, _unquote(pattern.value), negated is not None, _span(meta))

    def bool_pred(self, meta: Meta, children: list[ast.Const]) -> ast.BoolLit:
        return ast.BoolLit(bool(children[0].value), _span(meta))

    # ---- value expressions and literals

    def arith(self, meta: Meta, children: list[Any]) -> ast.Arith:
        left, op, right = children
        return ast.Arith(op.value, left, right, _span(meta))

    def neg(self, meta: Meta, children: list[Any]) -> ast.Expr:
        operand = children[1]
        if isinstance(operand, ast.Const) and not isinstance(operand.value, str | bool):
            return ast.Const(-operand.value, _span(meta))  # `-5` is a literal
        return ast.Neg(operand, _span(meta))

    def attr(self, meta: Meta, children: list[Token]) -> ast.Attr:
        return ast.Attr(children[0].value, _tspan(children[0]))

    def string(self, meta: Meta, children: list[Token]) -> ast.Const:
        return ast.Const(_unquote(children[0].value), _tspan(children[0]))

    def number(self, meta: Meta, children: list[Token]) -> ast.Const:
        tok = children[0]
        value = int(tok.value) if tok.type == "INT" else float(tok.value)
        return ast.Const(value, _tspan(tok))

    def boolean(self, meta: Meta, children: list[Token]) -> ast.Const:
        return ast.Const(children[0].type == "TRUE", _tspan(children[0]))

    def number_lit(self, meta: Meta, children: list[Any]) -> ast.Const:
        minus, number = children
        return ast.Const(-number.value, _span(meta)) if minus is not None else number

    def string_lit(self, meta: Meta, children: list[Any]) -> ast.Const:
        return self.string(meta, children)

    def bool_lit(self, meta: Meta, children: list[ast.Const]) -> ast.Const:
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


def parse(text: str) -> ast.Query:
    """Parse a CEQL query; raise ``CEQLError`` (with position and expectation) if malformed."""
    try:
        tree = _PARSER.parse(text)
    except _Malformed as exc:
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
        raise _unexpected_token(exc, text) from None
    except UnexpectedCharacters as exc:
        raise _unexpected_character(exc, text) from None
    try:
        query: ast.Query = _ToAst(text).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, CEQLError):
            raise exc.orig_exc from None
        raise
    return query


def parse_and_check(text: str) -> ast.Query:
    """``parse`` then ``analysis.check``: a query that is also semantically sound."""
    query = parse(text)
    check(query, text)
    return query
