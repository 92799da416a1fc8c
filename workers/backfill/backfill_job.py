"""The backfill Spark job: a query over archived (or still retained) events, with the
same answers as the fleet.

Run it with ``spark-submit workers/backfill/backfill_job.py …`` or through
``cerfleet backfill …``, which builds that command.

Dataflow, Arrow batches in and out of every Python task:
1. ``prepare`` (per input task, a scalar Arrow UDF over each record's value and
   timestamp): classify records, compute unit and order time;
2. shuffle by unit (the PARTITION BY key, or the time slice), sort each task's
   rows by ``(unit, t, topic, partition, offset)``;
3. ``units`` (per evaluation task): one fresh evaluator per unit, outputs in the
   fleet's format, bad records and counts beside them;
4. write complex events to Parquet and/or Kafka, bad records aside, print a summary.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from cerfleet.errors import CerfleetError
from cerfleet.fleet.service import settings_from_args
from cerfleet.fleet.settings import FleetSettings
from cerfleet.workers.backfill.entry import job_main
from cerfleet.workers.backfill.job_query import RDF_LANGUAGES, JobQuery
from cerfleet.workers.backfill.options import add_backfill_arguments, check_backfill, time_bound
from cerfleet.workers.backfill.placement import longest_first, place
from cerfleet.workers.backfill.prepare import classify
from cerfleet.workers.backfill.rdf_units import evaluate_rdf
from cerfleet.workers.backfill.schemas import ADDED, BAD, GOOD, MATCH, RESULT
from cerfleet.workers.backfill.sinks import PRODUCED, produce_batches
from cerfleet.workers.backfill.slices import SlicePlan, label_bases, slice_epsilon
from cerfleet.workers.backfill.sources import archive_source, jsonl_source, kafka_source
from cerfleet.workers.backfill.spark_session import session, spark_schema, warm_up
from cerfleet.workers.backfill.units import Bases, evaluate_batches

__all__ = ["Evaluation", "evaluate", "main"]


STATS_COUNTERS = ("events", "keys", "unkeyed", "matches", "bad")
KEY_SAMPLE = 0.02  # of the records, to find the heavy PARTITION BY keys


@dataclass
class Evaluation:
    """The evaluation stage's rows (``RESULT`` schema), how the stream was split, and the
    prepared rows (where the bad records are)."""

    rows: DataFrame
    mode: str  # "keys", "slices" or "whole"
    prepared: DataFrame
    slices: int = 0
    cached: list[DataFrame] = field(default_factory=list)


def _sorted(df: DataFrame, unit: str) -> DataFrame:
    return df.sortWithinPartitions(unit, F.asc_nulls_first("t"), "topic", "partition", "offset")


def _prepared(job: JobQuery, rows: DataFrame) -> DataFrame:
    def added(value: pa.Array, timestamp: pa.Array) -> pa.Array:
        return classify(job, value, timestamp)

    # A scalar Arrow UDF: only the value and timestamp go to Python and only what it adds
    # comes back; the coordinates and value stay in the JVM (mapInArrow converts them to
    # Arrow and back). Not deterministic to Spark, so that it runs once per record: a
    # filter on what it adds would otherwise be pushed below it, running it twice.
    # pyspark's stubs want the UDF type spelled out; at run time it reads the type hints.
    ddl = spark_schema(ADDED).simpleString()
    udf = F.arrow_udf(added, ddl).asNondeterministic()  # type: ignore[call-overload]
    return rows.select(
        "topic",
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        "value",
        udf("value", "timestamp").alias("_added"),
    ).select("topic", "partition", "offset", "value", *(f"_added.{n}" for n in ADDED.names))


def _evaluated(
    job: JobQuery, rows: DataFrame, bases: Bases | None, counters: dict[str, Any] | None
) -> DataFrame:
    return rows.mapInArrow(partial(evaluate_batches, job, bases, counters), spark_schema(RESULT))


def _whole(job: JobQuery, prepared: DataFrame, counters: dict[str, Any] | None) -> DataFrame:
    """One task over the stream in order: the unit is the same ("") for every event."""
    return _evaluated(job, _sorted(prepared.repartition(1, "unit"), "unit"), None, counters)


def _heavy_keys(job: JobQuery, needed: DataFrame, partitions: int) -> dict[Any, int]:
    """Heavy PARTITION BY keys to tasks, from key weights in a sample: exact counts would
    need every prepared row kept (or prepared twice), and placement only needs the heavy
    keys roughly."""
    sample = _prepared(job, needed.sample(fraction=KEY_SAMPLE, seed=17))
    per_unit = sample.where(F.col("status") == GOOD).groupBy("unit").count()
    # The heavy keys with the sample's total beside them: one job, one scan.
    total = F.sum("count").over(Window.partitionBy())
    rows = per_unit.withColumn("total", total).orderBy(F.desc("count")).limit(4 * partitions)
    heavy = rows.collect()
    weights = {r["unit"]: int(r["count"]) for r in heavy}
    sampled = int(heavy[0]["total"]) if heavy else 0
    rest = (sampled - sum(weights.values())) / partitions
    return longest_first(weights, partitions, rest)


def evaluate(
    spark: SparkSession,
    job: JobQuery,
    source: DataFrame,
    partitions: int,
    slices: int,
    counters: dict[str, Any] | None = None,
) -> Evaluation:
    """Build (lazily, but for the slice counts) the evaluation of ``job`` over ``source``."""
    query = job.compiled()
    cores = spark.sparkContext.defaultParallelism
    # Only what the tasks read: Spark's Arrow conversion of the nested headers column
    # alone costs more than the whole evaluation.
    needed = source.select("topic", "partition", "offset", "timestamp", "value")
    prepared = _prepared(job, needed)
    epsilon = slice_epsilon(query, job.time_field)
    # Rows numbered over the whole stream (MATCH_NUMBER without PARTITION BY) are not
    # sliceable: a slice would not know how many matches came before it.
    if not query.partitioned and (epsilon is None or slices <= 1 or job.outputs_rows):
        return Evaluation(_whole(job, prepared, counters), "whole", prepared)
    if query.partitioned:
        # One core runs the tasks one after another: where a key goes cannot change the
        # job's time, so the sample (a scan of the whole input) would not pay.
        assignment = _heavy_keys(job, needed, partitions) if cores > 1 else {}
        placed = place(spark, prepared, "unit", assignment, partitions)
        return Evaluation(
            _evaluated(job, _sorted(placed, "unit"), None, counters), "keys", prepared
        )
    prepared = prepared.persist(StorageLevel.MEMORY_AND_DISK)
    good = prepared.where(F.col("status") == GOOD)
    bounds = good.agg(F.min("t").alias("lo"), F.max("t").alias("hi")).first()
    lo, hi = (None, None) if bounds is None else (bounds["lo"], bounds["hi"])
    if lo is None or hi is None:  # no event has a time: nothing to slice by
        return Evaluation(_whole(job, prepared, counters), "whole", prepared, cached=[prepared])
    assert epsilon is not None  # unpartitioned and not whole: sliceable
    plan = SlicePlan.of(lo, hi, epsilon, slices)
    t = F.col("t")

    def slice_of(x: Any) -> Any:
        # The same floating-point steps as SlicePlan.core / copied.
        return F.greatest(F.floor((x - F.lit(plan.t0)) / F.lit(plan.width)), F.lit(0))

    core = F.coalesce(slice_of(t), F.lit(0)).cast("long")
    own = prepared.withColumn("slice", core).withColumn("overlap", F.lit(False))
    copies = (
        prepared.where((F.col("status") == GOOD) & t.isNotNull())
        .where(slice_of(t + F.lit(plan.pad)) > slice_of(t))
        .withColumn("slice", core + 1)
        .withColumn("overlap", F.lit(True))
    )
    expanded = own.unionByName(copies)
    counts = expanded.where(F.col("status") == GOOD).groupBy("slice", "overlap").count().collect()
    core_counts = {r["slice"]: r["count"] for r in counts if not r["overlap"]}
    overlap_counts = {r["slice"]: r["count"] for r in counts if r["overlap"]}
    bases = label_bases(core_counts, overlap_counts)
    n = max(1, len(bases))
    weights = {s: core_counts.get(s, 0) + overlap_counts.get(s, 0) for s in bases}
    tasks = min(n, partitions)
    rows = _sorted(place(spark, expanded, "slice", longest_first(weights, tasks), tasks), "slice")
    return Evaluation(
        _evaluated(job, rows, bases, counters),
        "slices",
        prepared,
        slices=n,
        cached=[prepared],
    )


def _resolve(args: argparse.Namespace, settings: FleetSettings) -> tuple[JobQuery, list[str]]:
    """The query to run and its input topics (empty: whatever the source holds)."""
    job = check_backfill(args)
    if job is not None:
        return job, list(args.topics or [])
    from cerfleet.fleet.registry import Registry

    registry = Registry(settings.client_config(), settings.registry_topic)
    try:
        registry.catch_up()
        found = [e for e in registry.entries() if e.spec.name == args.query]
    finally:
        registry.close()
    if not found:
        raise CerfleetError(f"no query named {args.query!r} in {settings.registry_topic!r}")
    spec = found[-1].spec
    job = JobQuery(spec.name, spec.ceql, spec.type_field, spec.time_field, spec.query_language)
    return job, list(args.topics or spec.input_topics)


def _source(
    spark: SparkSession,
    args: argparse.Namespace,
    settings: FleetSettings,
    job: JobQuery,
    topics: list[str],
) -> DataFrame:
    since = time_bound(args.since, "--since")
    until = time_bound(args.until, "--until")
    if args.archive is not None:
        return archive_source(spark, args.archive, topics, since, until)
    if args.jsonl is not None:
        name = topics[0] if topics else Path(args.jsonl).stem
        return jsonl_source(spark, args.jsonl, name, job.time_field)
    if not topics:
        raise CerfleetError("--from-kafka needs --topic (or a registered --query)")
    df, _ = kafka_source(
        spark,
        settings.consumer_config(),
        topics,
        start_offset=args.start_offset,
        end_offset=args.end_offset,
        since=since,
        until=until,
        max_records=args.max_records_per_task,
    )
    return df


def _produce(df: DataFrame, config: dict[str, str], topic: str, run: str) -> int:
    counts = df.mapInArrow(partial(produce_batches, config, topic, run), spark_schema(PRODUCED))
    total = counts.agg(F.sum("produced")).first()
    return 0 if total is None else int(total[0] or 0)


def run(args: argparse.Namespace) -> dict[str, Any]:
    began = time.monotonic()
    started_at = time.time()
    settings = settings_from_args(FleetSettings, args)
    job, topics = _resolve(args, settings)
    spark = session(f"cerfleet backfill {job.name}")
    warm_up(spark)
    ready_at = time.time()
    cores = spark.sparkContext.defaultParallelism
    partitions = args.partitions or 4 * cores
    slices = args.slices or partitions
    source = _source(spark, args, settings, job, topics)
    if args.from_kafka:
        # Read the topics once, whatever the passes over the records.
        source = source.persist(StorageLevel.MEMORY_AND_DISK)
    counters = {name: spark.sparkContext.accumulator(0) for name in STATS_COUNTERS}
    if job.language in RDF_LANGUAGES:
        rows, prepared = evaluate_rdf(job, source, counters)
        ev = Evaluation(rows, "whole", prepared, cached=[prepared])
    else:
        ev = evaluate(spark, job, source, partitions, slices, counters)
    run_id = f"{job.name}-{uuid.uuid4().hex[:12]}"

    matches = ev.rows.where(F.col("kind") == MATCH)
    if args.output is not None and args.output_topic is not None:
        # Two sinks, one evaluation.
        matches = matches.persist(StorageLevel.MEMORY_AND_DISK)
        ev.cached.append(matches)
    if args.output is not None:
        (
            matches.select(
                "query", "key", "start", "end", F.col("value").cast("string").alias("value")
            )
            .write.mode(args.mode)
            .parquet(args.output)
        )
    published = 0
    if args.output_topic is not None:
        published = _produce(
            matches.select("key", "value"), settings.producer_config(), args.output_topic, run_id
        )
    # The evaluation ran once, by the writes above; its counts came back in the counters.
    stats = {name: int(acc.value) for name, acc in counters.items()}
    n_bad, n_matches = stats["bad"], stats["matches"]
    bad_to = None
    if n_bad:
        # Rare: read them again from the prepared rows rather than keep every result.
        bad_rows = ev.prepared.where(F.col("status") == BAD).select(
            F.lit(job.name).alias("query"), "topic", "partition", "offset", "error", "value"
        )
        if args.bad_records is not None or args.output is not None:
            bad_to = args.bad_records or str(Path(args.output) / "_bad")
            bad_rows.write.mode("overwrite").parquet(bad_to)
        else:
            bad_to = settings.dead_letter_topic
            _produce(bad_rows, settings.producer_config(), bad_to, run_id)
    for df in [*ev.cached, source]:
        df.unpersist()
    events, unkeyed = stats["events"], stats["unkeyed"]
    return {
        "query": job.name,
        "run": run_id,
        "events_read": events + unkeyed + n_bad,
        "events_evaluated": events,
        "unkeyed": unkeyed,
        "bad_records": n_bad,
        "bad_records_to": bad_to,
        "mode": ev.mode,
        "keys": stats["keys"] if ev.mode == "keys" else 1,
        "slices": ev.slices,
        "complex_events": n_matches,
        "published": published,
        "output": args.output,
        "output_topic": args.output_topic,
        "seconds": round(time.monotonic() - began, 3),
        # Wall clock (epoch seconds): job start, Spark and every core's Python worker up
        # (``warm_up``), end; "cores" is Spark's default parallelism.
        "started_at": round(started_at, 3),
        "ready_at": round(ready_at, 3),
        "ended_at": round(time.time(), 3),
        "cores": cores,
    }


def summary_line(s: dict[str, Any]) -> str:
    split = {"keys": f"{s['keys']} keys", "slices": f"{s['slices']} time slices"}.get(
        s["mode"], "one stream"
    )
    return (
        f"backfill {s['query']}: {s['events_read']} events read ({s['bad_records']} bad, "
        f"{s['unkeyed']} without key), {split}, {s['complex_events']} complex events written "
        f"in {s['seconds']:.1f} s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    return job_main(
        "backfill",
        "Run a query over archived events with Spark.",
        add_backfill_arguments,
        run,
        summary_line,
        argv,
    )


if __name__ == "__main__":
    sys.exit(main())
