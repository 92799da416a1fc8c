"""What a partition's earlier batches cost a broker that serves reads at its tail.

Run ``python -m benchmarks.broker_batches [--broker mock tansu] [--records 20000]
[--batches 200 2000 20000] [--rate 1000] [--seconds 10] [--runs 2] [--out DIR]``.

The fleet's producers send a batch per partition every few milliseconds (``linger.ms``
5), so under a steady load its topics fill with many small batches, and every consumer
hop reads at the tail of such a partition. Apache Kafka finds a fetch's offset through
an index; a broker that walks the partition's batches instead pays per fetch for every
batch before it, and a latency run on it slows down as it goes.

Each case is a fresh broker in a process of its own (librdkafka's mock cluster hosted by
a child Python process, or tansu), one partition filled with ``--records`` records in
``B`` batches (``--batches``), then ``--rate`` records/s produced to it for ``--seconds``
(``linger.ms=5``) and read at the tail by one consumer (``fetch.wait.max.ms=10``, as the
fleet benchmark's latency runs). Reported: the broker process's CPU (cores, from
``/proc``) over that phase, the records read of those produced, and their latency
(produce call → read) at p50 and p99. Writes ``broker-batches.md`` and ``.json`` into
``--out`` (default ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import confluent_kafka
import orjson
from confluent_kafka import Consumer, Producer, TopicPartition

from benchmarks.fleet_brokers import BROKERS
from benchmarks.fleet_sampling import quantile
from benchmarks.process_cpu import cpu_seconds
from cerfleet.fleet.topics import ensure_topics

ROOT = Path(__file__).resolve().parent.parent
TOPIC = "t"
VALUE = b"x" * 100
# A child that hosts the mock and prints its address: the mock's CPU is then its own.
HOST_MOCK = (
    "import sys, time\n"
    "from cerfleet.fleet.local_broker import LocalBroker\n"
    "b = LocalBroker()\n"
    "print(b.bootstrap_servers, flush=True)\n"
    "time.sleep(3600)\n"
)


@dataclass
class Case:
    broker: str
    records: int
    batches: int
    broker_cores: float
    produced: int
    read: int
    p50_ms: float | None
    p99_ms: float | None


@contextmanager
def broker(kind: str) -> Iterator[tuple[str, int]]:
    """A fresh broker of ``kind`` with the topic made: its address and process id."""
    if kind == "tansu":
        tansu = BROKERS["tansu"]()
        try:
            tansu.create_topic(TOPIC, 1)
            yield tansu.bootstrap_servers, tansu.process.pid
        finally:
            tansu.close()
        return
    host = subprocess.Popen(
        [sys.executable, "-c", HOST_MOCK], stdout=subprocess.PIPE, cwd=ROOT, text=True
    )
    try:
        assert host.stdout is not None
        servers = host.stdout.readline().strip()
        ensure_topics({"bootstrap.servers": servers}, {TOPIC: 1})
        yield servers, host.pid
    finally:
        host.kill()
        host.wait()


def fill(servers: str, records: int, batches: int) -> None:
    """``records`` records in ``batches`` batches: each batch flushed before the next."""
    per = max(1, records // batches)
    producer = Producer(
        {"bootstrap.servers": servers, "linger.ms": "1000", "batch.num.messages": str(per)}
    )
    for i in range(records):
        producer.produce(TOPIC, VALUE, partition=0)
        if (i + 1) % per == 0:
            producer.flush()
    producer.flush()


def tail_read(servers: str, pid: int, start: int, rate: float, seconds: float) -> Case:
    consumer = Consumer(
        {"bootstrap.servers": servers, "group.id": "tail", "fetch.wait.max.ms": "10"}
    )
    consumer.assign([TopicPartition(TOPIC, 0, start)])
    consumer.consume(1, 0.5)  # connected and fetching before the clock starts
    producer = Producer({"bootstrap.servers": servers, "linger.ms": "5"})
    sent: list[float] = []
    latencies: list[float] = []
    clock = time.monotonic
    began, cpu = clock(), cpu_seconds(pid) or 0.0
    while (now := clock()) - began < seconds:
        while len(sent) < int((now - began) * rate):
            producer.produce(TOPIC, VALUE, partition=0)
            sent.append(clock())
        producer.poll(0)
        for msg in consumer.consume(1000, 0.005):
            offset = msg.offset()
            if msg.error() is None and offset is not None and 0 <= offset - start < len(sent):
                latencies.append(clock() - sent[offset - start])
    cores = ((cpu_seconds(pid) or 0.0) - cpu) / (clock() - began)
    consumer.close()
    producer.flush(10)
    latencies.sort()
    p50, p99 = (quantile(latencies, p) * 1000 if latencies else None for p in (0.5, 0.99))
    return Case("", 0, 0, cores, len(sent), len(latencies), p50, p99)


def run_case(kind: str, records: int, batches: int, rate: float, seconds: float) -> Case:
    with broker(kind) as (servers, pid):
        fill(servers, records, batches)
        case = tail_read(servers, pid, records, rate, seconds)
    case.broker, case.records, case.batches = kind, records, batches
    return case


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:,.1f}"


def table(cases: list[Case]) -> list[str]:
    lines = [
        "| broker | earlier records | in batches | broker cores | read / produced "
        "| p50 ms | p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for c in cases:
        lines.append(
            f"| {c.broker} | {c.records:,} | {c.batches:,} | {c.broker_cores:.2f} "
            f"| {c.read:,} / {c.produced:,} | {_ms(c.p50_ms)} | {_ms(c.p99_ms)} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.broker_batches", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--broker", nargs="+", choices=["mock", "tansu"], default=["mock", "tansu"])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--batches", type=int, nargs="+", default=[200, 2_000, 20_000])
    parser.add_argument("--rate", type=float, default=1_000.0, help="records/s at the tail")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=2, help="rounds over every case")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--name", default="broker-batches")
    args = parser.parse_args(argv)
    if args.records < max(args.batches) or min(args.batches) < 1 or args.runs < 1:
        parser.error("--batches must be positive and at most --records; --runs positive")
    cases: list[Case] = []
    for _ in range(args.runs):  # rounds, so that a slow moment hits every case alike
        for kind in args.broker:
            for batches in args.batches:
                case = run_case(kind, args.records, batches, args.rate, args.seconds)
                print(*table([case])[2:], file=sys.stderr, flush=True)
                cases.append(case)
    command = " ".join(["python -m benchmarks.broker_batches", *argv])
    by_case = sorted(cases, key=lambda c: (c.broker, c.batches))
    medians = []
    for kind in args.broker:
        for b in args.batches:
            cores = statistics.median(
                c.broker_cores for c in cases if (c.broker, c.batches) == (kind, b)
            )
            medians.append(f"{kind} after {b:,} batches {cores:.2f}")
    text = "\n".join(
        [
            "# Tail reads against a partition's earlier batches",
            "",
            f"`{command}` on {datetime.date.today().isoformat()}, {os.cpu_count()} cores, "
            f"confluent-kafka {confluent_kafka.__version__}. {args.runs} round(s); every run "
            "listed. See the module's docstring for the method.",
            "",
            *table(by_case),
            "",
            "Median broker cores per case: " + "; ".join(medians) + ".",
            "",
        ]
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.md").write_text(text, encoding="utf-8")
    doc = {
        "command": command,
        "date": datetime.date.today().isoformat(),
        "cases": [asdict(c) for c in by_case],
    }
    (args.out / f"{args.name}.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
