"""The parts of a parsed SPAseq query checked and assembled into ``syntax.Query``:
every name defined, every GPM on a declared stream, every variable bound where it is
read. Each error points at the text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lark import Token

from cerfleet import pattern
from cerfleet.pattern import Span
from cerfleet.spaseq import syntax as s
from cerfleet.spaseq.parser import tree
from cerfleet.spaseq.syntax import error

__all__ = ["build", "parse"]


def _filter_vars(pred: pattern.Pred) -> Iterator[str]:
    match pred:
        case pattern.Compare(left=left, right=right):
            yield from _expr_vars(left)
            yield from _expr_vars(right)
        case pattern.PNot(operand=operand):
            yield from _filter_vars(operand)
        case pattern.PAnd(left=left, right=right) | pattern.POr(left=left, right=right):
            yield from _filter_vars(left)
            yield from _filter_vars(right)


def _expr_vars(expr: pattern.Expr) -> Iterator[str]:
    if isinstance(expr, pattern.Attr):
        yield expr.name
    elif isinstance(expr, pattern.Neg):
        yield from _expr_vars(expr.operand)
    elif isinstance(expr, pattern.Arith):
        yield from _expr_vars(expr.left)
        yield from _expr_vars(expr.right)


def parse(text: str) -> s.Query:
    """``text`` as a SPAseq syntax tree, its names and variables checked."""
    parts, _ = tree(text)
    return build(text, parts)


def build(text: str, parts: list[Any]) -> s.Query:
    select: tuple[str, ...] | None = None
    within: tuple[int, str] | None = None
    streams: dict[str, tuple[str, Span]] = {}
    elements: tuple[s.Element, ...] = ()
    ops: tuple[str, ...] = ()
    raw_gpms: list[tuple[Token, Token, list[Any], Span | None]] = []
    for kind, part in parts:
        if kind == "within":
            within = part[0], part[1]
            if part[0] <= 0:
                raise error(text, "a window must be at least 1", part[2], "a positive integer")
        elif kind == "stream":
            name, iri, span = part
            if name in streams:
                raise error(text, f"stream {name} is declared twice", span)
            streams[name] = (iri, span)
        elif kind == "seq":
            elements, ops = part
        elif kind == "gpm":
            raw_gpms.append(part)
        else:
            select = part
    gpms: dict[str, s.Gpm] = {}
    for name_tok, stream_tok, body, span in raw_gpms:
        name = str(name_tok)
        if name in gpms:
            raise error(text, f"GPM {name} is defined twice", _tok(name_tok))
        if str(stream_tok) not in streams:
            raise error(
                text,
                f"GPM {name} is on stream {stream_tok}, which no FROM STREAM declares",
                _tok(stream_tok),
                "one of " + ", ".join(sorted(streams)),
            )
        gpms[name] = _gpm(text, name, str(stream_tok), body, span)
    bound: set[str] = set()
    selectable: set[str] = set()
    for element in elements:
        names = s.refs(element.bop)
        for ref in _refs(element.bop):
            if ref.name not in gpms:
                raise error(
                    text, f"SEQ names GPM {ref.name}, which no DEFINE GPM defines", ref.span
                )
        mine = set().union(*(gpms[n].variables() for n in names))
        for n in names:
            gpm = gpms[n]
            for pred in gpm.stateful:
                for var in _filter_vars(pred):
                    if var not in mine and var not in bound:
                        raise error(
                            text,
                            f"FILTER of GPM {n} reads ?{var}, bound by no triple of this "
                            "element or an earlier one",
                            pred.span,
                        )
        bound |= mine
        selectable |= set().union(*(gpms[n].all_variables() for n in names))
    if select is not None:
        for var in select:
            if var not in selectable:
                raise error(text, f"?{var} is selected but no GPM of SEQ binds it", None)
    return s.Query(
        select=select,
        within=within,
        streams=tuple((n, iri) for n, (iri, _) in streams.items()),
        elements=elements,
        ops=ops,
        gpms=gpms,
    )


def _tok(tok: Token) -> Span:
    return Span(tok.line or 1, tok.column or 1, tok.end_line or 1, tok.end_column or 1)


def _refs(bop: s.BOp) -> list[s.Ref]:
    if isinstance(bop, s.Ref):
        return [bop]
    return _refs(bop.left) + _refs(bop.right)


def _gpm(text: str, name: str, stream: str, body: list[Any], span: Span | None) -> s.Gpm:
    triples: list[pattern.TriplePattern] = []
    filters: list[pattern.Pred] = []
    bg_iri: str | None = None
    bg_triples: list[pattern.TriplePattern] = []
    optional: list[tuple[pattern.TriplePattern, ...]] = []
    absent: list[tuple[pattern.TriplePattern, ...]] = []
    for kind, value in body:
        if kind == "triple":
            triples.append(value)
        elif kind == "filter":
            filters.append(value)
        elif kind == "optional":
            if value:
                optional.append(value)
        elif kind == "not_exists":
            absent.append(value)
        else:
            if bg_iri is not None:
                raise error(text, f"GPM {name} has more than one GRAPH block", span)
            bg_iri, items = value
            for k, v in items:
                (bg_triples if k == "triple" else filters).append(v)
    if not triples:
        raise error(text, f"GPM {name} has no triple pattern", span, "a triple pattern")
    every = triples + bg_triples + [t for group in optional for t in group]
    own = {t.name for tr in every for t in tr if isinstance(t, pattern.GraphVar)}
    local = tuple(f for f in filters if set(_filter_vars(f)) <= own)
    stateful = tuple(f for f in filters if not set(_filter_vars(f)) <= own)
    return s.Gpm(
        name,
        stream,
        tuple(triples),
        local,
        stateful,
        bg_iri,
        tuple(bg_triples),
        span,
        tuple(optional),
        tuple(absent),
    )
