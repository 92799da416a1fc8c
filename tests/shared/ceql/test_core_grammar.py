"""Syntax of CORE's C++ engine and experiment queries beyond the paper's CEQL: `A, B`
sequencing and chained comparisons (the Google cluster queries), `SELECT ANY`,
`NOT(S>E)`, a unary `+` and backtick-quoted names. Each is the pattern form of
syntax already proved against the oracle, or is evaluated against it here."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from cerfleet.ceql.analysis import event_types
from cerfleet.ceql.parser import parse, parse_and_check
from cerfleet.ceql.printer import to_ceql
from cerfleet.query import compile_query
from tests.shared.oracle import oracle_by_end

# The suite runs a few hundred examples per property; the proof run sets
# CERFLEET_PROOF_EXAMPLES=2500.
EXAMPLES = int(os.environ.get("CERFLEET_PROOF_EXAMPLES", "300"))


@pytest.mark.parametrize(
    ("core", "same_as"),
    [
        ("A, B", "A ; B"),
        ("(A as a, B as b, A as c)", "(A as a ; B as b ; A as c)"),
        ("A, B : C", "A ; B : C"),
        ("A, B OR C, D", "A ; B OR C ; D"),
        ("A, B AND C", "A ; B AND C"),
        ("A, B+ FILTER B[x > 1], C", "A ; B+ FILTER B[x > 1] ; C"),
        (
            "A as a, B as b, A as c FILTER a[x] = b[x] = c[x]",
            "A as a ; B as b ; A as c FILTER a[x] = b[x] AND b[x] = c[x]",
        ),
        (
            "A as a, B as b FILTER a[x] < b[x] <= a[y] AND a[x > 0]",
            "A as a ; B as b FILTER a[x] < b[x] AND b[x] <= a[y] AND a[x > 0]",
        ),
        ("A FILTER A[x > +1 AND y = +(2 - x)]", "A FILTER A[x > 1 AND y = (2 - x)]"),
        ("`A` ; `B` FILTER `B`[`x` > 1]", "A ; B FILTER B[x > 1]"),
    ],
)
def test_core_spellings_mean_what_their_counterparts_mean(core: str, same_as: str) -> None:
    assert parse(f"SELECT * FROM S WHERE {core}") == parse(f"SELECT * FROM S WHERE {same_as}")


def test_select_any_is_all_as_in_core_s_engine() -> None:
    # CORE C++ parses every strategy and applies none: ANY is its default, ALL.
    assert parse("SELECT ANY * FROM S WHERE A ; B") == parse("SELECT * FROM S WHERE A ; B")


def test_backticks_make_any_spelling_a_name() -> None:
    query = parse_and_check("SELECT * FROM `from` WHERE `select` ; `a``b` FILTER `select`[x = 1]")
    assert query.streams == ("from",)
    assert event_types(query.where) == ["select", "a`b"]


def test_a_chain_of_equalities_keys_the_evaluator_like_the_pairs() -> None:
    chained = compile_query(
        "SELECT * FROM S WHERE A as a, B as b, A as c FILTER a[k] = b[k] = c[k]"
    )
    pairs = compile_query(
        "SELECT * FROM S WHERE A as a ; B as b ; A as c FILTER a[k] = b[k] AND b[k] = c[k]"
    )
    assert chained.key_attrs == pairs.key_attrs


CLUSTER = """CREATE STREAM S { EVENT TASK { job: int, machine: int, status: int, n: int } }
SELECT a, b, c FROM S
WHERE (TASK as a, TASK as b, TASK as c)
FILTER a[status = 1] AND b[status = 2] AND c[status = 1] AND
    a[job] = b[job] = c[job] AND a[machine] = c[machine]
WITHIN 6 [n]
CONSUME BY ANY
"""

NOT_QUALIFIED = """SELECT * FROM S1, S2
WHERE A ; NOT(S2>B FILTER B[x > 0]) ; A
"""


@st.composite
def _tasks(draw: st.DrawFn) -> list[dict[str, Any]]:
    return [
        {
            "type": "TASK",
            "job": draw(st.integers(0, 1)),
            "machine": draw(st.integers(0, 1)),
            "status": draw(st.integers(1, 2)),
            "n": i,
        }
        for i in range(draw(st.integers(0, 10)))
    ]


@st.composite
def _two_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    return [
        {
            "type": draw(st.sampled_from(("A", "B"))),
            "stream": draw(st.sampled_from(("S1", "S2", "S3"))),
            "x": draw(st.integers(-1, 1)),
        }
        for _ in range(draw(st.integers(0, 8)))
    ]


def _check(text: str, stream: Sequence[dict[str, Any]], stream_field: str | None) -> None:
    form = parse_and_check(text)
    expected = oracle_by_end(form, stream, time_field="n", stream_field=stream_field)
    evaluator = compile_query(text, time_field="n", stream_field=stream_field).evaluator()
    for index, event in enumerate(stream):
        got = {(ce.start, ce.end, tuple(ce.positions), ce.key) for ce in evaluator.process(event)}
        assert got == expected.get(index, set()), f"event {index}"


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(stream=_tasks())
def test_the_google_cluster_shape_matches_the_oracle(stream: list[dict[str, Any]]) -> None:
    note(str(stream))
    _check(CLUSTER, stream, None)


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(stream=_two_streams())
def test_not_of_a_qualified_event_matches_the_oracle(stream: list[dict[str, Any]]) -> None:
    note(str(stream))
    _check(NOT_QUALIFIED, stream, "stream")


def test_the_shapes_find_something_on_streams_made_for_them() -> None:
    tasks = [
        {"type": "TASK", "job": 1, "machine": 0, "status": s, "n": i}
        for i, s in enumerate((1, 2, 1))
    ]
    assert oracle_by_end(parse_and_check(CLUSTER), tasks, time_field="n")
    _check(CLUSTER, tasks, None)
    events = [
        {"type": "A", "stream": "S1", "x": 0},
        {"type": "B", "stream": "S1", "x": 1},  # an S1>B: not an S2>B, so a NOT(S2>B ...)
        {"type": "A", "stream": "S2", "x": 0},
    ]
    assert oracle_by_end(parse_and_check(NOT_QUALIFIED), events, stream_field="stream")
    _check(NOT_QUALIFIED, events, "stream")


def test_queries_with_quoted_names_and_qualified_negations_print_back_to_themselves() -> None:
    text = """CREATE STREAM `from` { EVENT `select` { `max`: int, `a b`: string } }
CREATE QUARANTINE { DIRECT { `from` } }
SELECT `select` FROM `from`
WHERE `select` ; NOT(`from`>`select` FILTER `select`[`max` > 1]) AS x ; NOT(`from`>`select`)
FILTER `select`[`a b` = 'q']
PARTITION BY [`a b`] WITHIN 3 [`max`]"""
    query = parse_and_check(text)
    assert parse(to_ceql(query)) == query
