"""MATCH_RECOGNIZE in a keyed partition: the published rows are ``cerfleet run``'s, and
MATCH_NUMBER goes on counting through checkpoints, crashes and replays."""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from hypothesis import event, given, settings
from hypothesis import strategies as st

from cerfleet.errors import MatchRecognizeError
from cerfleet.fleet.registry import QuerySpec, RegistryHistory
from cerfleet.languages import row_writer
from cerfleet.query import compile_query
from cerfleet.streams import steps
from cerfleet.workers.catalog import Catalog
from cerfleet.workers.checkpoint import Checkpoint
from cerfleet.workers.partition import PartitionState
from cerfleet.workers.query_run import Output, output_record
from cerfleet.workers.row_outputs import OMITTED_HEADER, TRUNCATED_HEADER
from tests.shared.match_recognize.test_differential import _drop_numbers, _sorted, query_text
from tests.shared.match_recognize.test_differential import cases as mr_cases
from tests.shared.match_recognize.test_differential import expected as oracle_rows
from tests.workers.test_lateness import BOUND as LATE_BOUND
from tests.workers.test_lateness import _arrivals as late_arrivals
from tests.workers.test_partition import events_st, records_of, split
from tests.workers.test_query_run_selection import partition_rows, published_matches

MR = "match_recognize"
QUERIES: dict[str, str] = {
    # PREV, SKIP PAST LAST ROW (consumption per partition), MATCH_NUMBER per key.
    "one-row": """SELECT * FROM S MATCH_RECOGNIZE (PARTITION BY k
        MEASURES MATCH_NUMBER() AS mn, FIRST(A.v) AS a, LAST(B.v) AS b, COUNT(*) AS n
        ONE ROW PER MATCH PATTERN (A B) DEFINE A AS v > 1, B AS v < PREV(v))""",
    # One record per row, with the row's attributes and running measures.
    "all-rows": """SELECT * FROM S MATCH_RECOGNIZE (PARTITION BY k
        MEASURES MATCH_NUMBER() AS mn, CLASSIFIER() AS c, SUM(B.v) AS s
        ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (A B{2})
        DEFINE A AS type = 'A', B AS B.v >= A.v)""",
    # Variable length under ALL MATCHES, a correlation checked at enumeration, a window.
    "all-matches": """SELECT * FROM S MATCH_RECOGNIZE (PARTITION BY k ORDER BY t
        MEASURES MATCH_NUMBER() AS mn, COUNT(B.*) AS bs, LAST(B.v) AS last
        ALL MATCHES PATTERN (A B+) WITHIN INTERVAL '4' SECONDS
        DEFINE B AS B.v > PREV(B.v))""",
    # No PARTITION BY: one MATCH_NUMBER for the whole stream.
    "global": """SELECT * FROM S MATCH_RECOGNIZE (
        MEASURES MATCH_NUMBER() AS mn, A.t AS at
        PATTERN (A C) DEFINE A AS type = 'A', C AS type = 'C')""",
}
TOPIC_OF: dict[str, str] = {}


def _spec(name: str, text: str) -> QuerySpec:
    return QuerySpec(name=name, ceql=text, input_topics=("in",), output_topic="o", language=MR)


def _catalog() -> Catalog:
    history = RegistryHistory()
    for offset, (name, text) in enumerate(QUERIES.items()):
        history.apply(offset, name.encode(), _spec(name, text).model_dump_json().encode())
    assert history.errors == 0
    catalog = Catalog(history, "k.")
    for entry in history.current.values():
        TOPIC_OF[entry.spec.name] = catalog.keyed_topic_of(entry)
    return catalog


CATALOG = _catalog()
REGISTRY = len(QUERIES)
Row = tuple[str, int, Any]  # query, seq, the row as published


def embedded(name: str, events: Sequence[dict[str, Any]]) -> list[Row]:
    """``cerfleet run``'s rows: the embedded engine, then the language's writer."""
    text = QUERIES[name]
    ces = compile_query(text, language=MR).evaluator().process_batch(list(events))
    write = row_writer(MR, text)
    assert write is not None
    out = orjson.loads(b"[%b]" % write(ces).replace(b"\n", b",").rstrip(b","))
    return [(name, seq, row) for seq, row in enumerate(out)]


def published(outputs: Iterable[Output], name: str) -> list[Row]:
    out = []
    for o in outputs:
        if o.run.name == name:
            value, _ = output_record((TOPIC_OF[name], 3), o)
            out.append((name, o.seq, orjson.loads(value)))
    return out


def run(state: PartitionState, batches: Iterable[Sequence[Any]], name: str) -> list[Row]:
    out: list[Row] = []
    for batch in batches:
        outputs, dead = state.process(batch)
        assert dead == []
        out += published(outputs, name)
    return out


