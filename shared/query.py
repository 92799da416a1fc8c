"""Compile a query once; create evaluators from it.

The pipeline, stage by stage (each a module named for the paper's concept)::

    text ──front-end──▶ pattern form ──plan──▶ det-CEA + options
         (languages, ceql/parser)     (plan, cea/, evaluation/determinization)

    det-CEA + stream ──Algorithm 1──▶ tECS ──Algorithm 2──▶ complex events
       (evaluation/query_evaluator, evaluator)    (evaluation/enumeration)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from cerfleet import pattern
from cerfleet.evaluation.query_evaluator import QueryEvaluator
from cerfleet.evaluation.snapshot import load_into
from cerfleet.languages import DEFAULT, parse, selection
from cerfleet.plan import QueryPlan

if TYPE_CHECKING:
    from cerfleet.match_recognize.selecting import SelectingEvaluator

# What a compiled query evaluates with: the engine's, or its language's selection.
Evaluator: TypeAlias = "QueryEvaluator | SelectingEvaluator"


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
        # A query whose matches its language selects is compiled from the form of all
        # its matches: the plan then decodes events for the language's evaluator.
        self.selection = selection(language, text)
        super().__init__(
            parse(text, language) if self.selection is None else self.selection.form,
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
        query.selection = None
        return query

    def evaluator(self) -> Evaluator:
        """A fresh evaluator: ``process``/``process_batch``/``process_columns`` return
        the complex events each input makes final. That of a query whose language
        selects its matches (``selecting``) may hold matches back until later rows
        decide them; its ``finish()`` returns those at the end of the input."""
        if self.selection is not None:
            return self.selection.evaluator(self)
        return QueryEvaluator(self)

    def restore(self, data: bytes) -> Evaluator:
        """An evaluator continuing exactly where the one that made ``data`` stopped."""
        if self.selection is not None:
            return self.selection.restore(self, data)
        ev = QueryEvaluator(self)
        load_into(ev, data)
        return ev

    @property
    def selecting(self) -> bool:
        """Whether the language selects the matches (its evaluators have ``finish``)."""
        return self.selection is not None


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
