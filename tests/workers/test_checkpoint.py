"""Checkpoints: the binary form, corrupt data, chunking, and finding the latest complete one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.errors import SnapshotError
from cerfleet.workers import checkpoint as checkpoint_module
from cerfleet.workers.checkpoint import (
    CHUNK_HEADER,
    CHUNK_SIZE,
    MAGIC,
    Checkpoint,
    QueryCheckpoint,
    _latest_complete,
    checkpoint_key,
    read_checkpoint,
    read_checkpoints,
    write_checkpoint,
)
from cerfleet.workers.scans import scan, scan_many
from tests.kafka_broker import KafkaBroker

names = st.text(min_size=1, max_size=20)
offsets = st.integers(0, 2**62)

query_checkpoints = st.builds(
    QueryCheckpoint,
    version=offsets,
    fingerprint=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    emitted=offsets,
    snapshot=st.binary(max_size=200),
)
checkpoints = st.builds(
    Checkpoint,
    keyed_topic=names,
    partition=st.integers(0, 10_000),
    next_offset=offsets,
    sources=st.dictionaries(names, offsets, max_size=4),
    queries=st.dictionaries(names, query_checkpoints, max_size=4),
    retired=st.lists(st.tuples(names, offsets), max_size=4).map(sorted),
    output_bounds=st.dictionaries(names, offsets, max_size=4),
    registry_seen=offsets,
)


@settings(max_examples=100, deadline=None, database=None)
@given(ckpt=checkpoints)
def test_encode_decode_round_trip(ckpt: Checkpoint) -> None:
    data = ckpt.encode()
    assert data.startswith(MAGIC)
    assert Checkpoint.decode(data) == ckpt
    assert Checkpoint.decode(data).encode() == data


def sample() -> Checkpoint:
    return Checkpoint(
        "cerfleet.keyed.k.0123456789ab",
        3,
        42,
        {"in:0": 41},
        {
            "q1": QueryCheckpoint(5, "f" * 64, 7, b"\x00snapshot-one"),
            "q2": QueryCheckpoint(6, "e" * 64, 0, b""),
            "q3": QueryCheckpoint(9, "d" * 64, 1, b"three" * 10),
        },
        [("old", 2)],
        {"out": 100},
    )


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"garbage",
        MAGIC,
        MAGIC + b"\x00\x00",
        b"CFCK0" + sample().encode()[len(MAGIC) :],  # another version's magic
        sample().encode() + b"trailing",
    ],
    ids=["empty", "garbage", "magic-only", "short-length", "other-magic", "trailing"],
)
def test_garbage_is_a_snapshot_error(data: bytes) -> None:
    with pytest.raises(SnapshotError):
        Checkpoint.decode(data)


def test_a_checkpoint_truncated_in_its_snapshots_is_a_snapshot_error() -> None:
    data = sample().encode()
    header_end = len(MAGIC) + 4 + int.from_bytes(data[len(MAGIC) : len(MAGIC) + 4], "big")
    assert header_end < len(data)
    for cut in range(header_end, len(data)):
        with pytest.raises(SnapshotError):
            Checkpoint.decode(data[:cut])


@pytest.mark.parametrize(
    "data",
    [
        sample().encode()[: len(MAGIC) + 10],  # cut inside the header
        MAGIC + b"\x00\x00\x00\x02{}",  # a header without the fields
        MAGIC + b"\x00\x00\x00\x02[]",  # a header that is not an object
        MAGIC + b"\x00\x00\x00\x01\xff",  # not UTF-8
    ],
    ids=["cut-in-header", "no-fields", "not-an-object", "not-utf8"],
)
def test_a_corrupt_header_is_a_snapshot_error(data: bytes) -> None:
    with pytest.raises(SnapshotError):
        Checkpoint.decode(data)


def test_a_checkpoint_without_registry_seen_still_decodes() -> None:
    # Written before the field existed: its header lacks it.
    old = sample()
    data = old.encode()
    size = int.from_bytes(data[len(MAGIC) : len(MAGIC) + 4], "big")
    header = orjson.loads(data[len(MAGIC) + 4 : len(MAGIC) + 4 + size])
    del header["registry_seen"]
    head = orjson.dumps(header)
    rest = data[len(MAGIC) + 4 + size :]
    decoded = Checkpoint.decode(MAGIC + len(head).to_bytes(4, "big") + head + rest)
    assert decoded == old and decoded.registry_seen == 0


# ----------------------------------------------------------------- _latest_complete

KEY = checkpoint_key("t", 0)
OTHER = checkpoint_key("t", 1)


def chunks(
    cid: str, data: bytes, n: int, key: bytes | None = KEY
) -> list[tuple[bytes | None, bytes, bytes]]:
    size = -(-len(data) // n) or 1
    parts = [data[i * size : (i + 1) * size] for i in range(n)]
    return [(key, f"{cid}:{i}:{n}".encode(), part) for i, part in enumerate(parts)]


def test_latest_complete_takes_the_newest_complete_checkpoint() -> None:
    records = [
        *chunks("a", b"first checkpoint", 1),
        *chunks("b", b"second checkpoint", 3),
        *chunks("x", b"another partition's", 2, key=OTHER),
        *chunks("c", b"third checkpoint", 2),
    ]
    assert _latest_complete(records, KEY) == b"third checkpoint"
    assert _latest_complete(records, OTHER) == b"another partition's"


def test_latest_complete_ignores_a_trailing_incomplete_checkpoint() -> None:
    # A crash while writing "c": only its first chunks made it.
    records = [
        *chunks("a", b"first checkpoint", 2),
        *chunks("b", b"second checkpoint", 3),
        *chunks("c", b"third checkpoint", 4)[:3],
        *chunks("x", b"other key, newer", 1, key=OTHER),
    ]
    assert _latest_complete(records, KEY) == b"second checkpoint"


def test_latest_complete_without_a_complete_checkpoint() -> None:
    assert _latest_complete([], KEY) is None
    assert _latest_complete(chunks("c", b"partial", 3)[1:], KEY) is None
    assert _latest_complete(chunks("x", b"not ours", 1, key=OTHER), KEY) is None
    assert _latest_complete(chunks("y", b"no key", 1, key=None), KEY) is None


# ----------------------------------------------------------------- write_checkpoint


class FakeProducer:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def produce(self, topic: str, **kwargs: Any) -> None:
        self.calls.append((topic, kwargs))


def written(producer: FakeProducer) -> list[tuple[bytes | None, bytes, bytes]]:
    out = []
    for _, kw in producer.calls:
        (name, header), *rest = kw["headers"]
        assert name == CHUNK_HEADER and rest == []
        out.append((kw["key"], header, kw["value"]))
    return out


def test_a_large_checkpoint_is_written_in_chunks() -> None:
    big = Checkpoint(
        "keyed", 5, 10, queries={"q": QueryCheckpoint(1, "f", 2, bytes(range(256)) * 9000)}
    )
    data = big.encode()
    assert len(data) > 2 * CHUNK_SIZE
    producer = FakeProducer()
    delivered = object()
    size = write_checkpoint(producer, "ckpts", 4, big, delivered)  # type: ignore[arg-type]
    assert size == len(data)
    n = -(-len(data) // CHUNK_SIZE)
    assert len(producer.calls) == n == 3
    records = written(producer)
    headers = [h.decode().split(":") for _, h, _ in records]
    assert len({cid for cid, _, _ in headers}) == 1
    assert [(int(i), int(c)) for _, i, c in headers] == [(i, n) for i in range(n)]
    for topic, kw in producer.calls:
        assert topic == "ckpts"
        assert kw["key"] == checkpoint_key("keyed", 5)
        assert kw["partition"] == 5 % 4
        assert kw["on_delivery"] is delivered
        assert len(kw["value"]) <= CHUNK_SIZE
    found = _latest_complete(records, checkpoint_key("keyed", 5))
    assert found == data
    assert Checkpoint.decode(found) == big


def test_a_small_checkpoint_is_one_record() -> None:
    producer = FakeProducer()
    write_checkpoint(producer, "ckpts", 8, sample(), None)  # type: ignore[arg-type]
    ((_, kw),) = producer.calls
    assert kw["headers"][0][1].decode().endswith(":0:1")
    assert kw["value"] == sample().encode()


def test_successive_checkpoints_get_distinct_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint_module, "CHUNK_SIZE", 16)
    producer = FakeProducer()
    first, second = sample(), sample()
    second.next_offset = 99
    write_checkpoint(producer, "ckpts", 1, first, None)  # type: ignore[arg-type]
    write_checkpoint(producer, "ckpts", 1, second, None)  # type: ignore[arg-type]
    records = written(producer)
    assert len({h.split(b":")[0] for _, h, _ in records}) == 2
    assert Checkpoint.decode(_latest_complete(records, KEY_OF_SAMPLE) or b"").next_offset == 99
    # A crash in the middle of the second one: the first is found.
    half = len(records) - 2
    assert Checkpoint.decode(_latest_complete(records[:half], KEY_OF_SAMPLE) or b"") == first


KEY_OF_SAMPLE = checkpoint_key(sample().keyed_topic, sample().partition)


# ------------------------------------------------- reading back from a broker


class LyingScanner(Consumer):
    """A scanner whose ListOffsets answers ``high`` as the end, as some brokers do (tansu
    answers a batch's base offset + 1, or 0 while a transaction is open)."""

    high: int | None = None

    def get_watermark_offsets(self, *args: Any, **kwargs: Any) -> Any:
        low, high = super().get_watermark_offsets(*args, **kwargs)
        return low, high if self.high is None else self.high


def _lying_scanner(kafka: KafkaBroker, hint: int | None) -> LyingScanner:
    scanner = LyingScanner(
        {
            **kafka.client_config(),
            "group.id": "scan",
            "enable.partition.eof": "true",
            "enable.auto.commit": "false",
        }
    )
    scanner.high = hint
    return scanner


@pytest.mark.parametrize("hint", [None, 0, 1, 5], ids=lambda h: f"end-{h}")
def test_the_latest_checkpoint_is_found_whatever_listoffsets_answers(
    kafka: KafkaBroker, topic_name: Callable[[str], str], hint: int | None
) -> None:
    topic = topic_name("ckpts")
    kafka.create_topic(topic, 1)
    producer = Producer({**kafka.client_config(), "linger.ms": "50"})
    other = Checkpoint("other-keyed", 0, 1)
    for n in range(40):  # batches of several records: a base offset + 1 is not the end
        ckpt = sample()
        ckpt.next_offset = n
        write_checkpoint(producer, topic, 1, ckpt, None)
        write_checkpoint(producer, topic, 1, other, None)
    assert producer.flush(30) == 0
    scanner = _lying_scanner(kafka, hint)
    try:
        ckpt = read_checkpoint(scanner, topic, 1, sample().keyed_topic, sample().partition)
        assert ckpt is not None and ckpt.next_offset == 39
        tail = scan(scanner, TopicPartition(topic, 0), 70, None, 30)
        assert [m.offset() for m in tail.records] == list(range(70, 80))
        assert tail.end == 80
    finally:
        scanner.close()


@pytest.mark.parametrize("hint", [None, 0], ids=lambda h: f"end-{h}")
def test_checkpoints_of_several_partitions_are_read_together(
    kafka: KafkaBroker, topic_name: Callable[[str], str], hint: int | None
) -> None:
    """One read for all: a checkpoint at the end (partition 0), one behind many records of
    another keyed topic (1: found by widening backwards), none at all (2)."""
    topic = topic_name("ckpts")
    kafka.create_topic(topic, 3)
    producer = Producer({**kafka.client_config(), "linger.ms": "50"})
    keyed = sample().keyed_topic
    for n in range(20):
        write_checkpoint(producer, topic, 3, Checkpoint(keyed, 0, n), None)
    write_checkpoint(producer, topic, 3, Checkpoint(keyed, 1, 7), None)
    for n in range(150):
        write_checkpoint(producer, topic, 3, Checkpoint("other-keyed", 1, n), None)
        write_checkpoint(producer, topic, 3, Checkpoint("other-keyed", 2, n), None)
    assert producer.flush(30) == 0
    scanner = _lying_scanner(kafka, hint)
    try:
        found = read_checkpoints(scanner, topic, 3, keyed, [0, 1, 2])
        assert {p: c and c.next_offset for p, c in found.items()} == {0: 19, 1: 7, 2: None}
        # Several ranges read together are the ranges read one by one.
        ranges = {(topic, 0): (5, None), (topic, 1): (3, 40), (topic, 2): (150, 150)}
        together = scan_many(scanner, ranges, 30)
        for (t, p), (start, end) in ranges.items():
            alone = scan(scanner, TopicPartition(t, p), start, end, 30)
            got = together[(t, p)]
            assert [m.offset() for m in got.records] == [m.offset() for m in alone.records]
            assert got.end == alone.end
        assert [m.offset() for m in together[(topic, 1)].records] == list(range(3, 40))
        assert together[(topic, 0)].end == 20 and together[(topic, 2)].records == []
    finally:
        scanner.close()
