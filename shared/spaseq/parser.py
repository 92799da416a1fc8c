"""SPAseq text to its syntax tree (``syntax.Query``), or ``SpaseqError`` with line,
column and what was expected."""

from __future__ import annotations

from typing import Any

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken, VisitError
from lark.tree import Meta

from cerfleet import pattern
from cerfleet.errors import SpaseqError
from cerfleet.pattern import Span
from cerfleet.spaseq import syntax as s

__all__ = ["tree"]

_PARSER = Lark.open_from_package(
    __name__.rpartition(".")[0],
    "grammar.lark",
    parser="lalr",
    propagate_positions=True,
    cache=True,
)
_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_XSD = "http://www.w3.org/2001/XMLSchema#"
_NUMERIC = {_XSD + t for t in ("integer", "int", "long", "decimal", "double", "float", "short")}
_UNITS = {"SECOND": "SECONDS", "MINUTE": "MINUTES", "HOUR": "HOURS"}
_SHOWN = {
    "LPAR": "'('",
    "RPAR": "')'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "SEP": "',', ';' or ':'",
    "PLUS": "'+'",
    "DOT": "'.'",
    "VAR": "a variable",
    "NAME": "a name",
    "IRIREF": "an IRI",
    "PNAME_LN": "a prefixed name",
    "PNAME_NS": "a prefix",
    "STRING": "a string",
    "SIGNED_NUMBER": "a number",
    "INT": "an integer",
    "UNIT": "SECONDS, MINUTES or HOURS",
    "COMPOP": "a comparison",
    "$END": "end of query",
}


