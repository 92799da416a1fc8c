"""A consumed batch with errors or events among its records, read per input partition;
and what the broker holds of a partition past the records handed out."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.coordinator.input_sync import SyncedInput, consumer_lag, split_input
from tests.kafka_broker import KafkaBroker


def _record(partition: int, offset: int) -> Message:
    return Message(topic="in", partition=partition, offset=offset, value=b"{}")


def _event(partition: int, code: int) -> Message:
    return Message(topic="in", partition=partition, error=KafkaError(code))


def test_a_partition_read_to_its_end_after_its_last_record_has_ended() -> None:
    eof = KafkaError._PARTITION_EOF
    msgs = [_record(0, 5), _event(1, eof), _record(1, 7), _record(0, 6), _event(0, eof)]
    ended: set[tuple[str, int]] = set()
    parts = split_input(msgs, ended)
    assert {tp: [m.offset() for m in part] for tp, part in parts.items()} == {
        ("in", 0): [5, 6],
        ("in", 1): [7],
    }
    assert ended == {("in", 0)}  # partition 1 got a record after its end


def _one_by_one(
    msgs: list[Message], ended: set[tuple[str, int]]
) -> dict[tuple[str, int], list[Message]]:
    """The rule read a record at a time."""
    by_tp: dict[tuple[str, int], list[Message]] = {}
    for msg in msgs:
        tp = (msg.topic(), msg.partition())
        err = msg.error()
        if err is None:
            by_tp.setdefault(tp, []).append(msg)  # type: ignore[arg-type]
            ended.discard(tp)  # type: ignore[arg-type]
        elif err.code() == KafkaError._PARTITION_EOF:
            ended.add(tp)  # type: ignore[arg-type]
    return by_tp


_items = st.tuples(
    st.sampled_from(["in", "other"]),
    st.integers(0, 2),
    st.sampled_from([None, KafkaError._PARTITION_EOF, KafkaError._TRANSPORT]),
)


@settings(max_examples=500, deadline=None, database=None)
@given(st.lists(_items, max_size=16))
def test_a_batch_splits_as_read_a_record_at_a_time(
    items: list[tuple[str, int, int | None]],
) -> None:
    msgs = [
        Message(topic=t, partition=p, offset=i, value=b"{}")
        if code is None
        else Message(topic=t, partition=p, error=KafkaError(code))
        for i, (t, p, code) in enumerate(items)
    ]
    ended: set[tuple[str, int]] = set()
    want_ended: set[tuple[str, int]] = set()
    got = split_input(msgs, ended)
    want = _one_by_one(msgs, want_ended)
    assert {tp: [m.offset() for m in part] for tp, part in got.items()} == {
        tp: [m.offset() for m in part] for tp, part in want.items()
    }
    assert ended == want_ended


def test_other_errors_are_skipped() -> None:
    msgs = [_event(0, KafkaError._TRANSPORT), _record(0, 1)]
    ended: set[tuple[str, int]] = set()
    parts = split_input(msgs, ended)
    assert {tp: [m.offset() for m in part] for tp, part in parts.items()} == {("in", 0): [1]}
    assert ended == set()


def test_consumer_lag_counts_what_the_broker_holds_past_the_records_handed_out(
    kafka: KafkaBroker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("lag")
    kafka.create_topic(topic, 1)
    producer = Producer(kafka.client_config())
    for i in range(300):
        producer.produce(topic, value=b"%d" % i, partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            **kafka.client_config(),
            "group.id": topic,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": "true",
            "fetch.wait.max.ms": "10",
        }
    )
    tp = (topic, 0)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        assert consumer_lag(consumer, tp) is None  # nothing fetched yet: unknown
        got, lags, ended = 0, [], False
        deadline = time.monotonic() + 60
        while not ended and time.monotonic() < deadline:
            for msg in consumer.consume(100, 1.0):
                if msg.error() is None:
                    got += 1
                else:
                    ended = msg.error().code() == KafkaError._PARTITION_EOF
            if got:
                lags.append((got, consumer_lag(consumer, tp)))
        assert ended and got == 300
        # Once a record is handed out, the fetched high watermark tells what is left.
        assert all(lag == 300 - n for n, lag in lags)
        assert lags[-1] == (300, 0)
    finally:
        consumer.close()


def test_watch_reports_what_waits_and_warns_once_a_partition_held_it_long(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lags: dict[tuple[str, int], int | None] = {("in", 1): None}
    synced: SyncedInput[list[int]] = SyncedInput(2.0, 100, lags.get)
    a, b = ("in", 0), ("in", 1)
    synced.merge.assign([a, b], now=0.0)
    assert synced.watch(0.0) == (0, [])  # nothing buffered: nothing waits
    synced.merge.push(a, [0, 1], [1.0, 2.0], now=1.0)
    with caplog.at_level(logging.WARNING, logger="cerfleet.coordinator.input_sync"):
        assert synced.watch(1.0) == (2, [b])
        assert synced.watch(30.0) == (2, [b]) and not caplog.records  # held 29 s
        assert synced.watch(31.0) == (2, [b])
        assert [r.getMessage() for r in caplog.records] == [
            "time merge: input partitions empty for 30 s or more hold back the others' "
            "records: in[1] (lag unknown)"
        ]
        lags[b] = 5
        assert synced.watch(40.0) == (2, [b]) and len(caplog.records) == 1  # not again yet
        assert synced.watch(61.0) == (2, [b]) and "in[1] (lag 5)" in caplog.records[-1].getMessage()
        lags[b] = 0  # caught up: idle, the records leave
        assert synced.merge.take(62.0) == [(a, [0, 1], 0, 2)]
        assert synced.watch(62.0) == (0, [])
