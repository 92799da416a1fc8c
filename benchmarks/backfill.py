"""Backfill throughput on Spark against one embedded process, over the same events.

Run ``python -m benchmarks.backfill [--events 1000000 10000000] [--runs 3]
[--query partitioned sliced] [--master local[2]] [--out DIR]``.

For each size, N stock events (``benchmarks.datasets``) are written twice: as a
JSON Lines file, and as a Parquet archive in the compaction job's format (one
topic, one partition, offsets = line numbers, as ``cerfleet compact --jsonl``
would file them). Then, per query and run, interleaved:

* **embedded**: ``cerfleet run QUERY EVENTS.jsonl --quiet`` (one process reading,
  evaluating and printing; output to /dev/null);
* **backfill**: ``cerfleet backfill --ceql QUERY --archive ARCHIVE --output DIR
  --master M`` (spark-submit, Parquet out).

Both are timed from process start to exit (wall clock), so the backfill pays for
the JVM, the Spark session and its Python workers; the job's own time (its
summary, from before the session starts to the end) is reported beside it. The
complex event counts of both are compared. Medians of ``--runs`` are printed and
written to ``OUT/backfill.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.datasets import BLOCK, batches, write_jsonl
from benchmarks.fleet import GLOBAL, PARTITIONED
from cerfleet.workers.backfill.schemas import ARCHIVE, dates_of

QUERIES = {"partitioned": PARTITIONED, "sliced": GLOBAL}
TIME_FIELD = "stock_time"
TOPIC = "stock"
ROOT = Path(__file__).resolve().parent


def write_archive(directory: Path, n: int) -> None:
    """N stock events as the compaction job files them: ``date=…/part-*.parquet``."""
    offset = 0
    writers: dict[str, pq.ParquetWriter] = {}
    schema = pa.schema([f for f in ARCHIVE if f.name != "date"])
    try:
        for batch in batches("stock", n, size=BLOCK):
            keys = list(batch)
            columns = [batch[k].tolist() for k in keys]
            values = [
                orjson.dumps(dict(zip(keys, row, strict=True)))
                for row in zip(*columns, strict=True)
            ]
            m = len(values)
            stamps = [int(t) for t in batch[TIME_FIELD].tolist()]
            table = pa.table(
                {
                    "topic": [TOPIC] * m,
                    "partition": pa.array([0] * m, pa.int32()),
                    "offset": pa.array(range(offset, offset + m), pa.int64()),
                    "timestamp": pa.array(stamps, pa.int64()),
                    "key": pa.array([None] * m, pa.binary()),
                    "value": pa.array(values, pa.binary()),
                    "headers": pa.array([None] * m, schema.field("headers").type),
                },
                schema=schema,
            )
            offset += m
            dates = dates_of(stamps)
            for date in sorted(set(dates)):
                part = table.filter(pa.array([d == date for d in dates]))
                if date not in writers:
                    path = directory / f"date={date}" / "part-0.parquet"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    writers[date] = pq.ParquetWriter(path, schema)
                writers[date].write_table(part)
    finally:
        for w in writers.values():
            w.close()


def _cerfleet(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "cerfleet.cli", *args], capture_output=True, check=False
    )


def embedded(query: Path, events: Path) -> tuple[float, int]:
    began = time.perf_counter()
    done = _cerfleet("run", str(query), str(events), "--time-field", TIME_FIELD, "--quiet")
    wall = time.perf_counter() - began
    if done.returncode:
        raise RuntimeError(done.stderr.decode()[-2000:])
    return wall, done.stdout.count(b"\n")


def backfill(query: Path, archive: Path, out: Path, master: str) -> tuple[float, float, int]:
    began = time.perf_counter()
    done = _cerfleet(
        "backfill",
        "--ceql",
        str(query),
        "--time-field",
        TIME_FIELD,
        "--archive",
        str(archive),
        "--output",
        str(out),
        "--mode",
        "overwrite",
        "--master",
        master,
        "--driver-memory",
        "6g",
        "--spark-conf",
        "spark.ui.enabled=false",
    )
    wall = time.perf_counter() - began
    if done.returncode:
        raise RuntimeError(done.stderr.decode()[-3000:])
    summary = json.loads(done.stdout.splitlines()[-1])["summary"]
    return wall, float(summary["seconds"]), int(summary["complex_events"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--query", nargs="+", choices=sorted(QUERIES), default=sorted(QUERIES))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--out", type=Path, default=ROOT / "results")
    parser.add_argument("--work", type=Path, help="keep data here (default: a temp dir)")
    opts = parser.parse_args()
    work = opts.work or Path(tempfile.mkdtemp(prefix="cerfleet-backfill-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    try:
        for n in opts.events:
            events = work / f"stock-{n}.jsonl"
            archive = work / f"archive-{n}"
            if not events.exists():
                write_jsonl(events, _stock(n))
            if not archive.exists():
                write_archive(archive, n)
            for name in opts.query:
                query = work / f"{name}.ceql"
                query.write_text(QUERIES[name])
                emb, bf, job, counts = [], [], [], set()
                for _ in range(opts.runs):
                    wall, found = embedded(query, events)
                    emb.append(wall)
                    counts.add(("embedded", found))
                    wall, seconds, found_bf = backfill(query, archive, work / "out", opts.master)
                    bf.append(wall)
                    job.append(seconds)
                    counts.add(("backfill", found_bf))
                    print(
                        f"  {name} {n}: embedded {emb[-1]:.1f}s, backfill {wall:.1f}s "
                        f"(job {seconds:.1f}s)",
                        flush=True,
                    )
                found_all = {c for _, c in counts}
                row = {
                    "query": name,
                    "events": n,
                    "embedded_s": statistics.median(emb),
                    "backfill_s": statistics.median(bf),
                    "backfill_job_s": statistics.median(job),
                    "complex_events": sorted(found_all),
                    "equal": len(found_all) == 1,
                }
                row["embedded_eps"] = n / row["embedded_s"]
                row["backfill_eps"] = n / row["backfill_s"]
                row["speedup"] = row["embedded_s"] / row["backfill_s"]
                row["speedup_job"] = row["embedded_s"] / row["backfill_job_s"]
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        if opts.work is None:
            shutil.rmtree(work, ignore_errors=True)
    _report(rows, opts)


def _stock(n: int) -> dict[str, Any]:
    from benchmarks.datasets import stock

    return stock(n)


def _report(rows: list[dict[str, Any]], opts: argparse.Namespace) -> None:
    lines = [
        "# Backfill vs one embedded process",
        "",
        f"`python -m benchmarks.backfill --events {' '.join(map(str, opts.events))} "
        f"--runs {opts.runs} --master {opts.master}` on {os.cpu_count()} cores; medians, "
        "wall clock from process start to exit (the backfill's includes the JVM and the "
        "Spark session; 'job' is the job's own time after spark-submit started Python).",
        "",
        "| query | events | embedded s (ev/s) | backfill s (ev/s) | speedup | job s | "
        "speedup vs job | complex events equal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['query']} | {r['events']:,} | {r['embedded_s']:.1f} "
            f"({r['embedded_eps']:,.0f}) | {r['backfill_s']:.1f} ({r['backfill_eps']:,.0f}) | "
            f"{r['speedup']:.2f}× | {r['backfill_job_s']:.1f} | {r['speedup_job']:.2f}× | "
            f"{'yes' if r['equal'] else 'NO'} ({', '.join(map(str, r['complex_events']))}) |"
        )
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "backfill.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
