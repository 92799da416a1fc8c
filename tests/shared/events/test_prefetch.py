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
    items = list(prefetch.prefetched(lambda: _pids(500)))
    assert [i for i, _ in items] == list(range(500))
    assert {pid for _, pid in items} != {os.getpid()}


def _fails() -> Iterator[int]:
    yield 1
    yield 2
    raise MalformedEvent(7, "CSV header: column 2 has no name", "x.csv")


def test_a_failure_in_the_child_is_raised_after_the_items_before_it() -> None:
    got: list[int] = []
    with pytest.raises(MalformedEvent) as info:
        for item in prefetch.prefetched(_fails):
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


def test_stopping_early_ends_the_child() -> None:
    items = prefetch.prefetched(_endless)
    assert next(items) == b"x" * 100_000
    items.close()  # kills and reaps the child: no zombie left behind
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


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
