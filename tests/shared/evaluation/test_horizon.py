"""The lateness horizon against the oracle, and the memory it bounds.

The oracle knows only per-key lateness. An event that the horizon makes late (its
clock more than ``lateness`` below the newest clock of the stream's partitioned
events) is handed to it without its partition attribute: in no substream, so in no
complex event, while every position stays where it was. Small horizons (0..4 clock
units) over the strategies' streams, which step back now and then, exercise the
rule far more often than the default minute would.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from hypothesis import given, note, settings
from hypothesis import strategies as st

from cerfleet import pattern
from cerfleet.ceql.printer import to_ceql
from cerfleet.evaluation.evicted import GENERATIONS
from cerfleet.evaluation.horizon import DEFAULT_LATENESS, Horizon
from cerfleet.evaluation.query_evaluator import QueryEvaluator
from cerfleet.events.columns import columns_of
from cerfleet.query import compile_query
from tests.shared.oracle import oracle_by_end
from tests.shared.strategies import PARTITION_ATTRIBUTE, TIME_FIELD, queries, streams

EXAMPLES = int(os.environ.get("CERFLEET_DIFF_EXAMPLES", "2500")) // 5


def _numeric(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value == value:
        return float(value)
    return None


def _in_partition(event: Mapping[str, Any], attrs: Sequence[str]) -> bool:
    for attr in attrs:
        value = event.get(attr)
        if value is None or (isinstance(value, float) and value != value):
            return False
    return True


def behind_horizon(
    stream: Sequence[Mapping[str, Any]], attrs: Sequence[str], lateness: float
) -> list[dict[str, Any]]:
    """The stream as the oracle should see it: events behind the horizon in no partition."""
    newest = float("-inf")
    out = []
    for event in stream:
        clock = _numeric(event.get(TIME_FIELD))
        if clock is None or not _in_partition(event, attrs):
            out.append(dict(event))
        elif clock < newest - lateness:
            out.append({k: v for k, v in event.items() if k not in attrs})
        else:
            newest = max(newest, clock)
            out.append(dict(event))
    return out


def _horizon(q: Any, lateness: float) -> QueryEvaluator:
    ev: QueryEvaluator = q.evaluator()
    assert ev.horizon is not None  # partitioned, under a time or attribute window
    ev.horizon = Horizon(q.epsilon, lateness, drops_live=ev.horizon.drops_live)
    return ev


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(
    query=queries(
        strategies=tuple(pattern.Strategy),
        consumes=(pattern.Consume.NONE, pattern.Consume.PARTITION),
    ),
    stream=streams(min_size=3),
    within=st.builds(
        pattern.Window,
        st.sampled_from((pattern.WindowKind.ATTRIBUTE, pattern.WindowKind.TIME)),
        st.integers(0, 5),
    ),
    lateness=st.integers(0, 4),
    cut=st.integers(1, 9),
)
def test_the_horizon_matches_the_oracle(
    query: pattern.Pattern,
    stream: list[dict[str, Any]],
    within: pattern.Window,
    lateness: int,
    cut: int,
) -> None:
    if within.kind is pattern.WindowKind.ATTRIBUTE:
        within = replace(within, attr=TIME_FIELD)
    else:
        within = replace(within, unit="MILLISECONDS")
    query = replace(query, partition_by=(PARTITION_ATTRIBUTE,), within=within)
    text = to_ceql(query)
    note(text)
    note(repr(stream))
    q = compile_query(text, time_field=TIME_FIELD)
    want = {
        (s, e, tuple(p), k)
        for results in oracle_by_end(
            query, behind_horizon(stream, query.partition_by, lateness), time_field=TIME_FIELD
        ).values()
        for s, e, p, k in results
    }

    def triples(ces: Any) -> set[tuple[Any, ...]]:
        return {(ce.start, ce.end, tuple(ce.positions), ce.key) for ce in ces}

    rows = _horizon(q, lateness)
    assert triples(ce for event in stream for ce in rows.process(dict(event))) == want

    # Columns in two batches, restored from a snapshot in between.
    first = _horizon(q, lateness)
    got = triples(
        first.process_columns(columns_of(stream[:cut], q.attributes), events=stream[:cut])
    )
    second = q.restore(first.snapshot())
    assert second.horizon is not None
    second.horizon.lateness = lateness  # a setting: snapshots carry only the newest clock
    rest = stream[cut:]
    got |= triples(second.process_columns(columns_of(rest, q.attributes), events=rest))
    assert got == want
    assert rows.late == second.late


def test_keys_whose_runs_expired_are_dropped_and_their_clocks_forgotten() -> None:
    # One event per key, a BUY waiting for its SELL: per-key lateness alone keeps
    # every key (its next event could come any time); the horizon lets them go.
    q = compile_query(
        "SELECT * FROM S WHERE BUY as a ; SELL as b PARTITION BY [user] WITHIN 100 MILLISECONDS",
        time_field="t",
    )
    stream = [{"type": ("BUY", "HOLD")[i % 2], "user": f"u{i}", "t": i} for i in range(6_000)]
    exact = q.evaluator()
    exact.horizon = None
    exact.process_batch(stream)
    assert len(exact.substreams) == 3_000 and len(exact.evicted) == 3_000

    bounded = _horizon(q, 1_000)
    bounded.process_batch(stream[:3_000])
    bounded.process_columns(columns_of(stream[3_000:], q.attributes), events=stream[3_000:])
    # Only keys within lateness + window of the newest clock remain, and evicted clocks
    # a slice more (an eighth of the lateness or of the clock a batch covers, 3,000).
    assert len(bounded.substreams) + len(bounded.evicted) <= 1_101 + 3_000 // GENERATIONS
    assert len(bounded.substreams) >= 50


def test_a_run_begun_without_a_clock_still_outranks_under_last() -> None:
    # Key 1's first B has no clock: the run it begins cannot complete, yet under LAST
    # it outranks the complex event of the second B alone, so nothing is output
    # (as the oracle has it). Dropping key 1 as dead would let that one through.
    q = compile_query("SELECT LAST * FROM S WHERE B+ PARTITION BY [k] WITHIN 0 [t]", time_field="t")
    stream = [{"type": "A", "k": 0, "t": 0}, {"type": "B", "k": 1}, {"type": "B", "k": 1, "t": 0}]
    rows = q.evaluator()
    assert [ce for e in stream for ce in rows.process(e)] == []
    assert q.evaluator().process_columns(columns_of(stream, q.attributes), events=stream) == []


def test_an_event_behind_the_horizon_is_late_for_a_new_key_too() -> None:
    q = compile_query(
        "SELECT * FROM S WHERE BUY as a ; SELL as b PARTITION BY [user] WITHIN 10 MILLISECONDS",
        time_field="t",
    )
    ev = q.evaluator()
    assert ev.horizon is not None and ev.horizon.lateness == DEFAULT_LATENESS
    ev.process({"type": "HOLD", "user": "x", "t": 100_000})
    assert ev.process({"type": "BUY", "user": "y", "t": 100_000 - 60_001}) == []
    assert ev.last_late and ev.late == 1
    assert ev.process({"type": "SELL", "user": "y", "t": 100_000 - 60_000}) == []
    assert not ev.last_late  # at the horizon is not behind it
    ev.process({"type": "BUY", "user": "y", "t": 99_999})
    [ce] = ev.process({"type": "SELL", "user": "y", "t": 100_000})
    assert (ce.start, ce.end, ce.key) == (3, 4, ("y",))


def test_the_queue_of_touched_keys_follows_the_window_not_the_stream() -> None:
    # Every event of a live key queues an entry; an older one of a key touched since
    # is stale and goes in the next sweep, so ten busy keys keep the queue short.
    q = compile_query(
        "SELECT * FROM S WHERE BUY as a ; SELL as b PARTITION BY [user] WITHIN 100 MILLISECONDS",
        time_field="t",
    )
    ev = _horizon(q, 1_000)
    assert ev.horizon is not None
    longest = 0
    for i in range(20_000):
        ev.process({"type": "BUY", "user": f"u{i % 10}", "t": i})  # a BUY always waits
        longest = max(longest, len(ev.horizon.touched))
    assert len(ev.substreams) == 10
    assert len(ev.horizon.touched) == len(ev.horizon.touched_at)
    assert longest <= 20
    # The keys go quiet: once the horizon passes them they are dropped, live or not.
    ev.process({"type": "HOLD", "user": "other", "t": 30_000})
    assert not ev.substreams and not ev.horizon.touched and not ev.horizon.touched_at


def test_a_stale_entry_never_drops_a_key_that_is_still_alive() -> None:
    # Key a's first entry is far behind; the key itself was touched at a later clock
    # and is alive: the sweep passes the stale entry and keeps the key.
    q = compile_query(
        "SELECT * FROM S WHERE BUY as a ; SELL as b PARTITION BY [user] WITHIN 100 MILLISECONDS",
        time_field="t",
    )
    ev = _horizon(q, 1_000)
    assert ev.horizon is not None
    ev.process({"type": "BUY", "user": "a", "t": 0})
    ev.process({"type": "BUY", "user": "a", "t": 1_500})
    ev.process({"type": "BUY", "user": "b", "t": 1_550})
    assert set(ev.substreams) == {("a",), ("b",)}
    assert list(ev.horizon.touched) == [("a",), ("b",)]
    [ce] = ev.process({"type": "SELL", "user": "a", "t": 1_560})
    assert (ce.start, ce.end) == (1, 3)
