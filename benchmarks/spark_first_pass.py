"""What a backfill's first pass costs when Spark does it alone, without Python.

Run ``python -m benchmarks.spark_first_pass [--events 3000000] [--runs 3]
[--master local[1]] [--work DIR] [--out DIR]``.

A backfill must know every record's evaluation unit (its PARTITION BY key) and order
time before it can group a unit's events in one task, sorted: a first pass over all
records, then a shuffle. The backfill job does that pass in Python (``prepare``, a
scalar Arrow UDF). This measures the alternative of doing it in Spark expressions on
the benchmark's balanced archive (``benchmarks.backfill``: stock events with a desk),
each step written to Spark's ``noop`` sink after the session is up, in this order:

* **read**: the archive's rows (the value's length, so that every value is read);
* **json_tuple** / **from_json**: the desk and the time read out of each JSON value;
* **first pass**: ``from_json``, then the rows shuffled by unit and sorted within tasks
  by ``(unit, t, topic, partition, offset)``, as the backfill sorts them.

Each step runs once untimed (the JVM compiles the plan's code), then ``--runs`` times;
medians are written to ``OUT/spark_first_pass.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.backfill_archive import TIME_FIELD, write_archive

ROOT = Path(__file__).resolve().parent


def _steps(df: Any) -> dict[str, Any]:
    from pyspark.sql import functions as F

    v = F.col("value").cast("string")
    parsed = F.from_json(v, f"desk long, {TIME_FIELD} double")
    first = (
        df.select("topic", "partition", "offset", "value", parsed.alias("j"))
        .select(
            "topic",
            "partition",
            "offset",
            "value",
            F.col("j.desk").cast("string").alias("unit"),
            F.col(f"j.{TIME_FIELD}").alias("t"),
        )
        .repartition(4, "unit")
        .sortWithinPartitions("unit", F.asc_nulls_first("t"), "topic", "partition", "offset")
    )
    return {
        "read": df.select(F.length("value").alias("n")),
        "json_tuple": df.select(F.json_tuple(v, "desk", TIME_FIELD)),
        "from_json": df.select(parsed.alias("j")).select("j.*"),
        "first pass": first,
    }


def measure(spark: Any, archive: Path, runs: int) -> dict[str, list[float]]:
    """Seconds of each step over ``archive``, ``runs`` times after an untimed run."""
    df = spark.read.parquet(str(archive)).select(
        "topic", "partition", "offset", "timestamp", "value"
    )
    times: dict[str, list[float]] = {}
    for name, out in _steps(df).items():
        out.write.format("noop").mode("overwrite").save()  # untimed: code compiled
        for _ in range(runs):
            began = time.perf_counter()
            out.write.format("noop").mode("overwrite").save()
            times.setdefault(name, []).append(time.perf_counter() - began)
        print(f"  {name}: {[round(t, 2) for t in times[name]]}", flush=True)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=3_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--master", default="local[1]")
    parser.add_argument("--work", type=Path, help="archive here (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=ROOT / "results")
    opts = parser.parse_args(argv)
    from pyspark.sql import SparkSession

    work = opts.work or Path(tempfile.mkdtemp(prefix="cerfleet-first-pass-"))
    archive = work / f"archive-{opts.events}"
    if not archive.exists():
        write_archive(archive, opts.events)
    spark = (
        SparkSession.builder.master(opts.master)
        .appName("first pass in Spark expressions")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        times = measure(spark, archive, opts.runs)
    finally:
        spark.stop()
    rows = [
        {
            "step": name,
            "events": opts.events,
            "master": opts.master,
            "median_s": statistics.median(ts),
            "us_per_event": statistics.median(ts) / opts.events * 1e6,
            "runs_s": ts,
        }
        for name, ts in times.items()
    ]
    lines = [
        "# A backfill's first pass in Spark expressions",
        "",
        f"`python -m benchmarks.spark_first_pass --events {opts.events} --runs {opts.runs} "
        f"--master {opts.master}` on {os.cpu_count()} cores: each step over the balanced "
        "archive to Spark's noop sink, after one untimed run; medians.",
        "",
        "| step | events | master | s | µs per event |",
        "|---|---|---|---|---|",
        *(
            f"| {r['step']} | {r['events']:,} | {r['master']} | {r['median_s']:.2f} | "
            f"{r['us_per_event']:.2f} |"
            for r in rows
        ),
    ]
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "spark_first_pass.md").write_text("\n".join(lines) + "\n")
    (opts.out / "spark_first_pass.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
