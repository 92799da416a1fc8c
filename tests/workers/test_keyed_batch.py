"""A consumed batch of keyed records as arrays: framed values and records with headers
(written by older coordinators, or without a value) read alike."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, Message
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.fleet.keyed import REGISTRY_HEADER, SRC_HEADER, encode_src, frame
from cerfleet.workers.keyed_batch import KeyedBatch, split_by_partition


def _msg(offset: int, value: bytes | None, headers: Any = None) -> Message:
    return Message(
        topic="k", partition=0, offset=offset, key=b'["k"]', value=value, headers=headers
    )


# Per record: its input value (None: none), registry offset, input coordinates, and
# whether it is written with headers (as older coordinators wrote every record).
records = st.tuples(
    st.none() | st.binary(max_size=12) | st.just(b'{"a":[[1]]}'),
    st.integers(0, 1000),
    st.sampled_from(["in", "other.topic"]),
    st.integers(0, 7),
    st.integers(0, 10**12),
    st.booleans(),
)


def _message(offset: int, record: tuple[bytes | None, int, str, int, int, bool]) -> Message:
    value, registry, topic, partition, input_offset, with_headers = record
    if value is None or with_headers:
        headers = [
            (SRC_HEADER, encode_src(topic, partition, input_offset)),
            (REGISTRY_HEADER, str(registry).encode()),
        ]
        return _msg(offset, value, headers)
    return _msg(offset, frame(registry, topic, partition, input_offset, value))


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(records, min_size=1, max_size=12))
def test_every_record_gives_its_value_source_and_registry(
    drawn: list[tuple[bytes | None, int, str, int, int, bool]],
) -> None:
    msgs = [_message(10 + i, r) for i, r in enumerate(drawn)]
    batch = KeyedBatch.of_messages(msgs)
    assert batch.offsets == [10 + i for i in range(len(drawn))]
    assert batch.values == [r[0] for r in drawn]
    assert [list(s) for s in batch.sources] == [[r[2], r[3], r[4]] for r in drawn]  # type: ignore[union-attr]
    assert batch.registries == [r[1] for r in drawn]
    assert batch.key(0) == b'["k"]'


def test_a_framed_batch_is_read_without_headers() -> None:
    msgs = [_msg(i, frame(5, "in", 1, 100 + i, b'{"n":%d}' % i)) for i in range(3)]
    batch = KeyedBatch.of_messages(msgs)
    assert batch.values == [b'{"n":0}', b'{"n":1}', b'{"n":2}']
    assert batch.sources == [("in", 1, 100), ("in", 1, 101), ("in", 1, 102)]
    assert batch.registries == [5, 5, 5]


def test_a_record_neither_framed_nor_with_headers_has_no_source() -> None:
    # Not written by a coordinator: read as it is (its value then judged as an event).
    msgs = [_msg(0, frame(5, "in", 1, 100, b"{}")), _msg(1, b'{"type":"A"}')]
    batch = KeyedBatch.of_messages(msgs)
    assert batch.values == [b"{}", b'{"type":"A"}']
    assert batch.sources == [("in", 1, 100), None]
    assert batch.registries == [5, 0]


# ----------------------------------------------------------------- split_by_partition


def _at(topic: str, partition: int, offset: int) -> Message:
    return Message(topic=topic, partition=partition, offset=offset, value=b"%d" % offset)


def _parts(parts: dict[tuple[str, int], list[Message]]) -> dict[tuple[str, int], list[int]]:
    return {tp: [m.offset() for m in msgs] for tp, msgs in parts.items()}  # type: ignore[misc]


def test_one_partitions_records_are_one_part() -> None:
    parts, errors = split_by_partition([_at("k", 3, o) for o in range(5)])
    assert _parts(parts) == {("k", 3): [0, 1, 2, 3, 4]} and errors == []


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.tuples(st.sampled_from(["k", "j"]), st.integers(0, 2)), max_size=30))
def test_records_are_split_per_partition_in_order(where: list[tuple[str, int]]) -> None:
    msgs = [_at(topic, partition, offset) for offset, (topic, partition) in enumerate(where)]
    parts, errors = split_by_partition(msgs)
    want: dict[tuple[str, int], list[int]] = {}
    for offset, tp in enumerate(where):
        want.setdefault(tp, []).append(offset)
    assert _parts(parts) == want and errors == []


def test_errors_are_set_apart() -> None:
    eof = KafkaError(KafkaError._PARTITION_EOF)
    msgs = [_at("k", 1, 0), Message(topic="k", partition=1, error=eof), _at("k", 1, 1)]
    parts, errors = split_by_partition(msgs)
    assert _parts(parts) == {("k", 1): [0, 1]}
    assert [e.code() for e in errors] == [KafkaError._PARTITION_EOF]
