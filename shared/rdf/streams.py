"""Which stream of an RDF query (SPAseq, RSEP-QL) a topic's records are: the rule of
the backfill and of the fleet.

A topic is the stream of the query named like it (RSEP-QL: the stream's IRI or its
local name, as ``cerfleet run --stream`` names it); when the query declares one stream,
every topic read is that stream. Records of a topic that is no stream of the query are
bad records, their reason naming the streams the query reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from cerfleet.errors import EventError

__all__ = ["declared_streams", "stream_of"]


@lru_cache(maxsize=16)
def declared_streams(language: str, text: str) -> dict[str, str]:
    """The names a topic may have to be one of the query's streams, each with the stream
    it is (in the query's order): SPAseq's ``FROM STREAM`` names; RSEP-QL's stream IRIs
    and their local names. ``CEQLError`` (line and column) for a query that does not
    parse."""
    if language == "spaseq":
        from cerfleet.spaseq.check import parse

        return {name: name for name, _ in parse(text).streams}
    from cerfleet.rsepql.parser import parse as parse_rsepql

    iris = sorted({w.stream for w in parse_rsepql(text).windows.values()})
    aliases = {iri: iri for iri in iris}
    for iri in iris:
        aliases.setdefault(re.split(r"[/#:]", iri)[-1], iri)
    return aliases


def stream_of(topic: str, declared: Mapping[str, str]) -> str:
    """The stream ``topic``'s records belong to (``EventError`` naming the streams if
    none)."""
    if topic in declared:
        return declared[topic]
    streams = list(dict.fromkeys(declared.values()))
    if len(streams) == 1:
        return streams[0]
    raise EventError(f"topic {topic!r} is no stream of the query (streams: {', '.join(streams)})")
