"""One keyed partition's evaluation: the queries' evaluators and the replay bookkeeping.

This is the deterministic core of the worker, with no Kafka client in it: the
complex events it returns depend only on the checkpoint it started from and
the keyed records it is given, never on how those records were batched. That
is what lets a successor replay a partition after a crash and recognise the
outputs its predecessor already published:

- records at offsets already processed are ignored (a fetch after a seek);
- a record routed twice by a restarted coordinator (same input partition, an
  input offset not above the last one seen) is dropped;
- the queries run on a record are those registered below the record's
  registry offset (see ``cerfleet.fleet.keyed``); once started, a query keeps
  running until a registry record below some later record's offset replaces
  or removes it, so coordinators that lag behind one another cannot make it
  flap;
- each query numbers its outputs; numbers below ``suppress`` were published
  before the takeover and are not returned again.

Events are evaluated in columnar batches (``QueryEvaluator.process_columns``)
labelled with their keyed offsets, which become the complex events' positions.

``max_outputs_per_event`` bounds what one record may make one query emit (a
Kleene query without a window has 2ⁿ complex events ending at its n-th event):
the cap registered with the query (``QuerySpec``), else the worker's setting.
The evaluator stops enumerating at the bound, so which complex events are kept is
a function of the input alone and numbering stays replayable; the last output of
a cut record says so (``Output.truncated``) and ``truncated`` counts cut records
per query. The bound must then be the same for every worker of the group, as the
queries are: a replay under another bound numbers differently.

A query whose evaluation of one batch takes over ``time_budget`` is suspended
on the partition from the next offset, durably and replayably: see
``cerfleet.workers.budget``.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cerfleet.errors import EvaluationLimit
from cerfleet.evaluation.query_evaluator import QueryEvaluator
from cerfleet.evaluation.snapshot import dump_counted
from cerfleet.fleet.records import DEFAULT_LIMITS, RecordLimits
from cerfleet.fleet.registry import Registered
from cerfleet.query import Evaluator
from cerfleet.rdf.live import LiveRdf
from cerfleet.workers.budget import Suspension, Suspensions
from cerfleet.workers.catalog import Catalog
from cerfleet.workers.checkpoint import Checkpoint, QueryCheckpoint
from cerfleet.workers.keyed_batch import KeyedBatch
from cerfleet.workers.keyed_decoding import (
    RECORD_REASONS,
    Screened,
    decode_rows,
    screen,
    segments,
)
from cerfleet.workers.lateness import in_time_order, stage_of
from cerfleet.workers.query_run import Output, QueryRun, numbered, warn_truncated
from cerfleet.workers.rdf_runs import evaluate_rdf, new_evaluator, rdf_group, restored_evaluator
from cerfleet.workers.row_outputs import RowOutputs


@dataclass(frozen=True, slots=True)
class Record:
    """What evaluation needs of one keyed record."""

    offset: int
    value: bytes | None
    src: tuple[str, int, int] | None
    registry: int
    key: bytes | None = None


def batch_of(records: Sequence[Record]) -> KeyedBatch:
    """``records`` as one batch."""
    return KeyedBatch(
        [r.offset for r in records],
        [r.value for r in records],
        [r.src for r in records],
        [r.registry for r in records],
        [r.key for r in records],
    )


@dataclass(slots=True)
class DeadLetter:
    record: Record
    query: str | None
    reason: str
    error: str


@dataclass
class PartitionState:
    keyed_topic: str
    partition: int
    catalog: Catalog
    next_offset: int = 0
    # Per input partition (topic, number), the highest input offset processed.
    sources: dict[tuple[str, int], int] = field(default_factory=dict)
    runs: dict[str, QueryRun] = field(default_factory=dict)
    retired: set[tuple[str, int]] = field(default_factory=set)
    output_bounds: dict[str, int] = field(default_factory=dict)
    published: dict[tuple[str, int], int] = field(default_factory=dict)
    dirty: bool = False
    duplicates: int = 0
    suppressed: int = 0
    tecs_nodes: int = 0  # as of the latest checkpoint
    registry_seen: int = 0  # the highest registry offset of a record processed
    max_outputs_per_event: int | None = None
    record_limits: RecordLimits = DEFAULT_LIMITS
    truncated: dict[str, int] = field(default_factory=dict)  # query -> records cut
    # query -> seconds spent evaluating it here: which query a slow worker is busy with
    evaluation_seconds: dict[str, float] = field(default_factory=dict)
    # query -> events that arrived too late to take part in anything (behind their key's
    # clock or the lateness horizon, or past a lateness bound's reorder stage).
    late: dict[str, int] = field(default_factory=dict)
    time_budget: float = 0.0  # per query and batch, in seconds (0: none)
    suspensions: Suspensions = field(default_factory=Suspensions)
    clock: Callable[[], float] = time.perf_counter  # what evaluation time is read from

    def limit(self, max_outputs_per_event: int, records: RecordLimits, time_budget: float) -> None:
        """The worker's bounds (``WorkerSettings.partition_limits``)."""
        self.max_outputs_per_event, self.record_limits = max_outputs_per_event, records
        self.time_budget = time_budget

    def process(
        self, records: Sequence[Record] | KeyedBatch
    ) -> tuple[list[Output], list[DeadLetter]]:
        """Evaluate ``records`` (in offset order); return new outputs and dead letters.

        The batch is judged and decoded per query as a whole (``keyed_decoding``): each
        query's attributes become columns, its events keep their bytes."""
        batch = records if isinstance(records, KeyedBatch) else batch_of(records)
        fresh = self._fresh(batch)
        if not fresh:
            return [], []
        if rdf_group(self.catalog, self.keyed_topic, batch.registries[fresh[-1]]):
            screened = Screened(fresh, [])  # graphs, not JSON: judged by their decoder
        else:
            screened = screen(batch, fresh, self.record_limits)
        dead = [self._letter(batch, i, None, r.reason, r.error) for i, r in screened.rejected]
        reported = {i for i, _ in screened.rejected}
        work: dict[int, tuple[QueryRun, list[int]]] = {}
        registries = batch.registries
        for segment in segments(screened.kept, registries):
            for run in self._active(registries[segment[0]]):
                given = self.suspensions.rows(run.name, run.entry.version, segment, batch.offsets)
                entry = work.get(id(run))
                if entry is None:
                    work[id(run)] = (run, list(given))
                else:
                    entry[1].extend(given)
        outputs: list[Output] = []
        for run, rows in work.values():
            if not rows:
                continue  # suspended
            evaluator = run.evaluator
            if isinstance(evaluator, LiveRdf):
                started = self.clock()
                rdf_outputs, suppressed, problems = evaluate_rdf(run, evaluator, batch, rows)
                spent = self.clock() - started
                self.evaluation_seconds[run.name] = self.evaluation_seconds.get(run.name, 0) + spent
                outputs += rdf_outputs
                self.suppressed += suppressed
                for i, reason, error in problems:
                    query = None if reason in RECORD_REASONS else run.name
                    if query is not None or i not in reported:
                        reported.add(i)
                        dead.append(self._letter(batch, i, query, reason, error))
                continue
            # Row by row, or through the lateness stage (its own columns): none decoded.
            cols = run.lateness is None and not evaluator.by_rows(len(rows))
            streams = run.entry.spec.topic_streams
            decoded = decode_rows(evaluator.query.json_decoder, batch, rows, streams, columns=cols)
            for i, reason, error in decoded.problems:
                if reason in RECORD_REASONS:
                    if i not in reported:  # one letter per record, whichever query saw it
                        reported.add(i)
                        dead.append(self._letter(batch, i, None, reason, error))
                else:
                    dead.append(self._letter(batch, i, run.name, reason, error))
            if not decoded.rows:
                continue
            evaluator.max_outputs = run.max_outputs or self.max_outputs_per_event
            started = self.clock()
            late_before = run.late
            try:
                if run.lateness is None:
                    ces = evaluator.process_columns(
                        decoded.columns, events=decoded.events, positions=decoded.positions
                    )
                else:
                    ces = in_time_order(run.lateness, evaluator, decoded.events, decoded.positions)
            except EvaluationLimit as exc:  # the query stops here; the others go on
                first = batch.offsets[rows[0]]
                self.suspensions.fail(run.name, run.entry.version, first, len(rows), str(exc))
                continue
            if run.late != late_before:
                self.late[run.name] = self.late.get(run.name, 0) + run.late - late_before
            cut = set(evaluator.truncated_ends)
            if cut:
                evaluator.truncated_ends.clear()
                self._count_truncated(run, len(cut))
            # Timed with the evaluation: a language's output stage (MATCH_RECOGNIZE's
            # labelling of a match's rows) is part of what the query costs.
            fresh_outputs, suppressed = numbered(run, ces, cut)
            spent = self.clock() - started
            self.evaluation_seconds[run.name] = self.evaluation_seconds.get(run.name, 0.0) + spent
            outputs += fresh_outputs
            self.suppressed += suppressed
            replaying = run.emitted < run.suppress
            self.suspensions.judge(
                run.name,
                run.entry.version,
                spent,
                len(rows),
                self.time_budget,
                self.next_offset,
                replaying,
            )
        # In record order, the record's own verdict before its queries' (by name).
        dead.sort(key=lambda d: (d.record.offset, d.query or ""))
        return outputs, dead

    def _fresh(self, batch: KeyedBatch) -> list[int]:
        """The rows of ``batch`` not processed before: at or past ``next_offset``, and not
        a second copy of an input record (routed twice by a restarted coordinator)."""
        offsets = batch.offsets
        first = bisect_left(offsets, self.next_offset)
        if first == len(offsets):
            return []
        self.next_offset = offsets[-1] + 1
        self.dirty = True
        seen = self.sources
        last = seen.get
        fresh: list[int] = []
        keep = fresh.append
        duplicates = 0
        for i, src in enumerate(batch.sources[first:], first):
            if src is not None:
                topic, partition, offset = src
                where = (topic, partition)
                if offset <= last(where, -1):
                    duplicates += 1
                    continue
                seen[where] = offset
            keep(i)
        self.duplicates += duplicates
        return fresh

    def _letter(
        self, batch: KeyedBatch, i: int, query: str | None, reason: str, error: str
    ) -> DeadLetter:
        src = batch.sources[i]
        # An oversized value would not fit the dead-letter topic either.
        value = None if reason == "too_large" else batch.values[i]
        record = Record(
            batch.offsets[i],
            value,
            None if src is None else (str(src[0]), int(src[1]), int(src[2])),
            batch.registries[i],
            batch.key(i),
        )
        return DeadLetter(record, query, reason, error)

    def counts(self) -> tuple[int, int, dict[str, int], dict[str, float], dict[str, int]]:
        """Duplicates, suppressed outputs, and per query truncated records, evaluation
        seconds and late events, so far."""
        per_query = dict(self.truncated), dict(self.evaluation_seconds), dict(self.late)
        return (self.duplicates, self.suppressed, *per_query)

    def _count_truncated(self, run: QueryRun, records: int) -> None:
        query = run.name
        if query not in self.truncated:  # once per partition and query: the metric counts
            warn_truncated(f"{self.keyed_topic}[{self.partition}]", run, self.max_outputs_per_event)
        self.truncated[query] = self.truncated.get(query, 0) + records

    def _active(self, registry_offset: int) -> list[QueryRun]:
        """The runs a record with this registry offset goes to, started or retired as needed."""
        self.registry_seen = max(self.registry_seen, registry_offset)
        for name, run in list(self.runs.items()):
            if self.catalog.removed_before(name, run.entry.version, registry_offset):
                self.retired.add((name, run.entry.version))
                del self.runs[name]
        for name, entry in self.catalog.queries_at(self.keyed_topic, registry_offset).items():
            if (
                name not in self.runs
                and (name, entry.version) not in self.retired
                # A lagging coordinator's record must not start what a record already
                # processed here had seen removed.
                and not self.catalog.removed_before(name, entry.version, self.registry_seen)
            ):
                self.runs[name] = self._new_run(entry, new_evaluator(entry), 0)
        return [self.runs[n] for n in sorted(self.runs)]

    def _new_run(
        self,
        entry: Registered,
        evaluator: Evaluator | LiveRdf,
        emitted: int,
        lateness: dict[str, Any] | None = None,
        output: Any = None,
    ) -> QueryRun:
        published = self.published.get((entry.spec.name, entry.version), -1)
        stage = stage_of(entry, lateness)
        rows = RowOutputs.of(entry, output)
        return QueryRun(entry, evaluator, emitted, published + 1, stage, rows)

    # -- checkpoints ---------------------------------------------------------------

    def checkpoint(self) -> Checkpoint:
        """The state as a checkpoint; also counts the tECS nodes it holds (``tecs_nodes``)."""
        snapshots = {}
        nodes = 0
        for name, run in self.runs.items():
            evaluator = run.evaluator
            if isinstance(evaluator, QueryEvaluator):
                snapshots[name], count = dump_counted(evaluator)
                nodes += count
            else:
                # The language's selection: its pending matches and buffered rows.
                snapshots[name] = evaluator.snapshot()
        self.tecs_nodes = nodes
        return Checkpoint(
            self.keyed_topic,
            self.partition,
            self.next_offset,
            Checkpoint.named(self.sources),
            {
                name: QueryCheckpoint(
                    run.entry.version,
                    run.evaluator.query.fingerprint,
                    run.emitted,
                    snapshots[name],
                    None if run.lateness is None else run.lateness.export(),
                    None if run.rows is None else run.rows.export(),
                )
                for name, run in self.runs.items()
            },
            sorted(self.retired),
            dict(self.output_bounds),
            self.registry_seen,
            self.suspensions.live(self._versions()),
        )

    def _versions(self) -> dict[str, int]:
        return {name: run.entry.version for name, run in list(self.runs.items())}

    def suspended(self) -> dict[str, Suspension]:
        """The queries suspended here, as recorded (see ``cerfleet.workers.budget``)."""
        live = self.suspensions.live(self._versions())
        return {name: s for name, s in live.items() if s.recorded}

    @classmethod
    def restore(
        cls,
        catalog: Catalog,
        keyed_topic: str,
        partition: int,
        ckpt: Checkpoint | None,
        published: dict[tuple[str, int], int],
        max_outputs_per_event: int | None = None,
    ) -> PartitionState:
        """The state ``ckpt`` describes (a fresh one without), knowing which outputs the
        previous owners already ``published`` (highest seq per query and version)."""
        state = cls(
            keyed_topic,
            partition,
            catalog,
            published=published,
            max_outputs_per_event=max_outputs_per_event,
        )
        if ckpt is None:
            return state
        state.next_offset = ckpt.next_offset
        state.sources = ckpt.input_sources()
        state.retired = set(ckpt.retired)
        state.output_bounds = dict(ckpt.output_bounds)
        state.registry_seen = ckpt.registry_seen
        state.suspensions = Suspensions(dict(ckpt.suspended))
        for name, qc in ckpt.queries.items():
            entry = catalog.entry(name, qc.version)
            if entry is None or entry.query.fingerprint != qc.fingerprint:
                raise LookupError(
                    f"checkpoint of {keyed_topic}[{partition}] needs query {name!r} "
                    f"version {qc.version}, which the registry does not hold"
                )
            evaluator = restored_evaluator(entry, qc.snapshot)
            state.runs[name] = state._new_run(entry, evaluator, qc.emitted, qc.lateness, qc.output)
        return state

    def active_keys(self) -> int:
        return sum(len(run.evaluator.substreams) for run in self.runs.values())
