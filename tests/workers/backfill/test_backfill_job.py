"""The backfill on real Spark (local[2]) gives exactly what ``cerfleet run`` gives.

100,000 stock events go through the file compaction into an archive; each query is
then backfilled from the archive and compared, complex event by complex event,
with ``cerfleet run`` over the same file: same events, same positions (each
output names its events' offsets, which are the file's line numbers), and under
PARTITION BY the same keys.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest

from benchmarks.datasets import stock, write_jsonl
from benchmarks.fleet_workload import GLOBAL, PARTITIONED
from cerfleet.query import compile_query
from cerfleet.workers.backfill import backfill_job, compact_job

EVENTS = 100_000
TIME_FIELD = "stock_time"
# Without PARTITION BY and not sliceable (LAST chooses among runs across the window):
# evaluated as one stream in one task.
LAST_BY_EVENTS = """SELECT LAST * FROM S WHERE SELL as a ; BUY+ as b ; SELL as c
FILTER a[name = 'DELL'] AND b[name = 'DELL'] AND c[name = 'DELL']
WITHIN 40 EVENTS"""
# Correlations: checked at enumeration, per key and over time slices; one tying both
# events to one name (an implicit key the backfill must not route by).
CORRELATED_KEYS = """SELECT * FROM S WHERE SELL as a ; SELL as b
FILTER a[name = 'INTC'] AND b[price] > a[price] * 1.01
PARTITION BY [name] WITHIN 2000 [stock_time]"""
CORRELATED_SLICES = """SELECT * FROM S WHERE BUY as a ; SELL as b
FILTER a[name] = b[name] AND a[volume > 500] AND b[volume] > a[volume]
WITHIN 1000 [stock_time]"""
QUERIES = {
    "partitioned": PARTITIONED,
    "sliced": GLOBAL,
    "whole": LAST_BY_EVENTS,
    "correlated-keys": CORRELATED_KEYS,
    "correlated-slices": CORRELATED_SLICES,
}
MODES = {
    "partitioned": "keys",
    "sliced": "slices",
    "whole": "whole",
    "correlated-keys": "keys",
    "correlated-slices": "slices",
}


@pytest.fixture(scope="module")
def stock_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("stock") / "stock.jsonl"
    write_jsonl(path, stock(EVENTS))
    return path


@pytest.fixture(scope="module")
def archive(spark: Any, stock_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("archive") / "stock"
    args = ["--archive", str(path), "--jsonl", str(stock_file), "--topic", "stock"]
    assert compact_job.main([*args, "--time-field", TIME_FIELD]) == 0
    return path


def _cerfleet_run(query_file: Path, events: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cerfleet.cli",
            "run",
            str(query_file),
            str(events),
            "--time-field",
            TIME_FIELD,
            "--quiet",
        ],
        capture_output=True,
        check=True,
        timeout=600,
    )
    return [orjson.loads(line) for line in done.stdout.splitlines()]


def _summary(out: str) -> dict[str, Any]:
    [line] = [x for x in out.splitlines() if x.startswith('{"summary"')]
    return json.loads(line)["summary"]


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_backfill_equals_cerfleet_run(
    name: str,
    spark: Any,
    archive: Path,
    stock_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    query_file = tmp_path / f"{name}.ceql"
    query_file.write_text(QUERIES[name])
    output = tmp_path / "out"
    code = backfill_job.main(
        [
            "--ceql",
            str(query_file),
            "--time-field",
            TIME_FIELD,
            "--archive",
            str(archive),
            "--output",
            str(output),
            "--partitions",
            "4",
        ]
    )
    assert code == 0
    summary = _summary(capsys.readouterr().out)
    expected = _cerfleet_run(query_file, stock_file)
    assert expected, "the comparison needs complex events"

    rows = pq.read_table(output).to_pylist()
    docs = [orjson.loads(r["value"]) for r in rows]
    for row, doc in zip(rows, docs, strict=True):
        assert (doc["query"], doc["keyed"]) == (name, None)
        assert (row["start"], row["end"], row["key"]) == (
            doc["start"],
            doc["end"],
            None if doc["key"] is None else json.dumps(doc["key"], separators=(",", ":")),
        )
        assert all(s["topic"] == "stock" and s["partition"] == 0 for s in doc["sources"])

    def backfilled(doc: dict[str, Any]) -> tuple[Any, ...]:
        offsets = tuple(s["offset"] for s in doc["sources"])
        return (orjson.dumps(doc["key"]), offsets, orjson.dumps(doc["events"]))

    def embedded(ce: dict[str, Any]) -> tuple[Any, ...]:
        return (orjson.dumps(ce["key"]), tuple(ce["positions"]), orjson.dumps(ce["events"]))

    assert Counter(map(backfilled, docs)) == Counter(map(embedded, expected))
    query = compile_query(QUERIES[name], time_field=TIME_FIELD)
    if not query.partitioned:
        # One stream: start and end are the stream's positions, as in `cerfleet run`.
        assert Counter((d["start"], d["end"]) for d in docs) == Counter(
            (ce["start"], ce["end"]) for ce in expected
        )
    assert summary["mode"] == MODES[name]
    assert summary["events_read"] == EVENTS and summary["bad_records"] == 0
    assert summary["complex_events"] == len(expected) == len(rows)
    if name == "partitioned":
        keys = {e["name"] for e in map(orjson.loads, stock_file.read_bytes().splitlines())}
        assert summary["keys"] == len(keys)
    if name == "sliced":
        assert summary["slices"] > 1
