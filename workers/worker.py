"""``cerfleet worker``: consume keyed topics, evaluate, publish complex events, checkpoint.

Workers form one consumer group over every keyed topic (a regex
subscription, so new groups are picked up without a restart). Per owned
keyed partition a worker holds a ``PartitionState`` (one evaluator per query,
each holding one evaluator per PARTITION BY key).

Checkpoint rounds, rebalances and takeovers: ``cerfleet.workers.ownership``.

Taking over a partition: read its latest checkpoint, restore the evaluators,
scan the tail of each output topic the partition writes to (to its end) for
the numbers of outputs already published, and seek to the checkpoint's offset.
Replaying from there recomputes exactly the same outputs, and the published
ones are skipped, so neither a crash nor a rebalance loses or repeats a complex
event even on a broker without transaction semantics.

A missing output topic is created (``output_partitions``) before the records
that could publish to it are evaluated. When that fails, the keyed partition
is paused and rewound to its first unevaluated record, exactly as if those
records had not been fetched yet, and creation is retried every
``missing_topic_retry`` seconds; the other partitions go on, and ``/healthz``
stays 200 (a liveness probe restarting the worker would not create the topic
either) but names the topic, as do the log and the
``cerfleet_worker_blocked_partitions`` gauge.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from bisect import bisect_left
from collections.abc import Callable

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from cerfleet.fleet.batching import BATCHED_PRODUCER, NO_TIMESTAMP, drain, produce_waiting
from cerfleet.fleet.keyed import (
    ERROR_HEADER,
    QUERY_HEADER,
    SRC_HEADER,
    STAGE_HEADER,
    encode_src,
)
from cerfleet.fleet.registry import Registry
from cerfleet.fleet.registry import ensure_topic as ensure_registry_topic
from cerfleet.fleet.settings import WorkerSettings
from cerfleet.fleet.topics import TopicError, ensure_topics
from cerfleet.workers.catalog import Catalog
from cerfleet.workers.keyed_batch import KeyedBatch, split_by_partition
from cerfleet.workers.metrics import WorkerMetrics, observe_many
from cerfleet.workers.ownership import CheckpointTimeout, Ownership
from cerfleet.workers.partition import DeadLetter, PartitionState
from cerfleet.workers.query_run import Output, QueryRun, output_records
from cerfleet.workers.suspended import SuspendedQueries, record_suspensions, suspended_status

log = logging.getLogger(__name__)

TP = tuple[str, int]
# The default: a joining or leaving worker moves only the partitions that change owner;
# the others keep running through the rebalance.
COOPERATIVE = "cooperative-sticky"
ASSIGNMENT = "partition.assignment.strategy"


class Worker(Ownership):
    missing_topic_retry = 5.0  # seconds between attempts to create a missing output topic

    def __init__(self, settings: WorkerSettings, metrics: WorkerMetrics | None = None) -> None:
        self.settings = settings
        self.metrics = metrics or WorkerMetrics()
        self.states: dict[TP, PartitionState] = {}
        self.metrics.registry.register(SuspendedQueries(self.states))
        self.ready = False
        self._failure: KafkaError | None = None
        self._delivered: dict[tuple[TP, str], int] = {}  # highest output offset per topic
        self._partitions: dict[str, int] = {}
        self._checkpoint_topics: dict[str, tuple[str, int]] = {}
        # Output topics that could not be created: when to try again, and why not.
        self._missing_topics: dict[str, tuple[float, str]] = {}
        # Paused keyed partitions, with the missing output topics they wait for.
        self._blocked: dict[TP, set[str]] = {}
        self._pending: dict[TP, None] = {}
        self._txn: dict[TP, Producer] = {}
        self._member: str | None = None
        self._suspect: dict[TP, int] = {}
        s = settings
        strategy = s.consumer.get(ASSIGNMENT, s.kafka.get(ASSIGNMENT, COOPERATIVE))
        protocol = s.consumer.get("group.protocol", s.kafka.get("group.protocol", "classic"))
        self._incremental = "cooperative" in strategy or protocol == "consumer"
        # KIP-848's protocol assigns on the broker: no client-side strategy then.
        self._assignment = {} if protocol == "consumer" else {ASSIGNMENT: strategy}

    def health(self) -> tuple[bool, str]:
        if self._failure is not None:
            return False, f"delivery failed: {self._failure}"
        if not self.ready:
            return False, "starting"
        status = f"{len(self.states)} keyed partitions" + suspended_status(self.states)
        blocked = list(self._blocked.values())  # a copy: the worker's thread changes it
        if blocked:
            waiting = sorted(set().union(*blocked))
            status += (
                f"; {len(blocked)} paused until these output topics can be created: "
                + ", ".join(f"{t} ({self._missing_topics.get(t, (0, '?'))[1]})" for t in waiting)
            )
        return True, status

    # -- main loop -----------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        s = self.settings
        client = s.client_config()
        ensure_registry_topic(client, s.registry_topic, also={s.dead_letter_topic: 1})
        self.registry = Registry(client, s.registry_topic)
        self.registry.catch_up()
        self.catalog = Catalog(self.registry, s.keyed_topic_prefix)
        # With transactions, outputs go through each keyed partition's own transactional
        # producer (see cerfleet.workers.ownership); this one serves the rest.
        self.producer = Producer(s.producer_config(**BATCHED_PRODUCER))
        self.scanner = Consumer(
            s.consumer_config(
                **{
                    "group.id": f"{s.group_id}-scan",  # never joined: assign() only
                    "enable.auto.commit": "false",
                    # Reads stop at partition EOF: an empty fetch should say so at once.
                    "fetch.wait.max.ms": "10",
                    "enable.partition.eof": "true",
                    "isolation.level": "read_committed",
                }
            )
        )
        self.consumer = Consumer(
            s.consumer_config(
                **{
                    "group.id": s.group_id,
                    "enable.auto.commit": "false",
                    "auto.offset.reset": "earliest",
                    "isolation.level": "read_committed",
                    **self._assignment,
                    # New keyed topics (new query groups) are found on metadata refresh.
                    "topic.metadata.refresh.interval.ms": "2000",
                }
            )
        )
        pattern = "^" + re.escape(s.keyed_topic_prefix) + ".*"
        self.consumer.subscribe(
            [pattern], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )
        self.ready = True
        watching = self._start_stall_watch()
        try:
            last = time.monotonic()
            while not stop.is_set():
                self.registry.poll(0)
                msgs = drain(self.consumer, s.batch_size, 0.1)
                if not self._check_stall() and msgs:
                    self._process(msgs)
                for producer in self._producers():
                    producer.poll(0)
                self._raise_on_failure()
                if self._blocked:
                    self._retry_blocked()
                if self._pending:
                    self._restore_pending()
                # Not of the states of a stall that began since the loop's first check.
                if time.monotonic() - last >= s.checkpoint_interval and not self._check_stall():
                    try:
                        self._checkpoint(periodic=True)
                    except CheckpointTimeout as exc:
                        log.warning("no checkpoint this round: %s", exc)
                    last = time.monotonic()
            self._checkpoint()  # SIGTERM: drain and leave a checkpoint behind
        except BaseException:
            self._failure = self._failure or KafkaError(KafkaError._FAIL, "worker stopped")
            raise
        finally:
            watching.set()
            self.ready = False
            try:
                self.consumer.close()  # leaves the group now rather than at session timeout
            finally:
                for tp, producer in list(self._txn.items()):
                    self._close_transactional(tp, producer)
                self._txn.clear()
                self.producer.flush(10)
                self.scanner.close()
                self.registry.close()

    def _process(self, msgs: list[Message]) -> None:
        received = time.monotonic()
        parts, errors = split_by_partition(msgs)
        for err in errors:
            if err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                log.debug("consume: %s", err)  # no keyed topic yet: no query registered
            elif err.code() != KafkaError._PARTITION_EOF:
                log.warning("consume: %s", err)
        for tp, part in parts.items():
            state = self.states.get(tp)
            if state is None or tp in self._blocked:
                continue  # revoked while the batch was in flight, or paused and rewound
            batch = KeyedBatch.of_messages(part)
            newest = max(batch.registries)
            if newest > self.registry.offset:
                self.registry.wait_for(newest, self.settings.registry_wait)
            if not self._outputs_ready(tp, state, batch):
                continue
            before = state.counts()
            outputs, dead = state.process(batch)
            if self._check_stall():
                return  # stopped while evaluating: these outputs may be a successor's now
            # Counted once evaluated, with the outputs below: a reader that sees every
            # record counted then sees every complex event they made.
            self.metrics.events_in.labels(tp[0]).inc(len(batch))
            self.metrics.count_batch(before, state.counts())
            if not self._emit_all(state, outputs, received):
                self._check_stall()  # drops every partition's state before anything else
                return
            for letter in dead:
                self._dead_letter(state, letter)
            if state.suspensions.unrecorded():  # cerfleet.workers.budget
                record_suspensions(state, self._checkpoint)

    # -- missing output topics -------------------------------------------------------

    def _outputs_ready(self, tp: TP, state: PartitionState, batch: KeyedBatch) -> bool:
        """Whether every output topic the records of ``batch`` could publish to exists
        (created now if need be); if not, the partition is paused and rewound to its
        first new record.

        Checked before evaluating, because an evaluated record cannot be taken back:
        its outputs would have to be published or the partition replayed."""
        first = bisect_left(batch.offsets, state.next_offset)
        if first == len(batch):
            return True
        # A superset of the queries the records reach: the runs already started,
        # and every query registered at one of the records' registry offsets.
        topics = {run.entry.spec.output_topic for run in state.runs.values()}
        for reg in set(batch.registries[first:]):
            topics.update(e.spec.output_topic for e in self.catalog.queries_at(tp[0], reg).values())
        missing = {t for t in sorted(topics) if not self._output_topic_ready(t)}
        if not missing:
            return True
        self._blocked[tp] = missing
        partition = TopicPartition(tp[0], tp[1])
        self.consumer.pause([partition])
        # The client discards what it had fetched beyond this offset (and _process skips
        # anything of a blocked partition); resuming fetches it all again from here.
        self.consumer.seek(TopicPartition(tp[0], tp[1], batch.offsets[first]))
        self.metrics.blocked.set(len(self._blocked))
        log.warning(
            "%s[%d] paused at offset %d until output topic(s) %s can be created",
            tp[0],
            tp[1],
            batch.offsets[first],
            ", ".join(sorted(missing)),
        )
        return False

    def _output_topic_ready(self, topic: str) -> bool:
        """Whether ``topic`` exists, creating it if not (at most once per
        ``missing_topic_retry`` seconds after a failure)."""
        if topic in self._partitions:
            return True
        failed = self._missing_topics.get(topic)
        if failed is not None and time.monotonic() < failed[0]:
            return False
        client = self.settings.client_config()
        try:
            # The partition count is only the default for a topic created here.
            ensure_topics(client, {topic: self.settings.output_partitions}, report_mismatch=False)
            self._partition_count(topic)
        except (TopicError, KafkaException) as exc:
            self._missing_topics[topic] = (time.monotonic() + self.missing_topic_retry, str(exc))
            self.metrics.output_topic_errors.labels(topic).inc()
            log.error(
                "output topic %r is missing and could not be created (retrying every %g s; "
                "create it, or allow this worker to): %s",
                topic,
                self.missing_topic_retry,
                exc,
            )
            return False
        if self._missing_topics.pop(topic, None) is not None:
            log.info("output topic %r exists now", topic)
        return True

    def _retry_blocked(self) -> None:
        for tp, topics in list(self._blocked.items()):
            if all(self._output_topic_ready(t) for t in sorted(topics)):
                del self._blocked[tp]
                self.consumer.resume([TopicPartition(*tp)])
                log.info("%s[%d] resumed", *tp)
        self.metrics.blocked.set(len(self._blocked))

    # -- publishing ----------------------------------------------------------------

    def _emit_all(self, state: PartitionState, outputs: list[Output], received: float) -> bool:
        """Hand ``outputs`` to the producer; metrics are counted once per query. False when
        the process stood still meanwhile (``cerfleet.workers.stalls``): the rest of them
        may be a successor's now, and are not published."""
        if not outputs:
            return True
        tp = (state.keyed_topic, state.partition)
        producer = self._producer_of(tp)
        produce = producer.produce
        per_query: dict[str, int] = {}
        # A batch's outputs come query after query: each query's go to one output topic,
        # to the one partition all of this keyed partition's outputs go to there.
        run: QueryRun | None = None
        name, topic, partition, count = "", "", 0, 0
        on_delivery = self._on_output(tp, topic)
        monotonic, limit, finished = time.monotonic, self._stall_limit, True
        for out, (value, key, headers) in zip(outputs, output_records(tp, outputs), strict=True):
            # ``_stood_still``, inline on this hot path: the ticker's flag, or its last
            # tick too old (the ticker may not have ticked since the process resumed).
            if self._stalled or monotonic() - self._last_tick > limit:
                self._stood_still()
                finished = False
                break
            if out.run is not run:
                if count:
                    per_query[name] = per_query.get(name, 0) + count
                run, name, count = out.run, out.run.name, 0
                topic = run.entry.spec.output_topic
                partition = state.partition % self._partition_count(topic)
                on_delivery = self._on_output(tp, topic)
            try:
                # Positional only (``fleet.batching``): one call per output.
                produce(topic, value, key, partition, on_delivery, None, NO_TIMESTAMP, headers)
            except BufferError:  # local queue full: this one waits for room
                produce_waiting(producer, topic, value, key, partition, on_delivery, headers)
            count += 1
        if count:
            per_query[name] = per_query.get(name, 0) + count
        latency = time.monotonic() - received
        for name, count in per_query.items():
            self.metrics.complex_events.labels(name).inc(count)
            observe_many(self.metrics.latency.labels(name), latency, count)
        return finished

    def _dead_letter(self, state: PartitionState, letter: DeadLetter) -> None:
        rec = letter.record
        src = (
            encode_src(*rec.src)
            if rec.src is not None
            else encode_src(state.keyed_topic, state.partition, rec.offset)
        )
        headers: list[tuple[str, str | bytes | None]] = [
            (ERROR_HEADER, letter.error.encode()),
            (SRC_HEADER, src),
            (STAGE_HEADER, b"worker"),
        ]
        if letter.query is not None:
            headers.append((QUERY_HEADER, letter.query.encode()))
        self.metrics.dead_letters.labels("worker", letter.reason).inc()
        producer = self._producer_of((state.keyed_topic, state.partition))
        topic = self.settings.dead_letter_topic
        produce_waiting(producer, topic, rec.value, rec.key, None, self._on_delivery, headers)

    def _on_output(self, tp: TP, topic: str) -> Callable[[KafkaError | None, Message], None]:
        """The delivery callback of the outputs of ``tp`` to ``topic``: it runs once per
        output, so it does no more than keep the highest offset delivered."""
        key = (tp, topic)
        delivered = self._delivered
        failed = self._on_delivery

        def on_output(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                failed(err, msg)
                return
            offset = msg.offset()
            if offset is not None and offset > delivered.get(key, -1):
                delivered[key] = offset

        return on_output
