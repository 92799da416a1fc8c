"""The fleet catching up on a backlog of several input partitions.

The input topic has 4 partitions, each in time order and covering the same time range
(each holds some tickers' events), all written before the coordinator starts. The
complex events of a PARTITION BY query under a time window must be those of the
embedded engine over the events merged in time order: the coordinator forwards the
partitions' records in time order, so no keyed partition's clock runs ahead of an input
partition's backlog and the lateness horizon drops nothing.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from confluent_kafka import Producer

from benchmarks.datasets import stock, to_dicts
from tests.fleet import Fleet
from tests.workers.stock_partitions import check_answer, submit_partitioned, ticker_partitions

N_EVENTS = 40_000
INPUT_PARTITIONS = 4


def _write_backlog(fleet: Fleet, topic: str, events: list[dict[str, Any]]) -> list[list[int]]:
    """Each ticker's events into one partition, in order; per partition, the index in
    ``events`` of each offset."""
    partition = ticker_partitions(events, INPUT_PARTITIONS)
    producer = Producer({**fleet.kafka.client_config(), "enable.idempotence": "true"})
    index: list[list[int]] = [[] for _ in range(INPUT_PARTITIONS)]
    for i, event in enumerate(events):
        p = partition[i]
        index[p].append(i)
        while True:
            try:
                producer.produce(topic, orjson.dumps(event), partition=p)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    return index


def _submit(fleet: Fleet, events: list[dict[str, Any]]) -> tuple[Any, list[list[int]]]:
    """The query, its output reader and the backlog written; the backlog's index."""
    source, reader = submit_partitioned(fleet, INPUT_PARTITIONS)
    index = _write_backlog(fleet, source, events)
    assert all(len(p) > N_EVENTS // 20 for p in index)
    return reader, index


def _events() -> list[dict[str, Any]]:
    events = to_dicts(stock(N_EVENTS, seed=3))
    clocks = [e["stock_time"] for e in events]
    assert clocks == sorted(clocks)
    # The backlog spans many horizons (a minute of clock), so copying one partition's
    # backlog ahead of another's would make the other's events late.
    assert clocks[-1] - clocks[0] > 20 * 60_000
    return events


def test_a_backlog_of_four_partitions_gives_the_time_ordered_answer(fleet: Fleet) -> None:
    events = _events()
    reader, index = _submit(fleet, events)
    coordinator = fleet.coordinator()
    fleet.worker()
    check_answer(reader, index, events, 1000)
    # All forwarded: the time merge's gauges say it holds nothing and waits for nothing.
    deadline = time.monotonic() + 10
    while True:
        lines = coordinator.get("/metrics")[1].splitlines()
        if "cerfleet_coordinator_merge_buffered 0.0" in lines or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert "cerfleet_coordinator_merge_buffered 0.0" in lines
    assert "cerfleet_coordinator_merge_waiting 0.0" in lines


def test_without_an_idle_wait_the_lag_alone_keeps_the_backlog_in_time_order(
    fleet: Fleet,
) -> None:
    """``CERFLEET_MERGE_IDLE=0``: an empty input partition that is caught up is idle at
    once, so only the lag holds the others back while a partition not fetched yet, or
    with records left on the broker, may still bring older clocks."""
    events = _events()
    reader, index = _submit(fleet, events)
    fleet.env["CERFLEET_MERGE_IDLE"] = "0"
    fleet.coordinator()
    fleet.worker()
    check_answer(reader, index, events, 1000)


def test_partitions_paused_for_a_full_buffer_lose_and_repeat_nothing(fleet: Fleet) -> None:
    """``CERFLEET_MERGE_BUFFER`` records of one input partition buffered: it is paused
    (its prefetched records dropped by the client) and resumed once half have gone, and
    the answer is the time-ordered one all the same."""
    events = _events()
    reader, index = _submit(fleet, events)
    fleet.env["CERFLEET_MERGE_BUFFER"] = "50"
    coordinator = fleet.coordinator("--batch-size", "20")
    fleet.worker()
    check_answer(reader, index, events, 1000)
    assert coordinator.metric("cerfleet_coordinator_merge_pauses_total") > 0


def test_a_coordinator_killed_while_buffering_loses_and_repeats_nothing(fleet: Fleet) -> None:
    """SIGKILL while records are buffered, unforwarded and uncommitted: its successor reads
    them again from the last commit (workers drop the copies they already have)."""
    events = _events()
    reader, index = _submit(fleet, events)
    fleet.worker()
    # Small batches: the kill lands mid-backlog, with records forwarded but not yet
    # committed and others fetched but still buffered.
    first = fleet.coordinator("--batch-size", "100")
    deadline = time.monotonic() + 60
    while first.metric("cerfleet_coordinator_routed_total") < N_EVENTS // 4:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    first.kill()
    second = fleet.coordinator()
    check_answer(reader, index, events, 1000)
    # The successor routed what was left, and some of it again.
    assert second.metric("cerfleet_coordinator_events_in_total") > N_EVENTS // 10
