"""The complex-event records workers publish, and the origin tag that makes them idempotent.

Each output record is JSON::

    {"query": "q1", "key": ["INTC"], "start": 17, "end": 42, "positions": [17, 30, 42],
     "keyed": {"topic": "cerfleet.keyed.name.…", "partition": 3},
     "events": [{...}, ...],
     "sources": [{"topic": "stock", "partition": 0, "offset": 1234}, ...]}

It holds every field ``cerfleet run`` prints of a complex event (``start``, ``end``,
``positions``, ``key``, ``events``), so one reader handles both, plus where it comes
from. ``start``, ``end`` and ``positions`` are offsets in the keyed partition (the
positions the engine numbered the events with); ``sources`` gives, for each matched
event in order, the input record it came from. It carries ``"truncated": true`` on
the last record of an event whose complex events
were cut at the worker's ``max_outputs_per_event`` (absent otherwise).

A record over ``MAX_OUTPUT_BYTES`` (a complex event of many or large events)
would be refused by the producer and stop the worker, on every replay; it is
published without its ``events`` (then, if still too large, its ``sources``),
set to null and named in ``"omitted"``: the positions and the keyed partition
still say which records it was made of.

The record key is the PARTITION BY values as JSON (none without PARTITION BY), and
every output of one keyed partition goes to the same output partition, so one key's
complex events stay in order.

The ``cerfleet-origin`` header, ``keyed_topic:partition:query:version:seq``,
numbers each query's outputs per keyed partition. Replay is deterministic, so
the n-th output of a replay is the n-th output of the original run: a worker
taking over a partition reads the highest ``seq`` already published and skips
up to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import orjson

from cerfleet.complex_event import ComplexEvent
from cerfleet.events.jsonl import loads
from cerfleet.fleet.keyed import ORIGIN_HEADER, header_items
from cerfleet.fleet.origins import parse_origin
from cerfleet.workers.keyed_events import (
    SOURCE_FIELD,
    STREAM_FIELD,
    KeyedEvent,
    format_source,
    sources_json,
)

__all__ = [
    "MAX_OUTPUT_BYTES",
    "SOURCE_FIELD",
    "RecordFormat",
    "origin",
    "output_key",
    "output_value",
    "parse_origin",
    "published_seqs",
    "record_value",
    "strip_source",
]
# Below the producers' and brokers' default message.max.bytes (1,000,000), with room for
# the key and headers.
MAX_OUTPUT_BYTES = 900_000


# The record's fields in ``record_value``'s order; the events are spliced in as bytes.
_RECORD = (
    b'{"query":%b,"key":%b,"start":%d,"end":%d,"positions":%b,"keyed":%b,'
    b'"events":[%b],"sources":[%b]%b}'
)


@lru_cache(maxsize=4096)
def _fixed_fields(query: str, keyed_topic: str, partition: int) -> tuple[bytes, bytes]:
    """The JSON of the fields every output of one query from one keyed partition shares."""
    return orjson.dumps(query), orjson.dumps({"topic": keyed_topic, "partition": partition})


def output_value(
    query: str,
    keyed_topic: str,
    partition: int,
    ce: ComplexEvent,
    truncated: bool = False,
    key_json: bytes | None = None,
) -> bytes:
    """The output record of ``ce``, read from a keyed partition: each event's source
    comes from its ``SOURCE_FIELD``. Events that kept their bytes (``KeyedEvent``) are
    written as those bytes, never decoded or re-encoded. ``key_json``: ``output_key(ce)``,
    when the caller has it already. Many records of one query: ``RecordFormat``."""
    return RecordFormat(query, keyed_topic, partition).value(ce, truncated, key_json)


class RecordFormat:
    """The output records of one query from one keyed partition, whose shared fields are
    formatted once. A record is formatted in one step: a Kleene burst makes thousands of
    them from one event, and a document built and serialised per complex event was most
    of the cost of publishing them; the shared fields' cached lookups and the calls
    around them then took about 0.6 µs of each record's 2.7 (``benchmarks.fleet_cpu``,
    the PARTITION BY query: seven events a record)."""

    __slots__ = ("_keyed_json", "_origin", "_query_json", "keyed_topic", "partition", "query")

    def __init__(self, query: str, keyed_topic: str, partition: int, version: int = 0) -> None:
        self.query, self.keyed_topic, self.partition = query, keyed_topic, partition
        self._query_json, self._keyed_json = _fixed_fields(query, keyed_topic, partition)
        self._origin = _origin_prefix(keyed_topic, partition, query, version)

    def origin(self, seq: int) -> bytes:
        """The origin tag of output ``seq`` (``origin``) of the query's ``version``."""
        return self._origin + b"%d" % seq

    def value(
        self, ce: ComplexEvent, truncated: bool = False, key_json: bytes | None = None
    ) -> bytes:
        """``output_value`` of ``ce``."""
        events: Sequence[KeyedEvent] = ce.events  # type: ignore[assignment]
        try:
            raws = b",".join([e.raw for e in events])
            sources = sources_json(events)
        except AttributeError:  # some restored from a checkpoint: plain mappings
            raws, sources = _restored(ce.events)
        if key_json is None:
            key_json = output_key(ce)
        # ``start``, ``end`` and ``positions`` are ints (keyed offsets): %d writes them as
        # orjson does.
        value = _RECORD % (
            self._query_json,
            b"null" if key_json is None else key_json,
            ce.start,
            ce.end,
            orjson.dumps(ce.positions),
            self._keyed_json,
            raws,
            sources,
            b',"truncated":true' if truncated else b"",
        )
        if len(value) <= MAX_OUTPUT_BYTES:
            return value
        # Rare: shrunk as ``record_value`` does.
        return record_value(
            self.query,
            {"topic": self.keyed_topic, "partition": self.partition},
            ce,
            [strip_source(e) for e in loads(b"[%b]" % raws)],
            loads(b"[%b]" % sources),
            truncated,
        )


