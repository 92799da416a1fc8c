"""The evaluator of a compiled MATCH_RECOGNIZE query whose matches the standard
selects (``stream.needs_selection``: a skip mode over a variable-length pattern, a
reluctant quantifier, SKIP TO FIRST/LAST v).

``languages.selection`` hands it to ``compile_query``: the query is compiled from the
pattern form of every match (the plan decodes events and names the attributes read, as
for any query) and its evaluators are ``RowPatternEvaluator``s bound to that plan, so
the fleet and backfills drive them as they drive the engine's: ``process_columns``,
``snapshot``/``restore``, ``query``, ``substreams``. A match is returned when it is
final; ``finish()`` ends the input (the pending ones).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from cerfleet.errors import SnapshotError
from cerfleet.match_recognize import translate
from cerfleet.match_recognize.measures import MatchWriter
from cerfleet.match_recognize.selection import PartitionMatcher
from cerfleet.match_recognize.stream import Key, RowPatternEvaluator, compiled, needs_selection

if TYPE_CHECKING:
    from cerfleet import pattern
    from cerfleet.plan import QueryPlan

__all__ = ["MatchSelection", "SelectingEvaluator", "selection", "writer"]


class SelectingEvaluator(RowPatternEvaluator):
    """A ``RowPatternEvaluator`` of ``query`` (its text and time field)."""

    def __init__(self, query: QueryPlan) -> None:
        super().__init__(query.text, time_field=query.time_field)
        self.query = query

    @property
    def substreams(self) -> Mapping[Key, PartitionMatcher]:
        """The partitions holding state (what the engine calls its substreams)."""
        return self.partitions

    def snapshot(self) -> bytes:
        return json.dumps(
            {"query": self.query.fingerprint, "state": json.loads(super().snapshot())}
        ).encode()

    def load(self, data: bytes) -> None:
        try:
            doc = json.loads(data)
        except ValueError as exc:
            raise SnapshotError(f"not a cerfleet snapshot: {exc}") from exc
        if not isinstance(doc, dict) or doc.get("query") != self.query.fingerprint:
            raise SnapshotError("snapshot was taken for a different query")
        super().load(json.dumps(doc["state"]).encode())


class MatchSelection:
    """What ``compile_query`` needs of a query selected here: the pattern form to
    compile, and its evaluators."""

    def __init__(self, text: str) -> None:
        self.form: pattern.Pattern = compiled(text)[1]

    def evaluator(self, query: QueryPlan) -> SelectingEvaluator:
        return SelectingEvaluator(query)

    def restore(self, query: QueryPlan, data: bytes) -> SelectingEvaluator:
        ev = SelectingEvaluator(query)
        ev.load(data)
        return ev


def selection(text: str) -> MatchSelection | None:
    """The entry of ``languages.SELECTIONS``: None when the automaton selects the
    query's matches (it is then compiled as usual); raises ``MatchRecognizeError``
    (line, column) on bad text."""
    return MatchSelection(text) if needs_selection(text) else None


def writer(text: str) -> MatchWriter:
    """The entry of ``languages.WRITERS``: the output stage of the query, whichever
    selects its matches."""
    return translate.writer(text, skipping=needs_selection(text))
