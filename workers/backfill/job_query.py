"""The query a backfill runs, in a form that travels to Spark tasks (plain strings).

Tasks compile it once per Python worker process; the compiled form never
crosses the wire.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from cerfleet.errors import CerfleetError
from cerfleet.pattern import Consume
from cerfleet.query import CompiledQuery, compile_query


@dataclass(frozen=True)
class JobQuery:
    name: str
    ceql: str
    type_field: str = "type"
    time_field: str = "timestamp"

    def compiled(self) -> CompiledQuery:
        return _compile(self.ceql, self.type_field, self.time_field)

    def validate(self) -> CompiledQuery:
        """Compile, and refuse what a backfill cannot run as the fleet would (``CEQLError``
        with line and column, or ``CerfleetError``)."""
        query = self.compiled()
        if query.partitioned and query.consume is Consume.ANY:
            raise CerfleetError(
                f"query {self.name!r}: CONSUME BY ANY with PARTITION BY needs one order of "
                "events across all keys, but keys are evaluated in parallel. Use CONSUME BY "
                "PARTITION, or drop PARTITION BY."
            )
        return query


@lru_cache(maxsize=16)
def _compile(ceql: str, type_field: str, time_field: str) -> CompiledQuery:
    return compile_query(ceql, type_field=type_field, time_field=time_field)
