"""The columnar fast path gives exactly what feeding the rows one at a time gives."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from shared import compile_query
from shared.ceql import ast
from shared.ceql.printer import to_ceql
from tests.shared.strategies import TIME_FIELD, queries, streams

EXAMPLES = int(os.environ.get("CERFLEET_DIFF_EXAMPLES", "2500")) // 2
ALL_STRATEGIES = tuple(ast.Strategy)
ALL_CONSUMES = tuple(ast.Consume)


def to_columns(events: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Numbers as float columns with NaN for missing or null, types as a str column."""
    n = len(events)
    names = {k for e in events for k in e} - {"type"}
    cols: dict[str, np.ndarray] = {"type": np.array([e["type"] for e in events], dtype=str)}
    for name in sorted(names):
        values = [e.get(name) for e in events]
        cols[name] = np.array([np.nan if v is None else float(v) for v in values], dtype=float)
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
def test_columns_match_rows(query: ast.Query, stream: list[dict[str, Any]], cut: int) -> None:
    text = to_ceql(query)
    compiled = compile_query(text, time_field=TIME_FIELD)
    rows = compiled.evaluator()
    expected = [_key(ce) for e in stream for ce in rows.process(e)]
    # Two batches, so state and clocks also carry over from one batch to the next.
    columnar = compiled.evaluator()
    got = []
    for part in (stream[:cut], stream[cut:]):
        got += [_key(ce) for ce in columnar.process_columns(to_columns(part))]
    if query.limit is None:
        expected, got = sorted(expected), sorted(got)
    assert got == expected, f"query:\n{text}\nstream:\n" + "\n".join(json.dumps(e) for e in stream)


def test_columns_skip_what_changes_nothing_but_keep_the_window() -> None:
    q = compile_query("SELECT * FROM S WHERE A ; B WITHIN 3 EVENTS")
    types = np.array(["A", "X", "X", "B", "A", "X", "X", "X", "B"])
    out = q.evaluator().process_columns({"type": types})
    assert [(ce.start, ce.end) for ce in out] == [(0, 3)]  # 4 → 8 spans 4 events
