"""A MATCH_RECOGNIZE backfill on real Spark (local[2]) writes the rows ``cerfleet run``
prints: per PARTITION BY key in the same order, MATCH_NUMBER included (per key, each
key one unit; without PARTITION BY the whole stream in one task, never time slices)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest

from benchmarks.datasets import stock, write_jsonl
from cerfleet.workers.backfill import backfill_job

EVENTS = 20_000
QUERIES = {
    # A correlation (B reads A's row), a row per row of each match, per key.
    "dip": """SELECT * FROM Stock MATCH_RECOGNIZE (PARTITION BY name
  MEASURES MATCH_NUMBER() AS mn, CLASSIFIER() AS var, FIRST(A.price) AS a
  ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW
  PATTERN (A B) DEFINE A AS A.volume > 900, B AS B.price < A.price)""",
    # No PARTITION BY, PREV, a window on the time field: MATCH_NUMBER over the stream.
    "rising": """SELECT * FROM Stock MATCH_RECOGNIZE (
  MEASURES MATCH_NUMBER() AS mn, FIRST(A.price) AS first_price, COUNT(*) AS n
  ONE ROW PER MATCH PATTERN (A B C) WITHIN INTERVAL '1' SECOND
  DEFINE A AS A.volume > 300, B AS B.price > PREV(B.price), C AS C.price > PREV(C.price))""",
    # A skip mode over a variable-length pattern (the standard's selection), per key:
    # the matches pending at the end of a key's rows are final there, as at run's end.
    "climb": """SELECT * FROM Stock MATCH_RECOGNIZE (PARTITION BY name
  MEASURES MATCH_NUMBER() AS mn, FIRST(A.price) AS low, COUNT(B.*) AS ups, COUNT(C.*) AS downs
  ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+ C+) DEFINE B AS B.price > PREV(B.price), C AS C.price < PREV(C.price))""",
    # The same selection without PARTITION BY, reluctant, under a window on the time
    # field: one task (where a match starts depends on every earlier row, no slices).
    "climb_all": """SELECT * FROM Stock MATCH_RECOGNIZE (
  MEASURES MATCH_NUMBER() AS mn, CLASSIFIER() AS var
  ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW
  PATTERN (A B+? C) WITHIN INTERVAL '1' SECOND
  DEFINE A AS A.volume > 900, B AS B.price >= PREV(B.price), C AS C.price < PREV(C.price))""",
}
MODES = {"dip": "keys", "rising": "whole", "climb": "keys", "climb_all": "whole"}


@pytest.fixture(scope="module")
def stock_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("stock") / "stock.jsonl"
    write_jsonl(path, stock(EVENTS, seed=3))
    return path


def by_key(rows: list[dict[str, Any]]) -> dict[Any, list[dict[str, Any]]]:
    out: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(row.get("name"), []).append(row)
    return out


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_backfill_writes_cerfleet_run_s_rows(
    name: str, spark: Any, stock_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query_file = tmp_path / f"{name}.sql"
    query_file.write_text(QUERIES[name])
    output = tmp_path / "out"
    args = ["--ceql", str(query_file), "--time-field", "stock_time", "--jsonl", str(stock_file)]
    assert backfill_job.main([*args, "--output", str(output), "--partitions", "4"]) == 0
    [line] = [x for x in capsys.readouterr().out.splitlines() if x.startswith('{"summary"')]
    summary = json.loads(line)["summary"]
    flags = ["--time-field", "stock_time", "--quiet"]
    done = subprocess.run(
        [sys.executable, "-m", "cerfleet.cli", "run", str(query_file), str(stock_file), *flags],
        capture_output=True,
        check=True,
        timeout=600,
    )
    expected = [orjson.loads(x) for x in done.stdout.splitlines()]
    assert len(expected) > 100, "the comparison needs rows"
    rows = pq.read_table(output).to_pylist()
    got = [orjson.loads(r["value"]) for r in rows]
    assert by_key(got) == by_key(expected)
    assert summary["mode"] == MODES[name]
    assert summary["complex_events"] == len(expected) == len(rows)
