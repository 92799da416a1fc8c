"""SPAseq over an RDF stock stream, modelled on the paper's SMD experiment: each trade
is a named graph of 6 triples (company, price, volume, sector, type, id) on one
company's stream, one trade per second, prices a random walk.

    python -m benchmarks.rdf                     # 20,000 trades, 3 runs
    python -m benchmarks.rdf --events 5000 --runs 5

Queries: seed 004's Query 4 (the V-shape, ``SEQ(A, B, C)`` with stateful filters on
the shared ``?company``) and its Kleene form ``SEQ(A, B+, C)`` (falling prices, then a
rise), each at two window sizes. Per query: events/s and triples/s of the evaluation
(instants → automaton → output rows, parsing excluded) and of parsing the TriG alone,
results found, with the shared variable and stateful filters checked by the output
stage alone or also by the engine (correlations), alternating; and Query 4 with ``;``
on ten companies' interleaved trades (``--keyed-events``), unpartitioned and
partitioned by the shared ``?company``. Medians of ``--runs`` runs in this process.
Writes ``rdf.md`` and ``rdf.json`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import time
from pathlib import Path
from typing import Any

from cerfleet.cli.rdf_run import results
from cerfleet.rdf.trig import read_trig

TRIPLES_PER_EVENT = 6

_HEAD = """PREFIX pred: <http://example/>
SELECT ?company ?p1 ?p2 ?p3
WITHIN {window} MINUTES
FROM STREAM S1 <http://stockmarket.org/stocks/google>
WHERE {{
  SEQ (A, {b}, C)
  DEFINE GPM A ON S1 {{ ?t1 pred:company ?company . ?t1 pred:price ?p1 . ?t1 pred:volume ?vol1 . }}
  DEFINE GPM B ON S1 {{ ?t2 pred:company ?company . ?t2 pred:price ?p2 . ?t2 pred:volume ?vol2 .
    FILTER (?p2 {rel} ?p1) }}
  DEFINE GPM C ON S1 {{ ?t3 pred:company ?company . ?t3 pred:price ?p3 . ?t3 pred:volume ?vol3 .
    FILTER (?p3 {rel3} ?p2) }}
}}
"""


def query(kleene: bool, window: int) -> str:
    # Query 4 as printed is up-then-down; the Kleene form is the V: down (B+), then up.
    if kleene:
        return _HEAD.format(window=window, b="B+", rel="<", rel3=">")
    return _HEAD.format(window=window, b="B", rel=">", rel3="<")


def trig(n: int, seed: int = 1, companies: int = 1) -> bytes:
    rng = random.Random(seed)
    prices = [100] * companies
    lines = [
        "@prefix pred: <http://example/> .",
        "@prefix t: <https://cerfleet.dev/ns#> .",
        "@prefix : <http://example/trades/> .",
    ]
    for i in range(n):
        c = rng.randrange(companies) if companies > 1 else 0
        price = prices[c] = max(1, prices[c] + rng.choice((-2, -1, -1, 0, 1, 1, 2)))
        kind = rng.choice(("buy", "sell"))
        company = "google" if companies == 1 else f"c{c}"
        lines.append(f":g{i} t:time {i} .")
        lines.append(
            f":g{i} {{ :t{i} pred:company :{company} ; pred:price {price} ; "
            f'pred:volume {rng.randrange(1, 1000)} ; pred:sector :tech ; pred:type "{kind}" ; '
            f"pred:id {i} . }}"
        )
    return ("\n".join(lines) + "\n").encode()


# (label, correlate, partition): who checks shared variables and stateful filters.
_CHECKS = [("output stage", False, False), ("engine correlations", True, False)]
_KEYED = [
    ("output stage", False, False),
    ("partitioned by ?company", False, True),
    ("partitioned + correlations", True, True),
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keyed-events", type=int, default=400)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    data = trig(args.events)
    parse_times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        events, _ = read_trig(data)
        parse_times.append(time.perf_counter() - t0)
    parse_s = statistics.median(parse_times)
    rows: list[dict[str, Any]] = []
    keyed, _ = read_trig(trig(args.keyed_events, companies=10))
    cases = [("Q4 SEQ(A, B, C)", query(False, w), w, events, _CHECKS) for w in (1, 5)] + [
        ("Q4 Kleene SEQ(A, B+, C)", query(True, w), w, events, _CHECKS) for w in (1, 5)
    ]
    cases.append(
        (
            "Q4 SEQ(A ; B ; C), 10 companies",
            query(False, 1).replace("SEQ (A, B, C)", "SEQ (A ; B ; C)"),
            1,
            keyed,
            _KEYED,
        )
    )
    for name, text, window, stream, variants in cases:
        # The variants alternate in this process (the machine is noisy).
        times: dict[str, list[float]] = {label: [] for label, _, _ in variants}
        found: dict[str, int] = {}
        for _ in range(args.runs):
            for label, correlate, partition in variants:
                t0 = time.perf_counter()
                found[label] = sum(
                    1
                    for _ in results(
                        text, [("S1", stream)], correlate=correlate, partition=partition
                    )
                )
                times[label].append(time.perf_counter() - t0)
        assert len(set(found.values())) == 1, found
        for label, _, _ in variants:
            s = statistics.median(times[label])
            n = len(stream)
            rows.append(
                {
                    "query": name,
                    "window_minutes": window,
                    "checks": label,
                    "events": n,
                    "results": found[label],
                    "seconds": round(s, 3),
                    "events_per_s": round(n / s),
                    "triples_per_s": round(n * TRIPLES_PER_EVENT / s),
                }
            )
            print(rows[-1], flush=True)
    parse_row = {
        "events": args.events,
        "seconds": round(parse_s, 3),
        "events_per_s": round(args.events / parse_s),
        "triples_per_s": round(args.events * TRIPLES_PER_EVENT / parse_s),
    }
    print("parse", parse_row)
    meta = {"python": platform.python_version(), "machine": platform.machine(), "runs": args.runs}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "rdf.json").write_text(
        json.dumps({"meta": meta, "parse": parse_row, "queries": rows}, indent=2) + "\n"
    )
    lines = [
        "# SPAseq over an RDF stock stream",
        "",
        f"`python -m benchmarks.rdf --events {args.events} --runs {args.runs} "
        f"--keyed-events {args.keyed_events}`: one company's "
        "trades (ten companies' for the last query), one per second, 6 triples each; "
        "medians of the runs, one process "
        f"(Python {meta['python']}, {meta['machine']}; a shared, noisy machine).",
        "",
        "| query | window | shared variables, stateful filters | results | s | events/s "
        "| triples/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['query']} | {r['window_minutes']} min | {r['checks']} | {r['results']} "
            f"| {r['seconds']} "
            f"| {r['events_per_s']:,} | {r['triples_per_s']:,} |"
        )
    lines += [
        "",
        f"Parsing the TriG alone (pyoxigraph): {parse_row['events_per_s']:,} events/s, "
        f"{parse_row['triples_per_s']:,} triples/s.",
        "",
    ]
    (args.out / "rdf.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
