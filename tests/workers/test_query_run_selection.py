"""A MATCH_RECOGNIZE query whose matches the standard selects (a skip mode over a
variable-length pattern, reluctant quantifiers, SKIP TO FIRST/LAST v) in a keyed
partition: its ``RowPatternEvaluator`` goes through the checkpoint, a crash after a drawn
prefix of the later rows was published, a restore and a replay; then the end of the
input makes the pending matches final. The rows published are the brute-force
oracle's (``tests/shared/match_recognize/oracle.py``), each once, in order."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cerfleet.errors import MatchRecognizeError
from cerfleet.fleet.registry import QuerySpec, RegistryHistory
from cerfleet.match_recognize import selection
from cerfleet.match_recognize.selecting import SelectingEvaluator
from cerfleet.query import compile_query
from cerfleet.workers.catalog import Catalog
from cerfleet.workers.checkpoint import Checkpoint
from cerfleet.workers.partition import PartitionState
from cerfleet.workers.query_run import numbered
from tests.shared.match_recognize.test_differential import _sorted, expected, query_text
from tests.shared.match_recognize.test_differential import cases as cross_cases
from tests.shared.match_recognize.test_stream import cases
from tests.workers.test_partition import records_of

MR = "match_recognize"
Published = list[tuple[int, tuple[int, ...], bytes]]


def _catalog(text: str) -> tuple[Catalog, str]:
    history = RegistryHistory()
    spec = QuerySpec(name="q", ceql=text, input_topics=("in",), output_topic="o", language=MR)
    history.apply(0, b"q", spec.model_dump_json().encode())
    assert history.errors == 0, text
    catalog = Catalog(history, "k.")
    return catalog, catalog.keyed_topic_of(history.current["q"])


def partition_rows(
    text: str, rows: list[dict[str, Any]], cut: int, crash: int, keep: int, *, drop: bool = False
) -> Published:
    """What a keyed partition publishes over ``rows`` with a checkpoint after ``cut``
    rows, a crash after ``crash`` rows with ``keep`` of the later outputs published, and
    the end of the input after the replay. ``drop``: the checkpoint loses the selection's
    snapshot (a fresh evaluator's instead), which must show."""
    catalog, topic = _catalog(text)
    records = records_of(rows, None, 1)
    state = PartitionState(topic, 0, catalog)
    out = [(o.seq, o.ce.positions, o.value) for o in state.process(records[:cut])[0]]
    ckpt = Checkpoint.decode(state.checkpoint().encode())
    if drop:
        fresh = catalog.entry("q", 0)
        assert fresh is not None
        ckpt.queries["q"].snapshot = fresh.query.evaluator().snapshot()
    after = state.process(records[cut:crash])[0] if crash > cut else []
    out += [(o.seq, o.ce.positions, o.value) for o in after[:keep]]
    seqs = {("q", 0): max((seq for seq, _, _ in out), default=-1)}
    restored = PartitionState.restore(catalog, topic, 0, ckpt, seqs)
    out += [(o.seq, o.ce.positions, o.value) for o in restored.process(records[cut:])[0]]
    run = restored.runs.get("q")
    if run is not None and isinstance(run.evaluator, SelectingEvaluator):
        final, _ = numbered(run, run.evaluator.finish(), set())
        out += [(o.seq, o.ce.positions, o.value) for o in final]
    return out


def published_matches(out: Published) -> list[Any]:
    assert [seq for seq, _, _ in out] == list(range(len(out))), "a row lost or repeated"
    matches: list[tuple[tuple[int, ...], list[Any]]] = []
    for _, positions, value in out:
        assert value is not None
        if not matches or matches[-1][0] != tuple(positions):
            matches.append((tuple(positions), []))
        matches[-1][1].append(orjson.loads(value))
    return _sorted(matches)


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    # The last: DEFINEs reading other rows, whose threads carry path summaries.
    case=st.one_of(cases(), cases(dense=True), cross_cases(cross=True, selected=True)),
    data=st.data(),
)
def test_rows_through_a_crash_are_the_oracle_s(case: dict[str, Any], data: st.DataObject) -> None:
    text = query_text(case)
    try:
        selecting = compile_query(text, language=MR).selecting
    except MatchRecognizeError:
        event("rejected")
        return  # the embedded suite checks which are
    event("the standard's selection" if selecting else "the automaton's selection")
    rows, cut = case["rows"], case["cut"]
    crash = data.draw(st.integers(cut, len(rows)), label="crash")
    published = data.draw(st.integers(0, 4 * len(rows)), label="published")
    want = _sorted(expected(case))
    event("some match" if want else "no match")
    out = partition_rows(text, rows, cut, crash, published)
    assert published_matches(out) == want, text


def test_pending_matches_survive_the_checkpoint() -> None:
    """``A B+ C``: the match from row 0 is pending (B+ may grow) at the checkpoint; a
    successor without the snapshot never sees its start."""
    text = """SELECT * FROM S MATCH_RECOGNIZE (MEASURES FIRST(A.v) AS a, COUNT(B.*) AS bs
        ONE ROW PER MATCH PATTERN (A B+ C) DEFINE A AS v = 9, B AS v = 5, C AS v = 0)"""
    assert compile_query(text, language=MR).selecting
    rows = [{"type": "S", "v": v} for v in (9, 5, 5, 5, 0, 9, 5, 0)]
    out = partition_rows(text, rows, 2, 5, 0)
    assert [orjson.loads(v) for _, _, v in out] == [{"a": 9, "bs": 3}, {"a": 9, "bs": 1}]
    lost = partition_rows(text, rows, 2, 5, 0, drop=True)
    assert [orjson.loads(v) for _, _, v in lost] == [{"a": 9, "bs": 1}]


def test_a_query_over_its_thread_bound_is_suspended_and_the_worker_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every row may start a match and each B run is told apart by its A: one thread per
    # start row, beyond the bound (lowered: the test stays quick).
    monkeypatch.setattr(selection, "MAX_THREADS", 50)
    text = (
        "SELECT * FROM T MATCH_RECOGNIZE (AFTER MATCH SKIP TO NEXT ROW PATTERN (A B+ C)"
        " DEFINE B AS B.v > A.v, C AS C.v < 0)"
    )
    catalog, topic = _catalog(text)
    records = records_of([{"type": "T", "v": v} for v in range(100)], None, 1)
    state = PartitionState(topic, 0, catalog)
    outputs, dead = state.process(records[:10])
    assert (outputs, dead) == ([], [])
    assert state.suspensions.by_name == {}
    outputs, dead = state.process(records[10:])  # the bound is passed in this batch
    assert (outputs, dead) == ([], [])
    found = state.suspensions.of("q", 0)
    assert found is not None and found.offset == records[10].offset
    assert "more than 50 partial matches" in found.reason()
    # In the checkpoint, reason included: a successor skips the query from there too.
    ckpt = Checkpoint.decode(state.checkpoint().encode())
    restored = PartitionState.restore(catalog, topic, 0, ckpt, {})
    again = restored.suspensions.of("q", 0)
    assert again is not None and again.offset == found.offset
    assert again.reason() == found.reason()
    assert restored.process(records_of([{"type": "T", "v": -1}], None, 1, first=100)) == ([], [])
