"""RDF graph events as Kafka records: one record per event, the stream being the topic.

A record's value is the event exactly as a TriG file writes it, so that the files of
``cerfleet run`` and the records of the fleet are one format: one named graph (the
event) and, in the default graph, its timestamp ``GRAPH_IRI <https://cerfleet.dev/ns#time>
T`` (an integer number of seconds or an ``xsd:dateTime``). A record is then a TriG file
of one event, and a TriG file cut at its named graphs is a topic's records.

The same event in JSON-LD is the node object a user would write for a named graph: its
``@id`` the graph's IRI, its ``cf:time`` (``https://cerfleet.dev/ns#time``) property the
timestamp, which JSON-LD puts in the default graph, and its ``@graph`` the event's
triples::

    {"@context": {"cf": "https://cerfleet.dev/ns#", "ex": "http://example.org/"},
     "@id": "ex:e1", "cf:time": 5,
     "@graph": [{"@id": "ex:ACME", "ex:price": 10}]}

Both are parsed by pyoxigraph, the TriG files' parser (no second RDF library; it loads
no remote ``@context``, which would make decoding depend on the network: such a record
is refused with the parser's reason). The format is the ``content-type`` header's
(``application/trig`` or ``application/ld+json``) when there is one, else the value's
first non-blank byte's (``{`` or ``[``: JSON-LD).
"""

from __future__ import annotations

from collections import defaultdict

import pyoxigraph as ox

from cerfleet.errors import EventError
from cerfleet.rdf.terms import Term, term_of
from cerfleet.rdf.trig import TIME, RdfEvent, graph_events, graph_key

__all__ = ["CONTENT_TYPE_HEADER", "JSON_LD", "TRIG", "decode_record", "record_format"]

CONTENT_TYPE_HEADER = "content-type"
TRIG = "application/trig"
JSON_LD = "application/ld+json"
_FORMATS = {TRIG: ox.RdfFormat.TRIG, JSON_LD: ox.RdfFormat.JSON_LD}
_NAMES = {TRIG: "TriG", JSON_LD: "JSON-LD"}


def record_format(value: bytes, content_type: str | bytes | None = None) -> str:
    """The media type of a record's value: its ``content-type`` header's (parameters
    such as ``; charset=utf-8`` ignored), else JSON-LD when the value starts with ``{``
    or ``[``, else TriG. ``EventError`` for a content type that is neither."""
    if content_type is not None:
        text = (
            content_type.decode("utf-8", "replace")
            if isinstance(content_type, bytes)
            else content_type
        )
        media = text.split(";", 1)[0].strip().lower()
        if media not in _FORMATS:
            raise EventError(
                f"content-type {text!r} is not an RDF event format (expected {TRIG} or {JSON_LD})"
            )
        return media
    start = value.lstrip()[:1]
    return JSON_LD if start in (b"{", b"[") else TRIG


def decode_record(value: bytes | None, content_type: str | bytes | None = None) -> RdfEvent:
    """The event of one record, or ``EventError`` saying why the record is not one: not
    TriG/JSON-LD, no named graph or more than one, no timestamp, more than one, or a
    timestamp that is neither seconds nor an ``xsd:dateTime``."""
    if not value:
        raise EventError("empty record: expected one RDF graph event (TriG or JSON-LD)")
    media = record_format(value, content_type)
    graphs: dict[str, list[tuple[Term, Term, Term]]] = defaultdict(list)
    times: dict[str, list[object]] = defaultdict(list)
    try:
        for quad in ox.parse(value, format=_FORMATS[media]):
            g = quad.graph_name
            if isinstance(g, ox.DefaultGraph):
                if isinstance(quad.predicate, ox.NamedNode) and quad.predicate.value == TIME:
                    times[graph_key(quad.subject)].append(quad.object)
                continue
            graphs[graph_key(g)].append(
                (term_of(quad.subject), term_of(quad.predicate), term_of(quad.object))
            )
    except SyntaxError as err:
        raise EventError(f"not {_NAMES[media]}: {err}") from None
    except TypeError as err:  # an RDF-star quoted triple, which events do not hold
        raise EventError(f"not an RDF graph event: {err}") from None
    if len(graphs) != 1:
        names = ", ".join(sorted(graphs)[:3])
        raise EventError(
            "a record holds one event, one named graph: "
            + ("none found" if not graphs else f"found {len(graphs)} ({names}...)")
        )
    reports: list[str] = []
    events = graph_events(graphs, times, reports)
    if not events:
        raise EventError(reports[0])
    return events[0]
