"""``cerfleet coordinator``: route input records onto the keyed topic of each query group.

Routing is stateless: the routing table is a function of the registry, which
every coordinator reads from its topic, so any number of coordinators can
share the input partitions through their consumer group. A record is copied
unchanged (value and timestamp) to each group reading its topic, keyed by
the group's PARTITION BY values; a record that is not a JSON object, or lacks
a query's type field, goes to the dead-letter topic instead.

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import orjson
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from prometheus_client import CollectorRegistry

from cerfleet.coordinator.metrics import RouterMetrics
from cerfleet.coordinator.partition_keys import Extracted, KeyExtractor, clock_of
from cerfleet.coordinator.time_merge import TimeMerge
from cerfleet.fleet.batching import BATCHED_PRODUCER, drain
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

_NO_PARTITION_KEY = b"[]"  # a query without PARTITION BY: one key, one keyed partition


@dataclass(slots=True)
class _Fetched:
    """One input partition's fetched records, with their routing extracted."""

    topic: str
    partition: int
    msgs: list[Message]
    values: list[bytes | None]
    offsets: list[int]
    extractor: KeyExtractor
    extracted: Extracted
    reg: bytes  # the registry offset of the routing table it was extracted for


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
        self._extractors: dict[str, KeyExtractor] = {}  # per input topic, for its groups
        self._merge: TimeMerge[_Fetched] = TimeMerge(settings.merge_idle)
        self._paused: set[tuple[str, int]] = set()
        # A partition buffering this many records is paused until half are forwarded.
        self._buffer_cap = 2 * settings.batch_size

    def run(self, stop: threading.Event) -> None:
        s = self.settings
        client = s.client_config()
        ensure_registry_topic(client, s.registry_topic, also={s.dead_letter_topic: 1})
        registry = Registry(client, s.registry_topic)
        registry.catch_up()
        self._producer = Producer(
            s.producer_config(
                **{
                    **BATCHED_PRODUCER,
                    # Same key → same partition as Java clients would choose.
                    "partitioner": "murmur2_random",
                }
            )
        )
        self._consumer = Consumer(
            s.consumer_config(
                **{
                    "group.id": s.group_id,
                    "enable.auto.commit": "false",
                    "auto.offset.reset": "earliest",
                    # A partition read to its end holds no record back (``time_merge``).
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
            self._commit()
        finally:
            self.ready = False
            self._consumer.close()
            self._producer.flush(30)
            registry.close()

    def _update(self, registry: Registry) -> None:
        """Rebuild the routing table after a registry change."""
        # Buffered records were extracted for the old table: forward them by it first.
        for run in self._merge.take(time.monotonic(), force=True):
            self._emit(*run)
        groups = groups_of(registry.current, self.settings.keyed_topic_prefix)
        keyed = {g.keyed_topic: self.settings.keyed_partitions for g in groups.values()}
        if keyed:
            ensure_topics(self.settings.client_config(), keyed)
        self._by_topic = groups_by_topic(groups)
        limits = self._limits
        self._extractors = {
            t: KeyExtractor(gs, limits, clock_of(gs)) for t, gs in self._by_topic.items()
        }
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
        self._merged_partitions(self._consumer.assignment())
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
        msgs = drain(self._consumer, self.settings.batch_size, 0.2)
        reg = str(registry_offset).encode()
        by_tp: dict[tuple[str, int], list[Message]] = {}
        ended: set[tuple[str, int]] = set()  # read to its end after its last record here
        for msg in msgs:
            tp = cast("tuple[str, int]", (msg.topic(), msg.partition()))
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    ended.add(tp)
                else:
                    log.warning("consume: %s", err)
                continue
            part = by_tp.get(tp)
            if part is None:
                part = by_tp[tp] = []
            part.append(msg)
            ended.discard(tp)
        now = time.monotonic()
        merge = self._merge
        for tp, part in by_tp.items():
            fetched = self._extract(tp[0], tp[1], part, reg)
            if fetched is None:
                continue
            times = fetched.extracted.times
            if times is not None and tp in merge:
                merge.push(tp, fetched, times, now)
            else:
                self._emit(tp, fetched, 0, len(part))
        for tp in ended:
            merge.end(tp)
        for run in merge.take(now):
            self._emit(*run)
        self._throttle()
        self._producer.poll(0)

    def _extract(
        self, topic: str, partition: int, msgs: list[Message], reg: bytes
    ) -> _Fetched | None:
        """The routing of records of one input partition: the PARTITION BY values and
        clocks of the whole batch are extracted at once. None: no group reads them."""
        offsets = cast("list[int]", [m.offset() for m in msgs])  # data records have offsets
        self.metrics.events_in.labels(topic).inc(len(msgs))
        extractor = self._extractors.get(topic)
        if extractor is None:
            self._pending[(topic, partition)] = offsets[-1] + 1
            return None
        values: list[bytes | None] = [m.value() for m in msgs]
        extracted = extractor.extract(values)
        return _Fetched(topic, partition, msgs, values, offsets, extractor, extracted, reg)

    def _emit(self, tp: tuple[str, int], fetched: _Fetched, start: int, stop: int) -> None:
        """Copy records ``start:stop`` of ``fetched``, in order; values are copied, never
        re-encoded."""
        topic, partition = tp
        msgs = fetched.msgs
        values = fetched.values
        offsets = fetched.offsets
        self._pending[tp] = offsets[stop - 1] + 1
        extractor = fetched.extractor
        rejected = fetched.extracted.rejected
        reg = fetched.reg
        # The input coordinates as ``encode_src`` writes them, without a call per record.
        prefix = b"[" + orjson.dumps(topic) + b",%d,%d]"
        produce = self._producer.produce
        delivered = self._delivered
        for group, all_keys in zip(extractor.groups, fetched.extracted.keys, strict=True):
            routed = unkeyed = 0
            keyed_topic = group.keyed_topic
            keys = all_keys[start:stop] if start or stop < len(all_keys) else all_keys
            for i, key in enumerate(keys, start):
                if isinstance(key, bytes):
                    ts_type, ts = msgs[i].timestamp()
                    headers: list[tuple[str, str | bytes | None]] = [
                        (SRC_HEADER, prefix % (partition, offsets[i])),
                        (REGISTRY_HEADER, reg),
                    ]
                    try:
                        if ts_type:
                            produce(
                                keyed_topic,
                                values[i],
                                key,
                                headers=headers,
                                timestamp=ts,
                                on_delivery=delivered,
                            )
                        else:
                            produce(
                                keyed_topic,
                                values[i],
                                key,
                                headers=headers,
                                on_delivery=delivered,
                            )
                    except BufferError:  # the local queue is full: the slow path waits
                        self._produce(keyed_topic, key, values[i], headers, ts if ts_type else None)
                    routed += 1
                elif key is None:
                    if i not in rejected:
                        unkeyed += 1
                else:
                    self._dead_letter(
                        msgs[i],
                        prefix % (partition, offsets[i]),
                        "no_type",
                        f"type field {key.field!r} missing or not a string",
                    )
            if routed:
                self.metrics.routed.labels(keyed_topic).inc(routed)
            if unkeyed:
                self.metrics.unkeyed.labels(keyed_topic).inc(unkeyed)
        for i, verdict in sorted(rejected.items()):
            if start <= i < stop:
                self._dead_letter(
                    msgs[i], prefix % (partition, offsets[i]), verdict.reason, verdict.error
                )

    def _throttle(self) -> None:
        """Pause a partition buffering too much (the merge waits for another), resume it
        once half is forwarded: librdkafka then fetches from the position after the
        records buffered, so pausing loses nothing."""
        cap = self._buffer_cap
        merge = self._merge
        for tp in merge.partitions():
            n = merge.buffered(tp)
            if n >= cap and tp not in self._paused:
                self._consumer.pause([TopicPartition(*tp)])
                self._paused.add(tp)
            elif n < cap // 2 and tp in self._paused:
                self._consumer.resume([TopicPartition(*tp)])
                self._paused.discard(tp)

    def _merged_partitions(self, assigned: list[TopicPartition]) -> None:
        """Make the merge cover exactly the assigned partitions of topics with a clock."""
        wanted = {
            (tp.topic, tp.partition)
            for tp in assigned
            if (x := self._extractors.get(tp.topic)) is not None and x.clock is not None
        }
        merge = self._merge
        merge.revoke([tp for tp in merge.partitions() if tp not in wanted])
        merge.assign(sorted(wanted), time.monotonic())

    def _produce(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, str | bytes | None]],
        timestamp: int | None,
    ) -> None:
        kwargs: dict[str, Any] = {"on_delivery": self._delivered, "headers": headers}
        if timestamp is not None:
            kwargs["timestamp"] = timestamp
        while True:
            try:
                self._producer.produce(topic, value=value, key=key, **kwargs)
                return
            except BufferError:  # the local queue is full: let deliveries drain it
                self._producer.poll(0.05)

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
        self._produce(self.settings.dead_letter_topic, msg.key(), value, headers, None)

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
        self._merged_partitions([*consumer.assignment(), *partitions])

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        try:
            self._commit(partitions)
        except KafkaException as exc:
            log.warning("commit on revoke failed (records will be routed again): %s", exc)
        revoked = [(tp.topic, tp.partition) for tp in partitions]
        # Buffered records were never forwarded nor committed: the next owner reads them.
        self._merge.revoke(revoked)
        paused = [TopicPartition(*tp) for tp in revoked if tp in self._paused]
        if paused:
            try:
                consumer.resume(paused)
            except KafkaException as exc:
                log.warning("resume on revoke: %s", exc)
            self._paused.difference_update(revoked)
        for tp in revoked:
            self._pending.pop(tp, None)
