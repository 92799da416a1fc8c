"""``PartitionState``: the deterministic core of a worker, without Kafka.

The worker's promises, checked against the embedded engine over the same events:
batching never changes the answer, a crash followed by a replay from the last
checkpoint loses and repeats nothing, records a restarted coordinator routes
twice are dropped, every record runs exactly the queries registered when it was
routed, and unusable records become dead letters without disturbing the rest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from itertools import pairwise
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.fleet.registry import QuerySpec, Registered, RegistryHistory
from cerfleet.workers.catalog import Catalog
from cerfleet.workers.checkpoint import Checkpoint
from cerfleet.workers.outputs import SOURCE_FIELD
from cerfleet.workers.partition import DeadLetter, Output, PartitionState, Record

PREFIX = "k."
INPUT = "in"

# Two groups (one keyed topic each): PARTITION BY [k], and no PARTITION BY.
QUERIES: dict[str, str] = {
    "kp-time": "SELECT * FROM S WHERE A ; B ; C FILTER B[v > 0] PARTITION BY [k] WITHIN 3 [t]",
    "g-time": "SELECT * FROM S WHERE A ; B+ ; C WITHIN 4 [t]",
    "kp-plus": "SELECT * FROM S WHERE A ; B+ ; C FILTER A[v > 1] AND C[v < 4] "
    "PARTITION BY [k] WITHIN 6 EVENTS CONSUME BY PARTITION",
    "kp-pair": "SELECT * FROM S WHERE A ; C FILTER C[v >= 2] PARTITION BY [k] WITHIN 4 EVENTS",
    "g-plus": "SELECT * FROM S WHERE A ; B+ ; C WITHIN 5 EVENTS",
    "g-any": "SELECT * FROM S WHERE (A OR B) ; C FILTER C[v >= 3] WITHIN 3 EVENTS CONSUME BY ANY",
}

Row = tuple[str, int, dict[str, Any]]  # (query name, seq, complex event as a dict)


def spec(name: str, ceql: str) -> QuerySpec:
    return QuerySpec(name=name, ceql=ceql, input_topics=(INPUT,), output_topic=f"out-{name}")


def register(history: RegistryHistory, offset: int, name: str, ceql: str | None) -> None:
    value = None if ceql is None else spec(name, ceql).model_dump_json().encode()
    history.apply(offset, key=name.encode(), value=value)


def make_catalog(queries: Mapping[str, str]) -> tuple[Catalog, int]:
    """A catalog of ``queries`` registered at offsets 0, 1, …; also the registry offset
    at which all of them are visible."""
    history = RegistryHistory()
    for offset, (name, text) in enumerate(queries.items()):
        register(history, offset, name, text)
    assert history.errors == 0
    return Catalog(history, PREFIX), len(queries)


CATALOG, REGISTRY = make_catalog(QUERIES)


def topics_of(catalog: Catalog) -> dict[str, list[Registered]]:
    """Keyed topic → the queries of its group."""
    out: dict[str, list[Registered]] = {}
    for entry in catalog.registry.current.values():
        out.setdefault(catalog.keyed_topic_of(entry), []).append(entry)
    return out


TOPICS = topics_of(CATALOG)


def test_the_queries_form_two_groups() -> None:
    groups = sorted(sorted(e.spec.name for e in entries) for entries in TOPICS.values())
    assert groups == [["g-any", "g-plus", "g-time"], ["kp-pair", "kp-plus", "kp-time"]]


# ----------------------------------------------------------------- strategies


def _stream(items: list[tuple[str, int, int | str | None, int]]) -> list[dict[str, Any]]:
    """Events of type A, B or C with an int ``v``, a key ``k`` (None: without k, so of no
    key under PARTITION BY) and a clock ``t`` that mostly goes forward (late events too)."""
    events = []
    t = 0
    for kind, v, k, dt in items:
        t += dt
        event: dict[str, Any] = {"type": kind, "v": v, "t": t}
        if k is not None:
            event["k"] = k
        events.append(event)
    return events


events_st = st.lists(
    st.tuples(
        st.sampled_from("ABC"),
        st.integers(0, 5),
        st.sampled_from([0, 1, 1, 1, "x", None]),
        st.sampled_from([0, 1, 1, 2, -1]),
    ),
    min_size=3,
    max_size=30,
).map(_stream)
gaps_st = st.lists(st.integers(1, 3), min_size=30, max_size=30)


def records_of(
    events: Sequence[Mapping[str, Any]],
    gaps: Sequence[int] | None = None,
    registry: int = REGISTRY,
    first: int = 0,
) -> list[Record]:
    """Keyed records of ``events`` (increasing keyed offsets, with ``gaps`` if given); the
    i-th event is input record ``("in", 0, i)``."""
    records = []
    offset = first
    for i, event in enumerate(events):
        records.append(Record(offset, orjson.dumps(event), (INPUT, 0, i), registry))
        offset += gaps[i] if gaps is not None else 1
    return records


def rows(outputs: Iterable[Output]) -> list[Row]:
    return [(o.run.name, o.seq, o.ce.to_dict()) for o in outputs]


def ordered(items: Iterable[Row]) -> list[Row]:
    return sorted(items, key=lambda r: (r[0], r[1]))


def run(state: PartitionState, batches: Iterable[Sequence[Record]]) -> list[Row]:
    out: list[Row] = []
    for batch in batches:
        outputs, dead = state.process(batch)
        assert dead == []
        out += rows(outputs)
    return ordered(out)


def split(records: Sequence[Record], cuts: Iterable[int]) -> list[list[Record]]:
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(records)}), len(records)]
    return [list(records[a:b]) for a, b in pairwise(bounds)]


def embedded(entries: Iterable[Registered], records: Sequence[Record]) -> list[Row]:
    """The embedded engine's answer, numbered per query, positions being keyed offsets."""
    out: list[Row] = []
    for entry in entries:
        events = []
        for rec in records:
            assert rec.value is not None and rec.src is not None
            events.append({**orjson.loads(rec.value), SOURCE_FIELD: list(rec.src)})
        ces = entry.query.evaluator().process_batch(events, [r.offset for r in records])
        out += [(entry.spec.name, seq, ce.to_dict()) for seq, ce in enumerate(ces)]
    return ordered(out)