def _restored(events: Sequence[Mapping[str, Any]]) -> tuple[bytes, bytes]:
    """The events and sources, joined, of a complex event some of whose events were
    restored from a checkpoint (plain mappings, their source in ``SOURCE_FIELD``)."""
    raws = []
    sources = []
    for event in events:
        if type(event) is KeyedEvent:
            raws.append(event.raw)
            sources.append(event.source_json())
        else:
            raws.append(orjson.dumps(strip_source(event)))
            sources.append(format_source(event.get(SOURCE_FIELD)))
    return b",".join(raws), b",".join(sources)


def record_value(
    query: str,
    keyed: dict[str, Any] | None,
    ce: ComplexEvent,
    events: Sequence[Mapping[str, Any]],
    sources: Sequence[dict[str, Any] | None],
    truncated: bool = False,
) -> bytes:
    """The output record, given the events as published and where each came from;
    ``keyed`` is None for complex events not read from a keyed partition (backfills)."""
    doc: dict[str, Any] = {
        "query": query,
        "key": None if ce.key is None else list(ce.key),
        "start": ce.start,
        "end": ce.end,
        "positions": list(ce.positions),
        "keyed": keyed,
        "events": events,
        "sources": sources,
    }
    if truncated:
        doc["truncated"] = True
    value = orjson.dumps(doc)
    omitted: list[str] = []
    for field in ("events", "sources"):
        if len(value) <= MAX_OUTPUT_BYTES:
            break
        doc[field] = None
        omitted.append(field)
        doc["omitted"] = omitted
        doc["positions"] = list(ce.positions)
        value = orjson.dumps(doc)
    return value


def output_key(ce: ComplexEvent) -> bytes | None:
    return None if ce.key is None else orjson.dumps(ce.key)


def origin(keyed_topic: str, partition: int, query: str, version: int, seq: int) -> bytes:
    return _origin_prefix(keyed_topic, partition, query, version) + b"%d" % seq


@lru_cache(maxsize=4096)
def _origin_prefix(keyed_topic: str, partition: int, query: str, version: int) -> bytes:
    """The origin tag up to its ``seq``: a Kleene burst tags thousands of outputs of one
    query from one keyed partition (formatting the whole tag took 0.33 µs a time)."""
    return f"{keyed_topic}:{partition}:{query}:{version}:".encode()


def published_seqs(
    headers_of: list[Any], keyed_topic: str, partition: int
) -> dict[tuple[str, int], int]:
    """From output records (anything with ``headers()``), the highest ``seq`` published per
    (query, version) for one keyed partition."""
    out: dict[tuple[str, int], int] = {}
    for msg in headers_of:
        for k, v in header_items(msg):
            if k != ORIGIN_HEADER or v is None:
                continue
            topic, part, query, version, seq = parse_origin(v)
            if topic == keyed_topic and part == partition:
                key = (query, version)
                if seq > out.get(key, -1):
                    out[key] = seq
    return out


def strip_source(event: Mapping[str, Any]) -> dict[str, Any]:
    """The event as it came in: without what the worker added (its source, its stream)."""
    return {k: v for k, v in event.items() if k not in (SOURCE_FIELD, STREAM_FIELD)}
