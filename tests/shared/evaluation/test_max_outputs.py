"""``QueryEvaluator.max_outputs``: a bound on the complex events one event may end."""

from __future__ import annotations

from typing import Any

import pytest

from cerfleet import compile_query
from cerfleet.events.columns import columns_of

FLOOD = "SELECT * FROM S WHERE A+"


def ends(query: str, stream: list[dict[str, Any]], cap: int | None, columnar: bool) -> Any:
    ev = compile_query(query).evaluator()
    ev.max_outputs = cap
    if columnar:
        out = ev.process_columns(columns_of(stream, {"type"}))
    else:
        out = [ce for e in stream for ce in ev.process(e)]
    return [ce.positions for ce in out], ev.truncated, list(ev.truncated_ends)


@pytest.mark.parametrize("columnar", [False, True])
def test_enumeration_stops_at_the_bound_and_says_where(columnar: bool) -> None:
    stream = [{"type": "A"}] * 5
    full, cut, where = ends(FLOOD, stream, None, columnar)
    assert (len(full), cut, where) == (31, 0, [])
    got, cut, where = ends(FLOOD, stream, 3, columnar)
    assert (cut, where) == (3, [2, 3, 4])  # 4, 8 and 16 complex events
    # The first `cap` complex events of each event, in enumeration order.
    by_end: dict[int, list[tuple[int, ...]]] = {}
    for positions in full:
        by_end.setdefault(positions[-1], []).append(positions)
    assert got == [p for end in sorted(by_end) for p in by_end[end][:3]]


def test_a_bound_is_cheap_on_a_query_with_exponentially_many_outputs() -> None:
    ev = compile_query(FLOOD).evaluator()
    ev.max_outputs = 10
    out = [len(ev.process({"type": "A"})) for _ in range(200)]  # 2^199 at the last one
    assert out[-1] == 10 and ev.truncated == 196


@pytest.mark.parametrize(("limit", "truncated"), [(2, 0), (3, 0), (4, 2)])
def test_limit_at_or_below_the_bound_is_no_truncation(limit: int, truncated: int) -> None:
    ev = compile_query(f"{FLOOD} LIMIT {limit}").evaluator()
    ev.max_outputs = 3
    counts = [len(ev.process({"type": "A"})) for _ in range(4)]
    assert counts == [1, 2, min(limit, 3, 4), min(limit, 3)]
    assert ev.truncated == truncated
