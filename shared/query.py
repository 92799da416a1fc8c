"""Compile a query once; create evaluators from it.

The pipeline, stage by stage (each a module named for the paper's concept)::

    text ──front-end──▶ pattern form ──plan──▶ det-CEA + options
         (languages, ceql/parser)     (plan, cea/, evaluation/determinization)

    det-CEA + stream ──Algorithm 1──▶ tECS ──Algorithm 2──▶ complex events
       (evaluation/query_evaluator, evaluator)    (evaluation/enumeration)
"""

from __future__ import annotations

from cerfleet import pattern
from cerfleet.evaluation.query_evaluator import QueryEvaluator
from cerfleet.evaluation.snapshot import load_into
from cerfleet.languages import DEFAULT, parse
from cerfleet.plan import QueryPlan


class CompiledQuery(QueryPlan):
    """A query compiled to its determinised CEA, ready to evaluate streams: a
    ``QueryPlan`` (see it for ``attributes`` and the per-event helpers) that also makes
    evaluators and restores them from snapshots."""

    def __init__(
        self,
        text: str,
        *,
        type_field: str = "type",
        time_field: str = "timestamp",
        language: str = DEFAULT,
        stream_field: str | None = None,
    ) -> None:
        super().__init__(
            parse(text, language),
            text=text,
            type_field=type_field,
            time_field=time_field,
            stream_field=stream_field,
        )
        self.language = language

    @classmethod
    def from_pattern(
        cls,
        form: pattern.Pattern,
        *,
        text: str = "",
        type_field: str = "type",
        time_field: str = "timestamp",
        language: str = "",
    ) -> CompiledQuery:
        """Compile a pattern built by any front-end (``text``, the source it came from,
        identifies the query in snapshots)."""
        query = cls.__new__(cls)
        QueryPlan.__init__(query, form, text=text, type_field=type_field, time_field=time_field)
        query.language = language
        return query

    def evaluator(self) -> QueryEvaluator:
        return QueryEvaluator(self)

    def restore(self, data: bytes) -> QueryEvaluator:
        """An evaluator continuing exactly where the one that made ``data`` stopped."""
        ev = QueryEvaluator(self)
        load_into(ev, data)
        return ev


def compile_query(
    text: str,
    *,
    type_field: str = "type",
    time_field: str = "timestamp",
    language: str = DEFAULT,
    stream_field: str | None = None,
) -> CompiledQuery:
    """Parse, check and compile a query; raises ``CEQLError`` with line and column.

    ``stream_field``: the attribute naming an event's stream, which ``FROM`` and ``S>E``
    then read (None: every event is in every stream of FROM)."""
    return CompiledQuery(
        text,
        type_field=type_field,
        time_field=time_field,
        language=language,
        stream_field=stream_field,
    )
