"""Whole-query behaviour: partitions, window clocks, late events, LIMIT, snapshots."""

from __future__ import annotations

from typing import Any

import pytest

from shared import SnapshotError, compile_query


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
