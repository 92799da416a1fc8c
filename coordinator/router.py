"""``cerfleet coordinator``: route input records onto the keyed topic of each query group.

Routing is stateless: the routing table is a function of the registry, which
every coordinator reads from its topic, so any number of coordinators can
share the input partitions through their consumer group. A record is copied
unchanged (value and timestamp) to each group reading its topic, keyed by
the group's PARTITION BY values; a record that is not a JSON object, or lacks
a query's type field, goes to the dead-letter topic instead.

Offsets are committed only after the copies are acknowledged, so a crash
re-routes some records rather than losing them; the copies carry their input
coordinates and workers drop the ones they have already processed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, cast

import orjson
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from prometheus_client import CollectorRegistry, Counter, Gauge

from cerfleet.coordinator.partition_keys import KeyExtractor
from cerfleet.fleet.batching import BATCHED_PRODUCER, drain
from cerfleet.fleet.commits import commit_with_retry
from cerfleet.fleet.groups import Group, groups_by_topic, groups_of
from cerfleet.fleet.keyed import (
    ERROR_HEADER,
    REGISTRY_HEADER,
    SRC_HEADER,
    STAGE_HEADER,
)
from cerfleet.fleet.observability import dead_letters_counter
from cerfleet.fleet.registry import Registry
from cerfleet.fleet.registry import ensure_topic as ensure_registry_topic
from cerfleet.fleet.settings import CoordinatorSettings
from cerfleet.fleet.topics import ensure_topics

log = logging.getLogger(__name__)

_NO_PARTITION_KEY = b"[]"  # a query without PARTITION BY: one key, one keyed partition


class RouterMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.events_in = Counter(
            "cerfleet_coordinator_events_in", "Input records read", ["topic"], registry=registry
        )
        self.routed = Counter(
            "cerfleet_coordinator_routed",
            "Records copied to a keyed topic",
            ["keyed_topic"],
            registry=registry,
        )
        self.unkeyed = Counter(
            "cerfleet_coordinator_unkeyed",
            "Records skipped for a group because a PARTITION BY attribute was missing",
            ["keyed_topic"],
            registry=registry,
        )
        self.dead_letters = dead_letters_counter(registry)
        self.queries = Gauge("cerfleet_queries", "Registered queries", registry=registry)
        self.groups = Gauge("cerfleet_groups", "Query groups (keyed topics)", registry=registry)


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
        groups = groups_of(registry.current, self.settings.keyed_topic_prefix)
        keyed = {g.keyed_topic: self.settings.keyed_partitions for g in groups.values()}
        if keyed:
            ensure_topics(self.settings.client_config(), keyed)
        self._by_topic = groups_by_topic(groups)
        self._extractors = {}
        self.metrics.queries.set(len(registry.current))
        self.metrics.groups.set(len(groups))
        inputs = tuple(sorted(self._by_topic))
        if inputs != self._subscribed:
            if inputs:
                ensure_topics(self.settings.client_config(), dict.fromkeys(inputs, 1))
                self._commit()  # a resubscription may revoke partitions
                self._consumer.subscribe(list(inputs), on_revoke=self._on_revoke)
            else:
                self._consumer.unsubscribe()
            self._subscribed = inputs
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
        for msg in msgs:
            err = msg.error()
            if err is not None:
                if err.code() != KafkaError._PARTITION_EOF:
                    log.warning("consume: %s", err)
                continue
            tp = (msg.topic(), msg.partition())
            part = by_tp.get(tp)  # type: ignore[arg-type]
            if part is None:
                part = by_tp[tp] = []  # type: ignore[index]
            part.append(msg)
        for (topic, partition), part in by_tp.items():
            self._route_part(topic, partition, part, reg)
        self._producer.poll(0)

    def _route_part(self, topic: str, partition: int, msgs: list[Message], reg: bytes) -> None:
        """Route records of one input partition, in order: the PARTITION BY values of
        the whole batch are extracted at once; values are copied, never re-encoded."""
        offsets = cast("list[int]", [m.offset() for m in msgs])  # data records have offsets
        self._pending[(topic, partition)] = offsets[-1] + 1
        self.metrics.events_in.labels(topic).inc(len(msgs))
        groups = self._by_topic.get(topic)
        if not groups:
            return
        extractor = self._extractors.get(topic)
        if extractor is None:
            extractor = self._extractors[topic] = KeyExtractor(groups, self._limits)
        values: list[bytes | None] = [m.value() for m in msgs]
        extracted = extractor.extract(values)
        rejected = extracted.rejected
        # The input coordinates as ``encode_src`` writes them, without a call per record.
        prefix = b"[" + orjson.dumps(topic) + b",%d,%d]"
        srcs = [prefix % (partition, o) for o in offsets]
        stamps = [m.timestamp() for m in msgs]
        produce = self._producer.produce
        delivered = self._delivered
        for group, keys in zip(extractor.groups, extracted.keys, strict=True):
            routed = unkeyed = 0
            keyed_topic = group.keyed_topic
            for i, key in enumerate(keys):
                if isinstance(key, bytes):
                    ts_type, ts = stamps[i]
                    headers: list[tuple[str, str | bytes | None]] = [
                        (SRC_HEADER, srcs[i]),
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
                        srcs[i],
                        "no_type",
                        f"type field {key.field!r} missing or not a string",
                    )
            if routed:
                self.metrics.routed.labels(keyed_topic).inc(routed)
            if unkeyed:
                self.metrics.unkeyed.labels(keyed_topic).inc(unkeyed)
        for i, verdict in sorted(rejected.items()):
            self._dead_letter(msgs[i], srcs[i], verdict.reason, verdict.error)

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

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        try:
            self._commit(partitions)
        except KafkaException as exc:
            log.warning("commit on revoke failed (records will be routed again): %s", exc)
        for tp in partitions:
            self._pending.pop((tp.topic, tp.partition), None)