def test_every_query_emits_on_a_simple_stream() -> None:
    events = [
        {"type": kind, "v": v, "k": 1, "t": t}
        for t, (kind, v) in enumerate([("A", 3), ("B", 4), ("B", 5), ("C", 1), ("A", 2), ("C", 2)])
    ]
    for name in QUERIES:
        rows = run(
            PartitionState(TOPIC_OF[name], 3, CATALOG), [records_of(events, None, REGISTRY)], name
        )
        assert rows and rows == embedded(name, events), name


@settings(max_examples=60, deadline=None, database=None)
@given(events=events_st, data=st.data())
def test_a_crash_and_replay_publishes_run_s_rows_once(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    """A checkpoint, then a crash after a prefix of the later rows was published: the
    successor's rows complete them, none twice, MATCH_NUMBER continuing."""
    records = records_of(events, None, REGISTRY)
    n = len(records)
    at_checkpoint = data.draw(st.integers(0, n), label="checkpoint")
    at_crash = data.draw(st.integers(at_checkpoint, n), label="crash")
    for name in QUERIES:
        topic = TOPIC_OF[name]
        want = embedded(name, events)
        state = PartitionState(topic, 3, CATALOG)
        before = run(state, split(records[:at_checkpoint], [at_checkpoint // 2]), name)
        ckpt = Checkpoint.decode(state.checkpoint().encode())
        after = run(state, [records[at_checkpoint:at_crash]], name)
        keep = data.draw(st.integers(0, len(after)), label=f"published {name}")
        out = before + after[:keep]
        version = CATALOG.registry.current[name].version
        seqs = {(name, version): max((seq for _, seq, _ in out), default=-1)}
        restored = PartitionState.restore(CATALOG, topic, 3, ckpt, seqs)
        replay = records[max(0, at_checkpoint - 2) :]
        out += run(restored, split(replay, [len(replay) // 3]), name)
        assert [seq for _, seq, _ in out] == list(range(len(out))), "a row lost or repeated"
        assert out == want


def test_a_restored_checkpoint_continues_match_number() -> None:
    def events(k: str, t0: int) -> list[dict[str, Any]]:
        return [{"type": "A" if i % 2 == 0 else "C", "k": k, "t": t0 + i} for i in range(4)]

    topic = TOPIC_OF["global"]
    state = PartitionState(topic, 3, CATALOG)
    records = records_of(events("x", 0) + events("x", 10), None, REGISTRY)
    first = run(state, [records[:4]], "global")
    assert [r[2]["mn"] for r in first] == [1, 2]
    ckpt = Checkpoint.decode(state.checkpoint().encode())
    assert ckpt.queries["global"].output == [[None, 2]]
    restored = PartitionState.restore(CATALOG, topic, 3, ckpt, {})
    assert [r[2]["mn"] for r in run(restored, [records[4:]], "global")] == [3, 4]
    # Per key: the keyed query restores each key's count.
    topic = TOPIC_OF["one-row"]
    state = PartitionState(topic, 3, CATALOG)
    rising = [{"type": "A", "v": v, "k": k, "t": 0} for k in "xyx" for v in (5, 2, 5, 2)]
    records = records_of(rising, None, REGISTRY)
    first = run(state, [records[:8]], "one-row")
    assert [r[2]["mn"] for r in first] == [1, 2, 1, 2]
    ckpt = Checkpoint.decode(state.checkpoint().encode())
    restored = PartitionState.restore(CATALOG, topic, 3, ckpt, {})
    again = run(restored, [records[8:]], "one-row")
    assert [(r[2]["k"], r[2]["mn"]) for r in again] == [("x", 3), ("x", 4)]


def test_a_cut_event_flags_its_last_row_in_a_header() -> None:
    name = "all-matches"
    entry = CATALOG.registry.current[name]
    state = PartitionState(TOPIC_OF[name], 3, CATALOG, max_outputs_per_event=2)
    events = [{"type": "A", "v": v, "k": 1, "t": 0} for v in range(6)]
    outputs, _ = state.process(records_of(events, None, REGISTRY))
    outputs = [o for o in outputs if o.run.name == name]
    assert entry.spec.max_outputs_per_event is None
    flagged = [o for o in outputs if o.truncated]
    assert flagged and all(
        (TRUNCATED_HEADER, b"true") in output_record((TOPIC_OF[name], 3), o)[1] for o in flagged
    )
    # A B+ under ALL MATCHES: i matches end at the i-th event (from 0), cut at 2.
    assert len(outputs) == 0 + 1 + 2 * 4 and len(flagged) == 3


# ------------------------------------------------- against the brute-force oracle


def _partition_rows(text: str, rows: list[dict[str, Any]], cut: int, data: st.DataObject) -> Any:
    """The rows a keyed partition publishes for the query ``text`` over ``rows`` (keyed
    offsets 0, 1, …), with a checkpoint after ``cut`` rows and a crash after a drawn
    prefix of the later rows was published: as (positions, [row, …]) per match."""
    crash = data.draw(st.integers(cut, len(rows)), label="crash")
    keep = data.draw(st.integers(0, 4 * len(rows)), label="published")
    return published_matches(partition_rows(text, rows, cut, crash, keep))


@settings(max_examples=300, deadline=None, database=None)
@given(
    case=st.one_of(mr_cases(), mr_cases(cross=True), mr_cases(fixed=True, cross=True)),
    data=st.data(),
)
def test_published_rows_match_the_oracle_through_a_crash(
    case: dict[str, Any], data: st.DataObject
) -> None:
    """Random MATCH_RECOGNIZE queries and streams (the embedded differential suite's),
    through a keyed partition with a checkpoint, a crash and a replay: the rows published
    are the brute-force oracle's, MATCH_NUMBER included."""
    text = query_text(case)
    try:
        compile_query(text, language=MR)
    except MatchRecognizeError:
        event("rejected")
        return  # rejected queries: the embedded suite checks they are
    want = _sorted(oracle_rows(case))
    event(f"{case['mode']}, {case['rows_per']}, {'some match' if want else 'no match'}")
    got = _sorted(_partition_rows(text, case["rows"], case["cut"], data))
    if case["mode"] == "MATCHES":  # the order of matches ending on one row is the engine's
        want, got = _drop_numbers(want), _drop_numbers(got)
    assert got == want, text


def test_a_row_too_large_for_a_record_is_published_with_null_values() -> None:
    text = """SELECT * FROM S MATCH_RECOGNIZE (MEASURES FIRST(A.s) AS f, LAST(A.s) AS l
        ALL ROWS PER MATCH PATTERN (A) DEFINE A AS type = 'A')"""
    history = RegistryHistory()
    history.apply(0, b"big", _spec("big", text).model_dump_json().encode())
    catalog = Catalog(history, "k.")
    topic = catalog.keyed_topic_of(history.current["big"])
    events = [{"type": "A", "s": "x" * 400_000}, {"type": "A", "s": "small"}]
    outputs, dead = PartitionState(topic, 0, catalog).process(records_of(events, None, 1))
    assert dead == [] and len(outputs) == 2
    big, small = (output_record((topic, 0), o) for o in outputs)
    assert orjson.loads(big[0]) == {"type": None, "s": None, "f": None, "l": None}
    assert (OMITTED_HEADER, b"type,s,f,l") in big[1]
    assert orjson.loads(small[0]) == {"type": "A", "s": "small", "f": "small", "l": "small"}
    assert all(name != OMITTED_HEADER for name, _ in small[1])


LATE_MR = """SELECT * FROM S MATCH_RECOGNIZE (
    MEASURES MATCH_NUMBER() AS mn, A.n AS a, LAST(B.n) AS b, COUNT(*) AS rows
    ALL MATCHES PATTERN (A B+)
    DEFINE A AS type = 'A', B AS type <> 'Z' AND B.v >= PREV(B.v))"""


@settings(max_examples=100, deadline=None, database=None)
@given(events=late_arrivals(), data=st.data())
def test_with_a_lateness_bound_the_rows_are_run_max_lateness_s(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    """Out of order within ``--max-lateness``: the keyed partition releases the events in
    time order as ``cerfleet run --max-lateness`` does, through a crash with events held.
    The last event, far later, releases the others and is in no match (a topic has no end
    to release it, where ``run`` releases it at the end of its file)."""
    spec = QuerySpec(
        name="late",
        ceql=LATE_MR,
        input_topics=("in",),
        output_topic="o",
        time_field="t",
        max_lateness=LATE_BOUND,
        language=MR,
    )
    history = RegistryHistory()
    history.apply(0, b"late", spec.model_dump_json().encode())
    catalog = Catalog(history, "k.")
    topic = catalog.keyed_topic_of(history.current["late"])
    compiled = compile_query(LATE_MR, time_field="t", language=MR)
    write = row_writer(MR, LATE_MR)
    assert write is not None
    source = io.BytesIO(b"".join(orjson.dumps(e) + b"\n" for e in events))
    want = [
        row
        for step in steps(compiled, compiled.evaluator(), source, max_lateness=LATE_BOUND)
        for ce in step.complex_events
        for row in write.rows(ce)
    ]
    event("some rows" if want else "no rows")
    records = records_of(events, None, 1)
    state = PartitionState(topic, 0, catalog)
    cut = data.draw(st.integers(0, len(records)), label="checkpoint")
    out = [(o.seq, o.value) for o in state.process(records[:cut])[0]]
    ckpt = Checkpoint.decode(state.checkpoint().encode())
    after = state.process(records[cut:])[0]
    out += [(o.seq, o.value) for o in after[: data.draw(st.integers(0, len(after)))]]
    seqs = {("late", 0): max((seq for seq, _ in out), default=-1)}
    restored = PartitionState.restore(catalog, topic, 0, ckpt, seqs)
    out += [(o.seq, o.value) for o in restored.process(records[cut:])[0]]
    assert [seq for seq, _ in out] == list(range(len(out)))
    assert [orjson.loads(v or b"") for _, v in out] == want
