"""``columns_of``: columns whose evaluation gives exactly what the events give one by one."""

from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from cerfleet import compile_query, pattern
from cerfleet.ceql.printer import to_ceql
from cerfleet.complex_event import ComplexEvent
from cerfleet.events.columns import column, columns_of
from cerfleet.query import CompiledQuery
from tests.shared.strategies import TIME_FIELD, queries, streams

EXAMPLES = int(os.environ.get("CERFLEET_DIFF_EXAMPLES", "2500")) // 2
ALL_STRATEGIES = tuple(pattern.Strategy)
ALL_CONSUMES = tuple(pattern.Consume)
BIG = 2**53

# ----------------------------------------------------------------- dtype choices


@pytest.mark.parametrize(
    ("values", "dtype"),
    [
        ([], "float64"),
        ([None, None], "float64"),
        ([True, False], "bool"),
        ([True, None], "object"),
        ([1, -2], "int64"),
        ([BIG, -BIG], "int64"),
        ([1, None], "float64"),
        ([BIG + 1, 0], "object"),
        ([BIG + 1, None], "object"),
        ([1, 2.5], "float64"),
        ([1, 2.5, None], "float64"),
        ([BIG + 1, 2.5], "object"),
        ([10**400, 2.5], "object"),
        ([1.5, math.nan], "object"),
        ([1.5, None, math.nan], "object"),
        ([1.5, math.inf], "object"),
        (["IBM", "MSFT"], "<U4"),
        (["", ""], "<U1"),
        (["IBM", None], "object"),
        (["a\0"], "object"),
        (["a", 1], "object"),
        ([1, True], "object"),
        ([np.int64(1), 2], "object"),
        ([[1, 2], [3, 4]], "object"),
        ([{"a": 1}], "object"),
    ],
)
def test_dtype_choices(values: list[Any], dtype: str) -> None:
    col = column(values)
    assert col.dtype == np.dtype(dtype)
    assert len(col) == len(values)
    if col.dtype == object:
        # The values themselves, nested lists not unpacked.
        assert all(a is b for a, b in zip(col.tolist(), values, strict=True))
    else:
        expected = [math.nan if v is None else v for v in values]
        assert repr(col.tolist()) == repr([col.dtype.type(v).item() for v in expected])


def test_stock_events_get_vector_columns() -> None:
    events = [
        {"type": "BUY", "name": "MSFT", "price": 101.5, "volume": 300, "timestamp": 1000},
        {"type": "SELL", "name": "IBM", "price": 99.25, "volume": 100, "timestamp": 1005},
    ]
    cols = columns_of(events, ["type", "name", "price", "volume", "timestamp"])
    assert {name: col.dtype.kind for name, col in cols.items()} == {
        "type": "U",
        "name": "U",
        "price": "f",
        "volume": "i",
        "timestamp": "i",
    }


def test_columns_of_reads_only_the_given_attributes_and_absent_ones_are_nan() -> None:
    cols = columns_of([{"type": "A", "x": 1, "other": "no"}], {"type", "x", "absent"})
    assert sorted(cols) == ["absent", "type", "x"]
    assert np.isnan(cols["absent"]).all()


def test_very_long_strings_stay_objects() -> None:
    # As a U array: 10 001 strings padded to 100 000 characters of 4 bytes, 4 GB.
    values = ["x" * 100_000] + ["a"] * 10_000
    assert column(values).dtype == object
    assert column(["abc"] * 10_000).dtype == np.dtype("<U3")


# ------------------------------------------------------- columns give what rows give


def _repr(ces: list[ComplexEvent]) -> list[str]:
    """Exact values, types included (1 and 1.0 differ), NaN equal to itself."""
    return [repr(ce.to_dict()) for ce in ces]


def check_columns_match_rows(
    q: CompiledQuery, stream: list[dict[str, Any]], cut: int, context: str = ""
) -> None:
    parts = [stream[:cut], stream[cut:]]
    rows = q.evaluator()
    expected = [ce for part in parts for ce in rows.process_batch(part)]
    cols = q.evaluator()
    got = [
        ce
        for part in parts
        for ce in cols.process_columns(columns_of(part, q.attributes), events=part)
    ]
    assert _repr(got) == _repr(expected), context
    for ce in got:
        # The very objects given, at their positions.
        assert all(e is stream[p] for p, e in zip(ce.positions, ce.events, strict=True)), context
    assert (cols.position, cols.late, cols.unpartitioned) == (
        rows.position,
        rows.late,
        rows.unpartitioned,
    ), context

    # No partial match the row path holds is missing from the columnar path. Which
    # idle substreams exist differs: each path evicts a key when it finds it idle, and
    # a batch looks at a key (and prunes its expired runs) less often than rows do.
    live = {key for key, sub in rows.substreams.items() if not sub.idle}
    assert live <= set(cols.substreams), context


