"""RDF events as Kafka records: a TriG record is a TriG file of one event and a JSON-LD
record the same named graph as a JSON-LD node object, so records cut from a file (or
written as JSON-LD) are the file's events and give ``cerfleet run``'s rows; a record
that is not one event is refused with the reason."""

from __future__ import annotations

import json

import pytest

from cerfleet.cli.rdf_run import results
from cerfleet.errors import EventError
from cerfleet.rdf.records import JSON_LD, TRIG, decode_record, record_format
from cerfleet.rdf.trig import RdfEvent, read_trig
from tests.rdf_events import CONTEXT, PREFIXES, QUERY_4, file_of, jsonld_record, trades, trig_record


def same(a: RdfEvent, b: RdfEvent) -> None:
    assert (a.ms, a.time, a.name) == (b.ms, b.time, b.name)
    assert {p: sorted(map(repr, v)) for p, v in a.graph.items()} == {
        p: sorted(map(repr, v)) for p, v in b.graph.items()
    }
    for p, pairs in a.graph.items():  # term types too (IRI, literal, int)
        assert sorted((type(s), type(o)) for s, o in pairs) == sorted(
            (type(s), type(o)) for s, o in b.graph[p]
        )


@pytest.mark.parametrize("encode", [trig_record, jsonld_record], ids=["trig", "jsonld"])
def test_records_are_the_files_events_and_give_run_rows(encode: object) -> None:
    stock = trades(2000, seed=4)
    records = [encode(i, t) for i, t in enumerate(stock)]  # type: ignore[operator]
    decoded = [decode_record(r) for r in records]
    from_file, reports = read_trig(file_of([trig_record(i, t) for i, t in enumerate(stock)]))
    assert reports == []
    assert len(decoded) == len(from_file) == 2000
    for a, b in zip(decoded, from_file, strict=True):
        same(a, b)
    expected = list(results(QUERY_4, [("S1", from_file)]))
    assert len(expected) > 100
    assert list(results(QUERY_4, [("S1", decoded)])) == expected


def test_format_by_header_else_by_first_byte() -> None:
    assert record_format(b'  {"@id": "x"}') == JSON_LD
    assert record_format(b"[]") == JSON_LD
    assert record_format(b"@prefix : <http://e/> .") == TRIG
    assert record_format(b"{", "application/trig; charset=utf-8") == TRIG
    assert record_format(b":a", b"Application/LD+JSON") == JSON_LD
    with pytest.raises(EventError, match="not an RDF event format"):
        record_format(b"x", "application/json")
    # A TriG record whose graph is an anonymous block starts with "{": the header says so.
    event = decode_record(
        b"<http://e/g> { <http://e/s> <http://e/p> 1 } "
        b"<http://e/g> <https://cerfleet.dev/ns#time> 7 .",
        TRIG,
    )
    assert (event.ms, event.name) == (7000, "http://e/g")


def test_datetime_time_as_in_files() -> None:
    value = (
        PREFIXES
        + ':g t:time "2024-01-02T03:04:05Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n'
        + ":g { :x pred:price 3 . }\n"
    ).encode()
    event = decode_record(value)
    assert event.time == "2024-01-02T03:04:05Z"
    same(event, read_trig(value)[0][0])
    doc = {
        "@context": CONTEXT,
        "@id": "http://example/trades/g",
        "cf:time": {
            "@value": "2024-01-02T03:04:05Z",
            "@type": "http://www.w3.org/2001/XMLSchema#dateTime",
        },
        "@graph": [{"@id": "http://example/trades/x", "pred:price": 3}],
    }
    same(decode_record(json.dumps(doc).encode()), event)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"", "empty record"),
        (b"   ", "none found"),
        (PREFIXES.encode() + b":g t:time 1 . :g { :x :p ", "not TriG"),
        (b'{"@id": ', "not JSON-LD"),
        (b'{"@context": "http://schema.org/", "@id": "x"}', "not JSON-LD"),
        (PREFIXES.encode() + b":x :p 1 .", "none found"),
        (
            PREFIXES.encode() + b":a t:time 1 . :a { :x :p 1 } :b t:time 1 . :b { :x :p 2 }",
            "found 2",
        ),
        (PREFIXES.encode() + b":a { :x :p 1 }", "no <https://cerfleet.dev/ns#time>"),
        (PREFIXES.encode() + b":a t:time 1 , 2 . :a { :x :p 1 }", "more than one"),
        (PREFIXES.encode() + b':a t:time "soon" . :a { :x :p 1 }', "neither an integer"),
    ],
)
def test_a_record_that_is_not_one_event_is_refused_with_the_reason(
    value: bytes, reason: str
) -> None:
    with pytest.raises(EventError, match=reason):
        decode_record(value)
