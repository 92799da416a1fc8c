"""Selection strategies keep constant time per event: events/s against window size.

The query ``A ; B+ ; C`` has, under ALL, a number of complex events (and of
partial matches) exponential in the number of B events in the window; NEXT and
LAST keep at most one marked-position set per automaton state, so their
throughput must not depend on the window. Prints a table: median events/s of
several runs for each strategy and window, and the ALL partial-match count per
window for scale. Run: ``python -m benchmarks.strategies [--events N] [--runs R]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

from cerfleet import compile_query


def stream(n: int, seed: int = 1) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    # Mostly B: every B doubles the partial matches of A ; B+ under ALL.
    return [{"type": rng.choices("ABC", weights=(1, 8, 1))[0]} for _ in range(n)]


def measure(query: str, events: list[dict[str, Any]], runs: int) -> tuple[float, float]:
    """Median events/s, and the mean size of the output per event (positions printed):
    enumeration is output-linear, so a strategy that outputs more is slower for that."""
    rates = []
    positions = 0
    for _ in range(runs):
        ev = compile_query(query).evaluator()
        process = ev.process
        positions = 0
        start = time.perf_counter()
        for e in events:
            for ce in process(e):
                positions += len(ce.positions)
        rates.append(len(events) / (time.perf_counter() - start))
    return statistics.median(rates), positions / len(events)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--windows", type=int, nargs="+", default=[10, 100, 1_000, 10_000])
    args = parser.parse_args()
    events = stream(args.events)
    b_share = sum(e["type"] == "B" for e in events) / len(events)
    print(f"{args.events} events, median of {args.runs} runs; query A ; B+ ; C WITHIN w EVENTS")
    header = f"{'window':>8} {'~2^B partial matches':>22}"
    strategies = ("NEXT", "LAST", "MAX", "STRICT")
    print(header + "".join(f" {s + ' ev/s (out/ev)':>24}" for s in strategies))
    for w in args.windows:
        exponent = round(w * b_share)
        row = f"{w:>8} {'2^' + str(exponent):>22}"
        for strategy in strategies:
            q = f"SELECT {strategy} * FROM S WHERE A ; B+ ; C WITHIN {w} EVENTS"
            rate, out = measure(q, events, args.runs)
            row += f" {rate:>13,.0f} ({out:>7.1f})"
        print(row, flush=True)


if __name__ == "__main__":
    main()
