"""``compile_query`` on a query the standard's selection runs: its evaluators are
``RowPatternEvaluator``s bound to the compiled query (the differential suite compares
their rows with the oracle); a snapshot restores only into the query it was taken of."""

from __future__ import annotations

import pytest

from cerfleet.errors import SnapshotError
from cerfleet.match_recognize.selecting import SelectingEvaluator
from cerfleet.query import compile_query

TEXT = """SELECT * FROM S MATCH_RECOGNIZE (PARTITION BY k MEASURES COUNT(B.*) AS bs
  PATTERN (A B+ C) DEFINE A AS v = 9, B AS v = 5, C AS v = 0)"""


def test_a_pending_match_goes_through_a_snapshot() -> None:
    query = compile_query(TEXT, language="match_recognize")
    assert query.selecting
    ev = query.evaluator()
    assert isinstance(ev, SelectingEvaluator) and ev.query is query
    rows = [{"type": "S", "k": 1, "v": v} for v in (9, 5, 5, 0, 0)]
    assert ev.process_batch(rows[:3]) == []
    restored = query.restore(ev.snapshot())
    assert isinstance(restored, SelectingEvaluator)
    assert len(restored.substreams) == 1  # key 1's pending match
    [ce] = restored.process_batch(rows[3:])
    assert ce.positions == (0, 1, 2, 3) and ce.key == (1,)
    assert restored.finish() == []


def test_a_snapshot_of_another_query_is_refused() -> None:
    query = compile_query(TEXT, language="match_recognize")
    other = compile_query(TEXT.replace("v = 9", "v = 8"), language="match_recognize")
    with pytest.raises(SnapshotError, match="different query"):
        other.restore(query.evaluator().snapshot())
    with pytest.raises(SnapshotError, match="not a cerfleet snapshot"):
        query.restore(b"\x00")