# Value flavours for one attribute of a whole stream, so that columns of every
# kind occur (per event at random, nearly every column would be objects).
_FLAVOURS = (
    "int",
    "int",
    "float",
    "mixed",
    "big",
    "huge",
    "bool",
    "str",
    "nan",
    "inf",
    "kinds",
    "none",
)
_BIG_VALUES = (BIG, -BIG, BIG + 1, 2**31 + 1, 2**40, 2**62, 10**30, -(2**63))


def _flavoured(draw: st.DrawFn, value: Any, flavour: str, name: str) -> Any:
    coin = draw(st.integers(0, 3))
    if flavour == "float":
        return float(value) + (0.5 if coin == 0 else 0.0)
    if flavour == "mixed":
        return float(value) if coin else value
    if flavour == "big":  # within ±2**53: int64 columns whose arithmetic may overflow
        return draw(st.sampled_from((2**31 + 1, 2**40, BIG, -BIG))) if coin == 0 else value
    if flavour == "huge":
        return draw(st.sampled_from(_BIG_VALUES)) if coin == 0 else value
    if flavour == "bool":
        return value % 2 == 1
    if flavour == "str":
        if name == TIME_FIELD and 0 <= value < 1000 and coin:
            return f"1970-01-01T00:00:00.{value:03d}Z"  # ISO-8601: the same milliseconds
        return str(value) if coin else f"{value}\0"
    if flavour == "nan":
        return math.nan if coin == 0 else float(value)
    if flavour == "inf":
        return draw(st.sampled_from((math.inf, -math.inf))) if coin == 0 else value
    if flavour == "kinds":
        return (value, str(value), value % 2 == 1, float(value))[coin]
    if flavour == "none":
        return None
    return value


@st.composite
def rich_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """``streams()`` with each attribute's values turned into one flavour: floats,
    ints and floats mixed, big ints, bools, strings (ISO timestamps for t), NaN,
    infinities, mixed kinds or all None; event types sometimes missing or not
    strings."""
    stream = draw(streams())
    for name in ("x", "y", "k", TIME_FIELD):
        flavour = draw(st.sampled_from(_FLAVOURS), label=f"{name} flavour")
        for event in stream:
            if event.get(name) is not None:
                event[name] = _flavoured(draw, event[name], flavour, name)
    types = draw(st.sampled_from(("str", "str", "str", "missing", "kinds")), label="types")
    for event in stream:
        if types != "str" and draw(st.integers(0, 4)) == 0:
            if types == "missing":
                del event["type"]
            else:
                event["type"] = draw(st.sampled_from((1, None, "A\0", True)))
    return stream


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(
    query=queries(strategies=ALL_STRATEGIES, consumes=ALL_CONSUMES, limits=True),
    stream=rich_streams(),
    cut=st.integers(0, 10),
)
def test_columns_of_gives_what_events_give(
    query: pattern.Pattern, stream: list[dict[str, Any]], cut: int
) -> None:
    text = to_ceql(query)
    context = f"query:\n{text}\nstream:\n" + "\n".join(repr(e) for e in stream)
    note(context)
    check_columns_match_rows(compile_query(text, time_field=TIME_FIELD), stream, cut, context)


# ---------------------------------------------- where numpy alone would be inexact


