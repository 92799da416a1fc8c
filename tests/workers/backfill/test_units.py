"""Slices and keys give the whole-stream answer: the backfill's task functions (run by
``pipeline.local_backfill`` as Spark runs them) against the engine over the whole
stream in the backfill's order."""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet import pattern
from cerfleet.ceql.printer import to_ceql
from cerfleet.events.timestamps import parse_timestamp
from cerfleet.query import compile_query
from cerfleet.workers.backfill.job_query import JobQuery
from cerfleet.workers.backfill.schemas import BAD_RECORD, MATCH, STATS
from cerfleet.workers.backfill.slices import SlicePlan, label_bases, slice_epsilon
from tests.shared.strategies import TIME_FIELD, queries, streams
from tests.workers.backfill.pipeline import archive_rows, local_backfill

ALL_STRATEGIES = tuple(pattern.Strategy)
SLICEABLE = (pattern.Strategy.ALL, pattern.Strategy.STRICT)
TIME_WINDOWS = st.one_of(
    st.builds(
        pattern.Window,
        st.just(pattern.WindowKind.ATTRIBUTE),
        st.integers(1, 5),
        attr=st.just(TIME_FIELD),
    ),
    st.builds(
        pattern.Window,
        st.just(pattern.WindowKind.TIME),
        st.integers(1, 5),
        unit=st.just("MILLISECONDS"),
    ),
)


def _job(query: pattern.Pattern) -> JobQuery:
    return JobQuery("q", to_ceql(query), "type", TIME_FIELD)


def _ordered(events: list[dict[str, Any]]) -> list[int]:
    """Indexes of ``events`` in the backfill's order: by time (none first), then offset."""

    def key(i: int) -> tuple[bool, float, int]:
        t = parse_timestamp(events[i].get(TIME_FIELD))
        return (t is not None, t if t is not None else 0.0, i)

    return sorted(range(len(events)), key=key)


