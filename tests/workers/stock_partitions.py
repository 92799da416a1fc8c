"""The stock events in several input partitions, each ticker in one (as Kafka's record
keys place them), and the PARTITION BY query over them: what the fleet tests of the time
merge write, submit and check."""

from __future__ import annotations

from collections import Counter
from typing import Any

from benchmarks.fleet_workload import PARTITIONED
from cerfleet.query import compile_query
from tests.fleet import Fleet


def ticker_partitions(events: list[dict[str, Any]], partitions: int) -> list[int]:
    """Each event's input partition: whole tickers, the busiest first, each to the
    partition holding fewest events so far."""
    loads = [0] * partitions
    partition_of: dict[str, int] = {}
    for name, count in Counter(e["name"] for e in events).most_common():
        partition_of[name] = p = loads.index(min(loads))
        loads[p] += count
    return [partition_of[e["name"]] for e in events]


def submit_partitioned(fleet: Fleet, partitions: int) -> tuple[str, Any]:
    """The PARTITION BY query submitted over a new input topic of ``partitions``; the
    topic's name and a reader of the query's output."""
    source = fleet.topic("stock", partitions)
    out = fleet.topic("out", 4)
    path = fleet.log_dir / "partitioned.ceql"
    path.write_text(PARTITIONED)
    done = fleet.cli(
        "submit", "partitioned", str(path), "-i", source, "-o", out, "--time-field", "stock_time"
    )
    assert done.returncode == 0, done.stderr
    return source, fleet.reader(out, 4)


def check_answer(
    reader: Any, index: list[list[int]], events: list[dict[str, Any]], least: int
) -> int:
    """Asserts the output is the embedded engine's over ``events`` in time order (at
    least ``least`` complex events); ``index[p][o]``: the event at offset o of input
    partition p. Returns how many."""
    compiled = compile_query(PARTITIONED, time_field="stock_time")
    want = Counter(ce.positions for ce in compiled.evaluator().process_batch(events))
    assert sum(want.values()) > least
    reader.wait_for(sum(want.values()), timeout=240)
    got: Counter[tuple[int, ...]] = Counter()
    for value in reader.values():
        positions = tuple(index[s["partition"]][s["offset"]] for s in value["sources"])
        assert value["events"] == [events[i] for i in positions]
        got[positions] += 1
    missing, extra = want - got, got - want
    assert not missing and not extra, (
        f"{sum(missing.values())} missing, {sum(extra.values())} extra of {sum(want.values())}"
    )
    return sum(want.values())
