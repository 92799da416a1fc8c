"""Events kept as their bytes: what they answer, and what they keep decoded."""

from __future__ import annotations

import pickle

import orjson

from cerfleet.events.raw_event import RawEvents

RAW = b'{"type":"BUY","user":"u1","price":7,"note":null}'


def test_an_event_without_decoded_values_answers_get_without_keeping_a_decoded_copy() -> None:
    # As a batch from the decoding process arrives: its values stayed behind.
    [event] = pickle.loads(pickle.dumps(RawEvents([RAW], {"type": ["BUY"]})))
    assert event.get("user") == "u1"
    assert event.get("price") == 7
    assert event.get("note", 5) is None  # present and null, as a dict answers
    assert event.get("absent", 5) == 5
    # A partial match may hold the event for its whole window: no decoded dict with it.
    assert event._doc is None
    assert event["user"] == "u1"
    assert dict(event) == orjson.loads(RAW)


def test_an_event_with_decoded_values_answers_from_them() -> None:
    [event] = RawEvents([RAW], {"price": [7], "note": [None]})
    assert event.get("price") == 7
    assert event.get("note", 5) is None
    assert event.get("user") == "u1"
    assert event._doc is None
    assert len(event) == 4 and event["note"] is None


def test_iterating_a_batch_gives_the_events_indexing_gives() -> None:
    raws = [b'{"type":"BUY","price":%d}' % i for i in range(5)]
    for values in ({}, {"price": list(range(5)), "type": ["BUY"] * 5}):
        events = RawEvents(raws, values)
        listed = list(events)
        assert [e.raw for e in listed] == raws
        assert [e._known for e in listed] == [events[i]._known for i in range(5)]
        assert [dict(e) for e in listed] == [orjson.loads(r) for r in raws]
