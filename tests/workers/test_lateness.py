"""A lateness bound in the worker: a keyed partition's events in time order within the
bound, as ``cerfleet run --max-lateness`` gives them, and the reorder buffer in the
checkpoint, so a crash and replay lose and repeat nothing."""

from __future__ import annotations

import io
import os
from collections import Counter
from collections.abc import Sequence
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.fleet.registry import QuerySpec, RegistryHistory
from cerfleet.query import compile_query
from cerfleet.streams import steps
from cerfleet.workers.catalog import Catalog
from cerfleet.workers.checkpoint import Checkpoint
from cerfleet.workers.outputs import SOURCE_FIELD
from cerfleet.workers.partition import PartitionState, Record
from tests.workers.test_partition import INPUT, PREFIX, Row, ordered, run, split, topics_of

BOUND = 2
QUERIES = {
    "late-seq": "SELECT * FROM S WHERE A ; B+ ; C WITHIN 4 [t]",
    # The bound from the query's own quarantine.
    "late-declared": "CREATE QUARANTINE { BOUNDED_TIME 2 MILLISECONDS { S } } "
    "SELECT * FROM S WHERE A ; C FILTER C[v >= 1] WITHIN 3 [t]",
}

# The suite runs a few hundred examples per property; the proof run sets
# CERFLEET_PROOF_EXAMPLES=2500.
EXAMPLES = int(os.environ.get("CERFLEET_PROOF_EXAMPLES", "150"))


def _catalog() -> tuple[Catalog, int]:
    history = RegistryHistory()
    for offset, (name, text) in enumerate(QUERIES.items()):
        bound = None if "QUARANTINE" in text else BOUND
        spec = QuerySpec(
            name=name,
            ceql=text,
            input_topics=(INPUT,),
            output_topic=f"out-{name}",
            time_field="t",
            max_lateness=bound,
        )
        history.apply(offset, key=name.encode(), value=spec.model_dump_json().encode())
    assert history.errors == 0
    return Catalog(history, PREFIX), len(QUERIES)


CATALOG, REGISTRY = _catalog()


@st.composite
def _arrivals(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Events with times 0, 1, … (``n``: the time order), in an arrival order where none
    comes more than ``BOUND`` after a later one, then one far later (so all are released)."""
    n = draw(st.integers(2, 25))
    events = [
        {"type": draw(st.sampled_from("ABC")), "v": draw(st.integers(0, 2)), "t": i, "n": i}
        for i in range(n)
    ]
    delays = [draw(st.integers(0, BOUND)) for _ in events]
    arrival = sorted(range(n), key=lambda i: i + delays[i])
    return [events[i] for i in arrival] + [{"type": "Z", "v": 0, "t": 1000, "n": n}]


def _records(events: Sequence[dict[str, Any]], first: int = 0) -> list[Record]:
    # Input offsets follow arrival, as in a topic (the worker drops a smaller one as a
    # second copy); ``n`` names the event.
    return [
        Record(offset, orjson.dumps(e), (INPUT, 0, offset), REGISTRY)
        for offset, e in enumerate(events, first)
    ]


def _matches(rows: Sequence[Row]) -> Counter[tuple[str, tuple[int, ...]]]:
    """Each output as (query, the events it consists of), each event still naming the
    input record it came from."""
    out: Counter[tuple[str, tuple[int, ...]]] = Counter()
    for name, _, ce in rows:
        assert all(e[SOURCE_FIELD][0] == INPUT for e in ce["events"])
        out[(name, tuple(e["n"] for e in ce["events"]))] += 1
    return out


def _embedded(events: Sequence[dict[str, Any]]) -> Counter[tuple[str, tuple[int, ...]]]:
    out: Counter[tuple[str, tuple[int, ...]]] = Counter()
    for name, text in QUERIES.items():
        compiled = compile_query(text, time_field="t")
        source = io.BytesIO(b"".join(orjson.dumps(e) + b"\n" for e in events))
        for step in steps(compiled, compiled.evaluator(), source, max_lateness=BOUND):
            out += Counter((name, tuple(e["n"] for e in ce.events)) for ce in step.complex_events)
    return out


def _keyed_topic() -> str:
    (topic,) = topics_of(CATALOG)
    return topic


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(events=_arrivals(), cuts=st.lists(st.integers(0, 26), max_size=4))
def test_out_of_order_within_the_bound_gives_cerfleet_run_s_answer(
    events: list[dict[str, Any]], cuts: list[int]
) -> None:
    records = _records(events)
    got = run(PartitionState(_keyed_topic(), 0, CATALOG), split(records, cuts))
    assert _matches(got) == _embedded(events)


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(events=_arrivals(), data=st.data())
def test_a_crash_with_events_held_loses_and_repeats_nothing(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    records = _records(events)
    topic = _keyed_topic()
    want = run(PartitionState(topic, 0, CATALOG), [records])
    at_checkpoint = data.draw(st.integers(0, len(records)), label="checkpoint")
    at_crash = data.draw(st.integers(at_checkpoint, len(records)), label="crash")
    state = PartitionState(topic, 0, CATALOG)
    before = run(state, [records[:at_checkpoint]])
    ckpt = Checkpoint.decode(state.checkpoint().encode())
    after = run(state, [records[at_checkpoint:at_crash]])
    published_rows = before + after[: data.draw(st.integers(0, len(after)), label="published")]
    published: dict[tuple[str, int], int] = {}
    for name, seq, _ in published_rows:
        version = CATALOG.registry.current[name].version
        published[(name, version)] = max(seq, published.get((name, version), -1))
    restored = PartitionState.restore(CATALOG, topic, 0, ckpt, published)
    again = run(restored, split(records[max(0, at_checkpoint - 2) :], [3]))
    union = published_rows + again
    assert len({(name, seq) for name, seq, _ in union}) == len(union), "a repeat"
    assert ordered(union) == want


def test_held_events_are_in_the_checkpoint_and_a_late_one_is_dropped() -> None:
    events = [
        {"type": "A", "v": 0, "t": 10, "n": 0},
        {"type": "C", "v": 1, "t": 12, "n": 2},
        {"type": "A", "v": 0, "t": 11, "n": 1},  # 1 ms late: within the bound
        {"type": "A", "v": 0, "t": 5, "n": 9},  # 7 ms late: beyond it
    ]
    state = PartitionState(_keyed_topic(), 0, CATALOG)
    assert run(state, [_records(events)]) == []
    ckpt = Checkpoint.decode(state.checkpoint().encode())
    stage = ckpt.queries["late-seq"].lateness
    assert stage is not None and len(stage["buffer"]["held"]) == 2  # t=11 and t=12
    assert stage["late"] == 1
    # Counted per query, for the late events metric: each query dropped the t=5 event.
    assert state.counts()[4] == {"late-seq": 1, "late-declared": 1}
    restored = PartitionState.restore(CATALOG, _keyed_topic(), 0, ckpt, {})
    later = _records([{"type": "Z", "v": 0, "t": 100, "n": 10}], first=9)
    got = run(restored, [later])
    assert _matches(got) == Counter({("late-declared", (0, 2)): 1, ("late-declared", (1, 2)): 1})
