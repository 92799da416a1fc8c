"""Bounded out-of-orderness: input shuffled within the bound gives the output of the
time-ordered input; beyond the bound an event is late as without one."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from cerfleet import pattern
from cerfleet.ceql.printer import to_ceql
from cerfleet.events.reorder import Reorder, parse_duration
from cerfleet.query import compile_query
from cerfleet.streams import LATE, steps
from tests.shared.strategies import TIME_FIELD, queries, streams

Output = list[tuple[int, int, tuple[int, ...], Any, tuple[dict[str, Any], ...]]]


def _run(text: str, stream: Sequence[dict[str, Any]], max_lateness: float | None) -> Any:
    compiled = compile_query(text, time_field=TIME_FIELD)
    evaluator = compiled.evaluator()
    source = io.BytesIO(b"".join(json.dumps(e).encode() + b"\n" for e in stream))
    out: Output = []
    reports: list[tuple[int, str]] = []
    for step in steps(compiled, evaluator, source, max_lateness=max_lateness):
        reports += step.reports
        out += [
            (ce.start, ce.end, tuple(ce.positions), ce.key, tuple(dict(e) for e in ce.events))
            for ce in step.complex_events
        ]
    return out, reports, evaluator.late


@st.composite
def _shuffled(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """A stream in time order and an arrival order of it where no event comes more
    than ``bound`` after an event with a later time."""
    bound = draw(st.integers(0, 4))
    ordered = [dict(e, n=i) for i, e in enumerate(draw(streams(max_size=9)))]
    for i, event in enumerate(ordered):
        if event.get(TIME_FIELD) is None:
            event[TIME_FIELD] = i  # every event has a time here; missing ones: below
    ordered.sort(key=lambda e: e[TIME_FIELD])
    delays = [draw(st.integers(0, bound)) for _ in ordered]
    arrival = sorted(range(len(ordered)), key=lambda i: ordered[i][TIME_FIELD] + delays[i])
    shuffled = [ordered[i] for i in arrival]
    # Ties in time are evaluated in arrival order.
    in_time_order = sorted(shuffled, key=lambda e: e[TIME_FIELD])
    return shuffled, in_time_order, bound


@settings(max_examples=400, deadline=None, database=None)
@given(data=_shuffled(), query=queries(strategies=tuple(pattern.Strategy)))
def test_shuffled_within_the_bound_gives_the_time_ordered_output(
    data: tuple[list[dict[str, Any]], list[dict[str, Any]], int], query: pattern.Pattern
) -> None:
    shuffled, in_time_order, bound = data
    text = to_ceql(query)
    note(text)
    reordered, _, late = _run(text, shuffled, max_lateness=bound)
    expected, _, expected_late = _run(text, in_time_order, max_lateness=None)
    assert late == expected_late == 0
    assert reordered == expected


def test_beyond_the_bound_an_event_is_late_and_reported_with_its_line() -> None:
    text = "SELECT * FROM S WHERE A ; B WITHIN 100 MILLISECONDS"
    stream = [
        {"type": "A", TIME_FIELD: 10},
        {"type": "A", TIME_FIELD: 30},
        {"type": "B", TIME_FIELD: 25},  # 5 ms late: within a 5 ms bound
        {"type": "B", TIME_FIELD: 40},
        {"type": "A", TIME_FIELD: 20},  # 20 ms late: beyond
    ]
    out, reports, late = _run(text, stream, max_lateness=5)
    assert late == 1 and reports == [(5, LATE)]
    # In order A@10, B@25, A@30, A@20 (late: position 3, in nothing), B@40.
    assert sorted((s, e, p) for s, e, p, _, _ in out) == [
        (0, 1, (0, 1)),
        (0, 4, (0, 4)),
        (2, 4, (2, 4)),
    ]
    _, _, late_without = _run(text, stream, max_lateness=None)
    assert late_without == 2  # B@25 and A@20 arrive after A@30


def test_release_depends_on_the_input_only() -> None:
    buffer: Reorder[str] = Reorder(10)
    assert buffer.push(100, "a") == []
    assert buffer.push(95, "b") == []
    assert buffer.push(None, "c") == []  # held as if at 100, after a
    assert buffer.push(111, "d") == ["b", "a", "c"]
    assert buffer.beyond(100) and not buffer.beyond(101) and not buffer.beyond(None)
    assert buffer.push(101, "e") == ["e"]  # at the watermark: out at once, in order
    assert len(buffer) == 1 and buffer.flush() == ["d"]


@pytest.mark.parametrize(
    ("text", "ms"), [("250", 250), ("250ms", 250), ("2s", 2000), ("1.5m", 90000), ("1h", 3.6e6)]
)
def test_durations(text: str, ms: float) -> None:
    assert parse_duration(text) == ms


def test_a_bad_duration_says_what_is_accepted() -> None:
    with pytest.raises(ValueError, match="ms, s, m or h"):
        parse_duration("5 fortnights")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.integers(0, 60)), max_size=30),
    st.integers(0, 30),
    st.integers(0, 20),
)
def test_a_buffer_restored_from_json_releases_what_the_original_would(
    times: list[int | None], cut: int, bound: int
) -> None:
    # A checkpoint goes through JSON, timeless items included.
    original: Reorder[int] = Reorder(bound)
    for i, t in enumerate(times[:cut]):
        original.push(t, i)
    state = json.loads(json.dumps(original.export(lambda item: item), allow_nan=False))
    copy: Reorder[int] = Reorder.restore(state, int)
    rest = list(enumerate(times))[cut:]
    assert [x for i, t in rest for x in copy.push(t, i)] + copy.flush() == [
        x for i, t in rest for x in original.push(t, i)
    ] + original.flush()
