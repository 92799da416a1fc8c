"""Peak memory of ``cerfleet run`` against the number of distinct PARTITION BY keys.

    python -m benchmarks.key_memory [--events 1000000] [--keys 1000 1000000] [--runs 3]

Writes one JSON Lines file per key count (same events, types and times; only the key
spread differs) and runs ``cerfleet run`` on each in a child process (this
interpreter), with the decoding process on (the default, ``CERFLEET_DECODE_PROCESS=1``:
a forked child decodes the next batch) and off (``=0``: one process). ``--runs``
rounds take every key count and both settings in turn, so a busy spell of the machine
hits them alike. Per run it records

- the largest single process: the ``ru_maxrss`` ``wait4`` reports, the high-water mark
  of the evaluating process and of the decoding child it reaped, whichever is larger
  (what one process's memory limit has to allow); and each one's own high-water mark
  (``VmHWM``, read from ``/proc`` until the process ends);
- the summed peak of the process tree: parent and decoding child sampled together
  from ``/proc`` every ``SAMPLE_SECONDS``, the largest sum of their resident sizes
  (``VmRSS``; pages the fork still shares count twice, as separate cgroups would see
  them) and of their proportional sizes (``Pss``: a shared page split between the
  two, what one cgroup holding both is charged). A sample can miss a peak shorter
  than the interval.

Then per setting and key count the medians and their ratio to the first key count's;
writes ``benchmarks/results/key_memory.md`` and ``.json``. A benchmark, not a test:
the figures depend on the machine.
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
import threading
import time
from pathlib import Path
from typing import Any

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


SAMPLE_SECONDS = 0.02
MEASURES = ("largest", "summed_rss", "summed_pss")
LABELS = {
    "largest": "largest process (ru_maxrss)",
    "summed_rss": "summed RSS of the tree",
    "summed_pss": "summed PSS of the tree",
}


def _status(pid: int) -> dict[str, float]:
    """A process's VmRSS and VmHWM (MiB) and its Pss (MiB); {} once it is gone."""
    out: dict[str, float] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line[:5]] = int(line.split()[1]) / 1024
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    out["Pss"] = int(line.split()[1]) / 1024
                    break
    except (OSError, ValueError):
        return {}
    return out


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


