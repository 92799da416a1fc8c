"""Peak memory of ``cerfleet run`` against the number of distinct PARTITION BY keys.

    python -m benchmarks.key_memory [--events 1000000] [--keys 1000 1000000] [--runs 3]

Writes one JSON Lines file per key count (same events, types and times; only the key
spread differs), runs ``cerfleet run`` on each in a child process, ``--runs`` rounds
taking the key counts in turn (so a busy spell of the machine hits them alike), and
prints each run's peak RSS (the child's ru_maxrss), then per key count the median
peak and its ratio to the first key count's median; writes
``benchmarks/results/key_memory.md`` and ``.json``. A benchmark, not a test: the
figures depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

QUERY = """SELECT * FROM S WHERE BUY as a ; SELL as b
FILTER a[price > 50] AND b[price < 50]
PARTITION BY [user] WITHIN 100 MILLISECONDS"""
RESULTS = Path(__file__).parent / "results"


def write_events(path: Path, n: int, keys: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    with open(path, "wb") as out:
        for i in range(n):
            event = {
                "type": rng.choice(("BUY", "SELL", "HOLD")),
                "user": f"u{rng.randrange(keys)}",
                "price": rng.randrange(100),
                "timestamp": i,  # one event per millisecond
            }
            out.write(orjson.dumps(event) + b"\n")


def run(query: Path, events: Path) -> tuple[float, float]:
    """Seconds and peak RSS (MiB) of one ``cerfleet run``."""
    started = time.monotonic()
    with subprocess.Popen(
        [sys.executable, "-m", "cerfleet.cli", "run", "--quiet", str(query), str(events)],
        stdout=subprocess.DEVNULL,
    ) as child:
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = status
    if status != 0:
        raise SystemExit(f"cerfleet run failed on {events}: status {status}")
    return time.monotonic() - started, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, nargs="+", default=[1_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    peaks: dict[int, list[float]] = {keys: [] for keys in args.keys}
    times: dict[int, list[float]] = {keys: [] for keys in args.keys}
    with tempfile.TemporaryDirectory() as tmp:
        query = Path(tmp) / "q.ceql"
        query.write_text(QUERY)
        files = {}
        for keys in args.keys:
            files[keys] = Path(tmp) / f"events-{keys}.jsonl"
            write_events(files[keys], args.events, keys)
        for round_ in range(1, args.runs + 1):
            for keys in args.keys:
                seconds, mib = run(query, files[keys])
                peaks[keys].append(mib)
                times[keys].append(seconds)
                print(
                    f"run {round_}: {args.events:,} events, {keys:,} keys: "
                    f"peak {mib:.0f} MiB, {seconds:.1f} s",
                    flush=True,
                )
    first = statistics.median(peaks[args.keys[0]])
    rows = []
    for keys in args.keys:
        median = statistics.median(peaks[keys])
        row = {
            "keys": keys,
            "distinct_keys": distinct_keys(args.events, keys),
            "peak_mib": [round(p, 1) for p in peaks[keys]],
            "median_peak_mib": round(median, 1),
            "ratio": round(median / first, 2),
            "median_seconds": round(statistics.median(times[keys]), 1),
        }
        rows.append(row)
        print(
            f"{args.events:,} events, {keys:,} keys ({row['distinct_keys']:,} distinct): "
            f"median peak {median:.0f} MiB ({row['ratio']:.2f}x the first), "
            f"median {row['median_seconds']:.1f} s",
            flush=True,
        )
    write_results(args.events, args.runs, rows)
    return 0


def distinct_keys(n: int, keys: int, seed: int = 1) -> int:
    """How many distinct keys ``write_events`` draws (the same draws, replayed)."""
    rng = random.Random(seed)
    seen = set()
    for _ in range(n):
        rng.choice(("BUY", "SELL", "HOLD"))
        seen.add(rng.randrange(keys))
        rng.randrange(100)
    return len(seen)


def write_results(events: int, runs: int, rows: list[dict[str, object]]) -> None:
    RESULTS.mkdir(exist_ok=True)
    doc = {"query": QUERY, "events": events, "runs": runs, "rows": rows}
    (RESULTS / "key_memory.json").write_text(json.dumps(doc, indent=2) + "\n")
    lines = [
        "# Peak memory of `cerfleet run` against the number of PARTITION BY keys",
        "",
        f"`python -m benchmarks.key_memory --events {events} --runs {runs}`: "
        f"`cerfleet run` over {events:,} events, one per millisecond, of",
        "",
        "```",
        QUERY,
        "```",
        "",
        "Peak RSS of the child process (ru_maxrss); the key counts run in turn, "
        f"{runs} rounds; the median of the rounds.",
        "",
        "| keys drawn from | distinct keys | peak RSS per run (MiB) | median (MiB) | ratio "
        "| median seconds |",
        "|---:|---:|---|---:|---:|---:|",
    ]
    for row in rows:
        per_run = ", ".join(f"{p:.0f}" for p in row["peak_mib"])  # type: ignore[attr-defined]
        lines.append(
            f"| {row['keys']:,} | {row['distinct_keys']:,} | {per_run} | "
            f"{row['median_peak_mib']:.0f} | {row['ratio']:.2f}x | {row['median_seconds']:.1f} |"
        )
    lines.append("")
    (RESULTS / "key_memory.md").write_text("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
