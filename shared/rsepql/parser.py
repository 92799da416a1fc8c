"""RSEP-QL text to its syntax tree (``syntax.Query``), or ``RsepqlError`` with line,
column and what was expected — or, for what the engine does not support, the reason.

Accepted: ``PREFIX``, ``SELECT ?v …`` or ``*``, ``FROM NAMED <stream> [WIN [RANGE n
[STEP m]] | WIN [LND t]] AS <window>``, ``EVENT ON <window> { triples FILTER(…) } AS
name`` and ``WHERE { MATCH [CONSUMING] { E } }`` where E combines the names with
``SEQ``, ``SEQ^c``, ``SEQ^r``, ``SEQ^n`` (left-associative), ``FIRST E`` and ``LAST E``
(parentheses allowed). Refused, each with its place: ``AND``/``OR`` (the seed defines
no such event operators), a variable window (``EVENT ON ?w``, future work in the
seed), a ``SEQ^x`` of another letter, and a FILTER reading another event's variables.
"""

from __future__ import annotations

from typing import Any

from lark import Lark, Token, v_args
from lark.exceptions import VisitError
from lark.tree import Meta

from cerfleet import pattern
from cerfleet.errors import RsepqlError
from cerfleet.grammar_errors import parse_tree
from cerfleet.pattern import Span
from cerfleet.rdf.sparql_terms import Fail as _Fail
from cerfleet.rdf.sparql_terms import GraphTerms
from cerfleet.rdf.sparql_terms import mspan as _mspan
from cerfleet.rdf.sparql_terms import tspan as _tspan
from cerfleet.rsepql import syntax as s

__all__ = ["parse"]

