"""The fleet on a live stream whose input partitions reach the coordinator at different
times while the stream's clock runs fast (events replayed).

Four input partitions, each a few tickers' events in time order, are written slice by
slice: after a first slice in time order, partition 0's share of a slice, a pause,
then the other partitions' share, so partition 0 is always one slice ahead. A slice
spans two lateness horizons of clock (two minutes of ``stock_time``). Forwarding
partition 0's slice on arrival would move the keyed partitions' clocks a horizon past
the others' next records, and the worker would drop those as late. The coordinator
waits for a partition read to its end (``CERFLEET_MERGE_END_WAIT``) before letting the
others' records run more than the horizon past it, so the complex events are the
embedded engine's. With every ticker's events spread over the partitions, it does not
let them run past it at all.
"""

from __future__ import annotations

import time
from itertools import pairwise

import orjson
import pytest
from confluent_kafka import Producer

from benchmarks.datasets import stock, to_dicts
from cerfleet.evaluation.horizon import DEFAULT_LATENESS
from tests.fleet import Fleet
from tests.workers.stock_partitions import check_answer, submit_partitioned, ticker_partitions

N_EVENTS = 12_000
INPUT_PARTITIONS = 4
PAUSE = 0.4  # seconds between partition 0's share of a slice and the others'


@pytest.mark.parametrize("placement", ["by ticker", "spread"])
def test_a_partition_fetched_after_the_others_loses_nothing_to_the_horizon(
    fleet: Fleet, placement: str
) -> None:
    events = to_dicts(stock(N_EVENTS, seed=5))
    if placement == "by ticker":
        partition = ticker_partitions(events, INPUT_PARTITIONS)
    else:
        # As records produced without keys: every ticker in every partition. The
        # coordinator then orders them strictly (``key_placement``), ties by partition
        # number rather than as written, so the clocks are made distinct.
        for before, event in pairwise(events):
            event["stock_time"] = max(event["stock_time"], before["stock_time"] + 1)
        partition = [i % INPUT_PARTITIONS for i in range(len(events))]
    source, reader = submit_partitioned(fleet, INPUT_PARTITIONS)
    # Slices of two horizons of clock; within one, partition 0's share goes first.
    slices: list[list[int]] = [[]]
    start = events[0]["stock_time"]
    for i, event in enumerate(events):
        if event["stock_time"] - start >= 2 * DEFAULT_LATENESS:
            slices.append([])
            start = event["stock_time"]
        slices[-1].append(i)
    assert len(slices) >= 5
    producer = Producer(fleet.kafka.client_config())
    index: list[list[int]] = [[] for _ in range(INPUT_PARTITIONS)]

    def send(ids: list[int]) -> None:
        for i in ids:
            index[partition[i]].append(i)
            producer.produce(source, orjson.dumps(events[i]), partition=partition[i])
        assert producer.flush(30) == 0

    # The stream under way before the fleet starts: the merge orders this backlog by
    # its lag rule, and every input partition has a clock when partition 0 runs ahead.
    send(slices[0])
    fleet.env["CERFLEET_MERGE_END_WAIT"] = "5"
    coordinator = fleet.coordinator()
    worker = fleet.worker()
    for ids in slices[1:]:
        send([i for i in ids if partition[i] == 0])
        time.sleep(PAUSE)
        send([i for i in ids if partition[i] != 0])

    check_answer(reader, index, events, 500)
    assert worker.metric("cerfleet_worker_late_events_total") == 0
    assert coordinator.alive()
