"""End to end: ``cerfleet run QUERY FILE > out``, process start to exit, beside the engine
alone and a read-and-decode-only pass over the same file.

    python -m benchmarks.end_to_end                        # 1M stock events, 3 runs
    python -m benchmarks.end_to_end --events 200000 --runs 5
    python -m benchmarks.end_to_end --memory-events 10000000   # also peak memory at 10M

Per query (the CORE paper's S3 and Q7, and S3 at four times its window for a large
output): events/s of ``cerfleet run`` on JSON Lines and on CSV (wall clock of the
whole process, output written to a file), of the engine alone (``process_columns`` on
pre-built 64k-row columns, ``benchmarks.measure``), and of decoding only (the
ingestion layer over the JSON Lines, nothing evaluated); complex events and bytes
written per second; peak resident memory of the ``cerfleet run`` process. Medians of
``--runs`` runs, each command in a fresh process. Writes ``end_to_end.md`` and
``end_to_end.json`` into ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import datasets, queries
from benchmarks.measure import Spec, run_in_subprocess


def _s3_at(window: int) -> str:
    # S3 as written, its window multiplied: many more complex events per event.
    within = f"WITHIN {10000 * window} [stock_time]"
    return queries.S(3).replace("WITHIN 10000 [stock_time]", within)


QUERIES = {"S3": queries.S(3), "Q7": queries.Q(7), "S3 at 4T": _s3_at(4)}


def write_files(folder: Path, n: int) -> tuple[Path, Path]:
    jsonl, csv_path = folder / f"stock-{n}.jsonl", folder / f"stock-{n}.csv"
    if not jsonl.exists():
        datasets.write_jsonl(jsonl, datasets.stock(n, seed=1))
    if not csv_path.exists():
        with open(csv_path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            header = False
            for batch in datasets.batches("stock", n, seed=1):
                if not header:
                    writer.writerow(list(batch))
                    header = True
                writer.writerows(zip(*(col.tolist() for col in batch.values()), strict=True))
    return jsonl, csv_path


def timed(argv: list[str], out: Path) -> dict[str, float]:
    """Wall seconds, peak RSS (MiB) and bytes written of one process."""
    with open(out, "wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"{argv} exited with {status}")
    return {"seconds": wall, "peak_mib": usage.ru_maxrss / 1024, "bytes": out.stat().st_size}


def decode_only(path: Path, query: str) -> float:
    """Seconds to read and decode ``path`` into the query's columns, nothing evaluated."""
    code = (
        "import sys,time,io;from cerfleet.query import compile_query;"
        "from cerfleet.events.line_batches import line_batches;"
        "q=compile_query(open(sys.argv[1]).read());d=q.json_decoder;t=time.perf_counter();"
        "f=open(sys.argv[2],'rb');n=0\n"
        "for b in line_batches(f.raw.read):\n n+=len(d.decode(b.lines,b.numbers))\n"
        "print(time.perf_counter()-t)"
    )
    with tempfile.NamedTemporaryFile("w", suffix=".ceql", delete=False) as qf:
        qf.write(query)
    try:
        out = subprocess.run(
            [sys.executable, "-c", code, qf.name, str(path)], check=True, capture_output=True
        )
    finally:
        os.unlink(qf.name)
    return float(out.stdout)


def median(values: list[float]) -> float:
    return statistics.median(values)


def measure(n: int, runs: int, folder: Path) -> dict[str, Any]:
    jsonl, csv_path = write_files(folder, n)
    results: dict[str, Any] = {"events": n, "runs": runs, "queries": {}}
    for name, text in QUERIES.items():
        qfile = folder / f"{name.replace(' ', '_')}.ceql"
        qfile.write_text(text, encoding="utf-8")
        row: dict[str, Any] = {}
        cli = [sys.executable, "-m", "cerfleet.cli", "run", "--quiet", str(qfile)]
        for kind, path in (("jsonl", jsonl), ("csv", csv_path)):
            samples = [timed([*cli, str(path)], folder / "out.jsonl") for _ in range(runs)]
            seconds = median([s["seconds"] for s in samples])
            row[kind] = {
                "events_per_s": n / seconds,
                "seconds": seconds,
                "peak_mib": max(s["peak_mib"] for s in samples),
                "bytes_written": samples[0]["bytes"],
            }
        with open(folder / "out.jsonl", "rb") as f:
            row["complex_events"] = sum(1 for _ in f)
        jl = row["jsonl"]
        jl["complex_events_per_s"] = row["complex_events"] / jl["seconds"]
        jl["mb_written_per_s"] = jl["bytes_written"] / jl["seconds"] / 1e6
        engine = [run_in_subprocess(Spec("stock", n, text, path="columns")) for _ in range(runs)]
        row["engine_events_per_s"] = median([r.rate for r in engine if r is not None])
        row["decode_events_per_s"] = n / median([decode_only(jsonl, text) for _ in range(runs)])
        row["end_to_end_over_engine"] = jl["events_per_s"] / row["engine_events_per_s"]
        results["queries"][name] = row
        print(name, json.dumps(row), flush=True)
    return results


def memory(n: int, folder: Path) -> dict[str, float]:
    jsonl, _ = write_files(folder, n)
    qfile = folder / "S3.ceql"
    qfile.write_text(QUERIES["S3"], encoding="utf-8")
    s = timed([sys.executable, "-m", "cerfleet.cli", "run", str(qfile), str(jsonl)], folder / "o")
    return {"events": n, "peak_mib": s["peak_mib"], "seconds": s["seconds"]}


def markdown(results: dict[str, Any], extra: list[dict[str, float]]) -> str:
    n = results["events"]
    lines = [
        "# End to end: `cerfleet run` from bytes to complex events",
        "",
        f"{n:,} synthetic stock events (`benchmarks.datasets.stock`, seed 1), median of "
        f"{results['runs']} runs, each a fresh process, output written to a file. "
        "`run` figures include process start. Engine: `process_columns` on pre-built "
        "64k-row columns. Decode: the ingestion layer alone over the JSON Lines.",
        "",
        "| query | complex events | run JSONL ev/s | run CSV ev/s | engine ev/s | decode ev/s "
        "| run / engine | complex events/s | MB/s written | peak MiB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in results["queries"].items():
        jl = row["jsonl"]
        lines.append(
            f"| {name} | {row['complex_events']:,} | {jl['events_per_s']:,.0f} "
            f"| {row['csv']['events_per_s']:,.0f} | {row['engine_events_per_s']:,.0f} "
            f"| {row['decode_events_per_s']:,.0f} | {row['end_to_end_over_engine']:.2f} "
            f"| {jl['complex_events_per_s']:,.0f} | {jl['mb_written_per_s']:.1f} "
            f"| {jl['peak_mib']:.0f} |"
        )
    if extra:
        lines += ["", "| events | peak MiB | seconds |", "|---|---|---|"]
        lines += [f"| {m['events']:,} | {m['peak_mib']:.0f} | {m['seconds']:.1f} |" for m in extra]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--memory-events", type=int, nargs="*", default=[])
    parser.add_argument("--data", type=Path, help="folder for the generated files (kept)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    folder = args.data or Path(tempfile.mkdtemp(prefix="cerfleet-e2e-"))
    folder.mkdir(parents=True, exist_ok=True)
    results = measure(args.events, args.runs, folder)
    extra = [memory(m, folder) for m in args.memory_events]
    results["memory"] = extra
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "end_to_end.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "end_to_end.md").write_text(markdown(results, extra))
    print(markdown(results, extra))


if __name__ == "__main__":
    main()
