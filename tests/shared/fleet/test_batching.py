"""``drain``: a batch is what has arrived, without waiting out the timeout for more; a
batch split per partition; the positional order the hot paths call
``Producer.produce`` in; and ``produce_waiting``, which waits for room in a full local
queue."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_CREATE_TIME,
    Consumer,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.fleet.batching import (
    ANY_PARTITION,
    BATCHED_PRODUCER,
    NO_TIMESTAMP,
    by_partition,
    drain,
    produce_waiting,
)
from tests.kafka_broker import KafkaBroker


def _reader(kafka: KafkaBroker, name: str) -> Consumer:
    """A consumer of its own group, from the start, polling fetches every 10 ms."""
    return Consumer(
        {
            **kafka.client_config(),
            "group.id": f"{name}-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": "false",
            "fetch.wait.max.ms": "10",
        }
    )


def test_drain_returns_what_has_arrived_at_once_and_waits_only_for_the_first(
    kafka: KafkaBroker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("drain")
    kafka.create_topic(topic, 1)
    producer = Producer({**kafka.client_config(), **BATCHED_PRODUCER})
    for i in range(50):
        producer.produce(topic, value=b"%d" % i)
    assert producer.flush(30) == 0
    consumer = _reader(kafka, "drain")
    try:
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < 50 and time.monotonic() < deadline:  # joined, and read all
            got += [m.value() for m in drain(consumer, 1000, 1.0) if m.error() is None]  # type: ignore[misc]
        assert got == [b"%d" % i for i in range(50)]
        # Records arriving now, far fewer than asked for, with a long first wait:
        # ``consume(1000, 5)`` would hold the call for the whole 5 s.
        for i in range(50, 70):
            producer.produce(topic, value=b"%d" % i)
        assert producer.flush(30) == 0
        more: list[bytes] = []
        while len(more) < 20 and time.monotonic() < deadline:
            started = time.monotonic()
            batch = drain(consumer, 1000, 5.0)
            assert batch and time.monotonic() - started < 2.5
            more += [m.value() for m in batch if m.error() is None]  # type: ignore[misc]
        assert more == [b"%d" % i for i in range(50, 70)]
        # Nothing more: one wait of at most first_wait, then an empty batch.
        started = time.monotonic()
        assert drain(consumer, 1000, 0.3) == []
        assert time.monotonic() - started < 2.5
    finally:
        consumer.close()


def test_positional_produce_sets_partition_callback_timestamp_and_headers(
    kafka: KafkaBroker, topic_name: Callable[[str], str]
) -> None:
    """The coordinator and the worker call ``produce`` positionally (``fleet.batching``):
    every argument must land where the keywords would have put it."""
    topic = topic_name("positional")
    kafka.create_topic(topic, 3)
    producer = Producer({**kafka.client_config(), **BATCHED_PRODUCER})
    reports: dict[bytes | None, tuple[bool, int]] = {}

    def delivered(err: object, msg: Message) -> None:
        reports[msg.value()] = (err is None, msg.partition())  # type: ignore[index]

    headers: list[tuple[str, str | bytes | None]] = [("a", b"1"), ("b", b"two")]
    before = time.time() * 1000
    producer.produce(topic, b"stamped", b"k", 2, delivered, None, 123_456, headers)
    producer.produce(topic, b"keyed", b"k", ANY_PARTITION, delivered, None, NO_TIMESTAMP, None)
    assert producer.flush(30) == 0
    assert reports[b"stamped"] == (True, 2)
    ok, chosen = reports[b"keyed"]
    assert ok and chosen in (0, 1, 2)
    consumer = _reader(kafka, "positional")
    try:
        consumer.subscribe([topic])
        got: dict[bytes, Message] = {}
        deadline = time.monotonic() + 60
        while len(got) < 2 and time.monotonic() < deadline:
            for m in drain(consumer, 10, 1.0):
                if m.error() is None:
                    got[m.value()] = m  # type: ignore[index]
        stamped, keyed = got[b"stamped"], got[b"keyed"]
        assert stamped.partition() == 2
        assert keyed.partition() == chosen
        assert stamped.key() == keyed.key() == b"k"
        assert stamped.timestamp() == (TIMESTAMP_CREATE_TIME, 123_456)
        assert stamped.headers() == headers
        # No timestamp given: the client stamps it now; no headers.
        kind, ms = keyed.timestamp()
        assert kind == TIMESTAMP_CREATE_TIME and ms >= before - 1000
        assert not keyed.headers()
    finally:
        consumer.close()


# ----------------------------------------------------------------- by_partition

# Runs of records of one partition, as the client queues them; partitions come back.
runs = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 3), st.integers(1, 5)), max_size=8
)


@settings(max_examples=300, deadline=None, database=None)
@given(runs, st.booleans())
def test_a_batch_is_split_per_partition_in_order(
    drawn: list[tuple[str, int, int]], one_topic: bool
) -> None:
    msgs: list[Message] = []
    want: dict[tuple[str, int], list[int]] = {}
    for topic, partition, length in drawn:
        topic = "a" if one_topic else topic
        for _ in range(length):
            offset = len(msgs)
            msgs.append(Message(topic=topic, partition=partition, offset=offset))
            want.setdefault((topic, partition), []).append(offset)
    parts = by_partition(msgs)
    if not msgs:
        assert parts is None
        return
    assert parts is not None
    assert {tp: [m.offset() for m in part] for tp, part in parts.items()} == want


def test_a_batch_with_an_error_is_left_to_the_caller() -> None:
    eof = Message(topic="a", partition=0, error=KafkaError(KafkaError._PARTITION_EOF))
    assert by_partition([Message(topic="a", partition=0, offset=0), eof]) is None


def test_produce_waiting_waits_for_room_in_a_full_queue(
    kafka: KafkaBroker, topic_name: Callable[[str], str]
) -> None:
    """A local queue of 3 records: plain ``produce`` refuses the 4th, ``produce_waiting``
    hands over all 200, in order, each to the partition asked for and with the timestamp
    given (the coordinator's keyed copies keep their input's)."""
    topic = topic_name("waiting")
    kafka.create_topic(topic, 2)
    producer = Producer({**kafka.client_config(), "queue.buffering.max.messages": "3"})
    reports: list[tuple[bool, int, bytes]] = []

    def delivered(err: KafkaError | None, msg: Message) -> None:
        reports.append((err is None, msg.partition(), msg.value()))  # type: ignore[arg-type]

    refused = 0
    for _ in range(4):
        try:
            producer.produce(topic, b"plain", None, 0, delivered, None, NO_TIMESTAMP, None)
        except BufferError:
            refused += 1
    assert refused >= 1
    assert producer.flush(30) == 0
    reports.clear()
    for i in range(200):
        value = str(i).encode()
        produce_waiting(producer, topic, value, None, 1, delivered, [("n", b"1")], 1_000 + i)
    assert producer.flush(30) == 0
    assert reports == [(True, 1, str(i).encode()) for i in range(200)]
    # Read back: a delivery report carries the mock broker's own timestamp, not the record's.
    consumer = _reader(kafka, "waiting")
    try:
        consumer.assign([TopicPartition(topic, 1, OFFSET_BEGINNING)])
        got: dict[bytes, int] = {}
        deadline = time.monotonic() + 60
        while len(got) < 200 and time.monotonic() < deadline:
            for m in drain(consumer, 1000, 1.0):
                if m.error() is None:
                    got[m.value()] = m.timestamp()[1]  # type: ignore[index]
        assert got == {str(i).encode(): 1_000 + i for i in range(200)}
    finally:
        consumer.close()
