"""A consumed batch with errors or events among its records, read per input partition."""

from __future__ import annotations

from confluent_kafka import KafkaError, Message

from cerfleet.coordinator.input_sync import split_input


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


def test_other_errors_are_skipped() -> None:
    msgs = [_event(0, KafkaError._TRANSPORT), _record(0, 1)]
    ended: set[tuple[str, int]] = set()
    parts = split_input(msgs, ended)
    assert {tp: [m.offset() for m in part] for tp, part in parts.items()} == {("in", 0): [1]}
    assert ended == set()
