"""Which close reports a result when a query's STEP windows slide by different steps:
the evaluation times are the union of their closes, so a window is read at a time
that is not one of its own closes (⌊T/β⌋·β, Definition 3)."""

from __future__ import annotations

from cerfleet.cli.rdf_run import rsepql_evaluations
from cerfleet.rdf.trig import read_trig
from cerfleet.rsepql.closes import Closes, evaluation_times
from cerfleet.rsepql.parser import parse
from tests.shared.rsepql.oracle import Bep, Query, Win, evaluations

E = "http://e/"
TEXT = """PREFIX : <http://e/>
SELECT ?x ?z
FROM NAMED :S WIN [RANGE 1 STEP 2] AS :w0
FROM NAMED :S WIN [RANGE 10 STEP 5] AS :w1
EVENT ON :w0 { ?x :p ?y . } AS E0
EVENT ON :w1 { ?y :q ?z . } AS E1
WHERE { MATCH { E0 SEQ E1 } }
"""
STREAM = """@prefix : <http://e/> .
@prefix t: <https://cerfleet.dev/ns#> .
:g1 t:time 4 . :g2 t:time 5 .
:g1 { :a :p :b . }
:g2 { :b :q :c . }
"""


def test_a_window_read_between_its_closes() -> None:
    # ET = closes of 2 from 4 up to 6 ∪ closes of 5 up to 5 = {4, 5, 6}. At 5, w0 is
    # read at ⌊5/2⌋·2 = 4: (3, 4] holds the item at 4; w1 at 5: (−5, 5] holds 5.
    # At 6, w0 holds (5, 6]: the item at 4 has left. So the result is reported at 5
    # only, although 5 is not a close of w0, and 5 − 4 = 1 is not below w0's width.
    query = parse(TEXT)
    assert list(evaluation_times(query, [4000, 5000])) == [4000, 5000, 6000]
    closes = Closes(query, [4000, 5000])
    assert closes.report_time([4000, 5000]) == 5000
    assert closes.report_time([3000, 5000]) is None  # w0 at 4 holds (3, 4]
    events, _ = read_trig(STREAM.encode())
    got = [(at, r["x"], r["z"], r["time"]) for at, r in rsepql_evaluations(TEXT, [("S", events)])]
    assert got == [(5000, E + "a", E + "c", 5)]
    q = Query(
        {"w0": Win("S", "range", 1, 2), "w1": Win("S", "range", 10, 5)},
        {"E0": Bep("w0", (("?x", E + "p", "?y"),)), "E1": Bep("w1", (("?y", E + "q", "?z"),))},
        ("SEQ", "E0", "E1"),
        ["x", "z"],
    )
    graphs = {4: {(E + "a", E + "p", E + "b")}, 5: {(E + "b", E + "q", E + "c")}}
    data = {"S": [(t, frozenset(g)) for t, g in graphs.items()]}
    assert evaluations(q, data) == {(5, 5, (("x", E + "a"), ("z", E + "c")))}


def test_a_second_step_over_days_of_epoch_times() -> None:
    # Two graphs a day apart with xsd:dateTime times and STEP 1 SECOND: 86,401 closes,
    # computed as needed rather than listed; the automata hold the result until the
    # close at the later graph, and the evaluator (here through LAST) skips the
    # closes at which no window changed.
    stream = """@prefix : <http://e/> .
@prefix t: <https://cerfleet.dev/ns#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
:g1 t:time "2026-01-01T00:00:00.500Z"^^xsd:dateTime .
:g2 t:time "2026-01-02T00:00:00.250Z"^^xsd:dateTime .
:g1 { :a :p :b . }
:g2 { :b :q :c . }
"""
    text = TEXT.replace("[RANGE 1 STEP 2]", "[LND 0]").replace(
        "[RANGE 10 STEP 5]", "[RANGE 10 STEP 1]"
    )
    events, _ = read_trig(stream.encode())
    second = events[1].ms
    got = [(at, r["x"]) for at, r in rsepql_evaluations(text, [("S", events)])]
    assert got == [(second + 750, E + "a")]
    last = text.replace("E0 SEQ E1", "E0 SEQ LAST(E1)")
    got = [(at, r["x"]) for at, r in rsepql_evaluations(last, [("S", events)])]
    assert got == [(second + 750, E + "a")]