def _whole_stream(job: JobQuery, events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(key, start, end, offsets) of the engine's complex events over the ordered stream;
    start/end numbered per key under PARTITION BY, over the stream otherwise."""
    query = job.compiled()
    order = _ordered(events)
    found = query.evaluator().process_batch([events[i] for i in order])
    ranks: dict[int, int] = {}
    if query.partitioned:
        seen: Counter[Any] = Counter()
        for pos, i in enumerate(order):
            key = query.partition_key(events[i])
            if key is not None:
                ranks[pos] = seen[key]
                seen[key] += 1
    else:
        ranks = {pos: pos for pos in range(len(order))}
    return sorted(
        (
            None if ce.key is None else orjson.dumps(list(ce.key)).decode(),
            ranks[ce.start],
            ranks[ce.end],
            tuple(order[p] for p in ce.positions),
        )
        for ce in found
    )


def _backfilled(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    out = []
    for r in rows:
        if r["kind"] != MATCH:
            continue
        doc = orjson.loads(r["value"])
        assert doc["keyed"] is None and doc["query"] == "q"
        assert (doc["start"], doc["end"]) == (r["start"], r["end"])
        out.append((r["key"], r["start"], r["end"], tuple(s["offset"] for s in doc["sources"])))
    return sorted(out)


@settings(max_examples=400, deadline=None, database=None)
@given(
    query=queries(partitions=False, windows=False, strategies=SLICEABLE, limits=True),
    window=TIME_WINDOWS,
    events=streams(max_size=24),
    slices=st.integers(2, 6),
    batch=st.integers(1, 9),
)
def test_time_slices_find_what_the_whole_stream_finds(
    query: pattern.Pattern,
    window: pattern.Window,
    events: list[dict[str, Any]],
    slices: int,
    batch: int,
) -> None:
    query = pattern.Pattern(**{**query.__dict__, "within": window})
    job = _job(query)
    assert slice_epsilon(job.compiled(), TIME_FIELD) is not None
    rows = local_backfill(job, archive_rows(events), slices=slices, batch_size=batch)
    assert _backfilled(rows) == _whole_stream(job, events)
    [stats] = [r for r in rows if r["kind"] == STATS]
    assert stats["events"] == len(events)  # overlap copies are not counted twice


@settings(max_examples=300, deadline=None, database=None)
@given(
    query=queries(
        strategies=ALL_STRATEGIES,
        consumes=(pattern.Consume.NONE, pattern.Consume.PARTITION),
        limits=True,
    ),
    events=streams(max_size=24),
    batch=st.integers(1, 9),
)
def test_keys_and_whole_streams_find_what_the_engine_finds(
    query: pattern.Pattern, events: list[dict[str, Any]], batch: int
) -> None:
    job = _job(query)
    rows = local_backfill(job, archive_rows(events), slices=1, batch_size=batch)
    assert _backfilled(rows) == _whole_stream(job, events)


def test_next_is_not_sliced_because_a_run_before_the_window_changes_its_answer() -> None:
    """The case that keeps NEXT out of slices: over the whole stream the run from t=0
    is chosen and then cut by the window, so nothing ends at t=2; a slice starting
    after t=0 would report [1]."""
    job = JobQuery("q", "SELECT NEXT * FROM S WHERE A+ WITHIN 1 [t]", "type", "t")
    events = [{"type": "A", "t": 0}, {"type": "A", "t": 2}]
    assert slice_epsilon(job.compiled(), "t") is None
    assert _whole_stream(job, events) == [(None, 0, 0, (0,))]
    assert _backfilled(local_backfill(job, archive_rows(events), slices=2)) == [(None, 0, 0, (0,))]


def test_the_properties_see_complex_events() -> None:
    """The generated cases are not vacuous: a plain sequence over a small stream matches."""
    events = [{"type": "A", "t": 1}, {"type": "B", "t": 2}, {"type": "A", "t": 9}]
    job = JobQuery("q", "SELECT * FROM S WHERE A ; B WITHIN 3 MILLISECONDS", "type", "t")
    rows = local_backfill(job, archive_rows(events), slices=3)
    assert _backfilled(rows) == [(None, 0, 1, (0, 1))]


def test_slice_overlap_copies_exactly_the_events_within_the_window() -> None:
    plan = SlicePlan.of(0.0, 1000.0, 10.0, 10)
    assert plan.width == 100.0 and plan.pad > 10.0
    assert SlicePlan.of(0.0, 10.0, 10.0, 10).width > 10.0  # never narrower than the window
    s = plan.core(550.0)
    assert plan.copied(plan.t0 + (s + 1) * plan.width - 10.0)  # exactly ε before the cut
    assert not plan.copied(plan.t0 + (s + 1) * plan.width - 10.1)
    assert plan.core(None) == 0 and not plan.copied(None)
    assert label_bases({0: 5, 1: 3, 2: 4}, {1: 2, 2: 1}) == {0: (0, 0), 1: (5, 2), 2: (8, 1)}


@pytest.mark.parametrize(
    ("text", "sliceable"),
    [
        ("SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS", True),
        ("SELECT * FROM S WHERE A ; B WITHIN 5 [t]", True),
        ("SELECT * FROM S WHERE A ; B WITHIN 5 [x]", False),  # not the order's clock
        ("SELECT * FROM S WHERE A ; B WITHIN 5 EVENTS", False),
        ("SELECT * FROM S WHERE A ; B", False),
        ("SELECT STRICT * FROM S WHERE A ; B WITHIN 5 SECONDS", True),
        ("SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS CONSUME BY ANY", False),
        # These choose among runs before the window cuts them (see slices.py).
        ("SELECT NEXT * FROM S WHERE A ; B WITHIN 5 SECONDS", False),
        ("SELECT LAST * FROM S WHERE A ; B WITHIN 5 SECONDS", False),
        ("SELECT MAX * FROM S WHERE A ; B WITHIN 5 SECONDS", False),
        ("SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 5 SECONDS", False),
    ],
)
def test_which_queries_run_in_time_slices(text: str, sliceable: bool) -> None:
    query = compile_query(text, time_field="t")
    assert (slice_epsilon(query, "t") is not None) is sliceable


def test_bad_records_are_reported_with_their_coordinates_and_take_no_position() -> None:
    job = JobQuery(
        "q",
        "DECLARE STREAM S { EVENT A { x: int }, EVENT B { } } SELECT * FROM S WHERE A ; B",
        "type",
        "t",
    )
    rows = archive_rows([{"type": "A", "x": 1}, {"type": "B"}])
    rows.insert(1, {**rows[0], "offset": 7, "value": b"{not json"})
    rows.append({**rows[0], "offset": 8, "value": b"[1, 2]"})
    rows.append({**rows[0], "offset": 9, "value": b'{"type": 3}'})
    rows.append({**rows[0], "offset": 10, "value": b'{"type": "A", "x": "one"}'})
    rows.append({**rows[0], "offset": 11, "value": None})
    out = local_backfill(job, rows)
    bad = {r["offset"]: r["error"] for r in out if r["kind"] == BAD_RECORD}
    assert sorted(bad) == [7, 8, 9, 10, 11]
    assert "not valid JSON" in bad[7] and "not a JSON object" in bad[8]
    assert "type field" in bad[9] and "should be int" in bad[10] and "tombstone" in bad[11]
    assert _backfilled(out) == [(None, 0, 1, (0, 1))]
    [stats] = [r for r in out if r["kind"] == STATS]
    assert (stats["events"], stats["bad"], stats["matches"]) == (2, 5, 1)


def test_events_without_the_key_are_counted_not_evaluated() -> None:
    job = JobQuery("q", "SELECT * FROM S WHERE A ; B PARTITION BY [k]", "type", "t")
    events = [{"type": "A", "k": 1}, {"type": "A"}, {"type": "B", "k": 1.0}, {"type": "B"}]
    out = local_backfill(job, archive_rows(events))
    # 1 and 1.0 are one key; the output names it by the last event's value, as the fleet.
    assert _backfilled(out) == [("[1.0]", 0, 1, (0, 2))]
    [stats] = [r for r in out if r["kind"] == STATS]
    assert (stats["events"], stats["unkeyed"], stats["keys"]) == (2, 2, 1)
