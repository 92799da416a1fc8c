"""SPARQL's graph terms and FILTER expressions, as the RDF front-ends read them.

SPAseq (seed 004) and RSEP-QL (seed 003) both write a graph-pattern match in SPARQL:
prefixed and full IRIs, variables, literals (typed numeric literals read as numbers),
triple patterns and FILTER conditions over the pattern form's predicates. Their
grammars name these rules alike, so one transformer base serves both front-ends; each
adds its own operators on top and catches ``Fail`` to raise its own error type.
"""

from __future__ import annotations

from typing import Any

from lark import Token, Transformer, v_args
from lark.tree import Meta

from cerfleet import pattern
from cerfleet.pattern import Span

__all__ = ["Fail", "GraphTerms", "mspan", "tspan", "unescape"]

_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_XSD = "http://www.w3.org/2001/XMLSchema#"
_NUMERIC = {_XSD + t for t in ("integer", "int", "long", "decimal", "double", "float", "short")}


class Fail(Exception):
    def __init__(self, message: str, span: Span | None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span


def tspan(tok: Token) -> Span:
    return Span(tok.line or 1, tok.column or 1, tok.end_line or 1, tok.end_column or 1)


def mspan(meta: Meta) -> Span | None:
    if getattr(meta, "empty", True):
        return None
    return Span(meta.line, meta.column, meta.end_line, meta.end_column)


def unescape(text: str) -> str:
    body = text[1:-1]
    return body.encode("utf-8").decode("unicode_escape") if "\\" in body else body


@v_args(meta=True)
class GraphTerms(Transformer[Token, Any]):
    """Terms, triples, prefixes and FILTER expressions (``filter`` itself is the front-
    end's: what it carries differs)."""

    def __init__(self) -> None:
        super().__init__()
        self.prefixes: dict[str, str] = {}

    def prefix(self, meta: Meta, c: list[Token]) -> None:
        self.prefixes[str(c[0])] = str(c[1])[1:-1]

    # -- terms --------------------------------------------------------------
    def iri(self, meta: Meta, c: list[Token]) -> pattern.GraphIri:
        tok = c[0]
        text = str(tok)
        if tok.type == "IRIREF":
            return pattern.GraphIri(text[1:-1])
        prefix, _, local = text.partition(":")
        if prefix + ":" not in self.prefixes:
            raise Fail(f"undeclared prefix {prefix + ':'!r}", tspan(tok))
        return pattern.GraphIri(self.prefixes[prefix + ":"] + local)

    def var(self, meta: Meta, c: list[Token]) -> pattern.GraphVar:
        return pattern.GraphVar(str(c[0])[1:])

    def rdf_type(self, meta: Meta, c: list[Any]) -> pattern.GraphIri:
        return pattern.GraphIri(_RDF_TYPE)

    def string(self, meta: Meta, c: list[Token]) -> pattern.GraphLiteral:
        return pattern.GraphLiteral(unescape(str(c[0])))

    def typed(self, meta: Meta, c: list[Any]) -> pattern.GraphLiteral:
        text = unescape(str(c[0]))
        if c[1].value in _NUMERIC:
            try:
                number = float(text)
            except ValueError:
                raise Fail(f"{text!r} is not a number", mspan(meta)) from None
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
        raise Fail("expected a value, not a condition", None)

    def _pred(self, node: Any, meta: Meta) -> pattern.Pred:
        if isinstance(node, pattern.Compare | pattern.PAnd | pattern.POr | pattern.PNot):
            return node
        if isinstance(node, pattern.GraphLiteral) and isinstance(node.value, bool):
            return pattern.BoolLit(node.value)
        raise Fail("expected a condition (a comparison)", mspan(meta))

    def compare(self, meta: Meta, c: list[Any]) -> pattern.Compare:
        return pattern.Compare(str(c[1]), self._expr(c[0]), self._expr(c[2]), span=mspan(meta))

    def arith(self, meta: Meta, c: list[Any]) -> pattern.Arith:
        return pattern.Arith(str(c[1]), self._expr(c[0]), self._expr(c[2]), span=mspan(meta))

    def neg(self, meta: Meta, c: list[Any]) -> pattern.Neg:
        return pattern.Neg(self._expr(c[0]), span=mspan(meta))

    def and_(self, meta: Meta, c: list[Any]) -> pattern.PAnd:
        return pattern.PAnd(self._pred(c[0], meta), self._pred(c[1], meta), span=mspan(meta))

    def or_(self, meta: Meta, c: list[Any]) -> pattern.POr:
        return pattern.POr(self._pred(c[0], meta), self._pred(c[1], meta), span=mspan(meta))

    def not_(self, meta: Meta, c: list[Any]) -> pattern.PNot:
        return pattern.PNot(self._pred(c[0], meta), span=mspan(meta))

    def triple(self, meta: Meta, c: list[Any]) -> tuple[str, pattern.TriplePattern]:
        if not isinstance(c[1], pattern.GraphIri | pattern.GraphVar):
            raise Fail("a predicate must be an IRI or a variable", mspan(meta))
        if isinstance(c[0], pattern.GraphLiteral):
            raise Fail("a subject cannot be a literal", mspan(meta))
        return "triple", (c[0], c[1], c[2])
