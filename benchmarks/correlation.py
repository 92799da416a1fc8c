"""Correlated queries on the stock stream: events/s, complex events, and the branches
enumeration walks with pruning against enumerate-then-filter.

    python -m benchmarks.correlation --events 1000000 --runs 3

Each query runs through ``process_columns`` on 64k-row batches of the seeded stock
stream (the engine with enumeration, no I/O). "rising price" and "same volume" are
checked at enumeration; "same stock" ties every event to one name and becomes an
implicit PARTITION BY. The pruned and unpruned runs must output the same complex
events; "visited" counts the tECS output nodes the walk fixed. Writes
``correlation.md`` and ``correlation.json`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.datasets import batches
from benchmarks.measure import peak_mib
from cerfleet import compile_query
from cerfleet.evaluation.correlated import Correlator

WINDOW = "WITHIN 10000 [stock_time]"
QUERIES = {
    "rising price": (
        "SELECT * FROM S WHERE SELL AS a ; SELL AS b ; SELL AS c "
        "FILTER a[name = 'INTC'] AND b[name = 'INTC'] AND c[name = 'INTC'] "
        f"AND b[price] > a[price] AND c[price] > b[price] {WINDOW}"
    ),
    "same volume": (
        "SELECT * FROM S WHERE SELL AS a ; BUY AS b ; SELL AS c "
        "FILTER a[name = 'INTC'] AND b[name = 'RIMM'] AND c[name = 'QQQ'] "
        f"AND a[volume] = c[volume] {WINDOW}"
    ),
    "same stock (implicit key)": (
        "SELECT * FROM S WHERE SELL AS a ; BUY AS b ; SELL AS c "
        "FILTER a[name] = b[name] AND b[name] = c[name] AND a[price] < c[price] "
        f"AND a[name IN ('INTC', 'RIMM', 'QQQ')] {WINDOW}"
    ),
}


def run(text: str, events: int, prune: bool) -> dict[str, Any]:
    compiled = compile_query(text, time_field="stock_time")
    evaluator = compiled.evaluator()
    if evaluator.correlator is not None:
        evaluator.correlator = Correlator(evaluator.correlator.plan, prune=prune)
    data = list(batches("stock", events))  # generated before the clock starts
    out = 0
    start = time.perf_counter()
    for batch in data:
        out += len(evaluator.process_columns(batch))
    seconds = time.perf_counter() - start
    correlator = evaluator.correlator
    return {
        "events_per_s": events / seconds,
        "complex_events": out,
        "visited": None if correlator is None else correlator.visited,
        "pruned_branches": None if correlator is None else correlator.pruned,
        "implicit_keys": list(compiled.implicit_keys),
        "peak_mib": peak_mib(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    rows = []
    for name, text in QUERIES.items():
        modes = (True, False) if compile_query(text).correlation is not None else (True,)
        for prune in modes:
            results = [run(text, args.events, prune) for _ in range(args.runs)]
            counts = {r["complex_events"] for r in results}
            assert len(counts) == 1, f"{name}: runs disagree: {counts}"
            row = {
                "query": name,
                "enumeration": "pruned" if prune else "enumerate-then-filter",
                **results[0],
                "events_per_s": statistics.median(r["events_per_s"] for r in results),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
        if len(modes) == 2:
            pruned, unpruned = rows[-2], rows[-1]
            assert pruned["complex_events"] == unpruned["complex_events"], name
    lines = [
        "# Correlated queries",
        "",
        f"{args.events:,} stock events, median of {args.runs} runs, `process_columns` on",
        "64k-row batches (engine and enumeration, no I/O). `python -m benchmarks.correlation`.",
        "",
        "| query | enumeration | events/s | complex events | output nodes walked "
        "| branches pruned | implicit key |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        walked = "—" if r["visited"] is None else f"{r['visited']:,}"
        pruned = "—" if r["pruned_branches"] is None else f"{r['pruned_branches']:,}"
        lines.append(
            f"| {r['query']} | {r['enumeration']} | {r['events_per_s']:,.0f} "
            f"| {r['complex_events']:,} | {walked} | {pruned} "
            f"| {', '.join(r['implicit_keys']) or '—'} |"
        )
    for text in QUERIES.values():
        lines += ["", f"    {text}"]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "correlation.md").write_text("\n".join(lines) + "\n")
    (args.out / "correlation.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