def fresh(topic: str, catalog: Catalog = CATALOG) -> PartitionState:
    return PartitionState(topic, 3, catalog)


# ------------------------------------------------------------ batching invariance


@settings(max_examples=60, deadline=None, database=None)
@given(events=events_st, gaps=gaps_st, cuts=st.lists(st.integers(0, 30), max_size=6))
def test_batching_does_not_change_the_answer(
    events: list[dict[str, Any]], gaps: list[int], cuts: list[int]
) -> None:
    records = records_of(events, gaps)
    for topic, entries in TOPICS.items():
        whole = run(fresh(topic), [records])
        assert whole == run(fresh(topic), split(records, cuts))
        assert whole == run(fresh(topic), [[r] for r in records])
        assert whole == embedded(entries, records)


def test_the_streams_do_produce_complex_events() -> None:
    # Guards the properties above against vacuity: each query matches on a simple stream.
    events = [
        {"type": kind, "v": v, "k": 1, "t": t}
        for t, (kind, v) in enumerate([("A", 3), ("B", 0), ("B", 1), ("C", 3), ("A", 2), ("C", 2)])
    ]
    records = records_of(events)
    counts: Counter[str] = Counter()
    for topic in TOPICS:
        counts.update(name for name, _, _ in run(fresh(topic), [records]))
    assert set(counts) == set(QUERIES)
    # Keyed offsets are the complex events' positions.
    gapped = records_of(events, [10] * len(events), first=100)
    kp = next(t for t, es in TOPICS.items() if es[0].query.partitioned)
    ends = {row[2]["end"] for row in run(fresh(kp), [gapped])}
    assert ends <= {r.offset for r in gapped} and ends


# ----------------------------------------------------------------- crash / replay


