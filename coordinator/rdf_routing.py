"""The routing of RDF graph event records (SPAseq, RSEP-QL queries: ``fleet.rdf_queries``).

Every record goes to the one key of its group (an instant joins all the streams at a
timestamp, so the query is global), and the records of all input partitions are
forwarded in the order of their events' timestamps: the coordinator's time merge, as
for a JSON query with a time window. A timestamp is in the record's graph, so each
record is decoded here (pyoxigraph); the worker decodes it again to evaluate it, as
values are copied, never re-encoded. Ordering here rather than in the worker: only the
coordinator knows how far each input partition was read (its end, or idle), which is
what says that no earlier record is still to come.

A record that is not one RDF event of a stream of the query goes to the dead-letter
topic with the decoder's reason (``not_rdf``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TypeAlias

from confluent_kafka import Message

from cerfleet.coordinator.partition_keys import Clock, Extracted, KeyExtractor, Routing, clock_of
from cerfleet.errors import EventError
from cerfleet.fleet.groups import Group
from cerfleet.fleet.keyed import header, header_items
from cerfleet.fleet.records import RecordLimits, Rejected
from cerfleet.rdf.records import CONTENT_TYPE_HEADER, decode_record
from cerfleet.rdf.streams import declared_streams, stream_of

__all__ = ["RDF_CLOCK", "Extractor", "RdfExtractor", "extract", "extractor_for"]

log = logging.getLogger(__name__)

# Not read from a field: the merge only needs ``clock`` set to order a topic's records.
RDF_CLOCK = Clock("@rdf.time", float)
_ONE_KEY = b"[]"


class RdfExtractor:
    """``KeyExtractor``'s part for the RDF groups of one input topic."""

    def __init__(self, topic: str, groups: Sequence[Group]) -> None:
        self.groups = list(groups)
        self.clock: Clock | None = RDF_CLOCK
        # Per group, the streams of its queries: the topic must be one of each.
        self._declared = [
            [declared_streams(e.spec.query_language, e.spec.ceql) for e in g.queries.values()]
            for g in self.groups
        ]
        self.topic = topic

    def extract(
        self, values: Sequence[bytes | None], content_types: Sequence[bytes | None]
    ) -> Extracted:
        rejected: dict[int, Rejected] = {}
        times: list[float | None] = []
        for i, (value, kind) in enumerate(zip(values, content_types, strict=True)):
            try:
                for declared in (d for ds in self._declared for d in ds):
                    stream_of(self.topic, declared)
                times.append(float(decode_record(value, kind).ms))
            except EventError as err:
                rejected[i] = Rejected("not_rdf", str(err))
                times.append(None)
        keys: list[list[Routing]] = [
            [None if i in rejected else _ONE_KEY for i in range(len(values))] for _ in self.groups
        ]
        return Extracted(rejected, keys, times)


Extractor: TypeAlias = "KeyExtractor | RdfExtractor"


def extractor_for(topic: str, groups: Sequence[Group], limits: RecordLimits) -> Extractor:
    """The extractor of an input topic read by ``groups``. A topic is read by RDF
    queries or by JSON ones: the records of a topic read by both are routed to the JSON
    ones only (an error is logged), as a record is not both a JSON object and a graph."""
    rdf = [g for g in groups if g.rdf]
    if not rdf:
        return KeyExtractor(groups, limits, clock_of(groups))
    if len(rdf) == len(groups):
        return RdfExtractor(topic, rdf)
    rest = [g for g in groups if not g.rdf]
    log.error(
        "topic %r is read by RDF queries (%s) and JSON queries: routed to the JSON ones only",
        topic,
        ", ".join(sorted(n for g in rdf for n in g.queries)),
    )
    return KeyExtractor(rest, limits, clock_of(rest))


def extract(
    extractor: Extractor, msgs: Sequence[Message], values: Sequence[bytes | None]
) -> Extracted:
    """``extractor``'s routing of a batch of records (``values``: theirs)."""
    if isinstance(extractor, KeyExtractor):
        return extractor.extract(values)
    kinds = [header(header_items(m), CONTENT_TYPE_HEADER) for m in msgs]
    return extractor.extract(values, kinds)
