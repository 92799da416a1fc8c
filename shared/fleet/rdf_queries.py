"""SPAseq and RSEP-QL queries in the fleet: what a registration must say, and how their
records are routed.

One Kafka record is one RDF graph event (``cerfleet.rdf.records``: TriG or JSON-LD), and
each input topic is a stream of the query (``cerfleet.rdf.streams``). An instant joins
every stream's graph at one timestamp, so a query reads all its records in one keyed
partition, in time order (the coordinator merges its input partitions by the records'
timestamps): RDF queries are a group of their own, never keyed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from cerfleet.errors import CerfleetError, EventError

__all__ = ["RDF_GROUP", "check_rdf"]

# The PARTITION BY attribute of RDF queries' groups: not an attribute (records are not
# JSON), it keeps them apart from JSON queries reading the same topics.
RDF_GROUP = "@rdf"


class QuerySpec(Protocol):
    """What of a registry record (``registry.QuerySpec``) the checks read."""

    @property
    def name(self) -> str: ...
    @property
    def ceql(self) -> str: ...
    @property
    def input_topics(self) -> tuple[str, ...]: ...
    @property
    def topic_streams(self) -> Mapping[str, str] | None: ...
    @property
    def max_lateness(self) -> float | None: ...
    @property
    def type_field(self) -> str: ...
    @property
    def time_field(self) -> str: ...
    @property
    def query_language(self) -> str: ...


def check_rdf(spec: QuerySpec) -> None:
    """``CerfleetError`` saying why the fleet cannot run the RDF query ``spec`` (its
    text's own errors are ``CEQLError``s with line and column)."""
    from cerfleet.rdf.live import LiveRdf, Unsupported
    from cerfleet.rdf.streams import declared_streams, stream_of

    name, language = spec.name, spec.query_language
    if spec.topic_streams is not None:
        raise CerfleetError(
            f"query {name!r}: an RDF query's input topics are its streams by name; "
            "topic_streams is for CEQL queries"
        )
    if spec.max_lateness is not None:
        raise CerfleetError(f"query {name!r}: an RDF query reads its streams in time order")
    if (spec.type_field, spec.time_field) != ("type", "timestamp"):
        raise CerfleetError(
            f"query {name!r}: an RDF event is a named graph and its cf:time, not a JSON "
            "object: type_field and time_field do not apply"
        )
    declared = declared_streams(language, spec.ceql)
    for topic in spec.input_topics:
        try:
            stream_of(topic, declared)
        except EventError as err:
            raise CerfleetError(f"query {name!r}: input {err}") from None
    try:
        live = LiveRdf(language, spec.ceql)
    except Unsupported as err:
        raise CerfleetError(f"query {name!r}: {err}") from None
    if language == "spaseq" and live.uses_background:
        raise CerfleetError(
            f"query {name!r}: a GPM on a background graph (FROM) needs the graph, which "
            "the fleet has no input for (cerfleet run --background gives it)"
        )
