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
embedded engine's.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import orjson
from confluent_kafka import Producer

from benchmarks.datasets import stock, to_dicts
from benchmarks.fleet_workload import PARTITIONED
from cerfleet.evaluation.horizon import DEFAULT_LATENESS
from cerfleet.query import compile_query
from tests.fleet import Fleet

N_EVENTS = 12_000
INPUT_PARTITIONS = 4
PAUSE = 0.4  # seconds between partition 0's share of a slice and the others'


def _partitions(events: list[dict[str, Any]]) -> list[int]:
    """Each event's input partition: whole tickers, the busiest to the emptiest."""
    loads = [0] * INPUT_PARTITIONS
    partition_of: dict[str, int] = {}
    for name, count in Counter(e["name"] for e in events).most_common():
        partition_of[name] = p = loads.index(min(loads))
        loads[p] += count
    return [partition_of[e["name"]] for e in events]


def test_a_partition_fetched_after_the_others_loses_nothing_to_the_horizon(
    fleet: Fleet,
) -> None:
    events = to_dicts(stock(N_EVENTS, seed=5))
    partition = _partitions(events)
    source = fleet.topic("stock", INPUT_PARTITIONS)
    out = fleet.topic("out", 4)
    path = fleet.log_dir / "partitioned.ceql"
    path.write_text(PARTITIONED)
    done = fleet.cli(
        "submit", "partitioned", str(path), "-i", source, "-o", out, "--time-field", "stock_time"
    )
    assert done.returncode == 0, done.stderr
    reader = fleet.reader(out, 4)
    fleet.env["CERFLEET_MERGE_END_WAIT"] = "5"
    coordinator = fleet.coordinator()
    worker = fleet.worker()

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

    # The stream under way (every partition has a clock), then partition 0 ahead.
    send(slices[0])
    for ids in slices[1:]:
        send([i for i in ids if partition[i] == 0])
        time.sleep(PAUSE)
        send([i for i in ids if partition[i] != 0])

    compiled = compile_query(PARTITIONED, time_field="stock_time")
    want = Counter(ce.positions for ce in compiled.evaluator().process_batch(events))
    assert sum(want.values()) > 500
    reader.wait_for(sum(want.values()), timeout=120)
    got: Counter[tuple[int, ...]] = Counter()
    for value in reader.values():
        positions = tuple(index[s["partition"]][s["offset"]] for s in value["sources"])
        got[positions] += 1
    assert worker.metric("cerfleet_worker_late_events_total") == 0
    missing, extra = want - got, got - want
    assert not missing and not extra, (
        f"{sum(missing.values())} missing, {sum(extra.values())} extra of {sum(want.values())}"
    )
    assert coordinator.alive()
