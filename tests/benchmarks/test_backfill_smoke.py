"""The backfill benchmark's parts that run without Spark: the Python passes timed alone
give ``cerfleet run``'s answer, and the CPU of a process tree is read from ``/proc``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks import backfill, backfill_archive, process_cpu
from benchmarks.datasets import write_jsonl


@pytest.mark.parametrize("name", ["balanced", "partitioned"])
def test_python_passes_find_the_embedded_engines_complex_events(tmp_path: Path, name: str) -> None:
    n = 4000
    archive = tmp_path / "archive"
    backfill_archive.write_archive(archive, n)
    events = tmp_path / "events.jsonl"
    write_jsonl(events, backfill._stock(n))
    query = tmp_path / f"{name}.ceql"
    query.write_text(backfill.QUERIES[name])
    _, expected = backfill.embedded(query, events)
    assert expected > 0
    timed = backfill.python_passes(backfill.QUERIES[name], archive)
    assert timed["complex_events"] == expected
    assert timed["prepare_cpu_s"] > 0 and timed["evaluate_cpu_s"] > 0


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads Linux's /proc")
def test_cpu_of_a_process_tree_counts_its_children() -> None:
    # A shell whose child burns about 0.3 s of CPU: the tree's CPU must include it.
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    proc = subprocess.Popen(["sh", "-c", f'"{sys.executable}" -c "{burn}"; sleep 0.5'])
    sampler = process_cpu.CpuSampler(proc.pid)
    began = time.time()
    try:
        proc.wait(30)
    finally:
        sampler.stop()
    used = sampler.between(began, time.time())
    assert used is not None and 0.2 <= used <= 2.0
    # Nothing runs in the tree before it starts.
    assert sampler.between(began - 10, began - 5) == 0.0


@pytest.mark.skipif(
    not os.environ.get("JAVA_HOME") and shutil.which("java") is None,
    reason="Spark needs Java 17 or 21, as the backfill tests do (README)",
)
def test_the_first_pass_in_spark_expressions_times_every_step(tmp_path: Path) -> None:
    from benchmarks import spark_first_pass
    from cerfleet.workers.backfill.spark_session import session

    archive = tmp_path / "archive"
    backfill_archive.write_archive(archive, 3000)
    # The suite's one Spark session (the backfill tests' fixture stops it at the end).
    times = spark_first_pass.measure(session("cerfleet-tests"), archive, 1)
    assert list(times) == ["read", "json_tuple", "from_json", "first pass"]
    assert all(len(t) == 1 and t[0] > 0 for t in times.values())
    # The steps read what the backfill's first pass finds: every record's desk and time.
    spark = session("cerfleet-tests")
    df = spark.read.parquet(str(archive))
    first = spark_first_pass._steps(df)["first pass"]
    rows = first.collect()
    assert len(rows) == 3000
    assert {r["unit"] for r in rows} == {str(d) for d in range(backfill_archive.DESKS)}
    assert all(r["t"] is not None for r in rows)
