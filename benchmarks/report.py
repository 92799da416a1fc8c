"""Benchmarks on the paper's workloads: events/s and peak memory of every suite query.

Run ``python -m benchmarks.report [--sizes N ...] [--runs 3] [--quick] [--out DIR]``.

For each size and each query of ``queries.suite()`` (Pn and Pn′ for n ∈ {3, 6,
9, 12, 24} on stock, smart homes and taxi, the window sweeps P3′ at T..4T and
Q1–Q7), it runs ``--runs`` measurements, each a fresh evaluator in a fresh
subprocess (``measure``), and keeps the median events/s and the largest peak
resident memory. A no-op pass over the same events (each field read, nothing
evaluated) gives the interpreter's limit for every dataset. It writes
``results.md`` (tables and the targets check), ``results.json`` and
``throughput.png``, and prints the targets with PASS or FAIL.

With-output queries carry ``LIMIT 1000``: at most 1000 complex events are
enumerated per event, as in the paper's experiments. ``--quick`` is 100k
events and one run.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.queries import PAPER_LIMIT, SIZES, WINDOW_FACTORS, suite
from benchmarks.report_rows import FAMILY_OF, NOOP, Row, fmt, fmt_rate, measure_rows

# --- formatting ----------------------------------------------------------------------


def _noop_rate(rows: Sequence[Row], dataset: str, size: int) -> float | None:
    for r in rows:
        if r.family == NOOP and r.dataset == dataset and r.size == size:
            return r.rate
    return None


def markdown_table(rows: Sequence[Row], size: int) -> str:
    head = "query | dataset | events | events/s | ratio to no-op | peak MiB | complex events | path"
    lines = [f"| {head} |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if r.size != size:
            continue
        noop = _noop_rate(rows, r.dataset, size)
        ratio = "" if r.rate is None or not noop else f"{r.rate / noop:.3f}"
        name = f"**{r.name}**" if r.family == NOOP else r.name
        lines.append(
            f"| {name} | {r.dataset} | {r.size:,} | {fmt_rate(r.rate)} | {ratio} | "
            f"{fmt(r.peak_mib, '.1f')} | {'' if r.family == NOOP else fmt(r.complex_events, ',')}"
            f" | {r.path} |"
        )
    return "\n".join(lines)


# --- targets -------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    target: str
    status: str  # PASS, FAIL or SKIP
    detail: str


def _rate_of(rows: Sequence[Row], name: str, size: int) -> float | None:
    for r in rows:
        if r.name == name and r.size == size and r.family != NOOP:
            return r.rate
    return None


def _at_least(target: str, values: dict[str, float | None], floor: float) -> Check:
    if not values:
        return Check(target, "SKIP", "not measured")
    parts = [f"{k} {fmt_rate(v)}" for k, v in values.items()]
    ok = all(v is not None and v >= floor for v in values.values())
    return Check(target, "PASS" if ok else "FAIL", ", ".join(parts))


def _relative(
    target: str, pairs: dict[str, tuple[float | None, float | None]], factor: float
) -> Check:
    """PASS when every pair (a, b) has a ≥ factor·b."""
    if not pairs:
        return Check(target, "SKIP", "not measured")
    parts = []
    ok = True
    for label, (a, b) in pairs.items():
        if a is None or b is None:
            ok = False
            parts.append(f"{label}: aborted")
            continue
        parts.append(f"{label}: {fmt_rate(a)} / {fmt_rate(b)} = {a / b:.2f}")
        ok = ok and a >= factor * b
    return Check(target, "PASS" if ok else "FAIL", "; ".join(parts))


def check_targets(rows: Sequence[Row]) -> list[Check]:
    """The targets, on the largest size measured (memory: 1M against 10M events)."""
    sizes = sorted({r.size for r in rows})
    if not sizes:
        return []
    size = sizes[-1]

    def rates(names: Iterable[str]) -> dict[str, float | None]:
        return {
            n: _rate_of(rows, n, size)
            for n in names
            if any(r.name == n and r.size == size for r in rows)
        }

    def pairs(a: str, b: str) -> dict[str, tuple[float | None, float | None]]:
        out = {}
        for fam in "SHT":
            x, y = a.replace("P", fam), b.replace("P", fam)
            if all(any(r.name == v and r.size == size for r in rows) for v in (x, y)):
                out[f"{x} vs {y}"] = (_rate_of(rows, x, size), _rate_of(rows, y, size))
        return out

    at = f" ({size:,} events)"
    checks = [
        _at_least("S3′/H3′/T3′ ≥ 1,000,000 ev/s" + at, rates(["S3'", "H3'", "T3'"]), 1e6),
        _at_least(
            f"S3/H3/T3 (LIMIT {PAPER_LIMIT}) ≥ 300,000 ev/s" + at, rates(["S3", "H3", "T3"]), 3e5
        ),
        _relative("P3′ at 4T ≥ 0.8 × at T" + at, pairs("P3'x4", "P3'"), 0.8),
        _relative("P24′ ≥ 0.5 × P3′" + at, pairs("P24'", "P3'"), 0.5),
    ]
    small, large = 1_000_000, 10_000_000
    target = "peak memory within ±10% from 1M to 10M events"
    if small in sizes and large in sizes:
        worst: tuple[float, str] | None = None
        missing = []
        for r in rows:
            if r.size != large or r.family == NOOP:
                continue
            base = next(
                (
                    b
                    for b in rows
                    if b.size == small and b.name == r.name and b.dataset == r.dataset
                ),
                None,
            )
            if base is None:
                continue
            if r.peak_mib is None or base.peak_mib is None:
                missing.append(r.name)
                continue
            change = r.peak_mib / base.peak_mib - 1.0
            label = f"{r.name} ({r.dataset}) {base.peak_mib:.0f} → {r.peak_mib:.0f} MiB"
            if worst is None or abs(change) > abs(worst[0]):
                worst = (change, label)
        if worst is None:
            checks.append(Check(target, "SKIP", "no query measured at both sizes"))
        else:
            ok = abs(worst[0]) <= 0.10 and not missing
            detail = f"largest change {worst[0]:+.1%}: {worst[1]}"
            if missing:
                detail += f"; aborted: {', '.join(missing)}"
            checks.append(Check(target, "PASS" if ok else "FAIL", detail))
    else:
        checks.append(Check(target, "SKIP", "run with --sizes 1000000 10000000"))
    return checks


# --- plot ----------------------------------------------------------------------------


def plot(rows: Sequence[Row], path: Path) -> None:
    """``throughput.png``: events/s per family and n; window sweep; Q1–Q7 (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({r.size for r in rows})
    size = sizes[-1]
    at = [r for r in rows if r.size == size and r.rate is not None]
    fig, axes = plt.subplots(1, 3, figsize=(16, 5))
    colors = {"stock": "tab:blue", "smart_homes": "tab:green", "taxi": "tab:red"}

    ax = axes[0]
    for dataset, color in colors.items():
        fam = FAMILY_OF[dataset]
        for family, style in ((fam, "-o"), (fam + "'", "--s")):
            pts = sorted((r.n, r.rate) for r in at if r.family == family and r.window == 1)
            if pts:
                xs, ys = zip(*pts, strict=True)
                label = f"{fam}n" if family == fam else f"{fam}n′"
                ax.plot(xs, ys, style, color=color, label=label)
        noop = _noop_rate(rows, dataset, size)
        if noop:
            ax.axhline(noop, color=color, linestyle=":", linewidth=1, label=f"no-op {dataset}")
    ax.set_xticks(list(SIZES), [str(n) for n in SIZES])
    ax.set_xlabel("query length n")
    ax.set_title("Pn (solid, LIMIT 1000) and Pn′ (dashed)")

    ax = axes[1]
    for dataset, color in colors.items():
        fam = FAMILY_OF[dataset] + "'"
        pts = sorted((r.window, r.rate) for r in at if r.family == fam and r.n == 3)
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.plot(xs, ys, "-o", color=color, label=f"{fam[0]}3′")
    ax.set_xticks(list(WINDOW_FACTORS), [f"{k}T" for k in WINDOW_FACTORS])
    ax.set_xlabel("window")
    ax.set_title("P3′ window sweep")

    ax = axes[2]
    qs = sorted((r.n, r.rate) for r in at if r.family == "Q")
    if qs:
        ax.bar([f"Q{i}" for i, _ in qs], [v for _, v in qs], color="tab:blue")
    ax.set_title("Q1–Q7 on stock (LIMIT 1000)")

    for ax in axes:
        ax.set_yscale("log")
        ax.set_ylabel("events/s")
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes[:2]:
        ax.legend(fontsize=7)
    fig.suptitle(f"cerfleet throughput, {size:,} events per run (median)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --- the command ---------------------------------------------------------------------


def write_markdown(rows: Sequence[Row], checks: Sequence[Check], args: argparse.Namespace) -> str:
    import numpy

    sizes = sorted({r.size for r in rows})
    lines = [
        "# Benchmarks on the paper's workloads",
        "",
        f"Median events/s of {args.runs} run(s) per query, each a fresh evaluator in a "
        "fresh subprocess; peak MiB is the largest `ru_maxrss` of those subprocesses "
        "(interpreter, one generated block and the engine's state). Only the engine call "
        "is timed. Ratio to no-op: events/s over the no-op pass (every field of the same "
        "dicts read, nothing evaluated). Path: `columns` is `process_columns` on numpy "
        "batches, `batch` is `process_batch` on lists of dicts. With-output queries carry "
        f"`LIMIT {PAPER_LIMIT}`. Synthetic data: `benchmarks/datasets.py`, seed {args.seed}.",
        "",
        f"Python {platform.python_version()}, numpy {numpy.__version__}, "
        f"{platform.system()} {platform.machine()}.",
        "",
        "## Targets",
        "",
    ]
    lines += [f"- **{c.status}** {c.target}: {c.detail}" for c in checks]
    for size in sizes:
        lines += ["", f"## {size:,} events", "", markdown_table(rows, size)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.report", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100k events, one run")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--only", help="regular expression on query names (e.g. '^S3')")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--path",
        choices=("auto", "batch", "columns"),
        default="auto",
        help="engine call: process_columns when available (auto), or force one",
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.runs = [100_000], 1
    queries = suite()
    if args.only:
        queries = [q for q in queries if re.search(args.only, q.name)]
    print(
        f"{len(queries)} queries × {len(args.sizes)} size(s) × {args.runs} run(s)",
        file=sys.stderr,
    )
    rows = measure_rows(
        queries,
        args.sizes,
        runs=args.runs,
        seed=args.seed,
        path=args.path,
        timeout=args.timeout,
        log=sys.stderr,
    )
    checks = check_targets(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.md").write_text(write_markdown(rows, checks, args), encoding="utf-8")
    (args.out / "results.json").write_text(
        json.dumps([asdict(r) for r in rows], indent=1), encoding="utf-8"
    )
    if not args.no_plot:
        try:
            plot(rows, args.out / "throughput.png")
        except ImportError:
            print("matplotlib is not installed: no throughput.png", file=sys.stderr)
    print("\nTargets:")
    for c in checks:
        print(f"  {c.status:<4}  {c.target}: {c.detail}")
    print(f"\nwrote {args.out / 'results.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
