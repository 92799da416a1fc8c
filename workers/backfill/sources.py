"""Where a job's records come from, as DataFrames in the archive schema."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cerfleet.workers.backfill.files import jsonl_batches
from cerfleet.workers.backfill.kafka_ranges import RANGE_SCHEMA, plan_ranges, read_ranges
from cerfleet.workers.backfill.schemas import ARCHIVE, dates_of
from cerfleet.workers.backfill.spark_session import spark_schema

__all__ = ["archive_source", "jsonl_source", "kafka_source"]


def _date(ms: int) -> str:
    return dates_of([ms])[0]


def archive_source(
    spark: SparkSession,
    path: str,
    topics: Sequence[str] | None,
    since: int | None,
    until: int | None,
) -> DataFrame:
    df = spark.read.schema(spark_schema(ARCHIVE)).parquet(path)
    if topics:
        df = df.where(F.col("topic").isin(list(topics)))
    # Dates first: they prune whole directories.
    if since is not None:
        df = df.where((F.col("date") >= _date(since)) & (F.col("timestamp") >= since))
    if until is not None:
        df = df.where((F.col("date") <= _date(until)) & (F.col("timestamp") < until))
    return df


def kafka_source(
    spark: SparkSession,
    config: dict[str, str],
    topics: Sequence[str],
    *,
    start_offset: int | None,
    end_offset: int | None,
    since: int | None,
    until: int | None,
    max_records: int,
) -> tuple[DataFrame, int]:
    """The topics' records, read by as many tasks as there are planned ranges; and that
    number."""
    ranges = plan_ranges(
        config,
        topics,
        start_offset=start_offset,
        end_offset=end_offset,
        since=since,
        until=until,
        max_records=max_records,
    )
    table = pa.Table.from_pylist([r.row() for r in ranges], schema=RANGE_SCHEMA)
    plan = spark.createDataFrame(table)
    # One range per task: the reading happens in the tasks, not in this tiny frame.
    plan = plan.repartition(max(1, len(ranges)))
    return plan.mapInArrow(partial(read_ranges, config), spark_schema(ARCHIVE)), len(ranges)


def jsonl_source(spark: SparkSession, path: str, topic: str, time_field: str | None) -> DataFrame:
    """A JSON Lines file read by the driver and handed to Spark as Arrow."""
    table = pa.Table.from_batches(list(jsonl_batches(path, topic, time_field)), schema=ARCHIVE)
    return spark.createDataFrame(table)