@settings(max_examples=60, deadline=None, database=None)
@given(
    events=events_st,
    data=st.data(),
)
def test_a_crash_and_replay_loses_and_repeats_nothing(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    records = records_of(events)
    n = len(records)
    at_checkpoint = data.draw(st.integers(0, n), label="checkpoint")
    at_crash = data.draw(st.integers(at_checkpoint, n), label="crash")
    for topic, entries in TOPICS.items():
        want = run(fresh(topic), [records])

        state = fresh(topic)
        before = run(state, split(records[:at_checkpoint], [at_checkpoint // 2]))
        ckpt = Checkpoint.decode(state.checkpoint().encode())
        assert ckpt.next_offset == (records[at_checkpoint - 1].offset + 1 if at_checkpoint else 0)
        after = run(state, [records[at_checkpoint:at_crash]])
        # Everything before the checkpoint was published (the worker flushes first);
        # of what came after, a prefix of each query's outputs made it out.
        published_rows = list(before)
        for entry in entries:
            mine = [r for r in after if r[0] == entry.spec.name]
            keep = data.draw(st.integers(0, len(mine)), label=f"published {entry.spec.name}")
            published_rows += mine[:keep]
        published: dict[tuple[str, int], int] = {}
        for name, seq, _ in published_rows:
            version = CATALOG.registry.current[name].version
            published[(name, version)] = max(seq, published.get((name, version), -1))

        restored = PartitionState.restore(CATALOG, topic, 3, ckpt, published)
        assert restored.next_offset == ckpt.next_offset
        # Replay from a little before the checkpoint: already processed offsets are ignored.
        replay = records[max(0, at_checkpoint - 2) :]
        again = run(restored, split(replay, [len(replay) // 3]))

        union = published_rows + again
        assert len({(name, seq) for name, seq, _ in union}) == len(union), "a repeat"
        assert ordered(union) == want
        assert restored.suppressed == len(published_rows) - len(before)
        assert restored.duplicates == 0


@settings(max_examples=60, deadline=None, database=None)
@given(events=events_st, data=st.data())
def test_repeated_crashes_lose_and_repeat_nothing(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    """A model of the worker: outputs are flushed at each checkpoint; a crash publishes a
    prefix of each query's outputs since then, and the successor restores the latest
    checkpoint (none: from the start), learns what was published and replays."""
    records = records_of(events)  # offsets 0, 1, …: a record's offset is its index
    for topic in TOPICS:
        want = run(fresh(topic), [records])
        state = fresh(topic)
        last: bytes | None = None
        published: list[Row] = []
        pending: list[Row] = []
        crashes = steps = 0
        while state.next_offset < len(records):
            steps += 1
            action = (
                data.draw(st.sampled_from(["process", "process", "checkpoint", "crash"]))
                if steps <= 40
                else "process"
            )
            if action == "process":
                size = data.draw(st.integers(1, 6))
                pending += run(state, [records[state.next_offset : state.next_offset + size]])
            elif action == "checkpoint":
                published += pending
                pending = []
                last = state.checkpoint().encode()
            elif crashes < 3:
                crashes += 1
                for name in QUERIES:
                    mine = [r for r in pending if r[0] == name]
                    published += mine[: data.draw(st.integers(0, len(mine)))]
                pending = []
                highest: dict[tuple[str, int], int] = {}
                for name, seq, _ in published:
                    key = (name, CATALOG.registry.current[name].version)
                    highest[key] = max(seq, highest.get(key, -1))
                ckpt = None if last is None else Checkpoint.decode(last)
                state = PartitionState.restore(CATALOG, topic, 3, ckpt, highest)
        published += pending
        assert len({(name, seq) for name, seq, _ in published}) == len(published), "a repeat"
        assert ordered(published) == want


def test_restore_without_checkpoint_is_a_fresh_start() -> None:
    topic = next(iter(TOPICS))
    state = PartitionState.restore(CATALOG, topic, 3, None, {})
    assert state.next_offset == 0 and state.runs == {} and state.sources == {}


def test_restore_refuses_a_checkpoint_of_an_unknown_query_version() -> None:
    topic, entries = next(iter(TOPICS.items()))
    state = fresh(topic)
    run(state, [records_of([{"type": "A", "v": 3, "k": 1}])])
    ckpt = state.checkpoint()
    name = entries[0].spec.name
    qc = ckpt.queries[name]
    qc.version += 100
    with pytest.raises(LookupError, match=name):
        PartitionState.restore(CATALOG, topic, 3, ckpt, {})


# ---------------------------------------------------------- coordinator duplicates


@settings(max_examples=60, deadline=None, database=None)
@given(events=events_st, data=st.data())
def test_records_routed_twice_are_dropped(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    n = len(events)
    resumed = data.draw(st.integers(0, n), label="coordinator crashed after input offset")
    replayed_from = data.draw(st.integers(0, resumed), label="last committed input offset")
    # Input records 0..resumed-1, then again replayed_from..resumed-1, then the rest.
    order = [*range(resumed), *range(replayed_from, resumed), *range(resumed, n)]
    doubled = [
        Record(offset, orjson.dumps(events[i]), (INPUT, 0, i), REGISTRY)
        for offset, i in enumerate(order)
    ]
    records = records_of(events)
    for topic in TOPICS:
        state = fresh(topic)
        got = run(state, split(doubled, [len(doubled) // 2]))
        assert state.duplicates == resumed - replayed_from
        # Positions are keyed offsets; compare them as the input offsets they stand for.
        by_offset = {r.offset: r.src[2] for r in doubled if r.src is not None}
        want = run(fresh(topic), [records])
        assert [translate(row, by_offset) for row in got] == want


def translate(row: Row, to_input: Mapping[int, int]) -> Row:
    name, seq, ce = row
    return (
        name,
        seq,
        {
            **ce,
            "start": to_input[ce["start"]],
            "end": to_input[ce["end"]],
            "positions": [to_input[p] for p in ce["positions"]],
        },
    )


def test_duplicates_are_per_input_partition() -> None:
    topic = next(t for t, es in TOPICS.items() if not es[0].query.partitioned)
    a, b, c = ({"type": t, "v": 0} for t in "ABC")
    records = [
        Record(0, orjson.dumps(a), (INPUT, 0, 7), REGISTRY),
        Record(1, orjson.dumps(b), (INPUT, 1, 7), REGISTRY),  # same offset, other partition
        Record(2, orjson.dumps(b), (INPUT, 0, 7), REGISTRY),  # a copy of offset 0
        Record(3, orjson.dumps(c), (INPUT, 1, 3), REGISTRY),  # below partition 1's last
        Record(4, orjson.dumps(c), (INPUT, 0, 8), REGISTRY),
    ]
    state = fresh(topic)
    got = run(state, [records])
    assert state.duplicates == 2
    assert state.sources == {(INPUT, 0): 8, (INPUT, 1): 7}
    assert state.checkpoint().sources == {f"{INPUT}:0": 8, f"{INPUT}:1": 7}
    assert {tuple(r[2]["positions"]) for r in got if r[0] == "g-plus"} == {(0, 1, 4)}


# ----------------------------------------------------------------- registry versions

# "q" is registered at offset 5 and removed at offset 9; the other records register
# queries of another group (PARTITION BY [z]).
Q = "SELECT * FROM S WHERE A ; B"
Q2 = "SELECT * FROM S WHERE A ; B ; B"
NOISE = "SELECT * FROM S WHERE A ; B PARTITION BY [z]"


@cache
def versioned_catalog() -> Catalog:
    history = RegistryHistory()
    for offset in range(12):
        if offset == 5:
            register(history, offset, "q", Q)
        elif offset == 9:
            register(history, offset, "q", None)
        else:
            register(history, offset, f"noise-{offset}", NOISE)
    register(history, 12, "q", Q2)
    assert history.errors == 0
    return Catalog(history, PREFIX)


def pair(offset: int, registry: int) -> list[Record]:
    """An A then a B at ``offset`` and ``offset + 1``: one match of q if q runs on both."""
    return [
        Record(offset + i, orjson.dumps({"type": t}), (INPUT, 0, offset + i), registry)
        for i, t in enumerate("AB")
    ]


def matches(outputs: Iterable[Output]) -> list[tuple[str, int, tuple[int, ...]]]:
    return [(o.run.name, o.run.entry.version, o.ce.positions) for o in outputs]


def test_queries_run_exactly_on_records_routed_after_their_registration() -> None:
    catalog = versioned_catalog()
    entry = catalog.entry("q", 5)
    assert entry is not None
    topic = catalog.keyed_topic_of(entry)
    assert catalog.keyed_topic_of(catalog.registry.current["noise-0"]) != topic
    stream = [
        *pair(0, 3),
        *pair(2, 5),  # routed before the coordinator read offset 5: not for q
        *pair(4, 6),  # q runs from here
        Record(6, orjson.dumps({"type": "A"}), (INPUT, 0, 6), 6),
        Record(7, orjson.dumps({"type": "B"}), (INPUT, 0, 7), 4),  # a lagging coordinator
        *pair(8, 10),  # the removal at 9 was read: q stops
        *pair(10, 7),  # a lagging coordinator cannot restart it
        *pair(12, 13),  # the version registered at 12
        *pair(14, 8),  # lagging again: the new version keeps running
    ]
    # SELECT ALL: A@4 pairs with B@5 and B@7, A@6 with B@7; q@12 is A ; B ; B.
    want = {("q", 5, (4, 5)), ("q", 5, (4, 7)), ("q", 5, (6, 7)), ("q", 12, (12, 13, 15))}
    for batches in ([stream], [[r] for r in stream], split(stream, [3, 7, 11])):
        state = PartitionState(topic, 0, catalog)
        got = []
        for batch in batches:
            outputs, dead = state.process(batch)
            assert dead == []
            got += matches(outputs)
        assert sorted(got) == sorted(want)
        assert state.retired == {("q", 5)}
        assert {n: r.entry.version for n, r in state.runs.items()} == {"q": 12}
        outputs, _ = state.process([Record(16, orjson.dumps({"type": "B"}), (INPUT, 0, 16), 13)])
        assert set(matches(outputs)) == {
            ("q", 12, (12, 13, 16)),
            ("q", 12, (12, 15, 16)),
            ("q", 12, (14, 15, 16)),
        }


@settings(max_examples=60, deadline=None, database=None)
@given(
    stream=st.lists(st.tuples(st.sampled_from("AB"), st.integers(0, 14)), max_size=30),
    data=st.data(),
)
def test_lagging_coordinators_batches_and_restores_agree(
    stream: list[tuple[str, int]], data: st.DataObject
) -> None:
    """Records routed by coordinators at any registry offset (lagging or not): the answer
    depends neither on batching nor on a restore from a checkpoint in between."""
    catalog = versioned_catalog()
    entry = catalog.entry("q", 5)
    assert entry is not None
    topic = catalog.keyed_topic_of(entry)
    records = [
        Record(i, orjson.dumps({"type": kind}), (INPUT, 0, i), registry)
        for i, (kind, registry) in enumerate(stream)
    ]
    want = run(PartitionState(topic, 0, catalog), [records])
    assert want == run(PartitionState(topic, 0, catalog), [[r] for r in records])

    at = data.draw(st.integers(0, len(records)), label="checkpoint")
    state = PartitionState(topic, 0, catalog)
    before = run(state, [records[:at]])
    ckpt = Checkpoint.decode(state.checkpoint().encode())
    highest: dict[tuple[str, int], int] = {}
    for o in state.runs.values():
        if o.emitted:
            highest[(o.name, o.entry.version)] = o.emitted - 1
    restored = PartitionState.restore(catalog, topic, 0, ckpt, highest)
    assert restored.retired == state.retired
    after = run(restored, split(records[at:], data.draw(st.lists(st.integers(0, 30)))))
    assert ordered(before + after) == want


def test_a_removal_seen_before_the_query_ever_ran_keeps_it_off() -> None:
    catalog = versioned_catalog()
    entry = catalog.entry("q", 5)
    assert entry is not None
    state = PartitionState(catalog.keyed_topic_of(entry), 0, catalog)
    outputs, _ = state.process(pair(0, 10))  # routed after the removal at 9
    assert outputs == [] and state.runs == {}
    outputs, _ = state.process(pair(2, 7))  # a lagging coordinator
    assert matches(outputs) == []
    assert state.runs == {}


def test_a_retired_query_stays_retired_after_a_restore() -> None:
    catalog = versioned_catalog()
    entry = catalog.entry("q", 5)
    assert entry is not None
    topic = catalog.keyed_topic_of(entry)
    state = PartitionState(topic, 0, catalog)
    outputs, _ = state.process([*pair(0, 6), *pair(2, 10)])
    assert matches(outputs) == [("q", 5, (0, 1))]
    restored = PartitionState.restore(
        catalog, topic, 0, Checkpoint.decode(state.checkpoint().encode()), {}
    )
    assert restored.retired == {("q", 5)}
    outputs, _ = restored.process(pair(4, 7))
    assert outputs == [] and restored.runs == {}


# ----------------------------------------------------------------- dead letters

DECLARED = (
    "DECLARE STREAM S { EVENT A { v: int, k: int }, EVENT B { v: int, k: int },\n"
    "  EVENT C { v: int, k: int } }\n"
    "SELECT * FROM S WHERE A ; B+ ; C FILTER B[v > 0] PARTITION BY [k] WITHIN 5 EVENTS"
)
LOOSE = "SELECT * FROM S WHERE A ; C PARTITION BY [k] WITHIN 4 EVENTS"
DL_CATALOG, DL_REGISTRY = make_catalog({"declared": DECLARED, "loose": LOOSE})

POISON: dict[str, tuple[bytes, set[tuple[str | None, str]]]] = {
    "invalid json": (b"{not json", {(None, "invalid_json")}),
    "array": (b'["an", "array"]', {(None, "not_an_object")}),
    "no type": (b'{"k": 1, "v": 2}', {("declared", "no_type"), ("loose", "no_type")}),
    "type not a string": (b'{"type": 7, "k": 1}', {("declared", "no_type"), ("loose", "no_type")}),
    # A schema violation for the query declaring the schema, an event for the other one.
    "schema": (b'{"type": "B", "k": 1, "v": "two"}', {("declared", "schema")}),
}


def test_the_dead_letter_queries_share_a_group() -> None:
    assert len(topics_of(DL_CATALOG)) == 1


@settings(max_examples=60, deadline=None, database=None)
@given(
    stream=st.lists(
        st.one_of(
            st.sampled_from(sorted(POISON)),
            st.fixed_dictionaries(
                {"type": st.sampled_from("ABC"), "v": st.integers(0, 3), "k": st.just(1)}
            ),
        ),
        max_size=25,
    ),
    cuts=st.lists(st.integers(0, 25), max_size=3),
)
def test_dead_letters_do_not_disturb_the_other_events(
    stream: list[str | dict[str, Any]], cuts: list[int]
) -> None:
    records = [
        Record(
            i,
            POISON[item][0] if isinstance(item, str) else orjson.dumps(item),
            (INPUT, 0, i),
            DL_REGISTRY,
        )
        for i, item in enumerate(stream)
    ]
    (topic,) = topics_of(DL_CATALOG)
    state = PartitionState(topic, 0, DL_CATALOG)
    got: list[Row] = []
    dead: list[DeadLetter] = []
    for batch in split(records, cuts):
        outputs, letters = state.process(batch)
        got += rows(outputs)
        dead += letters
    want_dead = Counter(
        (rec.offset, query, reason)
        for rec, item in zip(records, stream, strict=True)
        if isinstance(item, str)
        for query, reason in POISON[item][1]
    )
    assert Counter((d.record.offset, d.query, d.reason) for d in dead) == want_dead
    assert all(d.error for d in dead)
    # Each query sees the events valid for it, at their keyed offsets.
    want: list[Row] = []
    for entry in DL_CATALOG.registry.current.values():
        valid = [
            rec
            for rec, item in zip(records, stream, strict=True)
            if isinstance(item, dict) or (item == "schema" and entry.spec.name == "loose")
        ]
        want += embedded([entry], valid)
    assert ordered(got) == ordered(want)


def test_each_kind_of_dead_letter() -> None:
    (topic,) = topics_of(DL_CATALOG)
    state = PartitionState(topic, 0, DL_CATALOG)
    records = [
        Record(i, value, (INPUT, 0, i), DL_REGISTRY) for i, (value, _) in enumerate(POISON.values())
    ]
    records.append(Record(len(records), None, None, DL_REGISTRY))  # a keyed tombstone
    outputs, dead = state.process(records)
    assert outputs == []
    by_reason = {(d.query, d.reason): d for d in dead}
    assert set(by_reason) == {
        (None, "invalid_json"),
        (None, "not_an_object"),
        ("declared", "no_type"),
        ("loose", "no_type"),
        ("declared", "schema"),
    }
    assert len(dead) == 8  # the tombstone is not an object either
    assert "'v'" in by_reason[("declared", "schema")].error
    assert "'type'" in by_reason[("loose", "no_type")].error


def test_late_events_are_counted_per_query() -> None:
    # kp-time's clock is t: in key 1, t=2 after t=5 is late (the other queries of the
    # group count events, so nothing is late for them).
    (topic,) = [t for t, entries in TOPICS.items() if "kp-time" in {e.spec.name for e in entries}]
    state = fresh(topic)
    events = [
        {"type": "A", "k": 1, "v": 1, "t": 5},
        {"type": "B", "k": 1, "v": 1, "t": 2},
        {"type": "B", "k": 2, "v": 1, "t": 1},  # another key: its own clock
        {"type": "C", "k": 1, "v": 1, "t": 4},
    ]
    records = records_of(events)
    state.process(records[:3])
    assert state.counts()[4] == {"kp-time": 1}
    state.process(records[3:])
    assert state.counts()[4] == {"kp-time": 2}
