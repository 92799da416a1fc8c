"""Why SEQ^c/SEQ^r with consumption are not the automata's selection strategies and
consumption (README, RSEP-QL "On the engine"): on Example 11's stream, CEQL's NEXT
or LAST with CONSUME BY ANY over the same pattern form reports one of the two rows
the paper gives, because a strategy picks one position set among the complex events
ending at an instant, blind to the join on ?y that the output stage checks after, and
CONSUME BY drops every partial match rather than the triples a result used."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from cerfleet import pattern
from cerfleet.cli.rdf_run import rsepql_results
from cerfleet.query import CompiledQuery
from cerfleet.rdf.instants import instants
from cerfleet.rdf.trig import read_trig
from cerfleet.rsepql.output import Rows
from cerfleet.rsepql.parser import parse
from cerfleet.rsepql.translate import to_pattern
from tests.shared.rsepql.test_examples import HEAD, STREAM, E

EVENTS = "EVENT ON :w1 { ?x :p ?y . } AS E1\nEVENT ON :w2 { ?y :q ?z . } AS E2\n"


INTERLEAVED = """@prefix : <http://e/> .
@prefix t: <https://cerfleet.dev/ns#> .
:G1 t:time 1 . :G2 t:time 2 . :G3 t:time 3 . :G4 t:time 4 .
:G1 { :a1 :p :b1 . } :G2 { :a2 :p :b2 . } :G3 { :b1 :q :c1 . } :G4 { :b2 :q :c2 . }
"""


def _automaton(strategy: pattern.Strategy, stream: str = STREAM) -> list[tuple[str, Any]]:
    text = HEAD.format(select="?x") + EVENTS + "WHERE { MATCH { E1 SEQ E2 } }\n"
    query = parse(text)
    form = dataclasses.replace(to_pattern(query), strategy=strategy, consume=pattern.Consume.ANY)
    evaluator = CompiledQuery.from_pattern(form, text=text, language="rsepql").evaluator()
    events, _ = read_trig(stream.encode())
    merged, _ = instants([("http://e/S", events)])
    rows = Rows(query)
    out = []
    for i, instant in enumerate(merged):
        for complex_event in evaluator.process(instant, i):
            out += [
                (r["x"][len(E) :], r["time"]) for r in rows.rows(complex_event.positions, merged)
            ]
    return out


@pytest.mark.parametrize(
    ("strategy", "policy"),
    [(pattern.Strategy.NEXT, "SEQ^c"), (pattern.Strategy.LAST, "SEQ^r")],
)
def test_strategy_and_consume_by_differ_from_the_policies(
    strategy: pattern.Strategy, policy: str
) -> None:
    text = HEAD.format(select="?x") + EVENTS + f"WHERE {{ MATCH CONSUMING {{ E1 {policy} E2 }} }}\n"
    events, _ = read_trig(STREAM.encode())
    policies = [(r["x"][len(E) :], r["time"]) for r in rsepql_results(text, [("S", events)])]
    # Evaluated at every instant, both policies give Example 11's two rows at 6.
    assert policies == [("a1", 6), ("a2", 6)]
    got = _automaton(strategy)
    assert len(got) < len(policies) and set(got) < set(policies), got


def test_consume_by_drops_what_chronological_keeps() -> None:
    # a1 (b1) at 1, a2 (b2) at 2, b1c1 at 3, b2c2 at 4. Chronological with P^c: at 3
    # ({a1,b1,c1},1,3) consumes a1 and b1c1 only; at 4 b2c2 pairs with a2. ALL with
    # CONSUME BY ANY reports the first and drops a2's partial match with it.
    text = HEAD.format(select="?x") + EVENTS + "WHERE { MATCH CONSUMING { E1 SEQ^c E2 } }\n"
    events, _ = read_trig(INTERLEAVED.encode())
    policies = [(r["x"][len(E) :], r["time"]) for r in rsepql_results(text, [("S", events)])]
    assert policies == [("a1", 3), ("a2", 4)]
    assert _automaton(pattern.Strategy.ALL, INTERLEAVED) == [("a1", 3)]
