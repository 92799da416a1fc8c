"""SPAseq text to its syntax tree (``syntax.Query``), or ``SpaseqError`` with line,
column and what was expected."""

from __future__ import annotations

from typing import Any

from lark import Lark, Token, v_args
from lark.exceptions import VisitError
from lark.tree import Meta

from cerfleet import pattern
from cerfleet.errors import SpaseqError
from cerfleet.grammar_errors import parse_tree
from cerfleet.rdf.sparql_terms import Fail as _Fail
from cerfleet.rdf.sparql_terms import GraphTerms
from cerfleet.rdf.sparql_terms import mspan as _mspan
from cerfleet.rdf.sparql_terms import tspan as _tspan
from cerfleet.spaseq import syntax as s

__all__ = ["tree"]

_PARSER = Lark.open_from_package(
    __name__.rpartition(".")[0],
    "grammar.lark",
    parser="lalr",
    propagate_positions=True,
    cache=True,
)
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


@v_args(meta=True)
class _ToSyntax(GraphTerms):
    def filter(self, meta: Meta, c: list[Any]) -> tuple[str, pattern.Pred]:
        return "filter", self._pred(c[0], meta)

    def optional(self, meta: Meta, c: list[Any]) -> tuple[str, Any]:
        return "optional", tuple(t for _, t in c)

    def not_exists(self, meta: Meta, c: list[Any]) -> tuple[str, Any]:
        return "not_exists", tuple(t for _, t in c)

    def background(self, meta: Meta, c: list[Any]) -> tuple[str, Any]:
        return "background", (c[0].value, c[1:])

    # -- query ---------------------------------------------------------------
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


def tree(text: str) -> tuple[list[Any], dict[str, str]]:
    tree = parse_tree(_PARSER, text, SpaseqError, _SHOWN)
    transformer = _ToSyntax()
    try:
        parts = transformer.transform(tree)
    except VisitError as err:
        fail = err.orig_exc
        if not isinstance(fail, _Fail):
            raise
        raise s.error(text, fail.message, fail.span) from None
    return parts, transformer.prefixes
