"""A consumed batch of keyed records as arrays: framed values and records with headers
(written by older coordinators, or without a value) read alike."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.fleet.keyed import REGISTRY_HEADER, SRC_HEADER, encode_src, frame
from cerfleet.workers.keyed_batch import KeyedBatch


class Message:
    def __init__(self, offset: int, value: bytes | None, headers: Any = None) -> None:
        self._offset, self._value, self._headers = offset, value, headers

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> Any:
        return self._headers

    def key(self) -> bytes:
        return b'["k"]'


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
        return Message(offset, value, headers)
    return Message(offset, frame(registry, topic, partition, input_offset, value))


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(records, min_size=1, max_size=12))
def test_every_record_gives_its_value_source_and_registry(
    drawn: list[tuple[bytes | None, int, str, int, int, bool]],
) -> None:
    msgs = [_message(10 + i, r) for i, r in enumerate(drawn)]
    batch = KeyedBatch.of_messages(msgs)  # type: ignore[arg-type]
    assert batch.offsets == [10 + i for i in range(len(drawn))]
    assert batch.values == [r[0] for r in drawn]
    assert [list(s) for s in batch.sources] == [[r[2], r[3], r[4]] for r in drawn]  # type: ignore[union-attr]
    assert batch.registries == [r[1] for r in drawn]
    assert batch.key(0) == b'["k"]'


def test_a_framed_batch_is_read_without_headers() -> None:
    msgs = [Message(i, frame(5, "in", 1, 100 + i, b'{"n":%d}' % i)) for i in range(3)]
    batch = KeyedBatch.of_messages(msgs)  # type: ignore[arg-type]
    assert batch.values == [b'{"n":0}', b'{"n":1}', b'{"n":2}']
    assert batch.sources == [["in", 1, 100], ["in", 1, 101], ["in", 1, 102]]
    assert batch.registries == [5, 5, 5]


def test_a_record_neither_framed_nor_with_headers_has_no_source() -> None:
    # Not written by a coordinator: read as it is (its value then judged as an event).
    msgs = [Message(0, frame(5, "in", 1, 100, b"{}")), Message(1, b'{"type":"A"}')]
    batch = KeyedBatch.of_messages(msgs)  # type: ignore[arg-type]
    assert batch.values == [b"{}", b'{"type":"A"}']
    assert batch.sources == [["in", 1, 100], None]
    assert batch.registries == [5, 0]
