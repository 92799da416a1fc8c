"""Streams merged into instants: time order, one instant per timestamp, each stream's
graph in it; two graphs of one stream at one time are merged, with a report."""

from __future__ import annotations

from cerfleet.rdf.instants import GRAPHS, TIME, instants
from cerfleet.rdf.trig import RdfEvent, read_trig

HEAD = "@prefix t: <https://cerfleet.dev/ns#> . @prefix : <http://e/> .\n"


def events(body: str) -> list[RdfEvent]:
    return read_trig((HEAD + body).encode())[0]


def test_time_order_and_one_instant_per_timestamp() -> None:
    s1 = events(":a t:time 3 . :a { :x :p 1 . } :b t:time 1 . :b { :x :p 2 . }")
    s2 = events(":c t:time 3 . :c { :y :p 3 . } :d t:time 2 . :d { :y :p 4 . }")
    merged, reports = instants([("S1", s1), ("S2", s2)])
    assert reports == []
    assert [(i["timestamp"], i[TIME], sorted(i[GRAPHS])) for i in merged] == [
        (1000, 1, ["S1"]),
        (2000, 2, ["S2"]),
        (3000, 3, ["S1", "S2"]),
    ]


def test_two_graphs_of_one_stream_at_one_time_are_merged() -> None:
    s1 = events(":a t:time 5 . :a { :x :p 1 . } :b t:time 5 . :b { :x :p 2 . :x :p 1 . }")
    merged, reports = instants([("S1", s1)])
    assert len(merged) == 1
    graph = merged[0][GRAPHS]["S1"]
    assert sorted(o for _, o in graph["http://e/p"]) == [1, 2]
    assert len(reports) == 1 and "merged" in reports[0]
    # The events read are left as they were.
    assert [len(e.graph["http://e/p"]) for e in s1] == [1, 2]
