"""The columnar fast path gives exactly what feeding the rows one at a time gives."""

from __future__ import annotations

import itertools
import json
import os
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet import compile_query, pattern
from cerfleet.ceql.printer import to_ceql
from cerfleet.evaluation import columnar_run, query_evaluator
from tests import batch_paths
from tests.shared.strategies import TIME_FIELD, queries, streams

EXAMPLES = int(os.environ.get("CERFLEET_DIFF_EXAMPLES", "2500")) // 2
ALL_STRATEGIES = tuple(pattern.Strategy)
ALL_CONSUMES = tuple(pattern.Consume)


def to_columns(events: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Numbers as float columns with NaN for missing or null, types as a str column;
    strings as a str column when every event has one, else an object column (None:
    missing)."""
    n = len(events)
    names = {k for e in events for k in e} - {"type"}
    cols: dict[str, np.ndarray] = {"type": np.array([e["type"] for e in events], dtype=str)}
    for name in sorted(names):
        values = [e.get(name) for e in events]
        if all(isinstance(v, str) for v in values):
            cols[name] = np.array(values, dtype=str)
        elif any(isinstance(v, str) for v in values):
            cols[name] = np.array(values, dtype=object)
        else:
            cols[name] = np.array([np.nan if v is None else float(v) for v in values])
    if n == 0:
        cols["type"] = np.array([], dtype=str)
    return cols


def _key(ce: Any) -> tuple[Any, ...]:
    return (ce.start, ce.end, ce.positions, ce.key)


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(
    query=queries(strategies=ALL_STRATEGIES, consumes=ALL_CONSUMES, limits=True),
    stream=streams(),
    cut=st.integers(0, 10),
)
def test_columns_match_rows(query: pattern.Pattern, stream: list[dict[str, Any]], cut: int) -> None:
    # Two batches, so state and clocks also carry over from one batch to the next.
    _assert_batches_match_rows(query, stream, [0, min(cut, len(stream)), len(stream)])


def _assert_batches_match_rows(
    query: pattern.Pattern, stream: list[dict[str, Any]], bounds: list[int]
) -> None:
    """``process_columns`` on ``stream`` cut at ``bounds`` gives what ``process`` does."""
    text = to_ceql(query)
    compiled = compile_query(text, time_field=TIME_FIELD)
    rows = compiled.evaluator()
    expected = [_key(ce) for e in stream for ce in rows.process(e)]
    columnar = compiled.evaluator()
    got = []
    for a, b in itertools.pairwise(bounds):
        got += [_key(ce) for ce in columnar.process_columns(to_columns(stream[a:b]))]
    if query.limit is None:
        expected, got = sorted(expected), sorted(got)
    assert got == expected, f"query:\n{text}\nstream:\n" + "\n".join(json.dumps(e) for e in stream)


@settings(max_examples=EXAMPLES // 2, deadline=None, database=None)
@given(
    query=queries(strategies=ALL_STRATEGIES, consumes=ALL_CONSUMES, limits=True),
    stream=streams(),
    cuts=st.lists(st.integers(0, 30), max_size=4),
    row_batch=st.integers(0, 6),
    few=st.integers(1, 6),
    per_key=st.integers(0, 4),
)
def test_columns_match_rows_whatever_the_small_batch_thresholds(
    query: pattern.Pattern,
    stream: list[dict[str, Any]],
    cuts: list[int],
    row_batch: int,
    few: int,
    per_key: int,
) -> None:
    # The thresholds below which a batch, a batch of many keys, or a key's rows in it
    # run row by row: drawn small, so that the random streams' batches fall on both
    # sides of them.
    bounds = [0, *sorted(c for c in cuts if c < len(stream)), len(stream)]
    before = batch_paths.current()
    batch_paths.use((row_batch, few, per_key))
    try:
        _assert_batches_match_rows(query, stream, bounds)
    finally:
        batch_paths.use(before)


def test_the_shipped_thresholds_send_small_batches_row_by_row() -> None:
    assert min(batch_paths.SHIPPED) >= 1  # else the vector paths' tests are all there is
    with batch_paths.shipped_thresholds():
        assert query_evaluator.ROW_BATCH >= 5
        compiled = compile_query("SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 10 EVENTS")
        stream = [{"type": "A" if i % 2 == 0 else "B", "k": i % 3} for i in range(200)]
        expected = [_key(ce) for ce in compiled.evaluator().process_batch(stream)]
        small, large = compiled.evaluator(), compiled.evaluator()
        got_small = []
        for a in range(0, len(stream), 5):  # every batch below ROW_BATCH
            got_small += [_key(ce) for ce in small.process_columns(to_columns(stream[a : a + 5]))]
        got_large = [_key(ce) for ce in large.process_columns(to_columns(stream))]
    assert got_small == expected
    assert got_large == expected


def test_the_shipped_thresholds_send_a_batch_of_many_keys_row_by_row() -> None:
    compiled = compile_query("SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 10 EVENTS")
    stream = [{"type": "A" if i % 3 else "B", "k": f"k{i % 20}"} for i in range(60)]
    expected = [_key(ce) for ce in compiled.evaluator().process_batch(stream)]
    with batch_paths.shipped_thresholds():
        assert not compiled.evaluator().by_rows(len(stream))
        assert columnar_run.few_per_key(("k",), to_columns(stream), len(stream))
        evaluator = compiled.evaluator()
        calls: list[int] = []
        rows = evaluator._rows
        evaluator._rows = lambda *a: calls.append(1) or rows(*a)  # type: ignore[method-assign]
        got = [_key(ce) for ce in evaluator.process_columns(to_columns(stream), events=stream)]
    assert calls == [1]
    assert got == expected and expected


def test_columns_skip_what_changes_nothing_but_keep_the_window() -> None:
    q = compile_query("SELECT * FROM S WHERE A ; B WITHIN 3 EVENTS")
    types = np.array(["A", "X", "X", "B", "A", "X", "X", "X", "B"])
    out = q.evaluator().process_columns({"type": types})
    assert [(ce.start, ce.end) for ce in out] == [(0, 3)]  # 4 → 8 spans 4 events


def test_partition_groups_follow_first_appearance_and_skip_missing_keys() -> None:
    from cerfleet.evaluation.partitioning import partition_groups

    cols = {"k": np.array([2.0, 1.0, np.nan, 2.0, 1.0]), "s": np.array(list("abcab"))}
    groups = partition_groups(("k", "s"), cols, 5)
    assert groups is not None
    assert [(key, idx.tolist()) for key, idx in groups] == [
        ((2.0, "a"), [0, 3]),
        ((1.0, "b"), [1, 4]),
    ]
    assert partition_groups(("k",), {"k": np.array([None, 1], dtype=object)}, 2) is None
    assert partition_groups(("absent",), cols, 5) == []


def test_partitioned_columns_keep_per_key_clocks_across_batches() -> None:
    q = compile_query("SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 1 EVENTS")
    batches = [
        {"type": np.array(["A", "A", "X"]), "k": np.array([1.0, 2.0, 1.0])},
        {"type": np.array(["B", "B", "X"]), "k": np.array([2.0, 1.0, np.nan])},
    ]
    ev = q.evaluator()
    got = [(ce.start, ce.end, ce.key) for b in batches for ce in ev.process_columns(b)]
    # key 1.0: A(0) X(2) B(4) spans 2 events of its partition; key 2.0: A(1) B(3) spans 1.
    assert got == [(1, 3, (2.0,))]
    assert ev.unpartitioned == 1
    rows = q.evaluator()
    expected = [
        (ce.start, ce.end, ce.key)
        for b in batches
        for i in range(3)
        for ce in rows.process({"type": str(b["type"][i]), "k": b["k"][i].item()})
    ]
    assert got == expected
    assert rows.unpartitioned == ev.unpartitioned


def test_partition_groups_read_alike_by_index_slice_and_iteration() -> None:
    from cerfleet.evaluation.partitioning import partition_groups

    rng = np.random.default_rng(3)
    cols = {"k": rng.integers(0, 30, 500).astype(float), "s": rng.choice(list("xyz"), 500)}
    cols["k"][rng.integers(0, 500, 40)] = np.nan
    groups = partition_groups(("k", "s"), cols, 500)
    assert groups is not None
    listed = [(key, idx.tolist()) for key, idx in groups]
    assert [(key, idx.tolist()) for key, idx in (groups[i] for i in range(len(groups)))] == listed
    assert [(key, idx.tolist()) for key, idx in groups[2:7]] == listed[2:7]
    assert (groups[-1][0], groups[-1][1].tolist()) == listed[-1]
    # Every row with both attributes in exactly one group, by first appearance.
    rows = sorted(i for _, idx in listed for i in idx)
    assert rows == np.flatnonzero(~np.isnan(cols["k"])).tolist()
    firsts = [idx[0] for _, idx in listed]
    assert firsts == sorted(firsts)
    for key, idx in listed:
        assert all((cols["k"][i], cols["s"][i]) == key for i in idx)


@settings(max_examples=EXAMPLES // 2, deadline=None, database=None)
@given(
    query=queries(strategies=ALL_STRATEGIES, consumes=ALL_CONSUMES, limits=True),
    stream=streams(),
    cuts=st.lists(st.integers(0, 30), max_size=6),
)
def test_a_row_batch_forgets_the_keys_its_rows_one_by_one_forget(
    query: pattern.Pattern, stream: list[dict[str, Any]], cuts: list[int]
) -> None:
    """A small row-by-row batch evicts its idle keys at its end rather than as each goes
    idle (a key back a few rows later is not made again): after every batch, the same
    keys and evicted clocks as ``process_batch``, which evicts as it goes, and the same
    complex events."""
    text = to_ceql(query)
    compiled = compile_query(text, time_field=TIME_FIELD)
    one_by_one, batched = compiled.evaluator(), compiled.evaluator()
    bounds = [0, *sorted(c for c in cuts if c < len(stream)), len(stream)]
    with batch_paths.shipped_thresholds():
        for a, b in itertools.pairwise(bounds):
            events = stream[a:b]
            want = [_key(ce) for ce in one_by_one.process_batch(events)]
            assert batched.by_rows(len(events))
            columns = to_columns(events)
            got = [_key(ce) for ce in batched.process_columns(columns, events=events)]
            assert got == want, text
            assert set(batched.substreams) == set(one_by_one.substreams), text
            assert dict(batched.evicted) == dict(one_by_one.evicted), text
            assert batched.late == one_by_one.late


def test_a_row_batch_of_many_keys_evicts_at_its_end_what_rows_evict_as_they_go() -> None:
    # 300 rows over 60 keys go row by row (``few_per_key``); their idle keys are evicted
    # at the batch's end, leaving the keys and clocks that evicting as they go leaves.
    compiled = compile_query(
        "SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 5 [t] CONSUME BY PARTITION",
        time_field="t",
    )
    rng = np.random.default_rng(11)
    stream = [
        {"type": str(rng.choice(["A", "B", "C"])), "k": f"k{rng.integers(60)}", "t": i}
        for i in range(300)
    ]
    one_by_one, batched = compiled.evaluator(), compiled.evaluator()
    with batch_paths.shipped_thresholds():
        for a in range(0, 300, 100):
            events = stream[a : a + 100]
            want = [_key(ce) for ce in one_by_one.process_batch(events)]
            columns = to_columns(events)
            assert not batched.by_rows(100) and columnar_run.few_per_key(("k",), columns, 100)
            got = [_key(ce) for ce in batched.process_columns(columns, events=events)]
            assert got == want and batched._idle is None
            assert set(batched.substreams) == set(one_by_one.substreams)
            assert dict(batched.evicted) == dict(one_by_one.evicted)
    assert one_by_one.evicted or len(one_by_one.substreams) < 60  # keys did go idle
