"""The query a backfill runs, in a form that travels to Spark tasks (plain strings).

Tasks compile it once per Python worker process; the compiled form never
crosses the wire.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from cerfleet.errors import CerfleetError
from cerfleet.fleet.registry import FLEET_LANGUAGES, RDF_LANGUAGES
from cerfleet.languages import WRITERS
from cerfleet.pattern import Consume
from cerfleet.query import CompiledQuery, compile_query
from cerfleet.rdf.streams import declared_streams

__all__ = ["RDF_LANGUAGES", "JobQuery"]  # RDF ones: run by ``rdf_units``


@dataclass(frozen=True)
class JobQuery:
    name: str
    ceql: str
    type_field: str = "type"
    time_field: str = "timestamp"
    # The language of ``ceql`` (``cerfleet.languages``), as the registry records it.
    language: str = "ceql"

    def compiled(self) -> CompiledQuery:
        return _compile(self.ceql, self.type_field, self.time_field, self.language)

    @property
    def outputs_rows(self) -> bool:
        """Whether the language's output is rows (MATCH_RECOGNIZE), numbered per
        partition (MATCH_NUMBER) from the stream's start."""
        return self.language in WRITERS

    def validate(self) -> CompiledQuery | None:
        """Compile, and refuse what a backfill cannot run as the fleet would (``CEQLError``
        with line and column, or ``CerfleetError``); None for an RDF query."""
        if self.language in RDF_LANGUAGES:
            # Parsed here, evaluated by ``rdf_units`` as ``cerfleet run`` does: no automaton
            # of its own to compile, and every RSEP-QL operator runs.
            declared_streams(self.language, self.ceql)
            return None
        if self.language not in FLEET_LANGUAGES:
            raise CerfleetError(
                f"query {self.name!r}: a backfill runs "
                f"{', '.join(FLEET_LANGUAGES)} queries, not {self.language}"
            )
        query = self.compiled()
        if query.partitioned and query.consume is Consume.ANY:
            raise CerfleetError(
                f"query {self.name!r}: CONSUME BY ANY with PARTITION BY needs one order of "
                "events across all keys, but keys are evaluated in parallel. Use CONSUME BY "
                "PARTITION, or drop PARTITION BY."
            )
        return query


@lru_cache(maxsize=16)
def _compile(ceql: str, type_field: str, time_field: str, language: str) -> CompiledQuery:
    return compile_query(ceql, type_field=type_field, time_field=time_field, language=language)
