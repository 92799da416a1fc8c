"""Absence (``φ1 ; !ψ ; φ2``) and ``NOT(ψ)`` on hand-made streams, the expected
complex events written out by hand, at the edges the README defines."""

from __future__ import annotations

from typing import Any

from cerfleet.query import compile_query


def run(text: str, events: list[dict[str, Any]]) -> list[tuple[int, ...]]:
    evaluator = compile_query(text).evaluator()
    return [ce.positions for event in events for ce in evaluator.process(event)]


def stream(types: str, **attrs: list[Any]) -> list[dict[str, Any]]:
    out = [{"type": t} for t in types]
    for name, values in attrs.items():
        for event, value in zip(out, values, strict=True):
            if value is not None:
                event[name] = value
    return out


def test_a_then_c_with_no_b_between() -> None:
    #        0    1    2    3    4    5
    events = stream("ACABCC")
    got = run("SELECT * FROM S WHERE A ; !B ; C", events)
    # (0,1) and (2,... ) are fine before the B at 3; after it only A's after 3 count.
    assert got == [(0, 1)]


def test_the_excluded_event_may_end_the_match() -> None:
    # A B where B is also what C matches: the gap is *between*, so the end is free.
    events = stream("AB")
    assert run("SELECT * FROM S WHERE A ; !B ; B", events) == [(0, 1)]


def test_a_filtered_exclusion_lets_other_events_of_its_type_pass() -> None:
    events = stream("ABBC", x=[None, 1, 5, None])
    query = "SELECT * FROM S WHERE A ; !(B FILTER B[x > 3]) ; C"
    assert run(query, events) == []
    events = stream("ABBC", x=[None, 1, 2, None])
    assert run(query, events) == [(0, 3)]


def test_absence_follows_the_partition() -> None:
    events = stream("AABCC", k=[1, 2, 1, 2, 1])
    query = "SELECT * FROM S WHERE A ; !B ; C PARTITION BY [k]"
    # k=1: A0 B2 C4 (B between); k=2: A1 C3 (no B of k=2 between).
    assert run(query, events) == [(1, 3)]


def test_absence_inside_iteration_holds_in_each_gap() -> None:
    events = stream("ACACBAC")
    query = "SELECT * FROM S WHERE (A ; !B ; C)+ WITHIN 3 EVENTS"
    got = run(query, events)
    assert (0, 1) in got and (2, 3) in got and (0, 1, 2, 3) in got
    assert all(not (p[0] <= 4 < p[-1]) for p in got)  # no match spans the B at 4
    assert (5, 6) in got


def test_not_matches_one_event_of_any_other_kind() -> None:
    events = stream("ABCB")
    assert run("SELECT * FROM S WHERE A ; NOT(B) ; B", events) == [(0, 2, 3)]
    events = stream("ABB", x=[None, 1, 9])
    query = "SELECT * FROM S WHERE A ; NOT(B FILTER B[x > 5]) ; B"
    # B1 (x=1) is no "B with x > 5", so it may be the NOT event; B2 then ends the match.
    assert run(query, events) == [(0, 1, 2)]
