from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F

from cerfleet.workers.backfill.placement import longest_first, place


def test_heavy_units_get_tasks_of_their_own() -> None:
    # Stock-like: one key with half the events, a few medium ones, a light tail (base).
    weights = {"YHOO": 53, "DELL": 18, "IPIX": 9, "CSCO": 6, "INTC": 4}
    got = longest_first(weights, 4, base=2.5)
    loads = [2.5] * 4
    for unit, task in got.items():
        loads[task] += weights[unit]
    assert got["YHOO"] != got["DELL"]
    assert max(loads) == 2.5 + 53  # nothing joins the heaviest key
    assert sorted(got) == sorted(weights)


def test_placed_units_land_in_their_tasks_and_the_rest_spreads(spark: Any) -> None:
    rows = [(f"k{i % 50}", i) for i in range(5000)] + [("heavy", i) for i in range(5000)]
    df = spark.createDataFrame(rows, "unit string, n long")
    assignment = {"heavy": 2, "k1": 0, "k2": 0}
    placed = place(spark, df, "unit", assignment, 4)
    where = placed.select("unit", F.spark_partition_id().alias("task")).distinct().collect()
    task_of: dict[str, set[int]] = {}
    for r in where:
        task_of.setdefault(r["unit"], set()).add(r["task"])
    assert all(len(tasks) == 1 for tasks in task_of.values())  # a unit never splits
    assert task_of["heavy"] == {2} and task_of["k1"] == task_of["k2"] == {0}
    assert len({t for tasks in task_of.values() for t in tasks}) == 4


def test_without_placed_units_every_unit_still_has_one_task(spark: Any) -> None:
    # What a one-core job does: no key sample, hashing alone.
    rows = [(f"k{i % 50}", i) for i in range(5000)]
    df = spark.createDataFrame(rows, "unit string, n long")
    placed = place(spark, df, "unit", {}, 4)
    where = placed.select("unit", F.spark_partition_id().alias("task")).distinct().collect()
    tasks: dict[str, set[int]] = {}
    for r in where:
        tasks.setdefault(r["unit"], set()).add(r["task"])
    assert len(tasks) == 50 and all(len(t) == 1 for t in tasks.values())
