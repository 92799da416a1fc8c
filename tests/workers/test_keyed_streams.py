"""An event's stream from its input topic, in the worker: a column for the automaton,
a field of the event's mapping (so snapshots keep it), never part of the output."""

from __future__ import annotations

import orjson

from cerfleet.complex_event import ComplexEvent
from cerfleet.fleet.keyed import STREAM_FIELD
from cerfleet.query import compile_query
from cerfleet.workers.keyed_batch import KeyedBatch
from cerfleet.workers.keyed_decoding import decode_rows
from cerfleet.workers.outputs import output_value


def _batch() -> KeyedBatch:
    values: list[bytes | None] = [orjson.dumps({"type": "A", "x": i}) for i in range(3)]
    sources = [["left", 0, 0], ["right", 0, 0], ["other", 0, 5]]
    return KeyedBatch([0, 1, 2], values, sources, [0, 0, 0])  # type: ignore[arg-type]


def test_the_stream_is_the_topic_s_as_a_column_and_a_field() -> None:
    query = compile_query("SELECT * FROM S1, S2 WHERE S1>A", stream_field=STREAM_FIELD)
    decoded = decode_rows(query.json_decoder, _batch(), [0, 1, 2], {"left": "S1", "right": "S2"})
    assert list(decoded.columns[STREAM_FIELD][:2]) == ["S1", "S2"]
    assert decoded.columns[STREAM_FIELD][2] is None
    first, _, unmapped = decoded.events
    assert first[STREAM_FIELD] == "S1" and dict(first)[STREAM_FIELD] == "S1"
    assert STREAM_FIELD not in dict(unmapped)
    found = query.evaluator().process_columns(decoded.columns, events=decoded.events)
    assert [ce.positions for ce in found] == [(0,)]


def test_without_a_map_nothing_is_added() -> None:
    query = compile_query("SELECT * FROM S WHERE A")
    decoded = decode_rows(query.json_decoder, _batch(), [0, 1, 2])
    assert STREAM_FIELD not in decoded.columns
    assert STREAM_FIELD not in dict(decoded.events[0])


def test_an_event_restored_with_its_stream_is_output_without_it() -> None:
    restored = {"type": "A", "x": 1, STREAM_FIELD: "S1", "@cerfleet.source": ["left", 0, 3]}
    ce = ComplexEvent(start=3, end=3, positions=(3,), key=None, events=(restored,))
    doc = orjson.loads(output_value("q", "keyed", 0, ce))
    assert doc["events"] == [{"type": "A", "x": 1}]
