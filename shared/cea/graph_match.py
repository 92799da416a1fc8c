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

__all__ = ["Solution", "compile_graph_match", "compile_triples"]

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


# A compiled term: (variable name, None) or (None, constant).
_Slot = tuple[str | None, Term | None]


def _slot(term: pattern.GraphTerm) -> _Slot:
    if isinstance(term, pattern.GraphVar):
        return term.name, None
    return None, _constant(term)


def _fits(slot: _Slot, value: Term, mapping: Solution) -> Solution | None:
    """``mapping`` extended so that ``slot`` is ``value`` (None: it cannot be)."""
    name, const = slot
    if name is None:
        assert const is not None
        return mapping if _same(value, const) else None
    have = mapping.get(name)
    if have is None:
        out = dict(mapping)
        out[name] = value
        return out
    return mapping if _same(have, value) else None


def compile_triples(
    triples: tuple[pattern.TriplePattern, ...],
) -> Callable[[Graph, list[Solution]], list[Solution]]:
    """``(graph, start) ->`` every extension of the ``start`` mappings matching all
    ``triples`` in ``graph`` (constants resolved once, here)."""
    slots = [(_slot(s), _slot(p), _slot(o)) for s, p, o in triples]

    def run(graph: Graph, start: list[Solution]) -> list[Solution]:
        current = start
        for s_slot, p_slot, o_slot in slots:
            if not current:
                return current
            nxt: list[Solution] = []
            p_name, p_const = p_slot
            for mapping in current:
                bound = p_const if p_name is None else mapping.get(p_name)
                if bound is None:
                    candidates = [(Iri(pred), pairs) for pred, pairs in graph.items()]
                elif isinstance(bound, Iri):
                    candidates = [(bound, graph.get(bound, _NONE))]
                else:
                    continue
                for pred, pairs in candidates:
                    with_p = mapping if p_name is None else _fits(p_slot, pred, mapping)
                    if with_p is None:
                        continue
                    for subj, obj in pairs:
                        m = _fits(s_slot, subj, with_p)
                        if m is not None and (m := _fits(o_slot, obj, m)) is not None:
                            nxt.append(m)
            current = nxt
        return _distinct(current) if len(current) > 1 else current

    return run


_NONE: list[tuple[Term, Term]] = []


def _distinct(mappings: list[Solution]) -> list[Solution]:
    seen: set[tuple[tuple[str, str, Term], ...]] = set()
    out: list[Solution] = []
    for m in mappings:
        key = tuple(sorted((k, type(v).__name__, v) for k, v in m.items()))
        if key not in seen:
            seen.add(key)
            out.append(m)
    return out


def _export(event: Mapping[str, Any], prefix: str, solutions: list[Solution]) -> None:
    """The variables with one value in every solution, as attributes of the event (an
    instant is a plain dict, like the solution cache it already carries)."""
    first = solutions[0]
    for name, value in first.items():
        if all(name in m and _same(m[name], value) for m in solutions[1:]):
            event[prefix + name] = value  # type: ignore[index]


def compile_graph_match(
    gm: pattern.GraphMatch, compile_filter: Callable[[pattern.Pred], Callable[[Any], bool]]
) -> Callable[[Mapping[str, Any]], list[Solution]]:
    """``event -> solutions`` (cached in the event under ``rdf.instants.SOLUTIONS``).
    ``compile_filter`` compiles the filter over a mapping (variables as attributes)."""
    keep = compile_filter(gm.filter) if gm.filter is not None else None
    own = compile_triples(gm.triples)
    joined = compile_triples(gm.background_triples)
    optional = [compile_triples(group) for group in gm.optional]
    absent = [compile_triples(group) for group in gm.absent]
    stream, background, export = gm.stream, gm.background, gm.export
    # The cache key: the pattern's text, hashed once here (hashing the node per event
    # would cost more than matching a small graph).
    key = repr(gm)

    def evaluate(event: Mapping[str, Any]) -> list[Solution]:
        cache: dict[str, list[Solution]] = event[SOLUTIONS]
        found = cache.get(key)
        if found is not None:
            return found
        graph = event[GRAPHS].get(stream)
        out: list[Solution] = []
        if graph is not None:
            out = own(graph, [{}])
            if out and background is not None:
                out = joined(event[BACKGROUND].get(background, _Empty), out)
            for left_join in optional:  # ⟦P⟧ ⟕ ⟦Q⟧: the extensions, else the mapping
                out = [ext for m in out for ext in (left_join(graph, [m]) or [m])]
            for exists in absent:  # FILTER NOT EXISTS: no extension of the solution
                out = [m for m in out if not exists(graph, [m])]
            if keep is not None:
                out = [m for m in out if keep(m)]
        cache[key] = out
        if export is not None and out:
            _export(event, export, out)
        return out

    return evaluate
