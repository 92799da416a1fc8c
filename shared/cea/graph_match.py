"""``pattern.GraphMatch``: a basic graph pattern with filters matched on the graph one
event carries for a stream (and on a background graph), as solution mappings.

Solutions are computed the first time any run asks and cached in the event, so a
graph is matched once per event whatever the number of runs; the automaton reads
only whether there is one, the output stage reads the mappings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cerfleet import pattern
from cerfleet.rdf.instants import BACKGROUND, GRAPHS, SOLUTIONS
from cerfleet.rdf.terms import BNode, Graph, Iri, Term

__all__ = ["Solution", "compile_graph_match", "match"]

Solution = dict[str, Term]
_Empty: Graph = {}


def _constant(term: pattern.GraphTerm) -> Term:
    if isinstance(term, pattern.GraphIri):
        return Iri(term.value)
    assert isinstance(term, pattern.GraphLiteral)
    value = term.value
    return value


def _same(value: Term, const: Term) -> bool:
    """RDF term equality: an IRI equals only an IRI (``str`` equality alone would let a
    string literal equal an IRI with the same text)."""
    if isinstance(const, Iri | BNode) or isinstance(value, Iri | BNode):
        return type(value) is type(const) and value == const
    if isinstance(const, bool) or isinstance(value, bool):
        return type(value) is type(const) and value == const
    if isinstance(const, str) != isinstance(value, str):
        return False
    return bool(value == const)


def _bind(term: pattern.GraphTerm, value: Term, mapping: Solution) -> Solution | None:
    if isinstance(term, pattern.GraphVar):
        have = mapping.get(term.name)
        if have is None:
            out = dict(mapping)
            out[term.name] = value
            return out
        return mapping if _same(have, value) else None
    return mapping if _same(value, _constant(term)) else None


def match(
    triples: tuple[pattern.TriplePattern, ...], graph: Graph, start: list[Solution]
) -> list[Solution]:
    """Every extension of the ``start`` mappings matching all ``triples`` in ``graph``."""
    current = start
    for s, p, o in triples:
        if not current:
            return current
        nxt: list[Solution] = []
        for mapping in current:
            if isinstance(p, pattern.GraphVar) and p.name not in mapping:
                candidates = [(Iri(pred), pairs) for pred, pairs in graph.items()]
            else:
                pred = mapping[p.name] if isinstance(p, pattern.GraphVar) else _constant(p)
                if not isinstance(pred, Iri):
                    continue
                candidates = [(pred, graph.get(pred, []))]
            for pred, pairs in candidates:
                with_p = _bind(p, pred, mapping)
                if with_p is None:
                    continue
                for subj, obj in pairs:
                    m = _bind(s, subj, with_p)
                    if m is not None and (m := _bind(o, obj, m)) is not None:
                        nxt.append(m)
        current = nxt
    return _distinct(current)


def _distinct(mappings: list[Solution]) -> list[Solution]:
    seen: set[tuple[tuple[str, str, Term], ...]] = set()
    out: list[Solution] = []
    for m in mappings:
        key = tuple(sorted((k, type(v).__name__, v) for k, v in m.items()))
        if key not in seen:
            seen.add(key)
            out.append(m)
    return out


def compile_graph_match(
    gm: pattern.GraphMatch, compile_filter: Callable[[pattern.Pred], Callable[[Any], bool]]
) -> Callable[[Mapping[str, Any]], list[Solution]]:
    """``event -> solutions`` (cached in the event under ``rdf.instants.SOLUTIONS``).
    ``compile_filter`` compiles the filter over a mapping (variables as attributes)."""
    keep = compile_filter(gm.filter) if gm.filter is not None else None

    def evaluate(event: Mapping[str, Any]) -> list[Solution]:
        cache: dict[pattern.GraphMatch, list[Solution]] = event[SOLUTIONS]
        found = cache.get(gm)
        if found is not None:
            return found
        graph = event[GRAPHS].get(gm.stream)
        out: list[Solution] = []
        if graph is not None:
            out = match(gm.triples, graph, [{}])
            if out and gm.background is not None:
                kb = event[BACKGROUND].get(gm.background, _Empty)
                out = match(gm.background_triples, kb, out)
            if keep is not None:
                out = [m for m in out if keep(m)]
        cache[gm] = out
        return out

    return evaluate
