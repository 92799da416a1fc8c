"""A MATCH_RECOGNIZE query with AFTER MATCH SKIP over a stream: the standard's
matches (``selection``) of every partition, as complex events.

Rows are split by PARTITION BY (a row lacking a key column is in no partition);
under WITHIN a row whose ORDER BY clock is below one already seen in its partition is
late and dropped (it is no PREV row either), as in the engine. PREV's lagged values
travel with the row (``evaluation.lag``), so a DEFINE's unary part judges the row
alone; its part reading other rows of the match is judged on each thread's path
summary (``paths``). The
complex events hold the rows they cover (with their lagged values, which the output
stage reads and leaves out), ``end`` being the match's last row, and are returned
when the match is final, which may be some rows after its end.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cerfleet.cea.correlation import RunningCheck
from cerfleet.cea.predicates import compile_predicate
from cerfleet.cea.vector_predicates import RowView
from cerfleet.complex_event import ComplexEvent, KeyValue
from cerfleet.evaluation.lag import Lags, unary, without_prev
from cerfleet.evaluation.partitioning import checked_labels, column_length
from cerfleet.evaluation.running import RunningPredicate
from cerfleet.evaluation.window import clock_of, epsilon_of
from cerfleet.match_recognize import syntax as s
from cerfleet.match_recognize.parser import parse
from cerfleet.match_recognize.paths import PathReads
from cerfleet.match_recognize.selection import Match, PartitionMatcher, Skip
from cerfleet.match_recognize.translate import compile_text, lengths

if TYPE_CHECKING:
    import numpy as np

    from cerfleet import pattern
    from cerfleet.match_recognize.translate import _Translator

__all__ = ["RowPatternEvaluator", "compiled", "needs_selection"]

Key = tuple[KeyValue, ...]


def needs_selection(text: str) -> bool:
    """Whether the query selects matches the engine cannot (a skip mode over a
    variable-length pattern, reluctant quantifiers included, SKIP TO FIRST/LAST v), so
    that ``RowPatternEvaluator`` runs it; raises ``MatchRecognizeError`` on bad text.
    A reluctant quantifier of a fixed-length pattern (``A{2}?``) covers the same rows as
    the greedy one: only the labels differ, which the output stage prefers."""
    query = parse(text)
    if query.rows == "MATCHES":
        return False
    low, high = lengths(query.regex)
    skip = None if query.skip is None else query.skip[0]
    return low != high or skip in ("TO FIRST", "TO LAST")


def compiled(text: str) -> tuple[s.Query, pattern.Pattern, _Translator]:
    """``compile_text(text, skipping=True)`` (``MatchRecognizeError`` with line and
    column on bad text)."""
    return compile_text(text, skipping=True)


class RowPatternEvaluator:
    """``process(event[, position])`` → the complex events (matches) final at it;
    ``snapshot()`` / ``restore`` carry the whole state as bytes."""

    def __init__(self, text: str, *, time_field: str = "timestamp") -> None:
        query, form, translator = compiled(text)
        kind = "PAST LAST ROW" if query.skip is None else query.skip[0]
        self.skip: Skip = (kind, None if query.skip is None else query.skip[1])
        self.regex = query.regex
        self.partition = tuple(c.attr for c in query.partition)
        self.text = text
        self.preds = {v: compile_predicate(unary(p)) for v, p in translator.defines.items()}
        self.paths = PathReads(
            {v: RunningPredicate(RunningCheck(v, unary(p))) for v, p in translator.running.items()}
        )
        specs = without_prev(form)[1]
        self.lags = Lags(specs) if specs else None
        self.clock = clock_of(form.within, time_field)
        self.window = None if form.within is None else epsilon_of(form.within)
        self.partitions: dict[Key, PartitionMatcher] = {}
        self.last_clock: dict[Key, float] = {}
        self.position = 0
        self.late = 0
        # What ``cerfleet.streams`` reads of an evaluator: late rows of the last batch;
        # no bound on the matches one row may end (a match is never cut).
        self.last_late = False
        self.late_rows: list[int] = []
        self.max_outputs: int | None = None
        self.truncated = 0
        self.truncated_ends: list[int] = []

    def _cond(self, var: str, row: Mapping[str, Any]) -> bool:
        pred = self.preds.get(var)
        return pred is None or bool(pred(row))

    def _key(self, event: Mapping[str, Any]) -> Key | None:
        """As the engine keys rows: None (no partition) when a value is missing, null,
        NaN (a columnar batch's missing number) or not a scalar."""
        key: list[KeyValue] = []
        for attr in self.partition:
            value = event.get(attr)
            if not isinstance(value, str | int | float) or value != value:
                return None
            key.append(value)
        return tuple(key)

    def process(self, event: Mapping[str, Any], position: int | None = None) -> list[ComplexEvent]:
        j = self.position if position is None else operator.index(position)
        if j < self.position:
            raise ValueError(f"position {j} is below the next free position {self.position}")
        self.position = j + 1
        self.last_late = False
        key = self._key(event)
        if key is None:
            return []
        clock = None if self.clock is None else self.clock(event)
        if clock is not None:
            if clock < self.last_clock.get(key, float("-inf")):
                self.late += 1
                self.last_late = True
                return []
            self.last_clock[key] = clock
        row: Mapping[str, Any] = event
        if self.lags is not None:
            row = dict(self.lags.view(key, event))
            self.lags.push(key, [self.lags.own(event)])
        matcher = self.partitions.get(key)
        if matcher is None:
            matcher = self.partitions[key] = self._matcher()
        found = matcher.feed(j, row, clock)
        if matcher.idle and not found:
            del self.partitions[key]  # a fresh matcher behaves as an idle one
        return self._complex_events(key, found)

    def finish(self) -> list[ComplexEvent]:
        """The end of the input: the matches a later row could still have changed
        (a greedy quantifier that might grow), as final."""
        out: list[ComplexEvent] = []
        for key, matcher in list(self.partitions.items()):
            out += self._complex_events(key, matcher.finish())
            del self.partitions[key]
        return out

    def _complex_events(self, key: Key, found: list[Match]) -> list[ComplexEvent]:
        visible = key if self.partition else None
        return [
            ComplexEvent(positions[0], positions[-1], tuple(positions), visible, tuple(rows))
            for positions, rows in found
        ]

    def _matcher(self) -> PartitionMatcher:
        return PartitionMatcher(self.regex, self._cond, self.skip, self.window, self.paths)

    def process_batch(self, events: Iterable[Mapping[str, Any]]) -> list[ComplexEvent]:
        return [ce for event in events for ce in self.process(event)]

    def process_columns(
        self,
        columns: Mapping[str, np.ndarray],
        *,
        events: Sequence[Mapping[str, Any]] | None = None,
        positions: np.ndarray | Sequence[int] | None = None,
    ) -> list[ComplexEvent]:
        """A batch as numpy columns (NaN: a missing number), as the engine's
        ``process_columns`` takes it; rows are read one by one (the Pike VM reads
        every row of a partition), from ``events`` when given."""
        n = column_length(columns) if columns or events is None else len(events)
        if events is not None and len(events) != n:
            raise ValueError(f"{len(events)} events for columns of length {n}")
        labels = None if positions is None else checked_labels(positions, n, self.position)
        row = RowView(columns).at if events is None else events.__getitem__
        self.late_rows = []
        out: list[ComplexEvent] = []
        for i in range(n):
            out += self.process(row(i), None if labels is None else labels[i])
            if self.last_late:
                self.late_rows.append(i)
        return out

    def by_rows(self, n: int) -> bool:
        """Always (``QueryEvaluator.by_rows``): the Pike VM reads every row."""
        return True

    def snapshot(self) -> bytes:
        return json.dumps(
            {
                "text": self.text,
                "position": self.position,
                "late": self.late,
                "clocks": [[list(k), c] for k, c in self.last_clock.items()],
                "lags": [] if self.lags is None else self.lags.export(),
                "partitions": [[list(k), m.export()] for k, m in self.partitions.items()],
            }
        ).encode()

    @classmethod
    def restore(cls, data: bytes, *, time_field: str = "timestamp") -> RowPatternEvaluator:
        ev = RowPatternEvaluator(json.loads(data)["text"], time_field=time_field)
        ev.load(data)
        return ev

    def load(self, data: bytes) -> None:
        """Continue from ``data``, a snapshot of an evaluator of this query, into this
        fresh one."""
        doc = json.loads(data)
        if doc["text"] != self.text:
            raise ValueError("the snapshot was taken for another query")
        self.position = doc["position"]
        self.late = doc["late"]
        self.last_clock = {tuple(k): c for k, c in doc["clocks"]}
        if self.lags is not None:
            self.lags.load(doc["lags"])
        for k, state in doc["partitions"]:
            m = self.partitions[tuple(k)] = self._matcher()
            m.load(state)
