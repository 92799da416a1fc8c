"""Backfill throughput on Spark against one embedded process, over the same events.

Run ``python -m benchmarks.backfill [--events 1000000 10000000] [--runs 3]
[--query balanced partitioned sliced] [--master local[1] local[2]] [--out DIR]``.

For each size, N stock events (``benchmarks.datasets``, each with a ``desk`` from
0 to 49 spread evenly over the stream) are written twice: as a JSON Lines file,
and as a Parquet archive in the compaction job's format (one topic, one
partition, offsets = line numbers, as ``cerfleet compact --jsonl`` would file
them). Then, per query and run, interleaved:

* **embedded**: ``cerfleet run QUERY EVENTS.jsonl --quiet`` (one process reading,
  evaluating and printing; output to /dev/null);
* **backfill**, once per master: ``cerfleet backfill --ceql QUERY --archive ARCHIVE
  --output DIR --master M`` (spark-submit, Parquet out).

Both are timed from process start to exit (wall clock). The backfill's time is
also split at the moment its Spark session is up with every core's Python worker
started (the job's ``ready_at``): before is Spark's **fixed cost** (JVM, session,
executors, Python workers), after is the **work**, over which events/s per core
(events / work s / cores) is compared with the embedded engine's events/s. The
complex event counts of all are compared. Medians of ``--runs`` are printed and
written to ``OUT/backfill.md`` and ``OUT/backfill.json``.

Queries: ``balanced`` is PARTITION BY [desk] (50 keys of equal weight: parallel
efficiency), ``partitioned`` the fleet benchmark's PARTITION BY [name] (53% of the
events share one ticker: skew), ``sliced`` its query without PARTITION BY (time
slices).
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

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.backfill_archive import TIME_FIELD, desks, write_archive
from benchmarks.datasets import write_jsonl
from benchmarks.fleet_workload import GLOBAL, PARTITIONED
from benchmarks.process_cpu import CpuSampler
from cerfleet.workers.backfill.class_archive import class_archive
from cerfleet.workers.backfill.schemas import ARCHIVE

BALANCED = """SELECT * FROM S WHERE SELL as s ; BUY+ as b ; SELL as c
FILTER s[volume >= 2000] AND b[volume >= 2000] AND c[volume >= 2000]
PARTITION BY [desk] WITHIN 60000 [stock_time] CONSUME BY PARTITION"""
QUERIES = {"balanced": BALANCED, "partitioned": PARTITIONED, "sliced": GLOBAL}
SPARK_BATCH = 10_000  # spark.sql.execution.arrow.maxRecordsPerBatch's default
ROOT = Path(__file__).resolve().parent


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


def backfill(query: Path, archive: Path, out: Path, master: str) -> dict[str, Any]:
    launched = time.time()
    began = time.perf_counter()
    args = [
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
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cerfleet.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    sampler = CpuSampler(proc.pid)
    try:
        stdout, stderr = proc.communicate()
    finally:
        sampler.stop()
    wall = time.perf_counter() - began
    if proc.returncode:
        raise RuntimeError(stderr.decode()[-3000:])
    summary = json.loads(stdout.splitlines()[-1])["summary"]
    work_s = summary["ended_at"] - summary["ready_at"]
    work_cpu = sampler.between(summary["ready_at"], summary["ended_at"])
    return {
        "wall_s": wall,
        "job_s": float(summary["seconds"]),
        "fixed_s": summary["ready_at"] - launched,
        "work_s": work_s,
        # The whole job's processes (JVM threads and Python workers) during the work.
        "work_cpu_s": work_cpu,
        "work_busy_cores": None if work_cpu is None else work_cpu / work_s,
        "cores": int(summary["cores"]),
        "complex_events": int(summary["complex_events"]),
    }


def python_passes(query: str, archive: Path) -> dict[str, Any]:
    """The backfill's two Python passes over ``archive`` in this one process, without
    Spark: ``prepare`` over the archive's rows, then ``evaluate_batches`` over them
    sorted as the job sorts them, each timed in CPU seconds; in Spark the tasks pay these
    besides the JVM's reading, shuffling and Arrow conversions."""
    import pyarrow.compute as pc

    from cerfleet.workers.backfill.job_query import JobQuery
    from cerfleet.workers.backfill.prepare import prepare
    from cerfleet.workers.backfill.schemas import MATCH
    from cerfleet.workers.backfill.units import evaluate_batches

    job = JobQuery("bench", query, time_field=TIME_FIELD)
    job.compiled()
    table = pq.read_table(archive, schema=pa.schema([f for f in ARCHIVE if f.name != "date"]))
    rows = table.to_batches(max_chunksize=SPARK_BATCH)
    del table
    began = time.process_time()
    prepared = [prepare(job, b) for b in rows]
    prepare_s = time.process_time() - began
    del rows
    whole = pa.Table.from_batches(prepared)
    del prepared
    order = pc.sort_indices(
        whole,
        [(c, "ascending", "at_start") for c in ("unit", "t", "topic", "partition", "offset")],
    )
    ordered = whole.take(order).combine_chunks().to_batches(max_chunksize=SPARK_BATCH)
    del whole, order
    found = 0
    began = time.process_time()
    for out in evaluate_batches(job, None, None, iter(ordered)):
        found += int(pc.sum(pc.equal(out.column("kind"), MATCH)).as_py() or 0)
    evaluate_s = time.process_time() - began
    return {"prepare_cpu_s": prepare_s, "evaluate_cpu_s": evaluate_s, "complex_events": found}


