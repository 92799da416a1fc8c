"""The compaction Spark job: copy a topic range into a Parquet archive, once.

Run it with ``spark-submit workers/backfill/compact_job.py …`` or through
``cerfleet compact …``. Every partition of every topic is read by parallel tasks
(``kafka_ranges``); rows keep their coordinates, key, value, headers and
timestamp, and land under ``date=YYYY-MM-DD`` directories (UTC, from the record
timestamp). A record already archived, by its (topic, partition, offset), is
not written again, so overlapping ranges can be compacted any number of times.
Two compactions must not write the same archive at the same moment: the second
fails clearly (``archive_lock``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from pyspark import StorageLevel
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cerfleet.fleet.service import settings_from_args
from cerfleet.fleet.settings import FleetSettings
from cerfleet.workers.backfill.archive_lock import archive_lock
from cerfleet.workers.backfill.entry import job_main
from cerfleet.workers.backfill.options import add_compact_arguments, check_compact, time_bound
from cerfleet.workers.backfill.schemas import ARCHIVE, COORDINATES
from cerfleet.workers.backfill.sources import jsonl_source, kafka_source
from cerfleet.workers.backfill.spark_session import session, spark_schema

__all__ = ["compact", "main"]


def _exists(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` holds anything but hidden files (the lock, Spark's _SUCCESS)."""
    # Through Hadoop's file systems, so hdfs://, s3a:// and the like work as local paths do.
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(hpath):
        return False
    names = [str(status.getPath().getName()) for status in fs.listStatus(hpath)]
    return any(not name.startswith(("_", ".")) for name in names)


def _archived(spark: SparkSession, archive: str, topics: Sequence[str]) -> DataFrame | None:
    if not _exists(spark, archive):
        return None
    try:
        existing = spark.read.schema(spark_schema(ARCHIVE)).parquet(archive)
    except AnalysisException:  # a directory without any Parquet file yet
        return None
    return existing.where(F.col("topic").isin(list(topics))).select(*COORDINATES)


def compact(
    spark: SparkSession, source: DataFrame, archive: str, topics: Sequence[str]
) -> dict[str, int]:
    """Append ``source``'s records that ``archive`` lacks; returns read and written counts."""
    source = source.persist(StorageLevel.MEMORY_AND_DISK)
    read = source.count()
    fresh = source
    existing = _archived(spark, archive, topics)
    if existing is not None:
        fresh = source.join(existing, on=list(COORDINATES), how="left_anti")
    fresh = fresh.dropDuplicates(list(COORDINATES)).persist(StorageLevel.MEMORY_AND_DISK)
    written = fresh.count()
    # Before the write: computed again after it (were the cache evicted), the anti join
    # would find every record archived.
    dates = sorted(r["date"] for r in fresh.select("date").distinct().collect())
    if written:
        fresh.write.mode("append").partitionBy("date").parquet(archive)
    fresh.unpersist()
    source.unpersist()
    return {"read": read, "written": written, "duplicates": read - written, "dates": len(dates)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    began = time.monotonic()
    settings = settings_from_args(FleetSettings, args)
    check_compact(args)
    topics = list(args.topics)
    spark = session("cerfleet compact " + ",".join(topics))
    tasks = 1
    if args.jsonl is not None:
        source = jsonl_source(spark, args.jsonl, topics[0], args.time_field)
    else:
        source, tasks = kafka_source(
            spark,
            settings.consumer_config(),
            topics,
            start_offset=args.start_offset,
            end_offset=args.end_offset,
            since=time_bound(args.since, "--since"),
            until=time_bound(args.until, "--until"),
            max_records=args.max_records_per_task,
        )
    with archive_lock(spark, args.archive):
        counts = compact(spark, source, args.archive, topics)
    return {
        "topics": topics,
        "archive": args.archive,
        "tasks": tasks,
        **counts,
        "seconds": round(time.monotonic() - began, 3),
    }


def summary_line(result: dict[str, Any]) -> str:
    return (
        f"compact {','.join(result['topics'])}: {result['read']} records read by "
        f"{result['tasks']} tasks, {result['written']} archived, {result['duplicates']} "
        f"already there, in {result['seconds']:.1f} s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    return job_main(
        "compact",
        "Archive topic ranges as Parquet, once per record.",
        add_compact_arguments,
        run,
        summary_line,
        argv,
    )


if __name__ == "__main__":
    sys.exit(main())
