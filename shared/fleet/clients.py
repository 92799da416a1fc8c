"""``cerfleet produce`` and ``cerfleet consume``: files in and out of topics."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterable
from typing import IO, Any

import orjson
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from cerfleet.errors import CerfleetError
from cerfleet.fleet.batching import produce_waiting
from cerfleet.fleet.keyed import header_items
from cerfleet.fleet.origins import Repeats
from cerfleet.fleet.settings import FleetSettings
from cerfleet.fleet.topics import ensure_topics


def produce_lines(
    settings: FleetSettings, lines: Iterable[bytes], topic: str, key_field: str | None
) -> int:
    """Publish each non-blank line as one record, byte for byte (malformed lines too: the
    fleet's dead-letter handling is what should see them)."""
    ensure_topics(settings.client_config(), {topic: 1}, timeout=settings.timeout)
    producer = Producer(
        settings.producer_config(
            **{
                "enable.idempotence": "true",
                # Batched and compressed: brokers (and the mock's 5 MiB cap) like it.
                "linger.ms": "5",
                "batch.num.messages": "10000",
                "compression.type": "lz4",
            }
        )
    )
    failures: list[KafkaError] = []

    def delivered(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            failures.append(err)

    n = 0
    for raw in lines:
        line = raw.rstrip(b"\r\n")
        if not line.strip():
            continue
        key = None
        if key_field is not None:
            try:
                event = orjson.loads(line)
                value = event.get(key_field) if isinstance(event, dict) else None
                key = None if value is None else str(value).encode()
            except orjson.JSONDecodeError:
                key = None
        produce_waiting(producer, topic, line, key, None, delivered, None)
        n += 1
        if n % 10_000 == 0:
            producer.poll(0)
    if producer.flush(60) > 0:
        raise CerfleetError(f"{topic}: records still undelivered after 60 s")
    if failures:
        raise CerfleetError(f"{topic}: {len(failures)} records failed: {failures[0]}")
    return n


def consume_topic(
    settings: FleetSettings,
    topic: str,
    out: IO[str],
    max_records: int | None,
    idle_timeout: float | None,
    with_headers: bool,
    repeats: Repeats | None = None,
) -> int:
    """Print ``topic`` from its beginning (all partitions, no consumer group), one record per
    line, until ``max_records``, ``idle_timeout`` seconds without a record (None: wait for
    more until Ctrl-C) or Ctrl-C. With ``repeats``, a complex-event record whose origin
    was printed before is skipped (and counted there)."""
    consumer = Consumer(
        settings.consumer_config(**{"group.id": "cerfleet-consume", "enable.auto.commit": "false"})
    )
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    previous = signal.signal(signal.SIGINT, on_signal)
    n = 0
    try:
        try:
            meta = consumer.list_topics(topic, timeout=settings.timeout).topics.get(topic)
        except KafkaException as exc:
            servers = settings.bootstrap_servers
            raise CerfleetError(f"cannot read topic metadata from {servers}: {exc}") from exc
        if meta is None or meta.error is not None or not meta.partitions:
            raise CerfleetError(f"topic {topic!r} not found")
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in meta.partitions])
        last = time.monotonic()
        while not stop and (max_records is None or n < max_records):
            msgs = consumer.consume(1000, 0.2)
            if not msgs:
                if idle_timeout is not None and time.monotonic() - last > idle_timeout:
                    break
                continue
            last = time.monotonic()
            for msg in msgs:
                if msg.error() is not None:
                    continue
                if repeats is not None and repeats.repeat(msg.partition() or 0, header_items(msg)):
                    continue
                value = msg.value() or b""
                key = msg.key()
                if with_headers:
                    doc = {
                        "partition": msg.partition(),
                        "offset": msg.offset(),
                        "key": None if key is None else key.decode("utf-8", "replace"),
                        "headers": {
                            k: None if v is None else v.decode("utf-8", "replace")
                            for k, v in header_items(msg)
                        },
                        "value": value.decode("utf-8", "replace"),
                    }
                    out.write(orjson.dumps(doc).decode() + "\n")
                else:
                    out.write(value.decode("utf-8", "replace") + "\n")
                n += 1
                if max_records is not None and n >= max_records:
                    break
            out.flush()
    finally:
        signal.signal(signal.SIGINT, previous)
        consumer.close()
    return n