@pytest.mark.parametrize(
    ("query", "stream"),
    [
        # int64 arithmetic overflows where Python's ints do not.
        (
            "SELECT * FROM S WHERE A ; B FILTER A[x * y > 0]",
            [{"type": "A", "x": 2**40, "y": 2**40}, {"type": "B"}],
        ),
        (
            "SELECT * FROM S WHERE A ; B FILTER A[x + y = 9007199254740993]",
            [{"type": "A", "x": BIG, "y": 1}, {"type": "B"}],
        ),
        # Ints with a missing value are floats: Python still adds them exactly.
        (
            "SELECT * FROM S WHERE A ; B FILTER A[x + 1 > 9007199254740992]",
            [{"type": "A", "x": BIG}, {"type": "A"}, {"type": "B"}],
        ),
        # A big constant against floats: Python compares exactly, numpy rounds it.
        (
            "SELECT * FROM S WHERE A ; B FILTER A[x != 9007199254740993]",
            [{"type": "A", "x": 9007199254740992.0}, {"type": "B"}],
        ),
        # NaN is a present value: != holds for it; a missing value makes it false.
        (
            "SELECT * FROM S WHERE A ; B FILTER A[x != 1]",
            [{"type": "A", "x": math.nan}, {"type": "A"}, {"type": "B"}],
        ),
        # Strings with a missing one: no sentinel can stand for it.
        (
            "SELECT * FROM S WHERE A ; B FILTER A[name != 'IBM']",
            [{"type": "A", "name": "MSFT"}, {"type": "A"}, {"type": "B", "name": "IBM"}],
        ),
        (
            "SELECT * FROM S WHERE A ; B FILTER A[name LIKE 'I.*'] AND B[flag = TRUE]",
            [{"type": "A", "name": "IBM"}, {"type": "B", "flag": True}, {"type": "B"}],
        ),
        # An infinite timestamp is no clock; NaN under an attribute window is kept.
        (
            "SELECT * FROM S WHERE A ; B WITHIN 5 MILLISECONDS",
            [{"type": "A", "t": math.inf}, {"type": "A", "t": 1.5}, {"type": "B", "t": 3}],
        ),
        (
            "SELECT * FROM S WHERE A ; B WITHIN 5 [t]",
            [{"type": "A", "t": 1}, {"type": "A", "t": math.nan}, {"type": "B", "t": 3}],
        ),
        (
            "SELECT * FROM S WHERE A ; B WITHIN 5 MILLISECONDS",
            [{"type": "A", "t": "1970-01-01T00:00:00.001Z"}, {"type": "B", "t": "4"}],
        ),
        # 1 and 1.0 share a partition; each complex event's key is its end event's.
        (
            "SELECT * FROM S WHERE A ; B PARTITION BY [k]",
            [
                {"type": "A", "k": 1},
                {"type": "A", "k": None},
                {"type": "B", "k": 1.0},
                {"type": "B", "k": 1},
            ],
        ),
        (
            "SELECT * FROM S WHERE A ; B PARTITION BY [k]",
            [{"type": "A", "k": 1}, {"type": "B", "k": True}, {"type": "B", "k": "1"}],
        ),
    ],
)
@pytest.mark.parametrize("cut", [0, 1])
def test_exact_where_vectors_would_not_be(
    query: str, stream: list[dict[str, Any]], cut: int
) -> None:
    q = compile_query(query, time_field="t")
    assert q.evaluator().process_batch(stream)  # each case has output
    check_columns_match_rows(q, stream, cut, json.dumps(query))


def test_overflowing_int64_columns_are_exact_without_events_too() -> None:
    q = compile_query("SELECT * FROM S WHERE A ; B FILTER A[x * x > 0]")
    cols = {"type": np.array(["A", "B"]), "x": np.array([2**40, 1], dtype=np.int64)}
    assert [ce.positions for ce in q.evaluator().process_columns(cols)] == [(0, 1)]


def test_output_events_are_the_given_objects() -> None:
    q = compile_query("SELECT * FROM S WHERE A ; B FILTER A[x > 1]")
    events = [{"type": "A", "x": 2, "note": "kept"}, {"type": "B", "x": None}]
    (ce,) = q.evaluator().process_columns(columns_of(events, q.attributes), events=events)
    assert ce.events[0] is events[0] and ce.events[1] is events[1]
    assert ce.to_dict()["events"] == events  # ints stay ints, None stays None


def test_events_must_match_the_columns() -> None:
    q = compile_query("SELECT * FROM S WHERE A ; B")
    events = [{"type": "A"}, {"type": "B"}]
    with pytest.raises(ValueError, match="events"):
        q.evaluator().process_columns(columns_of(events, q.attributes), events=events[:1])


def test_a_clock_beyond_int64_still_makes_an_older_event_late() -> None:
    # Found by the property test above: the clock 10**30 (an object column, read row by
    # row) then 0 in the next batch, whose vector pass started from that int.
    q = compile_query(
        "SELECT * FROM S WHERE NOT(A) WITHIN 0 [t] CONSUME BY ANY", time_field=TIME_FIELD
    )
    stream: list[dict[str, Any]] = [
        {"type": "A", "y": 0},
        {"type": "A", "x": 0, "t": 10**30},
        {"type": "A", "x": 0},
        {"type": "A", "t": 0},
        *({"type": "A"} for _ in range(6)),
    ]
    check_columns_match_rows(q, stream, 2)
