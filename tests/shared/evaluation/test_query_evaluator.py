"""Whole-query behaviour: partitions, window clocks, late events, LIMIT, snapshots."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from cerfleet import SnapshotError, compile_query
from cerfleet.complex_event import ComplexEvent
from cerfleet.events.columns import columns_of


def _outputs(query: str, stream: list[dict[str, Any]], **kw: str) -> list[tuple[Any, ...]]:
    ev = compile_query(query, **kw).evaluator()
    return [(ce.start, ce.end, ce.positions, ce.key) for e in stream for ce in ev.process(e)]


def test_partition_positions_are_global_and_windows_count_per_partition() -> None:
    stream = [
        {"type": "A", "k": 1},  # 0
        {"type": "A", "k": 2},  # 1
        {"type": "X", "k": 2},  # 2
        {"type": "X"},  # 3: no key, belongs to no partition
        {"type": "B", "k": 1},  # 4: second event of partition 1
        {"type": "B", "k": 2},  # 5: third event of partition 2
    ]
    out = _outputs("SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 1 EVENTS", stream)
    assert out == [(0, 4, (0, 4), (1,))]


def test_late_events_are_dropped_and_counted() -> None:
    ev = compile_query("SELECT * FROM S WHERE A ; B WITHIN 10 [t]").evaluator()
    stream = [{"type": "A", "t": 5}, {"type": "A", "t": 3}, {"type": "B", "t": 6}]
    out = [(ce.start, ce.positions) for e in stream for ce in ev.process(e)]
    assert out == [(0, (0, 2))]  # the late A at position 1 takes part in nothing
    assert ev.late == 1


def test_events_without_a_clock_neither_start_nor_end_but_may_sit_inside() -> None:
    stream = [
        {"type": "A"},  # no t: cannot start
        {"type": "A", "t": 1},
        {"type": "B"},  # no t: inside only
        {"type": "C"},  # no t: cannot end
        {"type": "C", "t": 2},
    ]
    out = _outputs("SELECT * FROM S WHERE A ; B ; C WITHIN 5 [t]", stream)
    assert out == [(1, 4, (1, 2, 4), None)]


def test_time_units_read_the_time_field() -> None:
    stream = [
        {"type": "A", "ts": "2024-05-01T12:00:00Z"},
        {"type": "B", "ts": "2024-05-01T12:00:01.500Z"},
        {"type": "B", "ts": 1714564803000},  # 12:00:03 in ms
    ]
    out = _outputs("SELECT * FROM S WHERE A ; B WITHIN 2 SECONDS", stream, time_field="ts")
    assert [(s, e) for s, e, _, _ in out] == [(0, 1)]


def test_limit_caps_complex_events_per_event() -> None:
    stream = [{"type": "A"}] * 5 + [{"type": "B"}]
    assert len(_outputs("SELECT * FROM S WHERE A ; B", stream)) == 5
    assert len(_outputs("SELECT * FROM S WHERE A ; B LIMIT 2", stream)) == 2


def test_snapshot_refuses_another_query_and_garbage() -> None:
    q1 = compile_query("SELECT * FROM S WHERE A ; B")
    q2 = compile_query("SELECT * FROM S WHERE A ; C")
    state = q1.evaluator().snapshot()
    with pytest.raises(SnapshotError):
        q2.restore(state)
    with pytest.raises(SnapshotError):
        q1.restore(b"not a snapshot")


def test_restored_evaluator_continues_exactly() -> None:
    q = compile_query("SELECT * FROM S WHERE A ; B+ ; C PARTITION BY [k] WITHIN 6 EVENTS")
    stream = [{"type": t, "k": i % 2} for i, t in enumerate("ABABBCBACBCC")]
    straight = q.evaluator()
    expected = [ce for e in stream for ce in straight.process(e)]
    ev = q.evaluator()
    got = []
    for e in stream:
        got += ev.process(e)
        ev = q.restore(ev.snapshot())
    assert got == expected
    assert expected  # the case really produces output


# ------------------------------------------------------------ explicit positions

_POSITION_QUERIES = [
    "SELECT * FROM S WHERE A ; B+ ; C WITHIN 4 EVENTS",
    "SELECT * FROM S WHERE A ; B ; C FILTER A[x > 1] WITHIN 6 [t]",
    "SELECT * FROM S WHERE A ; B+ WITHIN 5 MILLISECONDS",
    "SELECT * FROM S WHERE A ; B+ ; C PARTITION BY [k] WITHIN 5 EVENTS",
    "SELECT * FROM S WHERE (A OR B)+ ; C PARTITION BY [k] WITHIN 4 [t] LIMIT 2",
    "SELECT * FROM S WHERE A ; B ; C PARTITION BY [k] CONSUME BY PARTITION",
    "SELECT * FROM S WHERE A ; B ; C PARTITION BY [k] WITHIN 8 EVENTS CONSUME BY ANY",
    "SELECT * FROM S WHERE A ; B CONSUME BY ANY",
    "SELECT NEXT * FROM S WHERE A ; B+ ; C",
    "SELECT NEXT * FROM S WHERE A ; B ; C PARTITION BY [k] WITHIN 20 EVENTS",
    "SELECT LAST * FROM S WHERE A ; B+ ; C PARTITION BY [k] WITHIN 6 [t]",
    "SELECT MAX * FROM S WHERE A ; B+ ; C WITHIN 7 EVENTS",
    "SELECT STRICT * FROM S WHERE A ; B ; C",
    "SELECT A, C FROM S WHERE A ; B+ ; C FILTER B[x <= 2] WITHIN 6 EVENTS",
]


def _position_stream(n: int = 80) -> list[dict[str, Any]]:
    rng = random.Random(7)
    stream: list[dict[str, Any]] = []
    t = 0
    for _ in range(n):
        t += rng.choice((0, 0, 1, 1, 1, -1))  # sometimes a late event
        event: dict[str, Any] = {"type": rng.choice("AABBCX"), "x": rng.randint(0, 3), "t": t}
        if rng.random() < 0.9:
            event["k"] = rng.randint(0, 1)
        stream.append(event)
    return stream


def _relabel(ce: ComplexEvent, label: Callable[[int], int]) -> ComplexEvent:
    return ComplexEvent(
        label(ce.start), label(ce.end), tuple(map(label, ce.positions)), ce.key, ce.events
    )


def _label(p: int) -> int:
    return 10 * p + 3


@pytest.mark.parametrize("text", _POSITION_QUERIES)
def test_explicit_positions_only_relabel_the_complex_events(text: str) -> None:
    q = compile_query(text, time_field="t")
    stream = _position_stream()
    labels = [_label(i) for i in range(len(stream))]
    default = q.evaluator()
    expected = [_relabel(ce, _label) for e in stream for ce in default.process(e)]
    assert expected  # every query has output on this stream

    one = q.evaluator()
    got = [ce for e, p in zip(stream, labels, strict=True) for ce in one.process(e, p)]
    assert got == expected

    batches = q.evaluator()
    got = []
    for lo in range(0, len(stream), 25):
        got += batches.process_batch(stream[lo : lo + 25], labels[lo : lo + 25])
    assert got == expected

    columns = q.evaluator()
    got = []
    for lo in range(0, len(stream), 25):
        part = stream[lo : lo + 25]
        cols = columns_of(part, q.attributes)
        at = np.array(labels[lo : lo + 25], dtype=np.int64)
        got += columns.process_columns(cols, events=part, positions=at)
    assert [(ce.start, ce.end, ce.positions, ce.key) for ce in got] == [
        (ce.start, ce.end, ce.positions, ce.key) for ce in expected
    ]
    assert all(
        a is b
        for ce, want in zip(got, expected, strict=True)
        for a, b in zip(ce.events, want.events, strict=True)
    )

    for ev in (one, batches, columns):
        assert ev.position == labels[-1] + 1
        assert (ev.late, ev.unpartitioned) == (default.late, default.unpartitioned)


@pytest.mark.parametrize("text", _POSITION_QUERIES)
def test_columns_without_events_take_positions_too(text: str) -> None:
    q = compile_query(text, time_field="t")
    stream = _position_stream(40)
    expected = [
        (_label(ce.start), _label(ce.end), tuple(map(_label, ce.positions)))
        for ce in q.evaluator().process_batch(stream)
    ]
    cols = columns_of(stream, q.attributes)
    out = q.evaluator().process_columns(cols, positions=[_label(i) for i in range(len(stream))])
    assert [(ce.start, ce.end, ce.positions) for ce in out] == expected


@pytest.mark.parametrize("text", _POSITION_QUERIES)
def test_snapshot_restore_with_explicit_positions(text: str) -> None:
    q = compile_query(text, time_field="t")
    stream = _position_stream()
    labels = [_label(i) for i in range(len(stream))]
    straight = q.evaluator()
    expected = [ce.to_dict() for ce in straight.process_batch(stream, labels)]
    ev = q.evaluator()
    got = [ce.to_dict() for ce in ev.process_batch(stream[:37], labels[:37])]
    ev = q.restore(ev.snapshot())
    assert ev.position == labels[36] + 1
    part = stream[37:]
    cols = columns_of(part, q.attributes)
    got += [ce.to_dict() for ce in ev.process_columns(cols, events=part, positions=labels[37:])]
    assert got == expected


def test_positions_must_increase() -> None:
    q = compile_query("SELECT * FROM S WHERE A ; B")
    ev = q.evaluator()
    assert ev.process({"type": "A"}, 5) == []
    assert ev.position == 6
    for bad in (5, 3):
        with pytest.raises(ValueError, match="position"):
            ev.process({"type": "B"}, bad)
    (ce,) = ev.process({"type": "B"})  # the default continues after the last label
    assert (ce.start, ce.end, ce.positions) == (5, 6, (5, 6))

    events = [{"type": "A"}, {"type": "B"}, {"type": "B"}]
    cols = columns_of(events, q.attributes)
    for positions in ([7, 9, 9], [9, 8, 10], [6, 8, 9], [8, 9]):
        with pytest.raises(ValueError, match="position"):
            ev.process_batch(events, positions)
        with pytest.raises(ValueError, match="position"):
            ev.process_columns(cols, events=events, positions=positions)
        with pytest.raises(ValueError, match="position"):
            ev.process_columns(cols, positions=np.array(positions))
    with pytest.raises(TypeError):
        ev.process_columns(cols, positions=[7.0, 8.0, 9.0])
    with pytest.raises(TypeError):
        ev.process({"type": "A"}, 7.5)  # type: ignore[arg-type]
    assert ev.position == 7  # nothing was processed by the refused calls
    empty = columns_of([], q.attributes)
    assert ev.process_batch([], []) == ev.process_columns(empty, events=[], positions=[]) == []
    assert ev.position == 7

    fresh = q.evaluator()
    out = fresh.process_columns(cols, events=events, positions=np.array([7, 100, 2**40]))
    assert [(ce.start, ce.end, ce.positions) for ce in out] == [
        (7, 100, (7, 100)),
        (7, 2**40, (7, 2**40)),
    ]
    assert all(type(p) is int for ce in out for p in ce.positions)
    assert fresh.position == 2**40 + 1


@pytest.mark.parametrize("strategy", ["", "NEXT ", "LAST ", "MAX ", "STRICT "])
def test_columns_output_complex_events_ending_on_unmarked_events(strategy: str) -> None:
    # Projected away, C ends complex events without being marked: the state reached
    # again by the second C is final, so that C is not one that changes nothing.
    q = compile_query(f"SELECT {strategy}A FROM S WHERE (A ; C) AS u")
    stream = [{"type": "A"}, {"type": "C"}, {"type": "X"}, {"type": "C"}]
    expected = [(ce.start, ce.end, ce.positions) for ce in q.evaluator().process_batch(stream)]
    assert [end for _, end, _ in expected] == [1, 3]
    for cols, events in (
        ({"type": np.array([e["type"] for e in stream])}, None),
        (columns_of(stream, q.attributes), stream),
    ):
        out = q.evaluator().process_columns(cols, events=events)
        assert [(ce.start, ce.end, ce.positions) for ce in out] == expected


EVICTING = [
    "SELECT * FROM S WHERE BUY as a ; SELL as b PARTITION BY [name] WITHIN 100 MILLISECONDS",
    "SELECT * FROM S WHERE BUY as a ; SELL as b PARTITION BY [name] WITHIN 3 EVENTS",
    "SELECT * FROM S WHERE BUY as a ; SELL as b PARTITION BY [name] WITHIN 100 MILLISECONDS "
    "CONSUME BY ANY",
]


def _trades(n: int, names: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    t = 0
    for _ in range(n):
        t += rng.randrange(0, 40)
        # Now and then an event older than its key's latest: late, and must stay late
        # after the key was evicted.
        ts = t - rng.randrange(0, 300) if rng.random() < 0.05 else t
        out.append(
            {"type": rng.choice(("BUY", "SELL", "HOLD")), "name": rng.randrange(names), "ts": ts}
        )
    return out


@pytest.mark.parametrize("text", EVICTING)
@pytest.mark.parametrize("columns", [False, True], ids=["rows", "columns"])
def test_a_long_expired_key_holds_no_state_and_changes_no_output(text: str, columns: bool) -> None:
    events = _trades(3000, 5, seed=3)
    query = compile_query(text, time_field="ts")
    ev = query.evaluator()
    got = (
        ev.process_columns(columns_of(events, query.attributes), events=events)
        if columns
        else (ev.process_batch(events))
    )
    # Every key is idle or holds a live run; a key long past its window holds nothing.
    assert all(not sub.idle for sub in ev.substreams.values())
    assert len(ev.substreams) <= 5
    expired = {"type": "HOLD", "name": "gone", "ts": events[-1]["ts"]}
    ev.process(expired)
    assert ("gone",) not in ev.substreams
    # The same answer as one evaluator per key that never forgets anything.
    want = []
    for key in sorted({e["name"] for e in events}):
        mine = [(i, e) for i, e in enumerate(events) if e["name"] == key]
        single = query.evaluator()
        for i, e in mine:
            want += [(ce.start, ce.end, ce.positions) for ce in single.process(e, i)]
    if "CONSUME BY ANY" not in text:  # ANY couples the keys: compare with a restore instead
        assert sorted((ce.start, ce.end, ce.positions) for ce in got) == sorted(want)
    # A snapshot keeps the evicted keys' clocks: restored, it goes on exactly.
    again = query.restore(ev.snapshot())
    more = _trades(500, 60, seed=4)
    base = events[-1]["ts"]
    for e in more:
        e["ts"] += base
    assert [ce.positions for ce in again.process_batch(more)] == [
        ce.positions for ce in ev.process_batch(more)
    ]


def test_an_evicted_key_still_drops_its_late_events() -> None:
    query = compile_query(EVICTING[0], time_field="ts")
    ev = query.evaluator()
    stream = [
        {"type": "BUY", "name": "k", "ts": 100},
        {"type": "SELL", "name": "k", "ts": 150},  # (0, 1)
        {"type": "HOLD", "name": "k", "ts": 300},  # the BUY expires: k is idle, evicted
        {"type": "BUY", "name": "k", "ts": 250},  # late for k: dropped
        {"type": "SELL", "name": "k", "ts": 320},  # nothing to pair with
    ]
    got = []
    for event in stream:
        got += [ce.positions for ce in ev.process(event)]
        if event["ts"] == 300:
            assert ev.substreams == {} and ev.evicted == {("k",): 300}
    assert got == [(0, 1)]
    assert ev.late == 1
