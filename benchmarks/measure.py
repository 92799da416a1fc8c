"""One measurement: a fresh evaluator over a generated stream, events/s and peak memory.

``run(spec)`` measures in this process; ``run_in_subprocess(spec)`` runs
``python -m benchmarks.measure SPEC_JSON`` so each measurement starts with a
fresh interpreter and its peak resident memory (``ru_maxrss``) is its own.

The stream is generated and converted block by block (``datasets.batches``),
so memory does not grow with the number of events and only the engine's own
state can make it grow. Only the engine call is timed, never generation or
conversion:

* ``evaluator.process_columns(columns)`` on the numpy batch when the evaluator
  has it (the columnar fast path), unless ``path="batch"``;
* otherwise ``evaluator.process_batch(list_of_dicts)``.

With ``query=None`` it is the *no-op* pass: the same dicts, each event's fields
read one by one and nothing evaluated, the interpreter's limit for any engine
fed Python dicts.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks import datasets

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Spec:
    dataset: str
    n: int
    query: str | None = None  # CEQL text; None: the no-op pass
    seed: int = 1
    chunk: int = datasets.BLOCK  # events per engine call
    path: str = "auto"  # auto | batch | columns
    language: str = "ceql"


@dataclass(frozen=True)
class Result:
    events: int
    seconds: float  # time inside the engine calls only
    complex_events: int
    peak_mib: float  # peak resident memory of the measuring process
    path: str  # batch | columns | noop

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else float("inf")


def environment(**extra: str) -> dict[str, str]:
    """The environment of the commands a benchmark runs: bytecode cached as an installed
    package has it (in a folder of its own, so nothing is written beside the sources),
    even where ``PYTHONDONTWRITEBYTECODE`` is set, plus ``extra``. Without it every
    process compiles the package again (``cerfleet run`` on the bundled example: 0.34 to
    0.48 s, 0.22 s with the bytecode cached)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "cerfleet-pyc"))
    return {**env, **extra}


def peak_mib() -> float:
    """This process's peak resident memory so far, in MiB."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 2**10  # bytes vs KiB


def _noop(events: list[dict[str, Any]], fields: list[str]) -> Any:
    """Read every field of every event; evaluate nothing (returns the last value read)."""
    value: Any = None
    for event in events:
        for field in fields:
            value = event[field]
    return value


def _count(out: object) -> int:
    if out is None:
        return 0
    if isinstance(out, int):
        return out
    return len(out)  # type: ignore[arg-type]


def run(spec: Spec) -> Result:
    """Measure in this process (the peak memory is then the process's so far)."""
    evaluator: Any = None
    if spec.query is not None:
        from cerfleet import compile_query

        evaluator = compile_query(spec.query, language=spec.language).evaluator()
    columnar = (
        evaluator is not None and spec.path != "batch" and hasattr(evaluator, "process_columns")
    )
    if spec.path == "columns" and not columnar:
        raise ValueError("the evaluator has no process_columns method")
    elapsed = 0.0
    produced = 0
    events = 0
    clock = time.perf_counter
    for batch in datasets.batches(spec.dataset, spec.n, spec.seed, spec.chunk):
        m = datasets.length(batch)
        events += m
        if columnar:
            start = clock()
            out = evaluator.process_columns(batch)
            elapsed += clock() - start
        else:
            dicts = datasets.to_dicts(batch)
            if evaluator is None:
                fields = list(batch)
                start = clock()
                _noop(dicts, fields)
                elapsed += clock() - start
                out = None
            else:
                start = clock()
                out = evaluator.process_batch(dicts)
                elapsed += clock() - start
            del dicts
        produced += _count(out)
        del out
    path = "noop" if evaluator is None else "columns" if columnar else "batch"
    return Result(events, elapsed, produced, peak_mib(), path)


def run_in_subprocess(spec: Spec, timeout: float | None = None) -> Result | None:
    """Measure in a fresh interpreter; None when it takes longer than ``timeout`` s."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "benchmarks.measure", json.dumps(asdict(spec))]
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        raise RuntimeError(f"measurement failed ({proc.returncode}):\n{proc.stderr}")
    return Result(**json.loads(proc.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        raise SystemExit("usage: python -m benchmarks.measure SPEC_JSON")
    result = run(Spec(**json.loads(args[0])))
    print(json.dumps(asdict(result)))


if __name__ == "__main__":
    main()
