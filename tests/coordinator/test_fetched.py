"""A drain's records of one topic, extracted in one call and split per input partition,
route exactly as each partition's records extracted by themselves."""

from __future__ import annotations

from confluent_kafka import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.coordinator.fetched import fetched_parts
from cerfleet.coordinator.partition_keys import KeyExtractor, window_clock
from cerfleet.fleet.keyed import encode_src, frame_format
from cerfleet.pattern import Window, WindowKind
from tests.coordinator.test_partition_keys import GROUPS, LIMITS, _group, raw_values

REG = b"42"


def _messages(partition: int, values: list[bytes | None], first: int) -> list[Message]:
    return [
        Message(
            topic="in",
            partition=partition,
            offset=first + i,
            value=value,
            timestamp=(1, 1000 * partition + i),
        )
        for i, value in enumerate(values)
    ]


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(st.lists(raw_values, min_size=1, max_size=6), min_size=1, max_size=4),
    st.booleans(),
)
def test_a_topic_extracted_at_once_routes_each_partition_as_alone(
    batches: list[list[bytes | None]], clocked: bool
) -> None:
    window = Window(WindowKind.ATTRIBUTE, 1000, attr="x") if clocked else None
    extractor = KeyExtractor(
        [_group(i) for i in range(len(GROUPS))], LIMITS, window_clock(window, "x")
    )
    # Partition numbers out of order, as a drain hands them out.
    parts = [(7 - p, _messages(7 - p, values, 10 * p)) for p, values in enumerate(batches)]
    got = fetched_parts("in", parts, extractor, REG)
    assert [f.tp for f in got] == [("in", p) for p, _ in parts]
    for fetched, (partition, msgs) in zip(got, parts, strict=True):
        values = [m.value() for m in msgs]
        alone = extractor.extract(values)
        assert fetched.msgs == msgs
        assert fetched.values == values
        assert fetched.offsets == [m.offset() for m in msgs]
        assert fetched.stamps == [m.timestamp() for m in msgs]
        assert fetched.extracted.keys == alone.keys
        assert fetched.extracted.times == alone.times
        assert fetched.extracted.rejected == alone.rejected
        assert fetched.framed == frame_format(REG, "in", partition)
        assert fetched.src(len(msgs) - 1) == encode_src("in", partition, msgs[-1].offset())
