"""The second task pass: evaluate each unit's events in order and emit its complex events.

A unit is one PARTITION BY key, one time slice, or (a query that can be neither)
the whole stream. Rows arrive sorted by ``(unit, t, topic, partition, offset)``
and a unit never spans two tasks, so a unit is a run of consecutive rows,
possibly across batches. Each unit gets a fresh evaluator.

Positions (``start``/``end``/``positions`` of complex events) number a unit's
events from 0 in that order: per key under PARTITION BY, as the fleet numbers
them per keyed partition, and over the whole stream otherwise (a slice starts
from its base, which the driver counts). Output records are the fleet's, with
``"keyed": null``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import pairwise
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from cerfleet.complex_event import ComplexEvent
from cerfleet.evaluation.query_evaluator import QueryEvaluator
from cerfleet.events.columns import columns_of
from cerfleet.events.raw_event import RawEvent
from cerfleet.query import Evaluator
from cerfleet.workers.backfill.job_query import JobQuery
from cerfleet.workers.backfill.prepare import ascii_only
from cerfleet.workers.backfill.schemas import BAD, BAD_RECORD, GOOD, MATCH, RESULT, STATS, UNKEYED
from cerfleet.workers.outputs import output_key, record_value
from cerfleet.workers.row_outputs import RowOutputs

__all__ = ["UnitRunner", "evaluate_batches"]

# Slices: slice number -> (position of its first own event, events in its overlap).
Bases = Mapping[int, tuple[int, int]]


class _Out:
    """Rows of one output batch; matches, the bulk, have their own column lists."""

    def __init__(self) -> None:
        self.m_key: list[str | None] = []
        self.m_start: list[int] = []
        self.m_end: list[int] = []
        self.m_value: list[bytes] = []
        self.other: list[dict[str, Any]] = []

    def __len__(self) -> int:
        return len(self.m_value) + len(self.other)

    def batch(self, query: str) -> pa.RecordBatch:
        n = len(self.m_value)
        cols: dict[str, Any] = {name: [None] * n for name in RESULT.names}
        cols.update(
            kind=[MATCH] * n,
            query=[query] * n,
            key=self.m_key,
            start=self.m_start,
            end=self.m_end,
            value=self.m_value,
        )
        for row in self.other:
            for name, col in cols.items():
                col.append(row.get(name))
        out = pa.RecordBatch.from_pydict(cols, schema=RESULT)
        self.__init__()  # type: ignore[misc]
        return out


class _Coordinates:
    """Where each event of the current unit came from, by position: a complex event's
    ``sources`` may reach back to any earlier batch of its unit."""

    def __init__(self, first: int) -> None:
        self.first = first
        self.n = 0
        self.offsets = np.empty(1024, dtype=np.int64)
        self.partitions = np.empty(1024, dtype=np.int32)
        self.topics = np.empty(1024, dtype=np.int32)
        self.topic_names: list[str] = []
        self._topic_ids: dict[str, int] = {}

    def extend(
        self, names: list[str], topics: np.ndarray, partitions: np.ndarray, offsets: np.ndarray
    ) -> None:
        """Adds events by coordinates; ``topics`` index ``names``."""
        m = len(offsets)
        if self.n + m > len(self.offsets):
            size = max(2 * len(self.offsets), self.n + m)
            for name in ("offsets", "partitions", "topics"):
                old = getattr(self, name)
                grown = np.empty(size, dtype=old.dtype)
                grown[: self.n] = old[: self.n]
                setattr(self, name, grown)
        ids = self._topic_ids
        for t in names:
            if t not in ids:
                ids[t] = len(self.topic_names)
                self.topic_names.append(t)
        self.offsets[self.n : self.n + m] = offsets
        self.partitions[self.n : self.n + m] = partitions
        mapped = np.array([ids[t] for t in names], dtype=np.int32)
        self.topics[self.n : self.n + m] = mapped[topics]
        self.n += m

    def sources(self, positions: Sequence[int]) -> list[dict[str, Any]]:
        first, names = self.first, self.topic_names
        offsets, partitions, topics = self.offsets, self.partitions, self.topics
        return [
            {
                "topic": names[topics[p - first]],
                "partition": int(partitions[p - first]),
                "offset": int(offsets[p - first]),
            }
            for p in positions
        ]


class UnitRunner:
    """Evaluates the sorted rows of one task (``PREPARED`` columns, plus ``slice`` and
    ``overlap`` when the query runs in time slices)."""

    def __init__(self, job: JobQuery, bases: Bases | None = None) -> None:
        self.job = job
        self.query = job.compiled()
        self.bases = bases
        self._unit: object = _NONE
        self._evaluator: Evaluator | None = None
        self._rows: RowOutputs | None = None  # a language whose output is rows
        self._coords = _Coordinates(0)
        self._next = 0  # position of the unit's next event
        self._first_own = 0  # positions below this are another slice's (overlap)
        self.events = 0
        self.units = 0
        self.unkeyed = 0
        self.matches = 0
        self.bad = 0

    def run(self, batch: pa.RecordBatch, out: _Out) -> None:
        status = batch.column("status").to_numpy()
        if not len(status):
            return
        if (status != GOOD).any():
            self._rejected(batch, status, out)
        good = np.flatnonzero(status == GOOD)
        if not len(good):
            return
        if len(good) < len(status):
            batch = batch.take(pa.array(good))
        n = batch.num_rows
        sliced = self.bases is not None
        units = batch.column("slice") if sliced else batch.column("unit")
        # Topic names once per batch, rows as indices into them.
        topics = pc.dictionary_encode(batch.column("topic"))
        names = topics.dictionary.to_pylist()
        topic_ids = topics.indices.to_numpy(zero_copy_only=False)
        partitions = batch.column("partition").to_numpy()
        offsets = batch.column("offset").to_numpy()
        value_col = batch.column("value")
        values = value_col.to_pylist()
        ascii = ascii_only(value_col)
        overlap = batch.column("overlap").to_numpy(zero_copy_only=False) if sliced else None
        bounds = _runs(units)
        for start, k in pairwise(bounds):
            self._enter(units[start].as_py(), out)
            self._coords.extend(names, topic_ids[start:k], partitions[start:k], offsets[start:k])
            # Decoded run by run: a slice of a decoded batch's events would make
            # every event of the run a Python object.
            run = values if k - start == n else values[start:k]
            self._evaluate(*self._columns(run, ascii), out)
            if overlap is not None:
                self.events += int((~overlap[start:k]).sum())
            else:
                self.events += k - start

    def _rejected(self, batch: pa.RecordBatch, status: np.ndarray, out: _Out) -> None:
        bad = np.flatnonzero(status == BAD)
        self.unkeyed += int((status == UNKEYED).sum())
        if not len(bad):
            return
        rows = batch.take(pa.array(bad)).select(["value", "error", "topic", "partition", "offset"])
        for row in rows.to_pylist():
            self.bad += 1
            out.other.append({"kind": BAD_RECORD, "query": self.job.name, **row})

    def _enter(self, unit: object, out: _Out) -> None:
        if unit == self._unit:
            return
        self.end_unit(out)
        self._unit = unit
        self._evaluator = self.query.evaluator()
        # MATCH_NUMBER counts from 1 per key, and a unit is a key (or the whole stream).
        self._rows = RowOutputs.for_query(self.job.language, self.job.ceql)
        self.units += 1
        if self.bases is None:
            self._next = self._first_own = 0
        else:
            assert isinstance(unit, int)
            base, overlap = self.bases.get(unit, (0, 0))
            self._first_own = base
            self._next = base - overlap  # the overlap comes first: its t is lower
        self._coords = _Coordinates(self._next)

    def _columns(
        self, values: list[bytes], ascii: bool
    ) -> tuple[dict[str, np.ndarray], Sequence[Mapping[str, Any]]]:
        """The batch through the columnar ingestion layer: only the attributes the query
        reads are decoded, and events keep their bytes. The first pass judged every
        record already, so the decoder refuses none, but a record it judges more
        strictly than the fleet (an empty type): then the batch goes as decoded dicts.
        ``ascii``: every record is ASCII (``ascii_only``), none needs a UTF-8 check."""
        batch = self.query.json_decoder.decode(values, ascii=ascii)
        if not batch.problems and len(batch) == len(values):
            return batch.columns, batch.events
        events = [orjson.loads(v) for v in values]
        return columns_of(events, self.query.attributes), events

    def _evaluate(
        self, columns: dict[str, np.ndarray], events: Sequence[Mapping[str, Any]], out: _Out
    ) -> None:
        assert self._evaluator is not None
        n = len(events)
        positions = np.arange(self._next, self._next + n, dtype=np.int64)
        self._next += n
        self._output(
            self._evaluator.process_columns(columns, events=events, positions=positions), out
        )

    def end_unit(self, out: _Out) -> None:
        """The end of the unit's rows: the matches a language's selection held back
        for later rows are final (as at the end of ``cerfleet run``'s input)."""
        ev = self._evaluator
        if ev is not None and not isinstance(ev, QueryEvaluator):
            self._output(ev.finish(), out)

    def _output(self, found: Sequence[ComplexEvent], out: _Out) -> None:
        name = self.job.name
        sources = self._coords.sources
        first_own = self._first_own
        for ce in found:
            if ce.end < first_own:
                continue  # the previous slice's own complex event
            key = output_key(ce)
            if self._rows is not None:
                # One output per row, as `cerfleet run` prints them (and the fleet).
                for value, _ in self._rows.values(ce):
                    self.matches += 1
                    out.m_key.append(None if key is None else key.decode())
                    out.m_start.append(ce.start)
                    out.m_end.append(ce.end)
                    out.m_value.append(value)
                continue
            self.matches += 1
            out.m_key.append(None if key is None else key.decode())
            out.m_start.append(ce.start)
            out.m_end.append(ce.end)
            # The events were never tagged with their source: the unit's coordinates say it.
            events = [_as_json(e) for e in ce.events]
            out.m_value.append(record_value(name, None, ce, events, sources(ce.positions)))

    def stats(self, out: _Out) -> None:
        out.other.append(
            {
                "kind": STATS,
                "query": self.job.name,
                "events": self.events,
                "keys": self.units,
                "unkeyed": self.unkeyed,
                "matches": self.matches,
                "bad": self.bad,
            }
        )


def _runs(units: pa.Array) -> list[int]:
    """Where each run of equal units starts, and the end: rows arrive sorted by unit."""
    n = len(units)
    if n < 2:
        return [0, n]
    same = pc.fill_null(pc.equal(units.slice(1), units.slice(0, n - 1)), False)
    changes = np.flatnonzero(~same.to_numpy(zero_copy_only=False)) + 1
    return [0, *changes.tolist(), n]


def _as_json(event: Mapping[str, Any]) -> Any:
    # An event that kept its bytes is written as those bytes: the same JSON value the
    # fleet writes, without decoding it again.
    return orjson.Fragment(event.raw) if type(event) is RawEvent else event


class _NoUnit:
    pass


_NONE = _NoUnit()


def evaluate_batches(
    job: JobQuery,
    bases: Bases | None,
    counters: Mapping[str, Any] | None,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body of the evaluation pass: sorted prepared rows in, ``RESULT``
    rows out (matches and bad records as they come, one stats row at the end).
    ``counters`` (Spark accumulators by stats column name) also receive the counts, so
    the driver has them without a second pass over the rows."""
    runner = UnitRunner(job, bases)
    out = _Out()
    for batch in batches:
        runner.run(batch, out)
        if len(out) >= 1_000:
            yield out.batch(job.name)
    runner.end_unit(out)
    runner.stats(out)
    if counters is not None:
        for name, value in out.other[-1].items():
            if name in counters:
                counters[name].add(value)
    yield out.batch(job.name)