class _Fail(Exception):
    def __init__(self, message: str, span: Span | None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span


def _tspan(tok: Token) -> Span:
    return Span(tok.line or 1, tok.column or 1, tok.end_line or 1, tok.end_column or 1)


def _mspan(meta: Meta) -> Span | None:
    if getattr(meta, "empty", True):
        return None
    return Span(meta.line, meta.column, meta.end_line, meta.end_column)


def _unescape(text: str) -> str:
    body = text[1:-1]
    return body.encode("utf-8").decode("unicode_escape") if "\\" in body else body


@v_args(meta=True)
class _ToSyntax(Transformer[Token, Any]):
    def __init__(self) -> None:
        super().__init__()
        self.prefixes: dict[str, str] = {}

    # -- terms --------------------------------------------------------------
    def iri(self, meta: Meta, c: list[Token]) -> pattern.GraphIri:
        tok = c[0]
        text = str(tok)
        if tok.type == "IRIREF":
            return pattern.GraphIri(text[1:-1])
        prefix, _, local = text.partition(":")
        if prefix + ":" not in self.prefixes:
            raise _Fail(f"undeclared prefix {prefix + ':'!r}", _tspan(tok))
        return pattern.GraphIri(self.prefixes[prefix + ":"] + local)

    def var(self, meta: Meta, c: list[Token]) -> pattern.GraphVar:
        return pattern.GraphVar(str(c[0])[1:])

    def rdf_type(self, meta: Meta, c: list[Any]) -> pattern.GraphIri:
        return pattern.GraphIri(_RDF_TYPE)

    def string(self, meta: Meta, c: list[Token]) -> pattern.GraphLiteral:
        return pattern.GraphLiteral(_unescape(str(c[0])))

    def typed(self, meta: Meta, c: list[Any]) -> pattern.GraphLiteral:
        text = _unescape(str(c[0]))
        if c[1].value in _NUMERIC:
            try:
                number = float(text)
            except ValueError:
                raise _Fail(f"{text!r} is not a number", _mspan(meta)) from None
            return pattern.GraphLiteral(int(number) if number.is_integer() else number)
        return pattern.GraphLiteral(text)

    def number(self, meta: Meta, c: list[Token]) -> pattern.GraphLiteral:
        text = str(c[0])
        is_int = text.lstrip("+-").isdigit()
        return pattern.GraphLiteral(int(text) if is_int else float(text))

    def true(self, meta: Meta, c: list[Any]) -> pattern.GraphLiteral:
        return pattern.GraphLiteral(True)

    def false(self, meta: Meta, c: list[Any]) -> pattern.GraphLiteral:
        return pattern.GraphLiteral(False)

    # -- filters: expressions over variables, as pattern predicates ------------
    def _expr(self, node: Any) -> pattern.Expr:
        if isinstance(node, pattern.GraphVar):
            return pattern.Attr(node.name)
        if isinstance(node, pattern.GraphIri | pattern.GraphLiteral):
            return pattern.Const(node.value)
        if isinstance(node, pattern.Attr | pattern.Const | pattern.Arith | pattern.Neg):
            return node
        raise _Fail("expected a value, not a condition", None)

    def _pred(self, node: Any, meta: Meta) -> pattern.Pred:
        if isinstance(node, pattern.Compare | pattern.PAnd | pattern.POr | pattern.PNot):
            return node
        if isinstance(node, pattern.GraphLiteral) and isinstance(node.value, bool):
            return pattern.BoolLit(node.value)
        raise _Fail("expected a condition (a comparison)", _mspan(meta))

    def compare(self, meta: Meta, c: list[Any]) -> pattern.Compare:
        return pattern.Compare(str(c[1]), self._expr(c[0]), self._expr(c[2]), span=_mspan(meta))

    def arith(self, meta: Meta, c: list[Any]) -> pattern.Arith:
        return pattern.Arith(str(c[1]), self._expr(c[0]), self._expr(c[2]), span=_mspan(meta))

    def neg(self, meta: Meta, c: list[Any]) -> pattern.Neg:
        return pattern.Neg(self._expr(c[0]), span=_mspan(meta))

    def and_(self, meta: Meta, c: list[Any]) -> pattern.PAnd:
        return pattern.PAnd(self._pred(c[0], meta), self._pred(c[1], meta), span=_mspan(meta))

    def or_(self, meta: Meta, c: list[Any]) -> pattern.POr:
        return pattern.POr(self._pred(c[0], meta), self._pred(c[1], meta), span=_mspan(meta))

    def not_(self, meta: Meta, c: list[Any]) -> pattern.PNot:
        return pattern.PNot(self._pred(c[0], meta), span=_mspan(meta))

    def filter(self, meta: Meta, c: list[Any]) -> tuple[str, pattern.Pred]:
        return "filter", self._pred(c[0], meta)

    def triple(self, meta: Meta, c: list[Any]) -> tuple[str, pattern.TriplePattern]:
        if not isinstance(c[1], pattern.GraphIri | pattern.GraphVar):
            raise _Fail("a predicate must be an IRI or a variable", _mspan(meta))
        if isinstance(c[0], pattern.GraphLiteral):
            raise _Fail("a subject cannot be a literal", _mspan(meta))
        return "triple", (c[0], c[1], c[2])

    def optional(self, meta: Meta, c: list[Any]) -> tuple[str, Any]:
        return "optional", tuple(t for _, t in c)

    def not_exists(self, meta: Meta, c: list[Any]) -> tuple[str, Any]:
        return "not_exists", tuple(t for _, t in c)

    def background(self, meta: Meta, c: list[Any]) -> tuple[str, Any]:
        return "background", (c[0].value, c[1:])

    # -- query ---------------------------------------------------------------
    def prefix(self, meta: Meta, c: list[Token]) -> None:
        self.prefixes[str(c[0])] = str(c[1])[1:-1]

    def select(self, meta: Meta, c: list[Token]) -> tuple[str, Any]:
        if c and c[0].type == "STAR":
            return "select", None
        return "select", tuple(str(t)[1:] for t in c)

    def within(self, meta: Meta, c: list[Token]) -> tuple[str, Any]:
        unit = str(c[1]).upper()
        return "within", (int(str(c[0])), _UNITS.get(unit, unit), _tspan(c[0]))

    def from_stream(self, meta: Meta, c: list[Token]) -> tuple[str, Any]:
        return "stream", (str(c[0]), str(c[1])[1:-1], _tspan(c[0]))

    def gpm_ref(self, meta: Meta, c: list[Token]) -> s.Ref:
        return s.Ref(str(c[0]), _tspan(c[0]))

    def kleene(self, meta: Meta, c: list[Token]) -> s.Element:
        return s.Element(s.Ref(str(c[0]), _tspan(c[0])), kleene=True)

    def conj(self, meta: Meta, c: list[Any]) -> s.Conj:
        return s.Conj(c[0], c[1])

    def disj(self, meta: Meta, c: list[Any]) -> s.Disj:
        return s.Disj(c[0], c[1])

    def seq(self, meta: Meta, c: list[Any]) -> tuple[str, Any]:
        items = [x if isinstance(x, s.Element) else s.Element(x) for x in c[0::2]]
        return "seq", (tuple(items), tuple(str(t) for t in c[1::2]))

    def body(self, meta: Meta, c: list[Any]) -> list[Any]:
        return c

    def gpm(self, meta: Meta, c: list[Any]) -> tuple[str, Any]:
        return "gpm", (c[0], c[1], c[2], _mspan(meta))

    def start(self, meta: Meta, c: list[Any]) -> list[Any]:
        return [x for x in c if x is not None]


def _expected(names: set[str]) -> str:
    shown = sorted({_SHOWN.get(n, n) for n in names if not n.startswith("__")})
    return (
        ", ".join(shown[:-1]) + (" or " if len(shown) > 1 else "") + shown[-1] if shown else "more"
    )


def tree(text: str) -> tuple[list[Any], dict[str, str]]:
    try:
        tree = _PARSER.parse(text)
    except UnexpectedToken as err:
        tok = err.token
        what = "end of query" if tok.type == "$END" else repr(str(tok))
        raise SpaseqError(
            f"unexpected {what}",
            line=err.line if err.line > 0 else len(text.splitlines()) or 1,
            column=err.column if err.column > 0 else 1,
            source=text,
            length=len(str(tok)) or 1,
            expected=_expected(set(err.accepts or err.expected)),
        ) from None
    except UnexpectedCharacters as err:
        raise SpaseqError(
            f"unexpected character {text[err.pos_in_stream or 0]!r}",
            line=err.line,
            column=err.column,
            source=text,
            expected=_expected(set(err.allowed or ())),
        ) from None
    except UnexpectedEOF as err:
        lines = text.splitlines() or [""]
        raise SpaseqError(
            "unexpected end of query",
            line=len(lines),
            column=len(lines[-1]) + 1,
            source=text,
            expected=_expected(set(err.expected)),
        ) from None
    transformer = _ToSyntax()
    try:
        parts = transformer.transform(tree)
    except VisitError as err:
        fail = err.orig_exc
        if not isinstance(fail, _Fail):
            raise
        raise s.error(text, fail.message, fail.span) from None
    return parts, transformer.prefixes
