"""``max_outputs_per_event``: a flooding query is cut per event, deterministically,
visibly, and without touching the other queries of the partition."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.complex_event import ComplexEvent
from cerfleet.fleet.records import RecordLimits
from cerfleet.workers.checkpoint import Checkpoint
from cerfleet.workers.outputs import MAX_OUTPUT_BYTES, output_value, record_value
from cerfleet.workers.partition import Output, PartitionState, Record
from tests.workers.test_partition import INPUT, make_catalog, split, topics_of

# Both without PARTITION BY: one keyed topic, one partition state holds both.
QUERIES = {
    "flood": "SELECT * FROM S WHERE A+",  # 2^(n-1) complex events end at the n-th A
    "pair": "SELECT * FROM S WHERE A ; B WITHIN 3 EVENTS",
}
CATALOG, REGISTRY = make_catalog(QUERIES)
(TOPIC,) = topics_of(CATALOG)
CAP = 5


def records(kinds: str) -> list[Record]:
    return [
        Record(i, orjson.dumps({"type": kind}), (INPUT, 0, i), REGISTRY)
        for i, kind in enumerate(kinds)
    ]


def state(cap: int | None = CAP) -> PartitionState:
    return PartitionState(TOPIC, 0, CATALOG, max_outputs_per_event=cap)


Row = tuple[str, int, int, tuple[int, ...], bool]


def rows(outputs: list[Output]) -> list[Row]:
    return sorted((o.run.name, o.seq, o.ce.end, o.ce.positions, o.truncated) for o in outputs)


def run(st_: PartitionState, batches: list[list[Record]]) -> list[Row]:
    out: list[Row] = []
    for batch in batches:
        outputs, dead = st_.process(batch)
        assert dead == []
        out += rows(outputs)
    return sorted(out)


def test_the_flood_is_cut_and_flagged_the_normal_query_is_whole() -> None:
    recs = records("AAAAAAAAB")  # 8 As: 1+2+4+...+128 complex events of `flood`
    s = state()
    out = run(s, [recs])
    flood = [r for r in out if r[0] == "flood"]
    pair = [r for r in out if r[0] == "pair"]
    per_end = {end: sum(1 for r in flood if r[2] == end) for end in range(8)}
    assert per_end == {0: 1, 1: 2, 2: 4, 3: 5, 4: 5, 5: 5, 6: 5, 7: 5}
    # The last kept output of each cut event says so; no other does.
    flagged = [(r[2], r[1]) for r in flood if r[4]]
    assert flagged == [(end, max(r[1] for r in flood if r[2] == end)) for end in range(3, 8)]
    assert s.truncated == {"flood": 5}
    # The other query is untouched: every A within 3 events before the B.
    assert sorted(r[3] for r in pair) == [(5, 8), (6, 8), (7, 8)]
    assert not any(r[4] for r in pair)
    unbounded = run(state(None), [recs])
    assert [r for r in unbounded if r[0] == "pair"] == pair
    assert len([r for r in unbounded if r[0] == "flood"]) == 2**8 - 1


def test_the_flag_reaches_the_output_record() -> None:
    s = state(1)
    outputs, _ = s.process(records("AA"))
    docs = [orjson.loads(output_value("flood", TOPIC, 0, o.ce, o.truncated)) for o in outputs]
    assert [d.get("truncated") for d in docs] == [None, True]


@settings(max_examples=40, deadline=None, database=None)
@given(
    kinds=st.text(alphabet="AAB", min_size=1, max_size=14),
    cuts=st.lists(st.integers(0, 14), max_size=4),
    data=st.data(),
)
def test_cutting_is_a_function_of_the_input(kinds: str, cuts: list[int], data: Any) -> None:
    """Batches and a crash with replay give the same numbered, flagged outputs."""
    recs = records(kinds)
    want = run(state(), [recs])
    assert run(state(), split(recs, cuts)) == want
    at = data.draw(st.integers(0, len(recs)), label="checkpoint")
    first = state()
    before = run(first, [recs[:at]])
    ckpt = Checkpoint.decode(first.checkpoint().encode())
    published: dict[tuple[str, int], int] = {}
    for name, seq, *_ in before:
        key = (name, CATALOG.registry.current[name].version)
        published[key] = max(seq, published.get(key, -1))
    again = PartitionState.restore(CATALOG, TOPIC, 0, ckpt, published, CAP)
    assert sorted(before + run(again, [recs[max(0, at - 1) :]])) == want


def test_cutting_is_logged_once_per_partition_and_query(caplog: Any) -> None:
    s = state(1)
    with caplog.at_level("WARNING", logger="cerfleet.workers.query_run"):
        for batch in split(records("AAAAA"), [2, 3, 4]):
            s.process(batch)
    assert s.truncated == {"flood": 4}
    assert [r.getMessage() for r in caplog.records] == [
        f"{TOPIC}[0]: query 'flood' made one event emit more than 1 complex events; the rest "
        'were dropped (outputs flagged "truncated", metric '
        "cerfleet_worker_truncated_events_total)"
    ]
    duplicates, suppressed, truncated, seconds, _ = s.counts()
    assert (duplicates, suppressed, truncated) == (0, 0, {"flood": 4})
    assert set(seconds) == {"flood", "pair"} and all(v > 0 for v in seconds.values())


def test_records_over_the_limits_become_dead_letters_and_the_rest_goes_on() -> None:
    s = state()
    s.record_limits = RecordLimits(max_bytes=1000, max_depth=8)
    big = Record(1, b'{"type": "A", "s": "' + b"x" * 2000 + b'"}', (INPUT, 0, 1), REGISTRY)
    deep = b'{"type": "A", "x": ' + b"[" * 400 + b"]" * 400 + b"}"
    recs = records("AAAB")
    batch = [recs[0], big, Record(2, deep, (INPUT, 0, 2), REGISTRY), *recs[3:]]
    outputs, dead = s.process(batch)
    assert [(d.record.offset, d.reason, d.query) for d in dead] == [
        (1, "too_large", None),
        (2, "too_deep", None),
    ]
    assert dead[0].record.value is None  # it would not fit the dead-letter topic either
    assert dead[1].record.value == deep
    assert sorted(o.ce.positions for o in outputs if o.run.name == "pair") == [(0, 3)]


def test_an_output_record_too_large_to_publish_drops_its_events_then_its_sources() -> None:
    big = {"type": "A", "s": "x" * 400_000}
    ce = ComplexEvent(0, 2, (0, 1, 2), None, (big, big, big))
    sources = [{"topic": INPUT, "partition": 0, "offset": i} for i in range(3)]
    doc = orjson.loads(record_value("q", None, ce, ce.events, sources))
    assert doc["events"] is None and doc["omitted"] == ["events"]
    assert doc["positions"] == [0, 1, 2] and doc["sources"] == sources
    many = ComplexEvent(0, 99_999, tuple(range(100_000)), None, ({"type": "A"},) * 100_000)
    wide = [{"topic": INPUT * 10, "partition": 0, "offset": i} for i in range(100_000)]
    value = record_value("q", None, many, many.events, wide)
    assert len(value) <= MAX_OUTPUT_BYTES
    assert orjson.loads(value)["omitted"] == ["events", "sources"]
    small = orjson.loads(record_value("q", None, ce, ce.events[:1], sources[:1]))
    # Positions are in every record now (they are cerfleet run's), omitted or not.
    assert "omitted" not in small and small["positions"] == list(ce.positions)
