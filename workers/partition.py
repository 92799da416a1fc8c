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
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from cerfleet.complex_event import ComplexEvent
from cerfleet.evaluation.query_evaluator import QueryEvaluator
from cerfleet.evaluation.snapshot import dump_counted
from cerfleet.events.columns import columns_of
from cerfleet.fleet.records import DEFAULT_LIMITS, RecordLimits, Rejected, decode_event
from cerfleet.fleet.registry import Registered
from cerfleet.workers.catalog import Catalog
from cerfleet.workers.checkpoint import Checkpoint, QueryCheckpoint
from cerfleet.workers.outputs import SOURCE_FIELD

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Record:
    """What evaluation needs of one keyed record."""

    offset: int
    value: bytes | None
    src: tuple[str, int, int] | None
    registry: int
    key: bytes | None = None


@dataclass(slots=True)
class DeadLetter:
    record: Record
    query: str | None
    reason: str
    error: str


@dataclass(slots=True)
class Output:
    run: QueryRun
    seq: int
    ce: ComplexEvent
    truncated: bool = False  # the last output kept of a record whose outputs were cut


@dataclass(slots=True)
class QueryRun:
    entry: Registered
    evaluator: QueryEvaluator
    emitted: int = 0  # outputs numbered so far
    suppress: int = 0  # outputs numbered below this were already published

    @property
    def name(self) -> str:
        return self.entry.spec.name

    @property
    def max_outputs(self) -> int | None:
        """The cap registered with the query (None: the worker's setting)."""
        return self.entry.spec.max_outputs_per_event


@dataclass
class PartitionState:
    keyed_topic: str
    partition: int
    catalog: Catalog
    next_offset: int = 0
    sources: dict[str, int] = field(default_factory=dict)
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

    def process(self, records: Sequence[Record]) -> tuple[list[Output], list[DeadLetter]]:
        """Evaluate ``records`` (in offset order); return new outputs and dead letters."""
        dead: list[DeadLetter] = []
        batches: dict[int, tuple[QueryRun, list[dict[str, object]], list[int]]] = {}
        active: list[QueryRun] = []
        active_at: int | None = None
        for rec in records:
            if rec.offset < self.next_offset:
                continue
            self.next_offset = rec.offset + 1
            self.dirty = True
            src = rec.src
            if src is not None:
                skey = f"{src[0]}:{src[1]}"
                if src[2] <= self.sources.get(skey, -1):
                    self.duplicates += 1
                    continue
                self.sources[skey] = src[2]
            event = decode_event(rec.value, self.record_limits)
            if isinstance(event, Rejected):
                # An oversized value would not fit the dead-letter topic either.
                kept = replace(rec, value=None) if event.reason == "too_large" else rec
                dead.append(DeadLetter(kept, None, event.reason, event.error))
                continue
            if src is not None:
                event[SOURCE_FIELD] = list(src)
            if rec.registry != active_at:
                active = self._active(rec.registry)
                active_at = rec.registry
            for run in active:
                query = run.evaluator.query
                if not isinstance(event.get(query.type_field), str):
                    dead.append(
                        DeadLetter(
                            rec, run.name, "no_type", f"type field {query.type_field!r} missing"
                        )
                    )
                    continue
                problem = query.check_event(event)
                if problem is not None:
                    dead.append(DeadLetter(rec, run.name, "schema", problem))
                    continue
                batch = batches.get(id(run))
                if batch is None:
                    batch = batches[id(run)] = (run, [], [])
                batch[1].append(event)
                batch[2].append(rec.offset)
        outputs: list[Output] = []
        for run, events, positions in batches.values():
            query = run.evaluator.query
            evaluator = run.evaluator
            evaluator.max_outputs = run.max_outputs or self.max_outputs_per_event
            started = time.perf_counter()
            ces = evaluator.process_columns(
                columns_of(events, query.attributes), events=events, positions=positions
            )
            spent = time.perf_counter() - started
            self.evaluation_seconds[run.name] = self.evaluation_seconds.get(run.name, 0.0) + spent
            cut = set(evaluator.truncated_ends)
            if cut:
                evaluator.truncated_ends.clear()
                self._count_truncated(run, len(cut))
            for i, ce in enumerate(ces):
                seq = run.emitted
                run.emitted = seq + 1
                if seq < run.suppress:
                    self.suppressed += 1
                    continue
                last = ce.end in cut and (i + 1 == len(ces) or ces[i + 1].end != ce.end)
                outputs.append(Output(run, seq, ce, last))
        return outputs, dead

    def counts(self) -> tuple[int, int, dict[str, int], dict[str, float]]:
        """Duplicates, suppressed outputs, truncated records and evaluation seconds per
        query, so far."""
        return self.duplicates, self.suppressed, dict(self.truncated), dict(self.evaluation_seconds)

    def _count_truncated(self, run: QueryRun, records: int) -> None:
        query = run.name
        if query not in self.truncated:
            # Once per partition and query: the metric counts the rest.
            log.warning(
                "%s[%d]: query %r made one event emit more than %d complex events; the "
                'rest were dropped (outputs flagged "truncated", metric '
                "cerfleet_worker_truncated_events_total)",
                self.keyed_topic,
                self.partition,
                query,
                run.max_outputs or self.max_outputs_per_event,
            )
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
                self.runs[name] = self._new_run(entry, entry.query.evaluator(), 0)
        return [self.runs[n] for n in sorted(self.runs)]

    def _new_run(self, entry: Registered, evaluator: QueryEvaluator, emitted: int) -> QueryRun:
        published = self.published.get((entry.spec.name, entry.version), -1)
        return QueryRun(entry, evaluator, emitted, published + 1)

    # -- checkpoints ---------------------------------------------------------------

    def checkpoint(self) -> Checkpoint:
        """The state as a checkpoint; also counts the tECS nodes it holds (``tecs_nodes``)."""
        snapshots = {}
        nodes = 0
        for name, run in self.runs.items():
            snapshots[name], count = dump_counted(run.evaluator)
            nodes += count
        self.tecs_nodes = nodes
        return Checkpoint(
            self.keyed_topic,
            self.partition,
            self.next_offset,
            dict(self.sources),
            {
                name: QueryCheckpoint(
                    run.entry.version,
                    run.evaluator.query.fingerprint,
                    run.emitted,
                    snapshots[name],
                )
                for name, run in self.runs.items()
            },
            sorted(self.retired),
            dict(self.output_bounds),
            self.registry_seen,
        )

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
        state.sources = dict(ckpt.sources)
        state.retired = set(ckpt.retired)
        state.output_bounds = dict(ckpt.output_bounds)
        state.registry_seen = ckpt.registry_seen
        for name, qc in ckpt.queries.items():
            entry = catalog.entry(name, qc.version)
            if entry is None or entry.query.fingerprint != qc.fingerprint:
                raise LookupError(
                    f"checkpoint of {keyed_topic}[{partition}] needs query {name!r} "
                    f"version {qc.version}, which the registry does not hold"
                )
            evaluator = entry.query.restore(qc.snapshot)
            state.runs[name] = state._new_run(entry, evaluator, qc.emitted)
        return state

    def active_keys(self) -> int:
        return sum(len(run.evaluator.substreams) for run in self.runs.values())
