"""``cerfleet coordinator``: route input records onto the keyed topic of each query group.

Routing is stateless: the routing table is a function of the registry, which
every coordinator reads from its topic, so any number of coordinators can
share the input partitions through their consumer group. A record is copied
to each group reading its topic, keyed by the group's PARTITION BY values, with
its timestamp and its value behind a head naming where it came from
(``fleet.keyed``); a record that is not a JSON object, or lacks a query's type
field, goes to the dead-letter topic instead.

Records are forwarded in event-time order across the assigned input partitions
(``time_merge``), so that a keyed partition's clock does not run ahead of a slower
input partition's records.

Offsets are committed only after the copies are acknowledged, and only past records
forwarded, so a crash or a rebalance re-routes some records rather than losing them;
the copies carry their input coordinates and workers drop the ones they have already
processed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import cast

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from prometheus_client import CollectorRegistry

from cerfleet.coordinator.fetched import Fetched, fetched_parts
from cerfleet.coordinator.input_sync import SyncedInput, consumer_lag, split_input
from cerfleet.coordinator.key_placement import Placements
from cerfleet.coordinator.metrics import RouterMetrics
from cerfleet.coordinator.partition_keys import tolerated_skew
from cerfleet.coordinator.rdf_routing import Extractor, extractor_for
from cerfleet.coordinator.time_merge import Run, TimeMerge
from cerfleet.fleet.batching import (
    ANY_PARTITION,
    BATCHED_PRODUCER,
    NO_TIMESTAMP,
    by_partition,
    drain,
    produce_waiting,
)
from cerfleet.fleet.commits import commit_with_retry
from cerfleet.fleet.groups import Group, groups_by_topic, groups_of
from cerfleet.fleet.keyed import (
    ERROR_HEADER,
    REGISTRY_HEADER,
    SRC_HEADER,
    STAGE_HEADER,
)
from cerfleet.fleet.registry import Registry
from cerfleet.fleet.registry import ensure_topic as ensure_registry_topic
from cerfleet.fleet.settings import CoordinatorSettings
from cerfleet.fleet.topics import ensure_topics

log = logging.getLogger(__name__)


def keyed_producer_config(settings: CoordinatorSettings) -> dict[str, str | bool]:
    """The producer settings of the keyed copies (the user's producer settings win).
    Only a failed copy is reported (it stops routing before a commit; ``flush`` still
    waits for every copy): a report per copy cost a message object and a Python call.
    The Python client wants a bool for that setting."""
    config: dict[str, str | bool] = {"delivery.report.only.error": True}
    # Same key → same partition as Java clients would choose.
    config.update(settings.producer_config(**BATCHED_PRODUCER, partitioner="murmur2_random"))
    return config


class Router:
    def __init__(
        self,
        settings: CoordinatorSettings,
        metrics: RouterMetrics | None = None,
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        self._limits = settings.record_limits()
        self.metrics = metrics or RouterMetrics(CollectorRegistry())
        self.on_ready = on_ready
        self.ready = False
        self._by_topic: dict[str, list[Group]] = {}
        self._subscribed: tuple[str, ...] = ()
        self._pending: dict[tuple[str, int], int] = {}  # next offset to commit, per input
        self._failure: KafkaError | None = None
        self._extractors: dict[str, Extractor] = {}  # per input topic, for its groups
        self._input: SyncedInput[Fetched] = SyncedInput(
            settings.merge_idle,
            max(settings.merge_buffer, 2 * settings.batch_size),
            lambda tp: consumer_lag(self._consumer, tp),
            settings.merge_end_wait,
        )
        self._placements = Placements()

    def run(self, stop: threading.Event) -> None:
        s = self.settings
        client = s.client_config()
        ensure_registry_topic(client, s.registry_topic, also={s.dead_letter_topic: 1})
        registry = Registry(client, s.registry_topic)
        registry.catch_up()
        self._producer = Producer(keyed_producer_config(s))
        self._consumer = Consumer(
            s.consumer_config(
                **{
                    "group.id": s.group_id,
                    "enable.auto.commit": "false",
                    "auto.offset.reset": "earliest",
                    # A partition read to its end holds no record back (``time_merge``).
                    # (The merge also pauses a partition that buffers too much and resumes
                    # it when the others catch up: with librdkafka's default 1 s backoff
                    # after a pause, routing over 4 input partitions ran at 100-143k
                    # records/s, 198-200k with the settings' 10 ms.)
                    "enable.partition.eof": "true",
                }
            )
        )
        try:
            self._update(registry)
            self.ready = True
            if self.on_ready is not None:
                self.on_ready()
            last_commit = time.monotonic()
            while not stop.is_set():
                if registry.poll(0):
                    self._update(registry)
                self._route_batch(registry.offset)
                if self._failure is not None:
                    raise KafkaException(self._failure)
                if time.monotonic() - last_commit >= s.commit_interval:
                    self._commit()
                    last_commit = time.monotonic()
                    self.metrics.watch(self._input, last_commit)
            self._commit()
        finally:
            self.ready = False
            self._consumer.close()
            self._producer.flush(30)
            registry.close()

    def _update(self, registry: Registry) -> None:
        """Rebuild the routing table after a registry change."""
        # Buffered records were extracted for the old table: forward them by it first.
        self._emit(self._input.merge.take(time.monotonic(), force=True))
        groups = groups_of(registry.current, self.settings.keyed_topic_prefix)
        keyed = {g.keyed_topic: self.settings.keyed_partitions for g in groups.values()}
        if keyed:
            ensure_topics(self.settings.client_config(), keyed)
        self._by_topic = groups_by_topic(groups)
        limits = self._limits
        self._extractors = {t: extractor_for(t, gs, limits) for t, gs in self._by_topic.items()}
        self._placements.cover(self._by_topic)
        self._set_slack()
        self.metrics.queries.set(len(registry.current))
        self.metrics.groups.set(len(groups))
        inputs = tuple(sorted(self._by_topic))
        if inputs != self._subscribed:
            if inputs:
                ensure_topics(self.settings.client_config(), dict.fromkeys(inputs, 1))
                self._commit()  # a resubscription may revoke partitions
                self._consumer.subscribe(
                    list(inputs), on_assign=self._on_assign, on_revoke=self._on_revoke
                )
            else:
                self._consumer.unsubscribe()
            self._subscribed = inputs
        self._input.cover(self._consumer.assignment(), self._merged)
        log.info(
            "routing %d queries in %d groups from %s (registry offset %d)",
            len(registry.current),
            len(groups),
            ", ".join(inputs) or "no topics",
            registry.offset,
        )

    def _route_batch(self, registry_offset: int) -> None:
        if not self._subscribed:
            time.sleep(0.2)  # nothing to read until a query is registered
            return
        merge = self._input.merge
        # Records held for a partition read to its end leave when its wait ends.
        wait = min(0.2, merge.end_wait_left(time.monotonic())) if merge.holding() else 0.2
        msgs = drain(self._consumer, self.settings.batch_size, wait)
        reg = str(registry_offset).encode()
        ended: set[tuple[str, int]] = set()  # read to its end after its last record here
        by_tp = by_partition(msgs)
        if by_tp is None:
            by_tp = split_input(msgs, ended)
        now = time.monotonic()
        by_topic: dict[str, list[tuple[int, list[Message]]]] = {}
        for (topic, partition), part in by_tp.items():
            by_topic.setdefault(topic, []).append((partition, part))
        for topic, parts in by_topic.items():
            for fetched in self._extract(topic, parts, reg):
                self._hold(fetched, merge, now)
        for tp in ended:
            merge.end(tp)
        self._emit(merge.take(now))
        if paused := self._input.throttle(self._consumer):
            self.metrics.merge_pauses.inc(paused)
        self._producer.poll(0)

    def _hold(self, fetched: Fetched, merge: TimeMerge[Fetched], now: float) -> None:
        """Hand ``fetched`` to the time merge, or forward it now when its topic has no clock."""
        tp = fetched.tp
        times = fetched.extracted.times
        if times is not None and tp in merge:
            if self._placements.see(fetched):
                self._set_slack()  # before the take that could forward these records
            merge.push(tp, fetched, times, now)
        else:
            self._emit([(tp, fetched, 0, len(fetched.msgs))])

    def _set_slack(self) -> None:
        spread = self._placements.spread
        self._input.merge.slack = {
            t: tolerated_skew(gs, spread) for t, gs in self._by_topic.items()
        }

    def _extract(
        self, topic: str, parts: list[tuple[int, list[Message]]], reg: bytes
    ) -> list[Fetched]:
        """The routing of the records of ``topic``'s partitions in ``parts``, extracted
        at once (``coordinator.fetched``). Nothing when no group reads the topic."""
        self.metrics.events_in.labels(topic).inc(sum(len(p) for _, p in parts))
        extractor = self._extractors.get(topic)
        if extractor is not None:
            return fetched_parts(topic, parts, extractor, reg)
        for partition, part in parts:
            self._pending[(topic, partition)] = cast("int", part[-1].offset()) + 1
        return []

    def _emit(self, runs: Sequence[Run[Fetched]]) -> None:
        """Copy the records of ``runs``, in order; values are copied, never re-encoded.
        Runs are short when the partitions' clocks interleave, so consecutive runs of one
        extractor are copied in one loop per group (copies to different keyed topics
        need no order between them)."""
        pending = self._pending
        for tp, fetched, _, stop in runs:
            pending[tp] = fetched.offsets[stop - 1] + 1
        a, n = 0, len(runs)
        while a < n:
            extractor = runs[a][1].extractor
            b = a + 1
            while b < n and runs[b][1].extractor is extractor:
                b += 1
            self._emit_segment(extractor, runs[a:b])
            a = b

    def _emit_segment(self, extractor: Extractor, runs: Sequence[Run[Fetched]]) -> None:
        produce = self._producer.produce
        delivered = self._delivered
        for g, group in enumerate(extractor.groups):
            routed = unkeyed = 0
            keyed_topic = group.keyed_topic
            for _, fetched, start, stop in runs:
                keys = fetched.extracted.keys[g]
                rejected = fetched.extracted.rejected
                values, offsets, stamps = fetched.values, fetched.offsets, fetched.stamps
                framed = fetched.framed
                for i in range(start, stop):
                    key = keys[i]
                    if isinstance(key, bytes):
                        ts_type, ts = stamps[i]
                        value = values[i]
                        headers: list[tuple[str, str | bytes | None]] | None = None
                        if value is None:  # no value to frame: headers (``fleet.keyed``)
                            headers = [(SRC_HEADER, fetched.src(i)), (REGISTRY_HEADER, fetched.reg)]
                        else:
                            value = framed % (offsets[i], value)
                        try:
                            # Positional only (``fleet.batching``): the routing's costliest call.
                            produce(
                                keyed_topic,
                                value,
                                key,
                                ANY_PARTITION,
                                delivered,
                                None,
                                ts if ts_type else NO_TIMESTAMP,
                                headers,
                            )
                        except BufferError:  # the local queue is full: the slow path waits
                            stamp = ts if ts_type else NO_TIMESTAMP
                            produce_waiting(
                                self._producer,
                                keyed_topic,
                                value,
                                key,
                                None,
                                delivered,
                                headers,
                                stamp,
                            )
                        routed += 1
                    elif key is None:
                        if i not in rejected:
                            unkeyed += 1
                    else:
                        self._dead_letter(
                            fetched.msgs[i],
                            fetched.src(i),
                            "no_type",
                            f"type field {key.field!r} missing or not a string",
                        )
            if routed:
                self.metrics.routed.labels(keyed_topic).inc(routed)
            if unkeyed:
                self.metrics.unkeyed.labels(keyed_topic).inc(unkeyed)
        for _, fetched, start, stop in runs:
            rejected = fetched.extracted.rejected
            for i, verdict in sorted(rejected.items()) if rejected else ():
                if start <= i < stop:
                    self._dead_letter(
                        fetched.msgs[i], fetched.src(i), verdict.reason, verdict.error
                    )

    def _merged(self, topic: str) -> bool:
        """Whether ``topic``'s records are merged in time order: its queries have a clock."""
        extractor = self._extractors.get(topic)
        return extractor is not None and extractor.clock is not None

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None and self._failure is None:
            # Committing past a lost copy would lose it for good: stop instead, and let
            # the restart re-route from the last commit.
            self._failure = err

    def _dead_letter(self, msg: Message, src: bytes, reason: str, error: str) -> None:
        self.metrics.dead_letters.labels("coordinator", reason).inc()
        headers: list[tuple[str, str | bytes | None]] = [
            (ERROR_HEADER, error.encode()),
            (SRC_HEADER, src),
            (STAGE_HEADER, b"coordinator"),
        ]
        # An oversized value would not fit the dead-letter topic either: headers only.
        value = None if reason == "too_large" else msg.value()
        topic = self.settings.dead_letter_topic
        produce_waiting(self._producer, topic, value, msg.key(), None, self._delivered, headers)

    def _commit(self, only: list[TopicPartition] | None = None) -> None:
        if not self._pending:
            return
        self._producer.flush(30)
        if self._failure is not None:
            raise KafkaException(self._failure)
        wanted = None if only is None else {(tp.topic, tp.partition) for tp in only}
        offsets = [
            TopicPartition(t, p, o)
            for (t, p), o in self._pending.items()
            if wanted is None or (t, p) in wanted
        ]
        if not offsets:
            return
        commit_with_retry(self._consumer, offsets)
        for tp in offsets:
            self._pending.pop((tp.topic, tp.partition), None)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._input.cover([*consumer.assignment(), *partitions], self._merged)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        try:
            self._commit(partitions)
        except KafkaException as exc:
            log.warning("commit on revoke failed (records will be routed again): %s", exc)
        revoked = [(tp.topic, tp.partition) for tp in partitions]
        self._input.revoke(consumer, revoked)
        for tp in revoked:
            self._pending.pop(tp, None)
