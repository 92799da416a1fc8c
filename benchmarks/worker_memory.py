"""A worker's memory over millions of keyed events: does it stay flat?

    python -m benchmarks.worker_memory [--events 5000000] [--keys 0]

Feeds the worker's evaluation core (``PartitionState``: the keyed partition's
queries, replay bookkeeping and checkpoints, all the state a worker keeps per
partition) one keyed record per millisecond of a ``PARTITION BY [user] WITHIN
100 MILLISECONDS`` query, in batches as a consumer poll would deliver them,
taking a checkpoint every 100,000 records as the worker does on its interval. The
Kafka clients are left out: their buffers are bounded by their own settings, not
by the keys. ``--keys 0`` (the default) gives every record a key of its own.

Prints the resident set size after each 250,000 records and writes
``benchmarks/results/worker_memory.md`` and ``.json``. A benchmark, not a test:
the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import time
from pathlib import Path

from cerfleet.fleet.registry import QuerySpec, RegistryHistory
from cerfleet.kept_json import dumps_kept
from cerfleet.workers.catalog import Catalog
from cerfleet.workers.partition import PartitionState, Record

QUERY = """SELECT * FROM S WHERE BUY as a ; SELL as b
FILTER a[price > 50] AND b[price < 50]
PARTITION BY [user] WITHIN 100 MILLISECONDS"""
BATCH = 10_000
CHECKPOINT_EVERY = 100_000
REPORT_EVERY = 250_000
RESULTS = Path(__file__).parent / "results"


def rss_mib() -> float:
    """The current resident set size (not the peak)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def partition() -> PartitionState:
    history = RegistryHistory()
    spec = QuerySpec(name="q", ceql=QUERY, input_topics=("in",), output_topic="out")
    history.apply(0, key=b"q", value=spec.model_dump_json().encode())
    catalog = Catalog(history, "bench")
    (entry,) = catalog.registry.current.values()
    return PartitionState(catalog.keyed_topic_of(entry), 0, catalog)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--keys", type=int, default=0, help="distinct keys (0: one per event)")
    args = parser.parse_args()
    state = partition()
    rng = random.Random(1)
    rows: list[dict[str, float]] = []
    started = time.monotonic()
    base = rss_mib()
    outputs = 0
    for lo in range(0, args.events, BATCH):
        records = []
        for i in range(lo, min(lo + BATCH, args.events)):
            user = f"u{i}" if args.keys == 0 else f"u{rng.randrange(args.keys)}"
            event = {
                "type": rng.choice(("BUY", "SELL", "HOLD")),
                "user": user,
                "price": rng.randrange(100),
                "timestamp": i,  # one event per millisecond
            }
            # A consumer's record value is a bytes object of its own size; orjson's
            # result would hold a 4 KiB buffer for as long as the event is held.
            records.append(Record(i, dumps_kept(event), ("in", 0, i), 1))
        out, _ = state.process(records)
        outputs += len(out)
        done = lo + len(records)
        if done % CHECKPOINT_EVERY == 0:
            state.checkpoint().encode()
        if done % REPORT_EVERY == 0 or done == args.events:
            row = {
                "events": done,
                "rss_mib": round(rss_mib(), 1),
                "active_keys": state.active_keys(),
                "seconds": round(time.monotonic() - started, 1),
            }
            rows.append(row)
            print(
                f"{done:>10,} events: RSS {row['rss_mib']:.0f} MiB, "
                f"{row['active_keys']:,} keys held, {row['seconds']:.0f} s",
                flush=True,
            )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"before the first event {base:.0f} MiB; peak {peak:.0f} MiB; {outputs:,} outputs")
    RESULTS.mkdir(exist_ok=True)
    doc = {"query": QUERY, "keys": args.keys, "rss_before_mib": round(base, 1), "rows": rows}
    doc["peak_mib"] = round(peak, 1)
    (RESULTS / "worker_memory.json").write_text(json.dumps(doc, indent=2) + "\n")
    lines = [
        "# Worker memory over keyed events",
        "",
        "`python -m benchmarks.worker_memory"
        + (f" --events {args.events}" if args.events != 5_000_000 else "")
        + "`: `PartitionState` (a keyed partition's evaluation, replay bookkeeping and "
        "checkpoints) fed one record per millisecond, "
        + ("each with a key of its own" if args.keys == 0 else f"{args.keys:,} keys")
        + ", of",
        "",
        "```",
        QUERY,
        "```",
        "",
        "| events | RSS (MiB) | keys held | seconds |",
        "|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['events']:,} | {r['rss_mib']:.0f} | {r['active_keys']:,} | {r['seconds']:.0f} |"
        for r in rows
    ]
    lines += ["", f"RSS before the first event: {base:.0f} MiB; peak: {peak:.0f} MiB.", ""]
    (RESULTS / "worker_memory.md").write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
