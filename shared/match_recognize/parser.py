"""MATCH_RECOGNIZE text to its syntax tree (``syntax.Query``).

lark's LALR parser (``grammar.lark``) builds a tree that ``_ToSyntax`` turns into
``syntax`` nodes, each with its source span; every syntax error becomes a
``MatchRecognizeError`` with line, column and what was expected.
"""

from __future__ import annotations

from typing import Any

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import VisitError
from lark.tree import Meta

from cerfleet.errors import MatchRecognizeError
from cerfleet.grammar_errors import parse_tree
from cerfleet.match_recognize import syntax as s
from cerfleet.pattern import Span

__all__ = ["parse"]

_PARSER = Lark.open_from_package(
    __name__.rpartition(".")[0],
    "grammar.lark",
    parser="lalr",
    propagate_positions=True,
    maybe_placeholders=True,
    cache=True,
)

# Terminal names lark gives punctuation, as the user typed them.
_PUNCT = {
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "STAR": "'*'",
    "DOT": "'.'",
    "VBAR": "'|'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "SEMICOLON": "';'",
    "MINUS": "'-'",
    "$END": "end of query",
    "NAME": "a name",
    "INT": "an integer",
    "NUMBER": "a number",
    "STRING": "a string",
    "QUANT": "a quantifier",
    "COMPOP": "a comparison",
    "ADDOP": "'+' or '-'",
    "MULOP": "'*', '/' or '%'",
}


