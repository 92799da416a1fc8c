"""Output records: their JSON, their key, and the origin tag that makes replays idempotent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.complex_event import ComplexEvent
from cerfleet.fleet.keyed import ORIGIN_HEADER
from cerfleet.fleet.registry import NAME_PATTERN
from cerfleet.workers.keyed_events import KeyedEvent
from cerfleet.workers.outputs import (
    SOURCE_FIELD,
    origin,
    output_key,
    output_value,
    parse_origin,
    published_seqs,
    record_value,
    strip_source,
)

KEYED = "cerfleet.keyed.name.0123456789ab"


def test_output_value_shape() -> None:
    events = (
        {"type": "SELL", "name": "INTC", "price": 1.5, SOURCE_FIELD: ["stock", 0, 17]},
        {"type": "BUY", "name": "INTC", "price": 2, SOURCE_FIELD: ["stock", 2, 40]},
    )
    ce = ComplexEvent(start=16, end=42, positions=(17, 42), key=("INTC",), events=events)
    doc = orjson.loads(output_value("q1", KEYED, 3, ce))
    assert doc == {
        "query": "q1",
        "key": ["INTC"],
        "start": 16,
        "end": 42,
        "positions": [17, 42],
        "keyed": {"topic": KEYED, "partition": 3},
        "events": [
            {"type": "SELL", "name": "INTC", "price": 1.5},
            {"type": "BUY", "name": "INTC", "price": 2},
        ],
        "sources": [
            {"topic": "stock", "partition": 0, "offset": 17},
            {"topic": "stock", "partition": 2, "offset": 40},
        ],
    }
    # The engine's events are left as they were.
    assert SOURCE_FIELD in events[0]
    assert output_key(ce) == b'["INTC"]'


def test_output_records_hold_what_run_prints() -> None:
    # `cerfleet consume` of an output topic and `cerfleet run` print the same fields
    # for a complex event, with the same values; the fleet's record adds where from.
    events = ({"type": "A", SOURCE_FIELD: ["in", 0, 5]}, {"type": "B", "x": 1})
    ce = ComplexEvent(start=3, end=9, positions=(5, 9), key=("k",), events=events)
    doc = orjson.loads(output_value("q", KEYED, 1, ce))
    printed_by_run = orjson.loads(orjson.dumps(ComplexEvent.to_dict(ce)))
    printed_by_run["events"] = [{"type": "A"}, {"type": "B", "x": 1}]
    assert {field: doc[field] for field in printed_by_run} == printed_by_run
    assert set(doc) - set(printed_by_run) == {"query", "keyed", "sources"}


def test_output_value_without_key_or_sources() -> None:
    ce = ComplexEvent(start=0, end=0, positions=(0,), key=None, events=({"type": "A"},))
    doc = orjson.loads(output_value("q", KEYED, 0, ce))
    assert doc["key"] is None
    assert doc["events"] == [{"type": "A"}]
    assert doc["sources"] == [None]
    assert output_key(ce) is None


topic_names = st.from_regex(r"\A[A-Za-z0-9._-]{1,249}\Z")
query_names = st.from_regex(NAME_PATTERN.replace("^", r"\A").replace("$", r"\Z"))
counts = st.integers(0, 2**62)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
sources = st.none() | st.tuples(st.text(min_size=1, max_size=5), st.integers(0, 9), counts)
Drawn = tuple[ComplexEvent, list[dict[str, Any]], list[dict[str, Any] | None], bool]


@st.composite
def complex_events(draw: st.DrawFn) -> Drawn:
    """A complex event over keyed events (their bytes kept) and, sometimes, events restored
    from a checkpoint (plain mappings, their source inside); with the events as published
    and their sources, for ``record_value``, and whether every kept byte string is as
    orjson writes it."""
    events: list[Mapping[str, Any]] = []
    published: list[dict[str, Any]] = []
    srcs: list[dict[str, Any] | None] = []
    canonical = True
    for _ in range(draw(st.integers(1, 5))):
        doc: dict[str, Any] = draw(st.dictionaries(st.text(max_size=4), json_scalars, max_size=4))
        doc["type"] = draw(st.sampled_from(["A", "B"]))
        src = draw(sources)
        if draw(st.integers(0, 4)) == 0:
            events.append({**doc, SOURCE_FIELD: None if src is None else list(src)})
        else:
            raw = orjson.dumps(doc)
            if draw(st.booleans()):  # as a producer may have written it
                raw, canonical = b"{ " + raw[1:], False
            events.append(KeyedEvent(raw, {}, src))
        published.append(doc)
        srcs.append(
            None if src is None else dict(zip(("topic", "partition", "offset"), src, strict=True))
        )
    n = len(events)
    positions = tuple(sorted(draw(st.sets(counts, min_size=n, max_size=n))))
    key = draw(st.none() | st.lists(json_scalars, min_size=1, max_size=2).map(tuple))
    start = draw(st.integers(0, positions[0]))
    ce = ComplexEvent(start, positions[-1], positions, key, tuple(events))
    return ce, published, srcs, canonical


@settings(max_examples=300, deadline=None, database=None)
@given(complex_events(), query_names, st.integers(0, 10_000), st.booleans())
def test_output_value_formats_record_values_document(
    drawn: Drawn, query: str, partition: int, truncated: bool
) -> None:
    # The record is formatted in one step with the events spliced in as their bytes; it
    # holds the document ``record_value`` serialises, field for field and in its order,
    # byte for byte when the kept bytes are as orjson writes them.
    ce, published, srcs, canonical = drawn
    keyed = {"topic": KEYED, "partition": partition}
    value = output_value(query, KEYED, partition, ce, truncated)
    expected = record_value(query, keyed, ce, published, srcs, truncated)
    assert orjson.loads(value) == orjson.loads(expected)
    assert list(orjson.loads(value)) == list(orjson.loads(expected))
    assert (value == expected) or not canonical
    assert output_key(ce) == (None if ce.key is None else orjson.dumps(list(ce.key)))


def test_strip_source() -> None:
    event = {"a": 1, SOURCE_FIELD: ["t", 0, 1]}
    assert strip_source(event) == {"a": 1}
    assert event == {"a": 1, SOURCE_FIELD: ["t", 0, 1]}


@settings(max_examples=100, deadline=None, database=None)
@given(
    topic=topic_names,
    partition=st.integers(0, 10_000),
    query=query_names,
    version=counts,
    seq=counts,
)
def test_origin_round_trip(topic: str, partition: int, query: str, version: int, seq: int) -> None:
    tag = origin(topic, partition, query, version, seq)
    assert isinstance(tag, bytes)
    assert parse_origin(tag) == (topic, partition, query, version, seq)


@dataclass
class FakeMessage:
    _headers: list[tuple[str, bytes | str | None]] | None
    _topic: str = "out"
    _partition: int = 0
    _offset: int = 0

    def headers(self) -> list[tuple[str, bytes | str | None]] | None:
        return self._headers

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset


def tagged(partition: int, query: str, version: int, seq: int, topic: str = KEYED) -> FakeMessage:
    return FakeMessage(
        [("other", b"x"), (ORIGIN_HEADER, origin(topic, partition, query, version, seq))]
    )


def test_published_seqs_takes_the_highest_per_query_and_version() -> None:
    msgs = [
        tagged(3, "q1", 5, 0),
        tagged(3, "q1", 5, 2),
        tagged(3, "q1", 5, 1),  # out of order: the maximum counts
        tagged(3, "q1", 9, 0),  # another version of q1
        tagged(3, "q2", 5, 7),
        tagged(4, "q1", 5, 50),  # another keyed partition
        tagged(3, "q1", 5, 60, topic="cerfleet.keyed.other"),  # another keyed topic
        FakeMessage(None),  # no headers at all
        FakeMessage([("other", None), (ORIGIN_HEADER, None)]),
        # Headers as str values (as some clients hand them back) are read too.
        FakeMessage([(ORIGIN_HEADER, origin(KEYED, 3, "q3", 1, 4).decode())]),
    ]
    assert published_seqs(msgs, KEYED, 3) == {
        ("q1", 5): 2,
        ("q1", 9): 0,
        ("q2", 5): 7,
        ("q3", 1): 4,
    }
    assert published_seqs(msgs, KEYED, 4) == {("q1", 5): 50}
    assert published_seqs([], KEYED, 3) == {}


@settings(max_examples=100, deadline=None, database=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.sampled_from(["a", "b"]), st.integers(0, 2), counts),
        max_size=30,
    )
)
def test_published_seqs_is_a_maximum(tags: list[tuple[int, str, int, int]]) -> None:
    msgs = [tagged(*t) for t in tags]
    want: dict[tuple[str, int], int] = {}
    for partition, query, version, seq in tags:
        if partition == 1:
            want[(query, version)] = max(seq, want.get((query, version), -1))
    assert published_seqs(msgs, KEYED, 1) == want


@settings(max_examples=100, deadline=None, database=None)
@given(
    events=st.lists(
        st.tuples(
            # Integers as the coordinator lets through (orjson's range).
            st.dictionaries(
                st.sampled_from(["type", "name", "v", "é"]),
                st.integers(-(2**63), 2**64 - 1) | st.text(),
            ),
            st.none() | st.tuples(st.text(max_size=5), st.integers(0, 9), st.integers(0, 99)),
            st.booleans(),  # kept its bytes (a keyed record) or restored from a checkpoint
        ),
        min_size=1,
        max_size=5,
    ),
    truncated=st.booleans(),
)
def test_events_written_from_their_bytes_read_as_re_encoded_ones(
    events: list[tuple[dict[str, object], tuple[str, int, int] | None, bool]], truncated: bool
) -> None:
    # The oracle: every event a plain mapping with its source injected.
    plain = tuple({**e} if src is None else {**e, SOURCE_FIELD: list(src)} for e, src, _ in events)
    mixed = tuple(
        KeyedEvent(b" " + orjson.dumps(e) + b"\n", {}, src) if raw else p
        for (e, src, raw), p in zip(events, plain, strict=True)
    )
    positions = tuple(range(len(events)))
    ce = ComplexEvent(0, len(events) - 1, positions, ("k",), plain)
    ce_raw = ComplexEvent(0, len(events) - 1, positions, ("k",), mixed)
    want = orjson.loads(output_value("q", KEYED, 2, ce, truncated))
    assert orjson.loads(output_value("q", KEYED, 2, ce_raw, truncated)) == want
    assert [dict(e) for e in mixed] == [dict(e) for e in plain]  # what snapshots keep
