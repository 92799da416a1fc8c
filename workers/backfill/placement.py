"""Which evaluation task gets which unit (key or time slice).

A unit is evaluated by one task, start to end, so one heavy key bounds the job
(on stock data half of all events have one ticker). Hash partitioning makes it
worse: with a few dozen keys over a few tasks, it piles heavy keys together.
So the heaviest units are placed by counts, largest first onto the least
loaded task (longest-processing-time scheduling), and only the light tail is
left to hashing, where it averages out.

Spark's ``repartition(n, col)`` puts a row in ``pmod(hash(col), n)``; the
placement writes, per placed unit, a value whose hash lands in its task.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

__all__ = ["longest_first", "place"]

PID = "_cerfleet_task"


def longest_first(weights: Mapping[Any, int], tasks: int, base: float = 0.0) -> dict[Any, int]:
    """Units to tasks, heaviest first onto the least loaded; every task starts at ``base``
    (the share of the units left to hashing)."""
    heap = [(base, i) for i in range(tasks)]
    out: dict[Any, int] = {}
    for unit, weight in sorted(weights.items(), key=lambda kv: (-kv[1], str(kv[0]))):
        load, i = heapq.heappop(heap)
        out[unit] = i
        heapq.heappush(heap, (load + weight, i))
    return out


def _landing_values(spark: SparkSession, tasks: int) -> list[int]:
    """For each task i, a long whose Spark hash lands in partition i of ``tasks``."""
    found: dict[int, int] = {}
    span = 64 * tasks
    while len(found) < tasks:
        probe = spark.range(span - 64 * tasks, span).select(
            "id", F.pmod(F.hash("id"), F.lit(tasks)).alias("p")
        )
        for row in probe.collect():
            found.setdefault(row["p"], row["id"])
        span *= 2
    return [found[i] for i in range(tasks)]


def place(
    spark: SparkSession, df: DataFrame, unit: str, assignment: Mapping[Any, int], tasks: int
) -> DataFrame:
    """``df`` shuffled into ``tasks`` partitions, units of ``assignment`` where it says,
    the others by hash."""
    if not assignment:
        return df.repartition(tasks, unit)
    values = _landing_values(spark, tasks)
    pairs = [F.lit(x) for u, i in assignment.items() for x in (u, values[i])]
    target = F.coalesce(F.create_map(*pairs)[F.col(unit)], F.xxhash64(unit))
    return df.withColumn(PID, target).repartition(tasks, PID).drop(PID)
