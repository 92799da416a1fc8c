"""Which keyed partitions a worker owns, what it resumes them from, and what it leaves behind.

Rebalance callbacks return at once, as Kafka Streams' do: a new partition is assigned
*paused* and queued; between batches of the others, the loop restores every queued
partition (their checkpoints and output tails read together, ``cerfleet.workers.scans``),
seeks each to its checkpoint and resumes it. A callback blocking for a
restore would hold up the rebalance (on tansu, a leader leaving then stalls the group).

With ``transactions`` each keyed partition has its own transactional producer,
``transactional.id = <group>.<keyed topic>.<partition>``. An id per keyed
partition, not per worker process, because the id is how Kafka finds a dead
or stalled predecessor's open transaction: whichever worker takes the
partition over calls ``init_transactions`` with the same id, which aborts that
transaction and fences the predecessor's producer, before the successor reads
the checkpoint and output tails. An id per process would leave the dead
transaction open until ``transaction.timeout.ms`` (hiding every later record
from read_committed readers) and would fence nothing. The cost is one producer
(a few threads, one connection per broker) per owned keyed partition.

Checkpoint round (every ``checkpoint_interval`` seconds, on revoke and on
SIGTERM): flush the producers, so every output of the records processed so far
is acknowledged (a failed delivery stops the worker, a flush out of time skips
the round: the partition is replayed, never skipped); produce each changed
partition's checkpoint (engine snapshots, next offset, output bounds) to the
co-partitioned checkpoint topic, and flush; commit the keyed offsets, inside the
partition's transaction with ``transactions`` (outputs, checkpoint and offset
commit atomically where transactions are implemented), else as a plain commit
that only feeds lag monitoring: the checkpoint is what a successor resumes from.
"""

from __future__ import annotations

import logging
import time
from contextlib import suppress

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTP

from cerfleet.fleet.batching import BATCHED_PRODUCER
from cerfleet.fleet.commits import commit_with_retry
from cerfleet.fleet.registry import Registry
from cerfleet.fleet.settings import WorkerSettings
from cerfleet.fleet.topics import TopicError, ensure_topics, partition_count
from cerfleet.workers.catalog import Catalog
from cerfleet.workers.checkpoint import Checkpoint, read_checkpoints, write_checkpoint
from cerfleet.workers.metrics import WorkerMetrics
from cerfleet.workers.outputs import published_seqs
from cerfleet.workers.partition import PartitionState
from cerfleet.workers.scans import Scan, scan_many
from cerfleet.workers.stalls import TP, CheckpointTimeout, StallWatch

log = logging.getLogger(__name__)

PURGED = (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT)


