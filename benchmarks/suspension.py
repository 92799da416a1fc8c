"""One slow query beside a normal one on one worker: the normal query's latency with the
time budget off, at its default and low, and with the normal query alone.

Run ``python -m benchmarks.suspension [--rate R] [--seconds S] [--runs K] [--out DIR]``.

Each run is a fresh fleet on librdkafka's mock cluster (hosted in this process): a
coordinator and one worker (separate ``cerfleet`` processes), the normal query
``A ; B WITHIN 3 EVENTS`` and, except in the *alone* mode, the slow query of the fleet
test (``tests/workers/test_fleet_budget.py``: a 160-step sequence that keeps 160
automaton states live on every event and emits nothing from it, so it costs CPU without
flooding the output). Once the worker is idle and warmed up, events are produced at
``--rate`` for ``--seconds`` (a B every 100 events; the first 100 events, before,
warm the processes up); each of the normal query's complex
events is timed from the produce call of its last event to its arrival in the output
topic (three batched producers and two consumers on the way). Reported per mode: the
median over runs of the p50, p99 and maximum latency, the complex events received of
those expected, and when the slow query was suspended.

Writes ``suspension.md`` and ``suspension.json`` into ``--out`` (default
``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from benchmarks.fleet_latency import paced_produce
from benchmarks.fleet_processes import BATCHED_PRODUCER, FLEET_CONSUMER, PACED_FETCH, ROOT, Child
from benchmarks.fleet_sampling import BenchmarkError, quantile
from cerfleet.fleet.batching import drain
from cerfleet.fleet.keyed import GroupId
from cerfleet.fleet.local_broker import LocalBroker
from cerfleet.fleet.registry import QuerySpec, write
from cerfleet.fleet.settings import WorkerSettings
from cerfleet.query import compile_query

HEAVY = " ; ".join(["A"] * 160)
SLOW = f"SELECT * FROM S WHERE ({HEAVY} ; Z) OR (B ; C) WITHIN 100 EVENTS"
NORMAL = "SELECT * FROM S WHERE A ; B WITHIN 3 EVENTS"
# mode -> (slow query registered, the worker's --query-time-budget)
MODES: dict[str, tuple[bool, float]] = {
    "alone": (False, 5.0),
    "budget off (0)": (True, 0.0),
    "budget 5 s (default)": (True, 5.0),
    "budget 0.25 s": (True, 0.25),
}
KEYED_PARTITIONS = 8
WARMUP = 100  # events produced, and their outputs read, before the timed ones
SUSPENDED = re.compile(r"suspended from offset (\d+): evaluating a batch of (\d+) records took")


def _events(n: int) -> list[bytes]:
    kinds = ["B" if i % 100 == 98 else "C" if i % 100 == 99 else "A" for i in range(n)]
    return [orjson.dumps({"type": k}) for k in kinds]


def one_run(mode: str, rate: float, seconds: float, log_dir: Path) -> dict[str, Any]:
    with_slow, budget = MODES[mode]
    broker = LocalBroker()
    children: list[Child] = []
    clients: list[Consumer] = []
    try:
        prefix = f"bench{uuid.uuid4().hex[:8]}"
        source, registry, keyed = f"{prefix}.in", f"{prefix}.queries", f"{prefix}.keyed."
        group = f"{prefix}-workers"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "CERFLEET_BOOTSTRAP_SERVERS": broker.bootstrap_servers,
            "CERFLEET_REGISTRY_TOPIC": registry,
            "CERFLEET_KEYED_TOPIC_PREFIX": keyed,
            "CERFLEET_DEAD_LETTER_TOPIC": f"{prefix}.dead",
            "CERFLEET_CONSUMER": orjson.dumps({**FLEET_CONSUMER, **PACED_FETCH}).decode(),
            "CERFLEET_LOG_LEVEL": "INFO",  # the children's logs name their metrics ports
        }
        queries = {"normal": NORMAL, **({"slow": SLOW} if with_slow else {})}
        specs = {
            n: QuerySpec(name=n, ceql=q, input_topics=(source,), output_topic=f"{prefix}.out-{n}")
            for n, q in queries.items()
        }
        keyed_topic = GroupId.of((source,), ()).keyed_topic(keyed)
        ckpt = WorkerSettings.model_fields["checkpoint_topic_prefix"].default
        topics = {registry: 1, f"{prefix}.dead": 1, source: 1, keyed_topic: KEYED_PARTITIONS}
        topics[f"{ckpt}{group}.{keyed_topic.removeprefix(keyed)}"] = KEYED_PARTITIONS
        topics.update({s.output_topic: KEYED_PARTITIONS for s in specs.values()})
        for name, count in topics.items():
            broker.create_topic(name, count)
        config = {"bootstrap.servers": broker.bootstrap_servers}
        for name, spec in specs.items():
            write(config, registry, name, spec)
        coordinator = Child(
            "coordinator", ["coordinator", "--group-id", f"{prefix}-c"], env, log_dir
        )
        worker_args = ["worker", "--group-id", group, "--query-time-budget", str(budget)]
        worker = Child("worker", worker_args, env, log_dir)
        children += [coordinator, worker]
        coordinator.wait_healthy()
        worker.wait_healthy()
        deadline = time.monotonic() + 60
        while worker.metric("cerfleet_assigned_partitions") < KEYED_PARTITIONS:
            if time.monotonic() > deadline:
                raise BenchmarkError(f"partitions not assigned: {worker.tail()}")
            time.sleep(0.2)

        reader = Consumer({**config, "group.id": f"r-{prefix}", "fetch.wait.max.ms": "10"})
        clients.append(reader)
        out = specs["normal"].output_topic
        reader.assign([TopicPartition(out, p, OFFSET_BEGINNING) for p in range(KEYED_PARTITIONS)])
        # Warm-up (imports, decoders, first fetches): WARMUP events, their outputs read.
        warm = Producer({**config, **BATCHED_PRODUCER})
        for line in _events(WARMUP):
            warm.produce(source, value=line)
        warm.flush(30)
        del warm
        warm_outputs = 0
        deadline = time.monotonic() + 60
        while warm_outputs < WARMUP // 100 * 3:
            if time.monotonic() > deadline:
                raise BenchmarkError(f"warm-up outputs missing: {worker.tail()}")
            warm_outputs += sum(m.error() is None for m in reader.consume(1000, 0.1))
        lines = _events(int(rate * seconds))
        times: dict[tuple[int, int], float] = {}
        failed: list[KafkaError] = []
        span: list[float] = []
        producer = Producer({**config, **BATCHED_PRODUCER, "linger.ms": "1"})
        keys = [b""] * len(lines)
        thread = threading.Thread(
            target=paced_produce,
            args=(producer, source, lines, keys, rate, times, failed, span),
        )
        thread.start()
        expected = len(
            compile_query(NORMAL).evaluator().process_batch([orjson.loads(x) for x in lines])
        )
        arrivals: list[tuple[float, int]] = []
        idle_since = time.monotonic()
        while len(arrivals) < expected and time.monotonic() - idle_since < 30:
            # The first output ends the wait (``drain``): a batch call waits its whole
            # timeout for 10,000 records, which every output read would count.
            for msg in drain(reader, 10_000, 0.05):
                if msg.error() is None:
                    now = time.monotonic()
                    end = orjson.loads(msg.value())["sources"][-1]["offset"] - WARMUP
                    arrivals.append((now, end))
                    idle_since = now
            if thread.is_alive():
                idle_since = time.monotonic()
        thread.join()
        if failed:
            raise BenchmarkError(f"producing failed: {failed[:3]}")
        del producer
        latencies = sorted(at - times[(0, WARMUP + offset)] for at, offset in arrivals)
        found = SUSPENDED.search(worker.tail(200_000))
        return {
            "p50": quantile(latencies, 0.5),
            "p99": quantile(latencies, 0.99),
            "max": latencies[-1],
            "received": len(arrivals),
            "expected": expected,
            "suspended_from": None if found is None else int(found[1]),
            "suspending_batch": None if found is None else int(found[2]),
        }
    finally:
        for child in children:
            child.stop()
        for client in clients:
            client.close()
        broker.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=2000.0, help="events/s (default 2000)")
    ap.add_argument("--seconds", type=float, default=10.0, help="of production (default 10)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    rows: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            for mode in MODES:  # interleaved: the machine's noise hits every mode alike
                log_dir = Path(tmp) / f"{run}-{list(MODES).index(mode)}"
                log_dir.mkdir()
                rows[mode].append(one_run(mode, args.rate, args.seconds, log_dir))
                r = rows[mode][-1]
                print(
                    f"run {run + 1} {mode}: p50 {r['p50'] * 1000:.1f} ms, p99 "
                    f"{r['p99'] * 1000:.1f} ms, max {r['max'] * 1000:.1f} ms, "
                    f"{r['received']}/{r['expected']}, suspended from {r['suspended_from']}",
                    flush=True,
                )
    command = "python -m benchmarks.suspension " + " ".join(argv or sys.argv[1:])
    lines = [
        "# One slow query beside a normal one: the normal query's latency",
        "",
        f"`{command.strip()}`: {args.rate:g} events/s for {args.seconds:g} s, "
        f"{args.runs} runs per mode (medians), {os.cpu_count()} cores, "
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{datetime.date.today().isoformat()}. Event produced → complex event received.",
        "",
        "| mode | p50 ms | p99 ms | max ms | received / expected | slow query suspended from "
        "offset (batch size) |",
        "|---|---|---|---|---|---|",
    ]
    for mode, runs in rows.items():
        med = {k: statistics.median(r[k] for r in runs) for k in ("p50", "p99", "max")}
        got = "; ".join(f"{r['received']}/{r['expected']}" for r in runs)
        where = "; ".join(
            "-"
            if r["suspended_from"] is None
            else f"{r['suspended_from']} ({r['suspending_batch']})"
            for r in runs
        )
        lines.append(
            f"| {mode} | {med['p50'] * 1000:.1f} | {med['p99'] * 1000:.1f} | "
            f"{med['max'] * 1000:.1f} | {got} | {where} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "suspension.md").write_text(text)
    doc = {"command": command.strip(), "rate": args.rate, "seconds": args.seconds, "runs": rows}
    (args.out / "suspension.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
