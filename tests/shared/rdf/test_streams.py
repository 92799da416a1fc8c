"""Which stream of an RDF query a topic is: its name (RSEP-QL: the IRI or its local
name), or the query's only stream; a topic that is none of several is refused with the
query's streams named."""

from __future__ import annotations

import pytest

from cerfleet.errors import CEQLError, EventError
from cerfleet.rdf.streams import declared_streams, stream_of
from tests.rdf_events import QUERY_4

TWO = QUERY_4.replace(
    "FROM STREAM S1 <http://stockmarket.org/stocks/google>",
    "FROM STREAM S1 <http://stockmarket.org/stocks/google>\n"
    "FROM STREAM S2 <http://stockmarket.org/stocks/other>",
)
RSEPQL = """PREFIX : <http://e/>
SELECT ?x
FROM NAMED :S WIN [RANGE 5] AS :w
EVENT ON :w { ?x :p ?y . } AS E1
WHERE { MATCH { E1 } }
"""


def test_spaseq_streams_by_name_or_the_only_one() -> None:
    one = declared_streams("spaseq", QUERY_4)
    assert (stream_of("S1", one), stream_of("trades-2024", one)) == ("S1", "S1")
    two = declared_streams("spaseq", TWO)
    assert (stream_of("S1", two), stream_of("S2", two)) == ("S1", "S2")
    with pytest.raises(EventError, match=r"'S3' is no stream of the query \(streams: S1, S2\)"):
        stream_of("S3", two)


def test_rsepql_streams_by_iri_or_local_name() -> None:
    declared = declared_streams("rsepql", RSEPQL)
    assert {stream_of(t, declared) for t in ("S", "http://e/S", "other")} == {"http://e/S"}


def test_a_query_that_does_not_parse_names_line_and_column() -> None:
    with pytest.raises(CEQLError) as caught:
        declared_streams("spaseq", "SELECT ?x WHERE {")
    assert caught.value.line == 1
