"""End to end: ``cerfleet run QUERY FILE > out``, process start to exit, beside the engine
alone and a read-and-decode-only pass over the same file.

    python -m benchmarks.end_to_end                        # 1M stock events, 3 runs
    python -m benchmarks.end_to_end --events 200000 --runs 5
    python -m benchmarks.end_to_end --memory-events 1000000 10000000   # peak memory

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
from pathlib import Path
from typing import Any

from benchmarks import datasets, queries
from benchmarks.measure import Spec, environment, run_in_subprocess

ONE_PROCESS = "CERFLEET_DECODE_PROCESS"  # =0: decode in the evaluating process


def _s3_at(window: int) -> str:
    # S3 as written, its window multiplied: many more complex events per event.
    within = f"WITHIN {10000 * window} [stock_time]"
    return queries.S(3).replace("WITHIN 10000 [stock_time]", within)


QUERIES = {"S3": queries.S(3), "Q7": queries.Q(7), "S3 at 4T": _s3_at(4)}


def write_files(folder: Path, n: int, *, csv_too: bool = True) -> tuple[Path, Path]:
    jsonl, csv_path = folder / f"stock-{n}.jsonl", folder / f"stock-{n}.csv"
    if not jsonl.exists():
        datasets.write_jsonl(jsonl, datasets.stock(n, seed=1))
    if csv_too and not csv_path.exists():
        with open(csv_path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            header = False
            for batch in datasets.batches("stock", n, seed=1):
                if not header:
                    writer.writerow(list(batch))
                    header = True
                writer.writerows(zip(*(col.tolist() for col in batch.values()), strict=True))
    return jsonl, csv_path


# Runs a command in a fork of this small interpreter and reports its wall seconds and
# peak RSS. Linux carries the peak RSS of the process that execs over the exec, and a
# command started straight from the benchmark (which holds the generated data) would
# report the benchmark's peak as its own.
_LAUNCH = (
    "import os,sys,time\n"
    "t=time.perf_counter();p=os.fork()\n"
    "if p==0:os.execv(sys.argv[1],sys.argv[1:])\n"
    "_,s,u=os.wait4(p,0)\n"
    "print(time.perf_counter()-t,u.ru_maxrss,s,file=sys.stderr)"
)


def timed(argv: list[str], out: Path, env: dict[str, str] | None = None) -> dict[str, float]:
    """Wall seconds, peak RSS (MiB; the larger of the evaluating process and its
    decoding child) and bytes written of one process."""
    with open(out, "wb") as sink:
        proc = subprocess.run(
            [sys.executable, "-c", _LAUNCH, *argv],
            stdout=sink,
            stderr=subprocess.PIPE,
            env=env or environment(),
            check=False,
        )
    wall, peak_kib, status = proc.stderr.decode().split()[-3:]
    if int(status) != 0:
        raise RuntimeError(f"{argv} exited with {status}")
    return {"seconds": float(wall), "peak_mib": int(peak_kib) / 1024, "bytes": out.stat().st_size}


def decode_only(path: Path, query: str) -> float:
    """Seconds to read and decode ``path`` (JSON Lines or CSV) into the query's columns
    in one process, nothing evaluated."""
    code = (
        "import sys,time,io;from cerfleet.query import compile_query;"
        "from cerfleet.events.line_batches import line_batches;"
        "from cerfleet.events.csv_columns import csv_batches;"
        "q=compile_query(open(sys.argv[1]).read());d=q.json_decoder;t=time.perf_counter();"
        "f=open(sys.argv[2],'rb');n=0\n"
        "if sys.argv[2].endswith('.csv'):\n"
        " for b,_ in csv_batches(f.raw.read,d.attributes,q.type_field):\n  n+=len(b)\n"
        "else:\n"
        " for b in line_batches(f.raw.read):\n  n+=len(d.decode(b.lines,b.numbers))\n"
        "print(time.perf_counter()-t)"
    )
    with tempfile.NamedTemporaryFile("w", suffix=".ceql", delete=False) as qf:
        qf.write(query)
    try:
        out = subprocess.run(
            [sys.executable, "-c", code, qf.name, str(path)],
            check=True,
            capture_output=True,
            env=environment(),
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
        # What the second core gives: the same run with decoding in the one process.
        one_core = environment(**{ONE_PROCESS: "0"})
        inline = [timed([*cli, str(jsonl)], folder / "o", one_core) for _ in range(runs)]
        row["jsonl_one_process_events_per_s"] = n / median([s["seconds"] for s in inline])
        jl = row["jsonl"]
        jl["complex_events_per_s"] = row["complex_events"] / jl["seconds"]
        jl["mb_written_per_s"] = jl["bytes_written"] / jl["seconds"] / 1e6
        engine = [run_in_subprocess(Spec("stock", n, text, path="columns")) for _ in range(runs)]
        row["engine_events_per_s"] = median([r.rate for r in engine if r is not None])
        row["decode_events_per_s"] = n / median([decode_only(jsonl, text) for _ in range(runs)])
        row["csv_decode_events_per_s"] = n / median(
            [decode_only(csv_path, text) for _ in range(runs)]
        )
        row["end_to_end_over_engine"] = jl["events_per_s"] / row["engine_events_per_s"]
        results["queries"][name] = row
        print(name, json.dumps(row), flush=True)
    return results


def memory(n: int, folder: Path) -> dict[str, float]:
    jsonl, _ = write_files(folder, n, csv_too=False)
    qfile = folder / "S3.ceql"
    qfile.write_text(QUERIES["S3"], encoding="utf-8")
    s = timed([sys.executable, "-m", "cerfleet.cli", "run", str(qfile), str(jsonl)], folder / "o")
    return {"events": n, "peak_mib": s["peak_mib"], "seconds": s["seconds"], "load": load()}


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def markdown(results: dict[str, Any], extra: list[dict[str, float]]) -> str:
    n = results["events"]
    lines = [
        "# End to end: `cerfleet run` from bytes to complex events",
        "",
        f"{n:,} synthetic stock events (`benchmarks.datasets.stock`, seed 1), median of "
        f"{results['runs']} runs, each a fresh process, output written to a file. "
        "`run` figures include process start (bytecode cached, as installed). Run: "
        "decoding in a forked second process; one process: `CERFLEET_DECODE_PROCESS=0`. "
        "Engine: `process_columns` on pre-built 64k-row columns. Decode: the ingestion "
        "layer alone, one process, nothing evaluated. Peak MiB: the larger of the "
        "evaluating process and its decoding child. "
        f"Load average (1, 5, 15 min) at the start: {results.get('load_start', '?')}, "
        f"at the end: {results.get('load_end', '?')}.",
        "",
        "| query | complex events | run JSONL ev/s | one process | run CSV ev/s "
        "| engine ev/s | decode JSONL | decode CSV | run / engine | complex events/s "
        "| MB/s written | peak MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in results["queries"].items():
        jl = row["jsonl"]
        lines.append(
            f"| {name} | {row['complex_events']:,} | {jl['events_per_s']:,.0f} "
            f"| {row['jsonl_one_process_events_per_s']:,.0f} "
            f"| {row['csv']['events_per_s']:,.0f} | {row['engine_events_per_s']:,.0f} "
            f"| {row['decode_events_per_s']:,.0f} | {row['csv_decode_events_per_s']:,.0f} "
            f"| {row['end_to_end_over_engine']:.2f} "
            f"| {jl['complex_events_per_s']:,.0f} | {jl['mb_written_per_s']:.1f} "
            f"| {jl['peak_mib']:.0f} |"
        )
    if extra:
        lines += [
            "",
            "Peak memory of `cerfleet run S3 FILE` (JSON Lines, one run each):",
            "",
            "| events | peak MiB | seconds | load average |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {m['events']:,} | {m['peak_mib']:.0f} | {m['seconds']:.1f} | {m['load']} |"
            for m in extra
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--memory-events", type=int, nargs="*", default=[])
    parser.add_argument("--data", type=Path, help="folder for the generated files (kept)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--name", default="end_to_end", help="results file name (no suffix)")
    args = parser.parse_args(argv)
    folder = args.data or Path(tempfile.mkdtemp(prefix="cerfleet-e2e-"))
    folder.mkdir(parents=True, exist_ok=True)
    start = load()
    results = measure(args.events, args.runs, folder)
    extra = [memory(m, folder) for m in args.memory_events]
    results["load_start"], results["load_end"] = start, load()
    results["memory"] = extra
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / f"{args.name}.md").write_text(markdown(results, extra))
    print(markdown(results, extra))


if __name__ == "__main__":
    main()