def _archive_written_by_next_run(master: str) -> bool:
    archive = class_archive("backfill", master, ["spark.ui.enabled=false"])
    return archive is not None and archive.writing is not None


def _median(runs: list[dict[str, Any]], name: str) -> float:
    return float(statistics.median(r[name] for r in runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--query", nargs="+", choices=sorted(QUERIES), default=sorted(QUERIES))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--master", nargs="+", default=["local[1]", "local[2]"])
    parser.add_argument("--out", type=Path, default=ROOT / "results")
    parser.add_argument("--work", type=Path, help="keep data here (default: a temp dir)")
    parser.add_argument(
        "--passes",
        action="store_true",
        help="also time the two Python passes alone, in this process, once per run",
    )
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
                if any(_archive_written_by_next_run(m) for m in opts.master):
                    # A machine's first local run writes the driver JVM's class archive
                    # (workers.backfill.class_archive), once: not a run to time.
                    print("  writing the JVM class archive (one untimed run)", flush=True)
                    backfill(query, archive, work / "out", opts.master[0])
                emb: list[float] = []
                runs: dict[str, list[dict[str, Any]]] = {m: [] for m in opts.master}
                counts = set()
                passes: list[dict[str, Any]] = []
                for _ in range(opts.runs):
                    wall, found = embedded(query, events)
                    emb.append(wall)
                    counts.add(found)
                    if opts.passes:
                        passes.append(python_passes(QUERIES[name], archive))
                        counts.add(passes[-1]["complex_events"])
                    line = f"  {name} {n}: embedded {wall:.1f}s"
                    for master in opts.master:
                        r = backfill(query, archive, work / "out", master)
                        runs[master].append(r)
                        counts.add(r["complex_events"])
                        line += (
                            f", {master} {r['wall_s']:.1f}s (fixed {r['fixed_s']:.1f}s, "
                            f"work {r['work_s']:.1f}s)"
                        )
                    print(line, flush=True)
                embedded_s = statistics.median(emb)
                for master, rs in runs.items():
                    row: dict[str, Any] = {
                        "query": name,
                        "events": n,
                        "master": master,
                        "runs": opts.runs,
                        "embedded_s": embedded_s,
                        "embedded_eps": n / embedded_s,
                        **{k: _median(rs, k) for k in ("wall_s", "job_s", "fixed_s", "work_s")},
                        "cores": rs[0]["cores"],
                        "complex_events": sorted(counts),
                        "equal": len(counts) == 1,
                        "all_runs": rs,
                        "embedded_runs": emb,
                    }
                    row["work_eps_per_core"] = n / row["work_s"] / row["cores"]
                    row["per_core_vs_embedded"] = row["work_eps_per_core"] / row["embedded_eps"]
                    row["wall_vs_embedded"] = embedded_s / row["wall_s"]
                    busy = [r["work_busy_cores"] for r in rs if r["work_busy_cores"] is not None]
                    row["work_busy_cores"] = statistics.median(busy) if busy else None
                    if passes:
                        for k in ("prepare_cpu_s", "evaluate_cpu_s"):
                            row[k] = statistics.median(p[k] for p in passes)
                        row["passes_runs"] = passes
                    rows.append(row)
                    print(json.dumps({k: v for k, v in row.items() if "runs" not in k}))
    finally:
        if opts.work is None:
            shutil.rmtree(work, ignore_errors=True)
    _report(rows, opts)


def _stock(n: int) -> dict[str, Any]:
    from benchmarks.datasets import stock

    return {**stock(n), "desk": desks(0, n)}


def _speedups(rows: list[dict[str, Any]]) -> None:
    """Each row's work speedup over the one-core run of the same query and size."""
    one = {(r["query"], r["events"]): r for r in rows if r["cores"] == 1}
    for r in rows:
        base = one.get((r["query"], r["events"]))
        r["work_speedup_vs_1_core"] = None if base is None else base["work_s"] / r["work_s"]
        r["wall_speedup_vs_1_core"] = None if base is None else base["wall_s"] / r["wall_s"]


def _cores(busy: float | None) -> str:
    return "" if busy is None else f"{busy:.2f}"


def _report(rows: list[dict[str, Any]], opts: argparse.Namespace) -> None:
    _speedups(rows)
    lines = [
        "# Backfill vs one embedded process",
        "",
        f"`python -m benchmarks.backfill --events {' '.join(map(str, opts.events))} "
        f"--query {' '.join(opts.query)} --runs {opts.runs} --master {' '.join(opts.master)}"
        f"{' --passes' if opts.passes else ''}` "
        f"on {os.cpu_count()} cores; medians of {opts.runs} runs. 'fixed' is spark-submit's "
        "start to the session up with every core's Python worker started; 'work' the rest "
        "of the job; 'ev/s/core' = events / work / cores, against the embedded engine's "
        "events/s (`cerfleet run`, wall clock). Speedups are over the local[1] run. The "
        "driver JVM starts from its class archive (written by an untimed first run).",
        "",
        "| query | events | master | embedded s (ev/s) | backfill wall s | fixed s | work s | "
        "cores busy in work | ev/s/core | per core vs embedded | work speedup | wall speedup "
        "| complex events |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ws, ls = r["work_speedup_vs_1_core"], r["wall_speedup_vs_1_core"]
        lines.append(
            f"| {r['query']} | {r['events']:,} | {r['master']} | {r['embedded_s']:.1f} "
            f"({r['embedded_eps']:,.0f}) | {r['wall_s']:.1f} | {r['fixed_s']:.1f} | "
            f"{r['work_s']:.1f} | {_cores(r['work_busy_cores'])} | "
            f"{r['work_eps_per_core']:,.0f} | "
            f"{r['per_core_vs_embedded']:.2f}× | {'' if ws is None else f'{ws:.2f}×'} | "
            f"{'' if ls is None else f'{ls:.2f}×'} | "
            f"{'equal' if r['equal'] else 'DIFFER'} ({', '.join(map(str, r['complex_events']))}) |"
        )
    lines += [
        "",
        "'cores busy in work': CPU seconds of the job's processes (spark-submit, the JVM "
        "and its threads, Spark's Python workers; read from /proc) during the work, over "
        "the work's seconds.",
    ]
    timed = [r for r in rows if "prepare_cpu_s" in r and r["master"] == opts.master[0]]
    if timed:
        lines += [
            "",
            "The backfill's two Python passes alone, in one process without Spark "
            "(`--passes`: `prepare` over the archive's rows in 10,000-row batches, then "
            "`evaluate_batches` over them sorted as the job sorts them; CPU seconds, "
            "medians), against the embedded engine's whole run:",
            "",
            "| query | events | prepare s | evaluate s | both s | embedded s | embedded / both |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in timed:
            both = r["prepare_cpu_s"] + r["evaluate_cpu_s"]
            lines.append(
                f"| {r['query']} | {r['events']:,} | {r['prepare_cpu_s']:.2f} | "
                f"{r['evaluate_cpu_s']:.2f} | {both:.2f} | {r['embedded_s']:.2f} | "
                f"{r['embedded_s'] / both:.2f}× |"
            )
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "backfill.md").write_text("\n".join(lines) + "\n")
    (opts.out / "backfill.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
