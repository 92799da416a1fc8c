"""Batches made in a forked child (``events.prefetch``): the same items, in order, made
in another process; the child's failures raised here; an early stop ends the child."""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator

import pytest

from cerfleet.events import prefetch
from cerfleet.events.ingest import JsonDecoder
from cerfleet.events.records import MalformedEvent

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _pids(n: int) -> Iterator[tuple[int, int]]:
    for i in range(n):
        yield i, os.getpid()


def test_items_come_in_order_from_another_process() -> None:
    items = list(prefetch.prefetched(lambda part, parts: _pids(500)))
    assert [i for i, _ in items] == list(range(500))
    assert {pid for _, pid in items} != {os.getpid()}


def _fails() -> Iterator[int]:
    yield 1
    yield 2
    raise MalformedEvent(7, "CSV header: column 2 has no name", "x.csv")


def test_a_failure_in_the_child_is_raised_after_the_items_before_it() -> None:
    got: list[int] = []
    with pytest.raises(MalformedEvent) as info:
        for item in prefetch.prefetched(lambda part, parts: _fails()):
            got.append(item)
    assert got == [1, 2]
    assert (info.value.line, info.value.reason, info.value.source) == (
        7,
        "CSV header: column 2 has no name",
        "x.csv",
    )


def _endless() -> Iterator[bytes]:
    while True:
        yield b"x" * 100_000


def _children() -> set[int]:
    """This process's child processes, zombies included (Linux)."""
    found: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as f:
            found.update(int(pid) for pid in f.read().split())
    return found


def test_stopping_early_ends_the_child() -> None:
    # Other children of the test process (a broker a fixture started) are not ours to count.
    before = _children()
    items = prefetch.prefetched(lambda part, parts: _endless())
    assert next(items) == b"x" * 100_000
    assert len(_children() - before) == 1
    items.close()  # kills and reaps the child: no zombie left behind
    assert _children() == before


def test_a_pickled_batch_keeps_its_events_bytes_and_values() -> None:
    decoder = JsonDecoder(["x"], "type")
    records = [b'{"type":"A","x":1,"y":[1,2]}', b"bad", b'{"type":"B","x":2.5}']
    batch = decoder.decode(records)
    copy = pickle.loads(pickle.dumps(batch))
    assert copy.lines == batch.lines == [1, 3]
    assert copy.problems == batch.problems
    assert [e.raw for e in copy.events] == [e.raw for e in batch.events]  # type: ignore[attr-defined]
    assert [dict(e) for e in copy.events] == [dict(e) for e in batch.events]
    assert [e.get("x") for e in copy.events] == [1, 2.5]
    assert copy.events[-1].raw == records[2]  # type: ignore[attr-defined]
    for name, col in batch.columns.items():
        assert copy.columns[name].tolist() == col.tolist()


def _owned(part: int, parts: int) -> Iterator[tuple[int, int]]:
    # Child ``part`` makes items part, part + parts, ... of 0..99.
    for i in range(part, 100, parts):
        yield i, os.getpid()


@pytest.mark.parametrize("count", [2, 3])
def test_several_children_hand_out_their_items_in_sequence_order(count: int) -> None:
    items = list(prefetch.prefetched(_owned, count))
    assert [i for i, _ in items] == list(range(100))
    pids = {pid for _, pid in items}
    assert len(pids) == count and os.getpid() not in pids


def _fails_at(part: int, parts: int) -> Iterator[int]:
    for i in range(part, 10, parts):
        if i == 5:
            raise MalformedEvent(5, "bad", None)
        yield i


def test_a_failure_in_one_of_several_children_is_raised_in_sequence_order() -> None:
    got: list[int] = []
    with pytest.raises(MalformedEvent):
        for item in prefetch.prefetched(_fails_at, 2):
            got.append(item)
    assert got == [0, 1, 2, 3, 4]


def _endless_part(part: int, parts: int) -> Iterator[int]:
    while True:
        yield part


def test_stopping_early_ends_every_child() -> None:
    before = _children()
    items = prefetch.prefetched(_endless_part, 3)
    assert [next(items) for _ in range(4)] == [0, 1, 2, 0]
    assert len(_children() - before) == 3
    items.close()
    assert _children() == before


def test_how_many_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(prefetch.ENV, "0")
    assert prefetch.processes() == 0
    monkeypatch.setenv(prefetch.ENV, "99")
    assert prefetch.processes() == prefetch.MAX_PROCESSES
    monkeypatch.setenv(prefetch.ENV, "3")
    assert prefetch.processes() == 3
    monkeypatch.setenv(prefetch.ENV, "many")
    assert prefetch.processes() == 1
    monkeypatch.delenv(prefetch.ENV)
    assert prefetch.processes() == 1


def test_a_compact_batch_numbers_its_lines_by_a_range_only_when_they_follow() -> None:
    decoder = JsonDecoder(["x"], "type")
    following = decoder.decode([b'{"type":"A","x":1}', b'{"type":"B","x":2}'], [7, 8])
    assert following.compact().lines == range(7, 9)
    gap = decoder.decode([b'{"type":"A","x":1}', b"bad", b'{"type":"B","x":2}'], [7, 8, 9])
    assert gap.compact().lines == [7, 9]  # line 8 is no event
    copy = pickle.loads(pickle.dumps(following))
    assert list(copy.lines) == [7, 8] and [e["x"] for e in copy.events] == [1, 2]
