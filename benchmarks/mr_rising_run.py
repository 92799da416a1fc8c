"""MATCH_RECOGNIZE end to end: a "rising run" per stock, ``cerfleet run QUERY FILE > out``.

    python -m benchmarks.mr_rising_run                      # 1M stock events, 3 runs
    python -m benchmarks.mr_rising_run --events 200000 --runs 5

The query is the issue's: ``PATTERN (A B+) DEFINE B AS B.price > PREV(B.price)`` with
PARTITION BY the ticker, under ALL MATCHES (the engine's own selection; the AFTER MATCH
SKIP modes of variable-length patterns run in ``match_recognize.stream``, README),
MEASURES over the match. PREV is a lagged column
per partition (``evaluation.lag``), so the DEFINE is a unary predicate. Under ALL
MATCHES a run of k rises gives k(k+1)/2 matches; the stock data's prices rise about
every other row, so runs are short and the output stays near the input's size.

Per run: wall clock of the whole ``cerfleet run`` process on the JSON Lines file
(process start included, output written to a file), events/s, output rows, peak
resident memory; and the engine alone (``process_columns`` on pre-built 64k-row
columns, ``benchmarks.measure``) so the output stage's share shows. Medians of
``--runs`` runs, each a fresh process. Writes ``mr_rising_run.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks import datasets
from benchmarks.end_to_end import timed
from benchmarks.measure import Spec, run_in_subprocess

QUERY = """SELECT * FROM Stock MATCH_RECOGNIZE (
  PARTITION BY name
  ORDER BY stock_time
  MEASURES FIRST(A.price) AS low, LAST(B.price) AS high, COUNT(B.*) AS rises
  ALL MATCHES
  PATTERN (A B+)
  DEFINE B AS B.price > PREV(B.price)
)
"""


def measure(n: int, runs: int, folder: Path) -> dict[str, Any]:
    jsonl = folder / f"stock-{n}.jsonl"
    if not jsonl.exists():
        datasets.write_jsonl(jsonl, datasets.stock(n, seed=1))
    qfile = folder / "rising_run.sql"
    qfile.write_text(QUERY, encoding="utf-8")
    cli = [sys.executable, "-m", "cerfleet.cli", "run", "--quiet", str(qfile), str(jsonl)]
    samples = [timed(cli, folder / "out.jsonl") for _ in range(runs)]
    with open(folder / "out.jsonl", "rb") as f:
        rows = sum(1 for _ in f)
    seconds = statistics.median(s["seconds"] for s in samples)
    engine = [
        run_in_subprocess(Spec("stock", n, QUERY, path="columns", language="match_recognize"))
        for _ in range(runs)
    ]
    rates = [r.rate for r in engine if r is not None]
    return {
        "events": n,
        "runs": runs,
        "query": QUERY,
        "run_seconds": seconds,
        "run_seconds_all": [s["seconds"] for s in samples],
        "run_events_per_s": n / seconds,
        "output_rows": rows,
        "bytes_written": samples[0]["bytes"],
        "peak_mib": max(s["peak_mib"] for s in samples),
        "engine_events_per_s": statistics.median(rates) if rates else None,
    }


def markdown(r: dict[str, Any]) -> str:
    engine = r["engine_events_per_s"]
    return "\n".join(
        [
            "# MATCH_RECOGNIZE: rising runs per stock, end to end",
            "",
            f"{r['events']:,} synthetic stock events (`benchmarks.datasets.stock`, seed 1), "
            f"median of {r['runs']} runs, each `cerfleet run` a fresh process (start "
            "included), output written to a file. Engine: `process_columns` on pre-built "
            "64k-row columns, no output stage.",
            "",
            "```sql",
            r["query"].rstrip(),
            "```",
            "",
            "| events | run s (median) | run ev/s | engine ev/s | output rows | MB written "
            "| peak MiB |",
            "|---|---|---|---|---|---|---|",
            f"| {r['events']:,} | {r['run_seconds']:.2f} | {r['run_events_per_s']:,.0f} "
            f"| {'-' if engine is None else f'{engine:,.0f}'} | {r['output_rows']:,} "
            f"| {r['bytes_written'] / 1e6:.1f} | {r['peak_mib']:.0f} |",
            "",
            "Run seconds, every run: "
            + ", ".join(f"{s:.2f}" for s in r["run_seconds_all"])
            + ". Reproduce: `python -m benchmarks.mr_rising_run "
            + f"--events {r['events']} --runs {r['runs']}`.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--data", type=Path, default=Path("benchmarks/data"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    args.data.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    results = measure(args.events, args.runs, args.data)
    print(json.dumps({k: v for k, v in results.items() if k != "query"}), flush=True)
    (args.out / "mr_rising_run.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "mr_rising_run.md").write_text(markdown(results))


if __name__ == "__main__":
    main()
