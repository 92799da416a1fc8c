"""Lateness in the fleet over the Kafka protocol: input out of time order within the
bound, a worker SIGKILLed while events are held in its reorder buffer, and the complex
events delivered are exactly ``cerfleet run --max-lateness``'s, none lost or repeated.

One input partition and no PARTITION BY: one keyed partition, whose order is the input
order, so the embedded run over the input is the reference. Outputs are compared by
the input records they consist of (positions number released events, not offsets).
"""

from __future__ import annotations

import io
import random
import time
from collections import Counter
from typing import Any

import orjson

from benchmarks.datasets import stock, to_dicts
from cerfleet.query import compile_query
from cerfleet.streams import LATE, steps
from tests.fleet import Fleet
from tests.workers.test_fleet import _produce_in_chunks

BOUND_MS = 40
QUERIES = {
    "late-pairs": """SELECT * FROM S WHERE SELL AS a ; BUY AS b
FILTER a[name = 'INTC'] AND b[name = 'INTC']
WITHIN 2000 [stock_time]""",
    "late-declared": f"""CREATE QUARANTINE {{ BOUNDED_TIME {BOUND_MS} MILLISECONDS {{ S }} }}
SELECT * FROM S WHERE BUY AS a ; SELL+ AS s ; BUY AS b
FILTER a[name = 'DELL'] AND s[name = 'YHOO'] AND b[name = 'DELL']
WITHIN 200 [stock_time]""",
}


def _shuffled(n: int) -> list[dict[str, Any]]:
    """Stock events arriving up to ``BOUND_MS`` late, then one far later (it releases
    the rest; the fleet's buffers have no end of input)."""
    rng = random.Random(11)
    events = to_dicts(stock(n, seed=5))
    arrival = sorted(events, key=lambda e: e["stock_time"] + rng.uniform(0, BOUND_MS))
    last = max(e["stock_time"] for e in events)
    return [*arrival, {"type": "END", "name": "-", "stock_time": last + 10 * BOUND_MS}]


def _expected(text: str, events: list[dict[str, Any]]) -> Counter[tuple[int, ...]]:
    compiled = compile_query(text, time_field="stock_time")
    numbered = [{**e, "@input": i} for i, e in enumerate(events)]
    source = io.BytesIO(b"".join(orjson.dumps(e) + b"\n" for e in numbered))
    out: Counter[tuple[int, ...]] = Counter()
    for step in steps(compiled, compiled.evaluator(), source, max_lateness=BOUND_MS):
        assert all(reason != LATE for _, reason in step.reports)
        out += Counter(tuple(e["@input"] for e in ce.events) for ce in step.complex_events)
    return out


def test_sigkill_with_events_held_loses_and_repeats_nothing(fleet: Fleet) -> None:
    events = _shuffled(30_000)
    source = fleet.topic("stock")
    readers = {}
    for name, text in QUERIES.items():
        out = fleet.topic(f"out-{name}", 2)
        path = fleet.log_dir / f"{name}.ceql"
        path.write_text(text)
        args = ["submit", name, str(path), "-i", source, "-o", out, "--time-field", "stock_time"]
        if "QUARANTINE" not in text:
            args += ["--max-lateness", f"{BOUND_MS}ms"]
        done = fleet.cli(*args)
        assert done.returncode == 0, done.stderr
        readers[name] = fleet.reader(out, 2)
    fleet.coordinator()
    # One worker at a time: the one killed owns the keyed partition, so its successor
    # must continue from the checkpoint, held events included.
    workers = [fleet.worker()]
    lines = [orjson.dumps(e) for e in events]
    producer = _produce_in_chunks(fleet, source, lines, chunks=8, pause=1.0)
    time.sleep(3.0)
    victim = workers.pop(0)
    victim.kill()
    workers.append(fleet.worker())
    producer.join()
    for name, text in QUERIES.items():
        want = _expected(text, events)
        assert sum(want.values()) > 10, name
        reader = readers[name]
        reader.wait_for(sum(want.values()), timeout=180)
        got = Counter(tuple(s["offset"] for s in v["sources"]) for v in reader.values())
        missing, extra = want - got, got - want
        assert not missing and not extra, (
            f"{name}: {sum(missing.values())} missing, {sum(extra.values())} extra "
            f"of {sum(want.values())}"
        )
    assert sum(w.metric("cerfleet_worker_recoveries_total") for w in workers) > 0
