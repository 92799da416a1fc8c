"""Keyed records as events: a batch iterated gives what indexing it gives, and their
sources as output records list them."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.events.raw_event import RawEvents
from cerfleet.workers.keyed_events import SOURCE_FIELD, STREAM_FIELD, KeyedEvents, sources_json


@pytest.mark.parametrize("streams", [None, ["S", None, "T"]])
def test_iterating_keyed_events_gives_the_events_indexing_gives(
    streams: list[str | None] | None,
) -> None:
    raws = [b'{"type":"BUY","n":%d}' % i for i in range(3)]
    sources = [("in", 0, 10), None, ("in", 1, 4)]
    events = KeyedEvents(RawEvents(raws, {"n": [0, 1, 2]}), sources, streams)
    listed = list(events)
    assert len(listed) == 3
    for i, event in enumerate(listed):
        assert event.raw == raws[i] and event.source == sources[i]
        assert dict(event) == dict(events[i])
        assert event.get(SOURCE_FIELD) == events[i].get(SOURCE_FIELD)
        assert event.get(STREAM_FIELD) == (None if streams is None else streams[i])


def test_get_answers_decoded_values_the_worker_fields_and_defaults_as_the_event_does() -> None:
    raw = b'{"type":"BUY","n":null,"x":3,"@cerfleet.stream":"inside"}'
    decoded = {"type": ["BUY"], "n": [None], "missing": [None], STREAM_FIELD: ["inside"]}
    [event] = KeyedEvents(RawEvents([raw], decoded), [("in", 0, 7)], ["S"])
    assert event.get("type") == "BUY"
    assert event.get("n") is None and event.get("n", 5) is None  # present and null
    assert event.get("missing", 5) == 5 and event.get("x") == 3  # not decoded: read
    assert event.get(STREAM_FIELD) == "S"  # the worker's, not the record's
    assert event.get(SOURCE_FIELD) == ["in", 0, 7]


def test_sources_json_joins_each_events_source_as_the_record_lists_it() -> None:
    raws = [b'{"type":"A","x":1}', b'{"type":"B"}', b'{"type":"A"}']
    events = list(KeyedEvents(RawEvents(raws, {}), [("in", 2, 7), None, ("in", 0, 9)]))
    events[2].source_json()  # one already kept, the others made on the way
    joined = sources_json(events)
    assert orjson.loads(b"[%b]" % joined) == [
        {"topic": "in", "partition": 2, "offset": 7},
        None,
        {"topic": "in", "partition": 0, "offset": 9},
    ]
    assert joined == b",".join(e.source_json() for e in events)
    assert sources_json([]) == b""


scalars = st.one_of(
    st.text(max_size=8),
    st.integers(-(2**63), 2**63 - 1),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.none(),
)


@settings(max_examples=500, deadline=None, database=None)
@given(
    st.one_of(
        st.none(),
        st.tuples(st.text(), st.integers(0, 2**31 - 1), st.integers(-1, 2**63 - 1)),
        st.lists(scalars, min_size=3, max_size=3),  # as another writer's headers may say
    )
)
def test_a_source_is_written_as_orjson_writes_it(src: tuple[Any, ...] | list[Any] | None) -> None:
    [event] = KeyedEvents(RawEvents([b"{}"], {}), [src])
    want = None if src is None else {"topic": src[0], "partition": src[1], "offset": src[2]}
    assert event.source_json() == orjson.dumps(want)
    assert orjson.loads(sources_json([event])) == want