class Ownership(StallWatch):
    """The worker's owned partitions: rebalance callbacks, restores, checkpoint rounds."""

    settings: WorkerSettings
    metrics: WorkerMetrics
    states: dict[TP, PartitionState]
    registry: Registry
    catalog: Catalog
    producer: Producer
    consumer: Consumer
    scanner: Consumer
    _failure: KafkaError | None
    _delivered: dict[tuple[TP, str], int]
    _partitions: dict[str, int]
    _checkpoint_topics: dict[str, tuple[str, int]]
    _blocked: dict[TP, set[str]]
    _incremental: bool
    # Assigned (paused) but not yet restored, in assignment order.
    _pending: dict[TP, None]
    # Whether the registry must be read to its end before the next restore: set when
    # partitions are assigned (or put back after a stall), so once per assignment.
    _registry_stale: bool = True
    # transactions: the producer of each owned keyed partition.
    _txn: dict[TP, Producer]

    # -- producers ---------------------------------------------------------------------

    def _producer_of(self, tp: TP) -> Producer:
        return self._txn.get(tp, self.producer) if self.settings.transactions else self.producer

    def _producers(self) -> list[Producer]:
        return [self.producer, *self._txn.values()]

    def _transactional_producer(self, tp: TP) -> Producer:
        """The partition's own transactional producer; creating it aborts whatever
        transaction a previous owner left open under the same id, and fences it."""
        s = self.settings
        transactional = {"transactional.id": f"{s.group_id}.{tp[0]}.{tp[1]}"}
        producer = Producer(s.producer_config(**BATCHED_PRODUCER, **transactional))
        producer.init_transactions(60)
        producer.begin_transaction()
        return producer

    def _on_delivery(self, err: KafkaError | None, msg: object) -> None:
        # Purged records are those of a transaction aborted on release: the partition's
        # next owner replays them.
        if err is not None and self._failure is None and err.code() not in PURGED:
            self._failure = err

    def _raise_on_failure(self) -> None:
        if self._failure is not None:
            # Checkpointing past a lost output would lose it: stop, and let the
            # successor replay from the last checkpoint.
            raise KafkaException(self._failure)

    def _flush(self, deadline: float) -> None:
        for producer in self._producers():
            left = producer.flush(max(0.0, deadline - time.monotonic()))
            if left:
                raise CheckpointTimeout(f"{left} records still unacknowledged")
        self._raise_on_failure()

    # -- checkpoints -------------------------------------------------------------------

    def _checkpoint(self, timeout: float = 60.0, periodic: bool = False) -> None:
        started = time.perf_counter()
        deadline = time.monotonic() + timeout
        self._flush(deadline)
        offsets: dict[TP, KafkaTP] = {}
        for tp, state in self.states.items():
            if not state.dirty:
                continue
            self._update_bounds(tp, state)
            topic, partitions = self._checkpoint_topic(tp[0])
            size = write_checkpoint(
                self._producer_of(tp), topic, partitions, state.checkpoint(), self._on_delivery
            )
            self.metrics.checkpoint_bytes.labels(tp[0], str(tp[1])).set(size)
            offsets[tp] = KafkaTP(tp[0], tp[1], state.next_offset)
            state.dirty = False
        if not offsets:
            return
        # Without transactions a periodic round waits neither for its checkpoints (the
        # next round's first flush does) nor for its commit (it only feeds lag metrics).
        lazy = periodic and not self.settings.transactions
        if not lazy:
            self._flush(deadline)
        if self.settings.transactions:
            group = self.consumer.consumer_group_metadata()
            for tp, offset in offsets.items():
                producer = self._txn[tp]
                left = max(1.0, deadline - time.monotonic())
                producer.send_offsets_to_transaction([offset], group, left)
                producer.commit_transaction(max(1.0, deadline - time.monotonic()))
                producer.begin_transaction()
        elif lazy:
            with suppress(KafkaException):  # the next round commits again
                self.consumer.commit(offsets=list(offsets.values()), asynchronous=True)
        else:
            commit_with_retry(self.consumer, list(offsets.values()))
        self.metrics.checkpoint_seconds.observe(time.perf_counter() - started)
        self.metrics.active_keys.set(sum(s.active_keys() for s in self.states.values()))
        self.metrics.tecs_nodes.set(sum(s.tecs_nodes for s in self.states.values()))
        for tp, state in self.states.items():
            try:
                _, high = self.consumer.get_watermark_offsets(KafkaTP(*tp), cached=True)
            except KafkaException:
                continue
            if high is not None and high >= 0:
                self.metrics.lag.labels(tp[0], str(tp[1])).set(max(0, high - state.next_offset))

    def _update_bounds(self, tp: TP, state: PartitionState) -> None:
        """Offsets below which none of the partition's future outputs can land."""
        for topic in self.catalog.output_topics(state.keyed_topic):
            delivered = self._delivered.get((tp, topic))
            if delivered is not None:
                state.output_bounds[topic] = delivered + 1
            elif topic not in state.output_bounds:
                # A topic that did not exist at the takeover. ListOffsets is only used as a
                # lower bound here: the wrong answers seen from brokers are too low (which
                # makes the successor scan more), never above the end.
                try:
                    partition = state.partition % self._partition_count(topic)
                    low, _ = self.scanner.get_watermark_offsets(
                        KafkaTP(topic, partition), timeout=10, cached=False
                    )
                except (KafkaException, TopicError):
                    continue  # no such topic yet: the successor scans it whole
                state.output_bounds[topic] = int(low)

    def _checkpoint_topic(self, keyed_topic: str) -> tuple[str, int]:
        """The checkpoint topic of a keyed topic: same partition count, so each keyed
        partition's latest checkpoint is the last record of its own partition."""
        found = self._checkpoint_topics.get(keyed_topic)
        if found is None:
            s = self.settings
            suffix = keyed_topic.removeprefix(s.keyed_topic_prefix)
            name = f"{s.checkpoint_topic_prefix}{s.group_id}.{suffix}"
            ensure_topics(s.client_config(), {name: self._partition_count(keyed_topic)})
            found = self._checkpoint_topics[keyed_topic] = (name, self._partition_count(name))
        return found

    def _partition_count(self, topic: str) -> int:
        n = self._partitions.get(topic)
        if n is None:
            n = self._partitions[topic] = partition_count(self.settings.client_config(), topic)
        return n

    # -- rebalances --------------------------------------------------------------------

    def _on_assign(self, consumer: Consumer, partitions: list[KafkaTP]) -> None:
        self._member = consumer.memberid()
        # Returns at once: the restore happens in the loop (_restore_pending). Assigned
        # paused, so nothing is fetched before the seek to the checkpoint's offset.
        if self._incremental:
            consumer.incremental_assign(partitions)
        else:
            consumer.assign(partitions)
        if partitions:
            consumer.pause(partitions)
        for tp in partitions:
            self._pending[(tp.topic, tp.partition)] = None
        if partitions:
            self._registry_stale = True
        where = ", ".join(f"{t.topic}[{t.partition}]" for t in partitions)
        log.info("assigned %s (restoring)", where or "nothing")

    def _restore_pending(self) -> None:
        """Restore every pending partition, seek each to its checkpoint and resume it."""
        if not self._owner_confirmed():
            return
        tps = list(self._pending)
        if self._registry_stale:
            # Once per assignment, not per partition (a read to the registry's end is a
            # broker round trip: 8 restores spent 2.8 s in them on tansu): each
            # checkpoint was written before its partition was assigned here.
            self.registry.catch_up(self.settings.registry_wait)
            self._registry_stale = False
        if self.settings.transactions:
            # Before any read: creating each producer aborts its predecessor's open
            # transaction, whose outputs the reads must not count as published.
            for tp in tps:
                if tp not in self._txn:
                    self._txn[tp] = self._transactional_producer(tp)
        try:
            states = self._recover(tps)
        except LookupError:
            # A checkpoint naming a query version registered after that read (a fenced
            # predecessor's last round): read the registry again.
            self.registry.catch_up(self.settings.registry_wait)
            states = self._recover(tps)
        for tp in tps:
            del self._pending[tp]
            state = self.states[tp] = states[tp]
            offset = state.next_offset if state.next_offset > 0 else OFFSET_BEGINNING
            self.consumer.seek(KafkaTP(tp[0], tp[1], offset))
            self.consumer.resume([KafkaTP(*tp)])
            self.metrics.recoveries.inc()
            log.info("%s[%d] resumed at offset %d", tp[0], tp[1], state.next_offset)
        self.metrics.assigned.set(len(self.states))

    def _recover(self, tps: list[TP]) -> dict[TP, PartitionState]:
        """The states of keyed partitions taken over: their checkpoints (read together
        per keyed topic), then the tails of the output partitions they write to (read
        together, each from the lowest offset any of them needs)."""
        checkpoints: dict[TP, Checkpoint | None] = {}
        for keyed_topic in sorted({t for t, _ in tps}):
            topic, partitions = self._checkpoint_topic(keyed_topic)
            wanted = [p for t, p in tps if t == keyed_topic]
            found = read_checkpoints(self.scanner, topic, partitions, keyed_topic, wanted)
            checkpoints.update({(keyed_topic, p): c for p, c in found.items()})
        starts: dict[tuple[TP, str], tuple[int, int]] = {}  # (tp, topic): partition, start
        lows: dict[tuple[str, int], int] = {}
        for tp in tps:
            ckpt = checkpoints[tp]
            for out_topic in sorted(self.catalog.output_topics(tp[0])):
                try:
                    out_partition = tp[1] % self._partition_count(out_topic)
                except TopicError:
                    continue  # never written
                where = (out_topic, out_partition)
                if where not in lows:
                    lows[where], _ = self.scanner.get_watermark_offsets(
                        KafkaTP(*where), timeout=10, cached=False
                    )
                bound = ckpt.output_bounds.get(out_topic, 0) if ckpt else 0
                starts[(tp, out_topic)] = (out_partition, max(lows[where], bound))
        ranges: dict[tuple[str, int], tuple[int, int | None]] = {}
        for (_, out_topic), (out_partition, start) in starts.items():
            where = (out_topic, out_partition)
            ranges[where] = (min(start, ranges.get(where, (start, None))[0]), None)
        # To each partition's end as the log shows it, not as ListOffsets says it is.
        tails = scan_many(self.scanner, ranges, 60)
        states: dict[TP, PartitionState] = {}
        for tp in tps:
            states[tp] = self._restored(tp, checkpoints[tp], starts, tails)
        return states

    def _restored(
        self,
        tp: TP,
        ckpt: Checkpoint | None,
        starts: dict[tuple[TP, str], tuple[int, int]],
        tails: dict[tuple[str, int], Scan],
    ) -> PartitionState:
        keyed_topic, partition = tp
        published: dict[tuple[str, int], int] = {}
        ends: dict[str, int] = {}
        for (owner, out_topic), (out_partition, start) in starts.items():
            if owner != tp:
                continue
            tail = tails[(out_topic, out_partition)]
            ends[out_topic] = tail.end
            # The tail may start lower, for another keyed partition writing there.
            mine = [m for m in tail.records if m.offset() >= start]
            for key, seq in published_seqs(mine, keyed_topic, partition).items():
                published[key] = max(seq, published.get(key, -1))
        state = PartitionState.restore(self.catalog, keyed_topic, partition, ckpt, published)
        state.limit(*self.settings.partition_limits())
        for out_topic, end in ends.items():
            # This partition's later outputs all land after the end just read, so the next
            # successor need not scan below it even if this owner publishes nothing there.
            state.output_bounds[out_topic] = max(end, state.output_bounds.get(out_topic, 0))
        log.info(
            "%s[%d]: %s; outputs already published: %s",
            keyed_topic,
            partition,
            f"checkpoint at offset {ckpt.next_offset}" if ckpt else "no checkpoint",
            {f"{q}@{v}": s + 1 for (q, v), s in published.items()} or "none",
        )
        return state

    def _on_revoke(self, consumer: Consumer, partitions: list[KafkaTP]) -> None:
        self._member = consumer.memberid()
        if self._failure is None:
            try:
                # Bounded: the group waits for this callback.
                self._checkpoint(self.settings.revoke_timeout)
            except (KafkaException, CheckpointTimeout) as exc:
                log.error("checkpoint on revoke failed; the successor will replay: %s", exc)
        self._drop(partitions)
        if self._incremental:
            consumer.incremental_unassign(partitions)
        else:
            consumer.unassign()

    def _on_lost(self, consumer: Consumer, partitions: list[KafkaTP]) -> None:
        # Someone else may own them already: writing a checkpoint now could go back in time.
        self._member = consumer.memberid()
        self._drop(partitions)

    def _drop(self, partitions: list[KafkaTP]) -> None:
        for tp in partitions:
            key = (tp.topic, tp.partition)
            self.states.pop(key, None)
            self._pending.pop(key, None)
            self._suspect.pop(key, None)
            producer = self._txn.pop(key, None)
            if producer is not None:
                self._close_transactional(key, producer)
            if self._blocked.pop(key, None) is not None:
                # So that no pause outlives the assignment in the client, to leave the
                # partition silent if it came back to this worker.
                try:
                    self.consumer.resume([KafkaTP(tp.topic, tp.partition)])
                except KafkaException as exc:
                    log.debug("resume of %s[%d] on revoke: %s", tp.topic, tp.partition, exc)
            for k in [k for k in self._delivered if k[0] == key]:
                del self._delivered[k]
        self.metrics.assigned.set(len(self.states))
        self.metrics.blocked.set(len(self._blocked))

    def _close_transactional(self, tp: TP, producer: Producer) -> None:
        """Abort what the partition's transaction holds beyond its last checkpoint (the
        successor replays it); a fenced producer has nothing left to abort."""
        try:
            producer.abort_transaction(min(10.0, self.settings.revoke_timeout))
        except KafkaException as exc:
            log.info("%s[%d]: abort on release: %s", tp[0], tp[1], exc)
        producer.flush(0)