_PARSER = Lark.open_from_package(
    __name__.rpartition(".")[0],
    "grammar.lark",
    parser="lalr",
    propagate_positions=True,
    cache=True,
)
_UNIT_MS = {"SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000}
_SHOWN = {
    "LPAR": "'('",
    "RPAR": "')'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LSQB": "'['",
    "RSQB": "']'",
    "SEQ": "SEQ",
    "FIRST": "FIRST",
    "LAST": "LAST",
    "CONSUMING": "CONSUMING",
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


def _ms(amount: Token, unit: Token | None) -> int:
    scale = 1000 if unit is None else _UNIT_MS[str(unit).upper().rstrip("S")]
    return int(str(amount)) * scale


@v_args(meta=True)
class _ToSyntax(GraphTerms):
    def filter(self, meta: Meta, c: list[Any]) -> tuple[str, Any]:
        return "filter", (self._pred(c[0], meta), _mspan(meta))

    # -- windows, events, MATCH ------------------------------------------------
    def select(self, meta: Meta, c: list[Token]) -> tuple[str, Any]:
        if c and c[0].type == "STAR":
            return "select", None
        return "select", tuple(str(t)[1:] for t in c)

    def range(self, meta: Meta, c: list[Any]) -> tuple[str, int, int | None, Span | None]:
        step: tuple[int, Span] | None = c.pop() if c and isinstance(c[-1], tuple) else None
        width = _ms(c[0], c[1] if len(c) > 1 else None)
        if step is None:
            return "range", width, None, None
        return "range", width, step[0], step[1]

    def step(self, meta: Meta, c: list[Token]) -> tuple[int, Span]:
        return _ms(c[1], c[2] if len(c) > 2 else None), _tspan(c[0])

    def landmark(self, meta: Meta, c: list[Token]) -> tuple[str, int, None, None]:
        return "landmark", _ms(c[0], c[1] if len(c) > 1 else None), None, None

    def win(self, meta: Meta, c: list[Any]) -> tuple[str, int, int | None, Span | None]:
        out: tuple[str, int, int | None, Span | None] = c[0]
        return out

    def window(self, meta: Meta, c: list[Any]) -> tuple[str, Any]:
        stream, name = c[0].value, c[-1].value
        kind, ms, step, step_span = c[1] if len(c) == 3 else ("identity", 0, None, None)
        if step is not None and step <= 0:
            raise _Fail("STEP must be a positive duration", step_span)
        return "window", (s.Window(name, stream, kind, ms, step, step_span), _mspan(meta))

    def var_window(self, meta: Meta, c: list[Token]) -> None:
        raise _Fail(
            "a variable window (EVENT ON ?w) is not supported: the seed leaves it to "
            "future work; name a window declared by FROM NAMED",
            _tspan(c[0]),
        )

    def event(self, meta: Meta, c: list[Any]) -> tuple[str, Any]:
        window, name = c[0].value, str(c[-1])
        triples = tuple(v for k, v in c[1:-1] if k == "triple")
        filters = tuple(v for k, v in c[1:-1] if k == "filter")
        return "event", (name, window, triples, filters, _mspan(meta), _tspan(c[-1]))

    def event_ref(self, meta: Meta, c: list[Token]) -> s.Ref:
        return s.Ref(str(c[0]), _tspan(c[0]))

    def seq(self, meta: Meta, c: list[Any]) -> s.Seq:
        tok: Token = c[1]
        _, caret, policy = str(tok).partition("^")
        if caret and policy.lower() not in ("c", "r", "n"):
            raise _Fail(
                f"unknown SEQ policy {str(tok)!r}: expected SEQ (unrestricted), SEQ^c "
                "(chronological), SEQ^r (recent) or SEQ^n (naive)",
                _tspan(tok),
            )
        return s.Seq(c[0], c[2], policy.lower(), _tspan(tok))

    def _refuse(self, tok: Token, why: str) -> None:
        raise _Fail(f"{str(tok).upper()} is not supported: {why}", _tspan(tok))

    def first(self, meta: Meta, c: list[Any]) -> s.Pick:
        return s.Pick("first", c[1], _tspan(c[0]))

    def last(self, meta: Meta, c: list[Any]) -> s.Pick:
        return s.Pick("last", c[1], _tspan(c[0]))

    def consuming(self, meta: Meta, c: list[Token]) -> tuple[str, Span]:
        return "consuming", _tspan(c[0])

    def conj(self, meta: Meta, c: list[Any]) -> None:
        self._refuse(c[1], "the seed defines no conjunction of event patterns; use SEQ")

    def disj(self, meta: Meta, c: list[Any]) -> None:
        self._refuse(c[1], "the seed defines no disjunction of event patterns; use SEQ")

    def start(self, meta: Meta, c: list[Any]) -> list[Any]:
        return [x for x in c if x is not None]


def _tree(text: str) -> list[Any]:
    tree = parse_tree(_PARSER, text, RsepqlError, _SHOWN)
    try:
        parts: list[Any] = _ToSyntax().transform(tree)
    except VisitError as err:
        fail = err.orig_exc
        if not isinstance(fail, _Fail):
            raise
        raise s.error(text, fail.message, fail.span) from None
    return parts


def _reads(node: Any) -> set[str]:
    if isinstance(node, pattern.Attr):
        return {node.name}
    out: set[str] = set()
    for name in ("left", "right", "operand"):
        child = getattr(node, name, None)
        if child is not None:
            out |= _reads(child)
    return out


def parse(text: str) -> s.Query:
    """``text`` as an RSEP-QL syntax tree, its names and variables checked."""
    select: tuple[str, ...] | None = None
    windows: dict[str, s.Window] = {}
    events: dict[str, s.Bep] = {}
    expr: s.Expr | None = None
    consuming: Span | None = None
    for part in _tree(text):
        if isinstance(part, s.Ref | s.Seq | s.Pick):
            expr = part
            continue
        kind, value = part
        if kind == "select":
            select = value
        elif kind == "consuming":
            consuming = value
        elif kind == "window":
            window, span = value
            if window.name in windows:
                raise s.error(text, f"window <{window.name}> is declared twice", span)
            windows[window.name] = window
        else:
            name, window_name, triples, filters, span, name_span = value
            if name in events:
                raise s.error(text, f"event pattern {name} is defined twice", name_span)
            if window_name not in windows:
                raise s.error(
                    text, f"EVENT ON <{window_name}>: no FROM NAMED declares that window", span
                )
            if not triples:
                raise s.error(text, f"event pattern {name} has no triple pattern", span)
            bep = s.Bep(name, window_name, triples, tuple(f for f, _ in filters), span)
            for f, fspan in filters:
                outside = _reads(f) - bep.variables()
                if outside:
                    raise s.error(
                        text,
                        f"FILTER of {name} reads ?{min(outside)}, which its triples do not "
                        "bind (filters across events are not supported: shared variables "
                        "join events)",
                        fspan,
                    )
            events[name] = bep
    assert expr is not None
    for ref in _refs(expr):
        if ref.name not in events:
            raise s.error(
                text, f"MATCH names {ref.name}, which no EVENT … AS {ref.name} defines", ref.span
            )
    names = s.refs(expr)
    bound = set().union(*(events[n].variables() for n in names))
    if select is not None:
        for var in select:
            if var not in bound:
                raise s.error(
                    text, f"?{var} is selected but no event pattern of MATCH binds it", None
                )
    return s.Query(select, windows, events, tuple(names), expr, consuming is not None, consuming)


def _refs(expr: s.Expr) -> list[s.Ref]:
    if isinstance(expr, s.Ref):
        return [expr]
    if isinstance(expr, s.Pick):
        return _refs(expr.operand)
    return _refs(expr.left) + _refs(expr.right)
