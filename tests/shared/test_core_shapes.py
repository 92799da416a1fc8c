"""Queries of every shape found in CORE's experiment folders (written here, in another
domain: a warehouse's sensors and orders), each with its stream declaration, compiled
and evaluated on small generated streams against the brute-force oracle.

The shapes: long sequences of named events each narrowed by its own filter (two
conditions in one bracket too), a trailing event no stream contains, WITHIN over an
attribute, CONSUME BY NONE / ANY, LIMIT, a selection strategy; a group named as a whole
and filtered as a whole besides its members; contiguous pairs under OR, filtered on a
variable both sides bind; a sequence partitioned by an attribute within a time span;
CORE C++'s `CREATE STREAM` declarations and the paper's `DECLARE STREAM`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from cerfleet.ceql.parser import parse_and_check
from cerfleet.query import compile_query
from tests.shared.oracle import oracle_by_end

WAREHOUSE = """
CREATE STREAM W {
    EVENT PICK { order: int, bay: string, weight: double, ts: long },
    EVENT PACK { order: int, bay: string, weight: double, ts: long },
    EVENT SHIP { order: int, bay: string, weight: double, ts: long }
}
"""
SENSORS = """
DECLARE STREAM H {
    EVENT READING { unit: int, level: double, at: primary_time, ok: boolean }
}
"""

SHAPES = {
    "long sequence, filters per variable, absent tail, CONSUME BY NONE": WAREHOUSE
    + """
SELECT LAST * FROM W
WHERE (PICK AS p1; PACK AS p2; PACK AS p3; PICK AS p4; SHIP AS never)
FILTER p1[bay = 'north'] AND p2[bay = 'south' and weight > 1] AND p3[bay = 'north']
   AND p4[weight <= 2] AND never[bay = 'nowhere']
WITHIN 6 [ts]
CONSUME BY NONE
""",
    "long sequence, CONSUME BY ANY, LIMIT": WAREHOUSE
    + """
SELECT * FROM W
WHERE (PICK as a; PICK as b; PACK as c; SHIP as d)
FILTER a[bay = 'north'] AND b[bay = 'south'] AND c[weight > 0.5] AND d[order IN {1..2}]
WITHIN 8 [ts]
CONSUME BY ANY
LIMIT 3
""",
    "group named as a whole": SENSORS
    + """
SELECT * FROM H
WHERE (READING as r1; READING as r2; READING as r3) as all3
FILTER all3[level > 1] AND r1[unit = 0] AND r2[unit = 1] AND r3[unit = 2 and ok = true]
WITHIN 5 [at]
CONSUME BY ANY
LIMIT 1000
""",
    "contiguous pairs under OR, one shared variable": WAREHOUSE
    + """
SELECT * FROM W
WHERE (PICK AS x : PACK AS x) OR (PACK AS x : PICK AS x)
FILTER x[bay = 'north']
WITHIN 3 [ts]
""",
    "partitioned sequence within a time span": WAREHOUSE
    + """
SELECT * FROM W
WHERE PICK ; PICK ; SHIP
PARTITION BY [order]
WITHIN 4 MILLISECONDS
""",
    "strategies and iteration over a declared stream": WAREHOUSE
    + """
SELECT MAX * FROM W
WHERE PICK AS first ; (PACK FILTER PACK[weight > 1])+ AS packs ; SHIP
FILTER first[bay != 'south']
WITHIN 6 [ts]
""",
    "conjunction and absence in one query": WAREHOUSE
    + """
SELECT * FROM W
WHERE (PICK ; !(SHIP FILTER SHIP[bay = 'north']) ; PACK) AND (PICK AS q ; PACK)
FILTER q[weight < 2]
WITHIN 5 [ts]
""",
}


def _event(kind: str, draw: st.DrawFn, clock: int) -> dict[str, Any]:
    if kind == "READING":
        return {
            "type": "READING",
            "unit": draw(st.integers(0, 2)),
            "level": draw(st.sampled_from((0.5, 1.5, 2))),
            "at": clock,
            "ok": draw(st.booleans()),
        }
    return {
        "type": kind,
        "order": draw(st.integers(1, 3)),
        "bay": draw(st.sampled_from(("north", "south"))),
        "weight": draw(st.sampled_from((0.25, 1, 1.5, 3))),
        "ts": clock,
    }


@st.composite
def _stream(draw: st.DrawFn, kinds: Sequence[str]) -> list[dict[str, Any]]:
    clock = 0
    out = []
    for _ in range(draw(st.integers(0, 9))):
        clock += draw(st.integers(0, 2))
        out.append(_event(draw(st.sampled_from(tuple(kinds))), draw, clock))
    return out


def _check(text: str, stream: Sequence[Mapping[str, Any]]) -> None:
    form = parse_and_check(text)
    expected = oracle_by_end(form, stream, time_field="ts")
    evaluator = compile_query(text, time_field="ts").evaluator()
    for index, event in enumerate(stream):
        got = {(ce.start, ce.end, tuple(ce.positions), ce.key) for ce in evaluator.process(event)}
        want = expected.get(index, set())
        if form.limit is None:
            assert got == want, f"event {index}"
        else:
            assert got <= want and len(got) == min(form.limit, len(want)), f"event {index}"


@pytest.mark.parametrize("shape", list(SHAPES))
@settings(max_examples=150, deadline=None, database=None)
@given(data=st.data())
def test_core_experiment_shapes_match_the_oracle(shape: str, data: st.DataObject) -> None:
    text = SHAPES[shape]
    kinds = ("READING",) if "READING" in text else ("PICK", "PACK", "SHIP")
    stream = data.draw(_stream(kinds), label="stream")
    note(text)
    _check(text, stream)


def test_every_shape_finds_something_on_a_stream_made_for_it() -> None:
    """The generated streams can satisfy the filters: a hand-made stream per shape
    yields complex events, so the comparisons above are not all of empty sets."""
    pick_n = {"type": "PICK", "order": 1, "bay": "north", "weight": 1, "ts": 0}
    pack_n = {"type": "PACK", "order": 1, "bay": "north", "weight": 1.5, "ts": 1}
    pick_s = {"type": "PICK", "order": 1, "bay": "south", "weight": 1, "ts": 2}
    pack_s = {"type": "PACK", "order": 1, "bay": "south", "weight": 1.5, "ts": 3}
    ship = {"type": "SHIP", "order": 1, "bay": "south", "weight": 1, "ts": 4}
    stream = [pick_n, pack_n, pick_s, pack_s, ship]
    readings = [{"type": "READING", "unit": u, "level": 1.5, "at": u, "ok": True} for u in range(3)]
    for shape, text in SHAPES.items():
        if shape.startswith("long sequence, filters"):
            continue  # ends on an event no stream has, by design
        events = readings if "READING" in text else stream
        form = parse_and_check(text)
        assert oracle_by_end(form, events, time_field="ts"), shape
        _check(text, events)
