"""``GraphMatch``: basic graph patterns on one event's graph, as solution mappings."""

from __future__ import annotations

from typing import Any

from cerfleet import pattern
from cerfleet.cea.graph_match import compile_graph_match
from cerfleet.cea.predicates import compile_predicate
from cerfleet.rdf.instants import BACKGROUND, GRAPHS, SOLUTIONS
from cerfleet.rdf.terms import Iri, index

E = "http://e/"
V, Ir, L = pattern.GraphVar, pattern.GraphIri, pattern.GraphLiteral


def event(
    triples: list[tuple[Any, Any, Any]], kb: list[tuple[Any, Any, Any]] | None = None
) -> dict[str, Any]:
    return {
        GRAPHS: {"S": index(triples)},
        BACKGROUND: {E + "db": index(kb or [])},
        SOLUTIONS: {},
    }


def solve(gm: pattern.GraphMatch, ev: dict[str, Any]) -> list[dict[str, Any]]:
    return compile_graph_match(gm, compile_predicate)(ev)


A, B, P, Q = Iri(E + "a"), Iri(E + "b"), Iri(E + "p"), Iri(E + "q")


def test_join_on_a_shared_variable_and_distinct_solutions() -> None:
    gm = pattern.GraphMatch("S", ((V("s"), Ir(E + "p"), V("o")), (V("s"), Ir(E + "q"), V("t"))))
    ev = event([(A, P, 1), (A, Q, 2), (B, P, 3), (A, P, 1)])
    assert solve(gm, ev) == [{"s": A, "o": 1, "t": 2}]


def test_an_iri_never_equals_a_string_with_its_text() -> None:
    gm = pattern.GraphMatch("S", ((V("s"), Ir(E + "p"), L(E + "a")),))
    assert solve(gm, event([(A, P, A)])) == []
    assert solve(gm, event([(A, P, E + "a")])) == [{"s": A}]
    gm_iri = pattern.GraphMatch("S", ((V("s"), Ir(E + "p"), Ir(E + "a")),))
    assert solve(gm_iri, event([(A, P, E + "a")])) == []


def test_variable_predicate_and_repeated_variable() -> None:
    gm = pattern.GraphMatch("S", ((V("x"), V("p"), V("x")),))
    assert solve(gm, event([(A, P, A), (A, Q, B)])) == [{"x": A, "p": P}]


def test_filter_and_background_join() -> None:
    gm = pattern.GraphMatch(
        "S",
        ((V("s"), Ir(E + "p"), V("o")),),
        pattern.Compare(">", pattern.Attr("o"), pattern.Const(1)),
        E + "db",
        ((V("s"), Ir(E + "q"), V("owner")),),
    )
    ev = event([(A, P, 1), (B, P, 2)], kb=[(B, Q, A)])
    assert solve(gm, ev) == [{"s": B, "o": 2, "owner": A}]


def test_no_graph_for_the_stream_and_the_cache() -> None:
    gm = pattern.GraphMatch("T", ((V("s"), Ir(E + "p"), V("o")),))
    ev = event([(A, P, 1)])
    assert solve(gm, ev) == []
    assert list(ev[SOLUTIONS].values()) == [[]]
    truth = compile_predicate(pattern.GraphMatch("S", ((V("s"), Ir(E + "p"), V("o")),)))
    assert truth(ev) is True
