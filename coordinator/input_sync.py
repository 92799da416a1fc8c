"""The coordinator's time merge of its assigned input partitions, kept in step with the
consumer: which partitions it covers, and which are paused to bound what it buffers; and
a consumed batch read per input partition."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Generic, TypeVar, cast

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from cerfleet.coordinator.time_merge import TimeMerge
from cerfleet.fleet.batching import by_partition

__all__ = ["SyncedInput", "consumer_lag", "split_input"]

log = logging.getLogger(__name__)

T = TypeVar("T")

WARN_AFTER = 30.0  # seconds an input partition holds the others back before a warning


class SyncedInput(Generic[T]):
    """A ``TimeMerge`` over the assigned partitions whose topic has a clock."""

    def __init__(
        self,
        idle: float,
        cap: int,
        lag: Callable[[tuple[str, int]], int | None] | None = None,
        end_wait: float = 0.0,
    ) -> None:
        self.merge: TimeMerge[T] = TimeMerge(idle, lag, end_wait)
        self.cap = cap  # a partition buffering this many records is paused until half go
        self._paused: set[tuple[str, int]] = set()
        self._waiting_since: dict[tuple[str, int], float] = {}
        self._warned = float("-inf")

    def watch(self, now: float) -> tuple[int, list[tuple[str, int]]]:
        """Records buffered, and the partitions holding them back; warns (at most every
        ``WARN_AFTER`` seconds) while one has held them back that long: a partition with
        records left on the broker is waited for however long it takes to fetch them,
        and one whose leader is unreachable stops the routing of the others."""
        merge = self.merge
        waiting = merge.waiting(now)
        since = self._waiting_since
        for tp in [tp for tp in since if tp not in waiting]:
            del since[tp]
        late = [tp for tp in waiting if now - since.setdefault(tp, now) >= WARN_AFTER]
        if late and now - self._warned >= WARN_AFTER:
            self._warned = now
            lags = [None if merge.lag is None else merge.lag(tp) for tp in late]
            named = ", ".join(
                f"{t}[{p}] (lag {'unknown' if lag is None else lag})"
                for (t, p), lag in zip(late, lags, strict=True)
            )
            log.warning(
                "time merge: input partitions empty for %.0f s or more hold back the "
                "others' records: %s",
                WARN_AFTER,
                named,
            )
        return sum(merge.buffered(tp) for tp in merge.partitions()), waiting

    def cover(self, assigned: list[TopicPartition], merged: Callable[[str], bool]) -> None:
        """Make the merge cover exactly the ``assigned`` partitions of ``merged`` topics."""
        wanted = {(tp.topic, tp.partition) for tp in assigned if merged(tp.topic)}
        merge = self.merge
        merge.revoke([tp for tp in merge.partitions() if tp not in wanted])
        merge.assign(sorted(wanted), time.monotonic())

    def throttle(self, consumer: Consumer) -> int:
        """Pause a partition buffering too much (the merge waits for another), resume it
        once half is forwarded: librdkafka then fetches from the position after the
        records buffered, so pausing loses nothing (it drops what it had prefetched of
        the partition, and fetches it again). Returns the partitions paused now."""
        cap = self.cap
        merge = self.merge
        paused = 0
        for tp in merge.partitions():
            n = merge.buffered(tp)
            if n >= cap and tp not in self._paused:
                consumer.pause([TopicPartition(*tp)])
                self._paused.add(tp)
                paused += 1
            elif n < cap // 2 and tp in self._paused:
                consumer.resume([TopicPartition(*tp)])
                self._paused.discard(tp)
        return paused

    def revoke(self, consumer: Consumer, revoked: list[tuple[str, int]]) -> None:
        """Forget what is buffered of ``revoked``: never forwarded nor committed, it is
        read again by the partitions' next owner."""
        self.merge.revoke(revoked)
        paused = [TopicPartition(*tp) for tp in revoked if tp in self._paused]
        if paused:
            try:
                consumer.resume(paused)
            except KafkaException as exc:
                log.warning("resume on revoke: %s", exc)
            self._paused.difference_update(revoked)


def consumer_lag(consumer: Consumer, tp: tuple[str, int]) -> int | None:
    """Records of ``tp`` on the broker past what ``consumer`` handed out, by the high
    watermark of its last fetch response (cached: no ListOffsets request, which some
    brokers answer wrongly); None before its first fetch of ``tp`` or first record."""
    part = TopicPartition(*tp)
    try:
        marks = consumer.get_watermark_offsets(part, cached=True)
        [position] = consumer.position([part])
    except KafkaException:
        return None
    if marks is None or marks[1] < 0 or position.offset < 0:
        return None
    return max(0, marks[1] - position.offset)


def split_input(
    msgs: list[Message], ended: set[tuple[str, int]]
) -> dict[tuple[str, int], list[Message]]:
    """The records of a batch with errors or events among them, per partition (a batch
    without is split by ``fleet.batching.by_partition``); adds to ``ended`` the
    partitions read to their end after their last record here.

    With partition ends reported, a drain under a paced load holds an end event nearly
    every time: the records between events are split in C (``by_partition``), not one
    by one."""
    by_tp: dict[tuple[str, int], list[Message]] = {}
    events = [i for i, err in enumerate(map(Message.error, msgs)) if err is not None]
    start = 0
    for stop in [*events, len(msgs)]:
        runs = by_partition(msgs[start:stop]) if stop > start else None
        for tp, run in (runs or {}).items():
            part = by_tp.get(tp)
            if part is None:
                by_tp[tp] = run
            else:
                part += run
            ended.discard(tp)
        if stop < len(msgs):
            msg = msgs[stop]
            err = cast("KafkaError", msg.error())
            if err.code() == KafkaError._PARTITION_EOF:
                ended.add(cast("tuple[str, int]", (msg.topic(), msg.partition())))
            else:
                log.warning("consume: %s", err)
        start = stop + 1
    return by_tp