class Sampler(threading.Thread):
    """Samples a process and its children until ``stop``: per-process high-water
    marks, and the largest sums of RSS and of PSS taken at one instant."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.hwm: dict[int, float] = {}
        self.summed_rss = self.summed_pss = 0.0
        self.processes = 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            rss = pss = 0.0
            for pid in [self.pid, *_children(self.pid)]:
                got = _status(pid)
                if got:
                    self.hwm[pid] = max(self.hwm.get(pid, 0.0), got.get("VmHWM", 0.0))
                    rss += got.get("VmRSS", 0.0)
                    pss += got.get("Pss", 0.0)
            self.summed_rss = max(self.summed_rss, rss)
            self.summed_pss = max(self.summed_pss, pss)
            self.processes = max(self.processes, len(self.hwm))
            self.halt.wait(SAMPLE_SECONDS)


def run(query: Path, events: Path, decode_process: bool) -> dict[str, float]:
    """Seconds and the peaks (MiB) of one ``cerfleet run``."""
    env = dict(os.environ, CERFLEET_DECODE_PROCESS="1" if decode_process else "0")
    started = time.monotonic()
    with subprocess.Popen(
        [sys.executable, "-m", "cerfleet.cli", "run", "--quiet", str(query), str(events)],
        stdout=subprocess.DEVNULL,
        env=env,
    ) as child:
        sampler = Sampler(child.pid)
        sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = status
        sampler.halt.set()
        sampler.join()
    if status != 0:
        raise SystemExit(f"cerfleet run failed on {events}: status {status}")
    parent = sampler.hwm.get(child.pid, 0.0)
    others = [m for pid, m in sampler.hwm.items() if pid != child.pid]
    return {
        "seconds": time.monotonic() - started,
        "largest": usage.ru_maxrss / 1024,
        "parent_hwm": parent,
        "child_hwm": max(others, default=0.0),
        "summed_rss": sampler.summed_rss,
        "summed_pss": sampler.summed_pss,
        "processes": float(len(sampler.hwm)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, nargs="+", default=[1_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    settings = (True, False)  # decoding process on (the default), off
    runs: dict[tuple[bool, int], list[dict[str, float]]] = {
        (on, keys): [] for on in settings for keys in args.keys
    }
    with tempfile.TemporaryDirectory() as tmp:
        query = Path(tmp) / "q.ceql"
        query.write_text(QUERY)
        files = {}
        for keys in args.keys:
            files[keys] = Path(tmp) / f"events-{keys}.jsonl"
            write_events(files[keys], args.events, keys)
        for round_ in range(1, args.runs + 1):
            for on in settings:
                for keys in args.keys:
                    got = run(query, files[keys], on)
                    runs[on, keys].append(got)
                    print(
                        f"run {round_}: decoding process {'on' if on else 'off'}, "
                        f"{args.events:,} events, {keys:,} keys: "
                        + ", ".join(f"{m} {got[m]:.0f} MiB" for m in MEASURES)
                        + f" (evaluating {got['parent_hwm']:.0f}, decoding "
                        f"{got['child_hwm']:.0f}), {got['seconds']:.1f} s",
                        flush=True,
                    )
    rows = []
    for on in settings:
        first = {m: statistics.median(r[m] for r in runs[on, args.keys[0]]) for m in MEASURES}
        for keys in args.keys:
            got = runs[on, keys]
            row: dict[str, Any] = {
                "decode_process": on,
                "keys": keys,
                "distinct_keys": distinct_keys(args.events, keys),
                "median_seconds": round(statistics.median(r["seconds"] for r in got), 1),
            }
            for m in (*MEASURES, "parent_hwm", "child_hwm"):
                row[m] = [round(r[m], 1) for r in got]
                row[f"median_{m}"] = round(statistics.median(row[m]), 1)
            for m in MEASURES:
                row[f"ratio_{m}"] = round(row[f"median_{m}"] / first[m], 2)
            rows.append(row)
            print(
                f"decoding process {'on' if on else 'off'}, {keys:,} keys "
                f"({row['distinct_keys']:,} distinct): "
                + ", ".join(
                    f"{m} {row[f'median_{m}']:.0f} MiB ({row[f'ratio_{m}']:.2f}x)" for m in MEASURES
                ),
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


def write_results(events: int, runs: int, rows: list[dict[str, Any]]) -> None:
    RESULTS.mkdir(exist_ok=True)
    doc = {
        "query": QUERY,
        "events": events,
        "runs": runs,
        "sample_seconds": SAMPLE_SECONDS,
        "rows": rows,
    }
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
        "With the decoding process on (the default) and off (`CERFLEET_DECODE_PROCESS=0`); "
        f"every key count and setting in turn, {runs} rounds; medians of the rounds, "
        "ratios to the first key count's median in the same setting. Largest process: "
        "`ru_maxrss` (the larger of the evaluating process and the decoding child); "
        "evaluating / decoding: each one's `VmHWM`; summed: parent and child sampled "
        f"together every {SAMPLE_SECONDS * 1000:.0f} ms, the peak of their summed RSS "
        "(shared pages counted twice) and PSS (shared pages split).",
        "",
        "| decoding process | keys drawn from | distinct keys | largest process (MiB) "
        "| ratio | evaluating / decoding (MiB) | summed RSS (MiB) | ratio "
        "| summed PSS (MiB) | ratio | median seconds |",
        "|---|---:|---:|---|---:|---|---|---:|---|---:|---:|",
    ]
    for row in rows:

        def per_run(m: str, row: dict[str, Any] = row) -> str:
            runs_ = ", ".join(f"{p:.0f}" for p in row[m])
            return f"{row[f'median_{m}']:.0f} ({runs_})"

        lines.append(
            f"| {'on' if row['decode_process'] else 'off'} | {row['keys']:,} "
            f"| {row['distinct_keys']:,} | {per_run('largest')} | {row['ratio_largest']:.2f}x "
            f"| {row['median_parent_hwm']:.0f} / {row['median_child_hwm']:.0f} "
            f"| {per_run('summed_rss')} | {row['ratio_summed_rss']:.2f}x "
            f"| {per_run('summed_pss')} | {row['ratio_summed_pss']:.2f}x "
            f"| {row['median_seconds']:.1f} |"
        )
    lines += ["", "Medians first, each run's figure in brackets.", ""]
    (RESULTS / "key_memory.md").write_text("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