class _Fail(Exception):
    def __init__(self, message: str, span: Span | None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span


def _span(meta: Meta) -> Span | None:
    if getattr(meta, "empty", True):
        return None
    return Span(meta.line, meta.column, meta.end_line, meta.end_column)


def _tspan(tok: Token) -> Span:
    return Span(tok.line or 1, tok.column or 1, tok.end_line or 1, tok.end_column or 1)


def _name(tok: Token) -> str:
    text = str(tok)
    return text[1:-1] if text.startswith("`") else text


def _unquote(text: str) -> str:
    return text[1:-1].replace("''", "'").replace("\\'", "'")


_UNITS = {
    "MILLISECOND": "MILLISECONDS",
    "SECOND": "SECONDS",
    "MINUTE": "MINUTES",
    "HOUR": "HOURS",
    "MSEC": "MILLISECONDS",
    "SEC": "SECONDS",
    "MIN": "MINUTES",
}


@v_args(meta=True)
class _ToSyntax(Transformer[Token, s.Query]):
    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source

    def start(self, meta: Meta, c: list[Any]) -> s.Query:
        body: dict[str, Any] = c[1]
        return s.Query(source=self.source, stream=_name(c[0]), **body)

    def alias(self, meta: Meta, c: list[Any]) -> None:
        return None

    def mr(self, meta: Meta, c: list[Any]) -> dict[str, Any]:
        partition, order, measures, rows, skip, regex, within, defines = c
        out: dict[str, Any] = {"regex": regex, "defines": defines or ()}
        if partition is not None:
            out["partition"] = partition
        if order is not None:
            out["order"] = order
        if measures is not None:
            out["measures"] = measures
        if rows is not None:
            out["rows"], out["rows_span"] = rows
        if skip is not None:
            out["skip"], out["skip_span"] = skip
        if within is not None:
            out["within"], out["within_span"] = within
        return out

    def partition(self, meta: Meta, c: list[s.Col]) -> tuple[s.Col, ...]:
        return tuple(c)

    order = partition

    def measures(self, meta: Meta, c: list[s.Measure]) -> tuple[s.Measure, ...]:
        return tuple(c)

    def measure(self, meta: Meta, c: list[Any]) -> s.Measure:
        return s.Measure(_name(c[1]), c[0], _span(meta))

    def one_row(self, meta: Meta, c: list[Any]) -> tuple[str, Span | None]:
        return "ONE", _span(meta)

    def all_rows(self, meta: Meta, c: list[Any]) -> tuple[str, Span | None]:
        return "ALL", _span(meta)

    def all_matches(self, meta: Meta, c: list[Any]) -> tuple[str, Span | None]:
        return "MATCHES", _span(meta)

    def skip(self, meta: Meta, c: list[Any]) -> tuple[tuple[str, str | None], Span | None]:
        return c[0], _span(meta)

    def skip_past(self, meta: Meta, c: list[Token]) -> tuple[str, str | None]:
        if [t.upper() for t in c] != ["LAST", "ROW"]:
            raise _Fail("expected PAST LAST ROW", _tspan(c[0]))
        return "PAST LAST ROW", None

    def skip_to(self, meta: Meta, c: list[Token | None]) -> tuple[str, str | None]:
        first, second = c
        assert first is not None
        word = first.upper()
        if second is not None and second.upper() == "ROW" and word in ("NEXT", "CURRENT"):
            return f"TO {word} ROW", None
        if second is not None and word in ("FIRST", "LAST"):
            return f"TO {word}", _name(second)
        if second is None:
            return "TO LAST", _name(first)  # SQL:2016: TO v means TO LAST v
        raise _Fail("expected TO NEXT ROW, TO CURRENT ROW, TO FIRST v or TO LAST v", _tspan(first))

    def pattern(self, meta: Meta, c: list[s.Regex]) -> s.Regex:
        return c[0]

    def var(self, meta: Meta, c: list[Token]) -> s.Var:
        return s.Var(_name(c[0]), _tspan(c[0]))

    def cat(self, meta: Meta, c: list[s.Regex]) -> s.Cat:
        return s.Cat(c[0], c[1], _span(meta))

    def alt(self, meta: Meta, c: list[s.Regex]) -> s.Alt:
        return s.Alt(c[0], c[1], _span(meta))

    def quant(self, meta: Meta, c: list[Any]) -> s.Quant:
        body, tok = c
        low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[tok[0]]
        return s.Quant(body, low, high, len(tok) == 1, str(tok), _tspan(tok))

    def exactly(self, meta: Meta, c: list[Any]) -> s.Quant:
        n = int(c[1])
        return s.Quant(c[0], n, n, _greedy(c[2]), f"{{{n}}}" + (c[2] or ""), _span(meta))

    def bounded(self, meta: Meta, c: list[Any]) -> s.Quant:
        body, low, high, lazy = c
        lo = 0 if low is None else int(low)
        hi = None if high is None else int(high)
        text = f"{{{'' if low is None else lo},{'' if hi is None else hi}}}"
        if hi is not None and hi < lo:
            raise _Fail(f"quantifier {text}: the maximum is below the minimum", _span(meta))
        return s.Quant(body, lo, hi, _greedy(lazy), text + (lazy or ""), _span(meta))

    def within(self, meta: Meta, c: list[Any]) -> tuple[tuple[int, str], Span | None]:
        amount, unit = c
        word = unit.upper()
        word = _UNITS.get(word, word)
        if word not in _UNITS.values():
            raise _Fail(
                f"unknown time unit {str(unit)!r} (MILLISECOND, SECOND, MINUTE, HOUR)",
                _tspan(unit),
            )
        return (amount, word), _span(meta)

    def amount(self, meta: Meta, c: list[Token]) -> int:
        text = _unquote(c[0]) if c[0].type == "STRING" else str(c[0])
        if not text.strip().isdigit():
            raise _Fail(f"the interval {text!r} is not a whole number", _tspan(c[0]))
        return int(text)

    def define(self, meta: Meta, c: list[s.Define]) -> tuple[s.Define, ...]:
        return tuple(c)

    def definition(self, meta: Meta, c: list[Any]) -> s.Define:
        return s.Define(_name(c[0]), c[1], _span(meta))

    def or_op(self, meta: Meta, c: list[Any]) -> s.Bin:
        return s.Bin("OR", c[0], c[1], _span(meta))

    def and_op(self, meta: Meta, c: list[Any]) -> s.Bin:
        return s.Bin("AND", c[0], c[1], _span(meta))

    def not_op(self, meta: Meta, c: list[Any]) -> s.Unary:
        return s.Unary("NOT", c[0], _span(meta))

    def compare(self, meta: Meta, c: list[Any]) -> s.Bin:
        op = {"==": "=", "<>": "!="}.get(str(c[1]), str(c[1]))
        return s.Bin(op, c[0], c[2], _span(meta))

    def arith(self, meta: Meta, c: list[Any]) -> s.Bin:
        return s.Bin(str(c[1]), c[0], c[2], _span(meta))

    def neg(self, meta: Meta, c: list[Any]) -> s.Unary:
        return s.Unary("-", c[0], _span(meta))

    def number(self, meta: Meta, c: list[Token]) -> s.Lit:
        text = str(c[0])
        value: int | float = int(text) if text.isdigit() else float(text)
        return s.Lit(value, _tspan(c[0]))

    def string(self, meta: Meta, c: list[Token]) -> s.Lit:
        return s.Lit(_unquote(c[0]), _tspan(c[0]))

    def true(self, meta: Meta, c: list[Any]) -> s.Lit:
        return s.Lit(True, _span(meta))

    def false(self, meta: Meta, c: list[Any]) -> s.Lit:
        return s.Lit(False, _span(meta))

    def column(self, meta: Meta, c: list[Token | None]) -> s.Col:
        first, second = c
        assert first is not None
        if second is None:
            return s.Col(None, _name(first), _span(meta))
        return s.Col(_name(first), _name(second), _span(meta))

    def call(self, meta: Meta, c: list[Any]) -> s.Call:
        args = tuple(a for a in c[1:] if a is not None)
        return s.Call(str(c[0]).upper(), args, _span(meta))

    def arg(self, meta: Meta, c: list[Any]) -> Any:
        return c[0]

    def star_of(self, meta: Meta, c: list[Token]) -> s.Star:
        return s.Star(_name(c[0]), _span(meta))

    def star(self, meta: Meta, c: list[Any]) -> s.Star:
        return s.Star(None, _span(meta))


def parse(text: str) -> s.Query:
    """The syntax tree of a MATCH_RECOGNIZE query (``MatchRecognizeError`` if malformed)."""
    tree = parse_tree(_PARSER, text, MatchRecognizeError, _PUNCT)
    try:
        return _ToSyntax(text).transform(tree)
    except VisitError as err:
        if isinstance(err.orig_exc, _Fail):
            raise s.error(text, err.orig_exc.message, err.orig_exc.span) from None
        raise


def _greedy(lazy: Token | None) -> bool:
    """``{n,m}`` is greedy, ``{n,m}?`` reluctant; any other quantifier after the braces
    is an error."""
    if lazy is None:
        return True
    if str(lazy) != "?":
        raise _Fail("expected '?' (a reluctant quantifier) or nothing after '}'", _tspan(lazy))
    return False
