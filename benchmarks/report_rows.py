"""The rows of the paper-workload report: one query (or the no-op pass) at one size,
measured ``runs`` times, each in a fresh subprocess (``measure``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks import datasets
from benchmarks.measure import Result, Spec, run_in_subprocess
from benchmarks.queries import BenchQuery

DATASETS = ("stock", "smart_homes", "taxi")
FAMILY_OF = {"stock": "S", "smart_homes": "H", "taxi": "T"}
NOOP = "no-op"


@dataclass
class Row:
    """The summary of one query (or the no-op) at one size."""

    name: str
    dataset: str
    family: str  # S H T S' H' T' Q, or no-op
    n: int
    window: int
    size: int
    rate: float | None  # median events/s; None: aborted (timeout)
    rates: list[float]
    peak_mib: float | None
    complex_events: int | None
    path: str

    @property
    def aborted(self) -> bool:
        return self.rate is None


def summarize(results: Sequence[Result | None]) -> tuple[float | None, float | None, int | None]:
    """(median events/s, largest peak MiB, complex events) of some runs of one query."""
    done = [r for r in results if r is not None]
    if not done or len(done) < len(results):
        return None, None, None
    counts = {r.complex_events for r in done}
    if len(counts) > 1:
        raise RuntimeError(f"runs disagree on the number of complex events: {sorted(counts)}")
    return (
        statistics.median(r.rate for r in done),
        max(r.peak_mib for r in done),
        done[0].complex_events,
    )


def measure_rows(
    queries: Iterable[BenchQuery],
    sizes: Sequence[int],
    *,
    runs: int,
    seed: int = 1,
    path: str = "auto",
    timeout: float | None = None,
    chunk: int = datasets.BLOCK,
    log: Any = None,
) -> list[Row]:
    """Measure the no-op of every dataset used and each query, at each size."""
    queries = list(queries)
    rows: list[Row] = []
    for size in sizes:
        for dataset in DATASETS:
            of_dataset = [q for q in queries if q.dataset == dataset]
            if not of_dataset:
                continue
            jobs: list[tuple[str, str, int, int, str | None]] = [(NOOP, NOOP, 0, 0, None)]
            jobs += [(q.name, q.family, q.n, q.window, q.text) for q in of_dataset]
            for name, family, n, window, text in jobs:
                spec = Spec(dataset, size, text, seed=seed, chunk=chunk, path=path)
                started = time.perf_counter()
                results = [run_in_subprocess(spec, timeout) for _ in range(runs)]
                rate, peak, count = summarize(results)
                kinds = {r.path for r in results if r is not None}
                row = Row(
                    name, dataset, family, n, window, size, rate,
                    [r.rate for r in results if r is not None], peak, count,
                    kinds.pop() if len(kinds) == 1 else "/".join(sorted(kinds)) or "-",
                )  # fmt: skip
                rows.append(row)
                if log is not None:
                    took = time.perf_counter() - started
                    print(
                        f"{size:>10,} {dataset:<11} {name:<8} {fmt_rate(rate):>12} ev/s "
                        f"{fmt(peak, '.0f'):>6} MiB {fmt(count, ','):>10} CE  "
                        f"({row.path}, {took:.1f} s)",
                        file=log,
                        flush=True,
                    )
    return rows


def fmt(value: float | int | None, spec: str) -> str:
    return "aborted" if value is None else format(value, spec)


def fmt_rate(rate: float | None) -> str:
    return fmt(rate, ",.0f")
