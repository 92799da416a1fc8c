"""Peak memory of ``cerfleet run`` against the number of distinct PARTITION BY keys.

    python -m benchmarks.key_memory [--events 1000000] [--keys 1000 1000000]

Writes one JSON Lines file per key count (same events, types and times; only the key
spread differs), runs ``cerfleet run`` on each in a child process, and prints each
run's peak RSS (the child's ru_maxrss) and its ratio to the first run. A benchmark,
not a test: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

QUERY = """SELECT * FROM S WHERE BUY as a ; SELL as b
FILTER a[price > 50] AND b[price < 50]
PARTITION BY [user] WITHIN 100 MILLISECONDS"""


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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        query = Path(tmp) / "q.ceql"
        query.write_text(QUERY)
        first = None
        for keys in args.keys:
            events = Path(tmp) / f"events-{keys}.jsonl"
            write_events(events, args.events, keys)
            seconds, mib = run(query, events)
            first = first or mib
            print(
                f"{args.events:,} events, {keys:,} keys: peak {mib:.0f} MiB "
                f"({mib / first:.2f}x the first), {seconds:.1f} s",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
