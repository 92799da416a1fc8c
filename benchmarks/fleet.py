"""Throughput and latency of the fleet: a coordinator and worker processes over Kafka.

Run ``python -m benchmarks.fleet [--events N] [--workers W] [--rate R ...] [--runs K]
[--query partitioned|global|balanced|both] [--latency-seconds S] [--latency-events N]
[--broker mock|tansu | --bootstrap-servers HOSTS] [--out DIR] [--name NAME]``.

The parts: ``fleet_workload`` (queries and events), ``fleet_brokers`` and
``fleet_processes`` (the broker and the fleet's processes of one run),
``fleet_sampling`` (their metrics read while they run), ``fleet_throughput`` and
``fleet_latency`` (one run of each kind), ``fleet_report`` (the tables).

The broker is librdkafka's mock cluster (:class:`cerfleet.fleet.local_broker.LocalBroker`)
hosted in this process, in memory; the coordinator and the workers are separate
``cerfleet`` processes connecting to it over TCP, as they would to a real broker.
Every run gets a fresh broker, so runs do not share topics, groups or data.
Child output goes to log files in a temporary directory (kept and named on
failure, or with ``--keep-logs``); children are stopped with SIGTERM, then killed.

**Throughput** (median of ``--runs``): N stock events (``benchmarks.datasets``)
are produced first, keyed by ``name`` so one ticker stays in one input partition.
Then the coordinator is started and routes everything onto the query's keyed
topic: its rate is ``cerfleet_coordinator_routed_total`` over the time from its
first to its last routed record, sampled every 0.2 s (every 0.05 s before the first record
and past 90% of them, where the window's edges fall). Then W workers are started
and the keyed records are processed: worker events/s is the keyed records over
the time from the first processed (``cerfleet_worker_events_in_total`` leaves 0)
to the last (the last change of that counter or of
``cerfleet_complex_events_out_total``), divided by W for the per-process figure.
A process counts a batch once it is done, so the first batch's records are counted
when each window starts, their work before it: they are left out of both rates.
Interpreter start, group join and partition recovery are not in that window
(they are reported separately as "start"). *All busy* is the workers' records over
the samples at which every worker had counted a batch and still had records left: the
fleet's rate once running, without one worker's earlier start or later end. The
complex events published are counted and compared with the embedded engine's answer
over the same events.
Queries: ``partitioned`` is PARTITION BY [name] (one ticker holds 53% of the events: a
skewed load), ``global`` has no PARTITION BY (one keyed partition), ``balanced`` is the
``partitioned`` pattern by ``desk``, a field that gives each of 16 desks, two on each
keyed partition (``balanced_desks``), the same sub-stream of the stock events, so that
every keyed partition gets the same records and the same complex events: the workload
for scale-out with ``--workers``. ``both`` runs the first two.

**Latency**: with the coordinator and one worker running and idle (partitions
assigned, warmed up), a producer thread publishes events at ``--rate`` for
``--latency-seconds`` and records each event's produce time by its input
partition and offset (from the delivery report). The output topic is read
meanwhile; each complex event's latency is its receive time minus the produce
time of its last matched event (``sources[-1]``), so it includes three batched
producers (``linger.ms=5`` each: input, keyed copy, output) and two consumers.
The worker's own ``cerfleet_processing_latency_seconds`` histogram (keyed batch
read → complex event handed to the producer) is reported next to it.

The mock keeps about 5 MiB per partition and silently drops older batches, so:
the input is spread over ``ceil(N * 80 B / 4 MiB)`` partitions for PARTITION BY
queries (one partition for queries without it, whose answer depends on the global
order of events); on the mock the coordinator writes keyed topics with zstd instead of lz4
(``CERFLEET_PRODUCER``), because a query without PARTITION BY puts every event into
one keyed partition and lz4 batches of 200k keyed copies do not fit. A throughput
run checks every topic's low watermark and fails rather than report a number
measured on lost data; a latency run, whose consumers read while the mock drops
what they have already read, counts the keyed records the worker never read
(``records lost``: the backlog outgrew the cap because the fleet was slower than
the rate).

``--runs 0`` skips the throughput part, ``--latency-seconds 0`` the latency part;
several ``--rate`` values give one latency run each. Each runs rate × seconds events,
so each a different stream, with different Kleene bursts; ``--latency-events N``
replays the same N events at every rate instead (taking N / rate seconds), which
makes the rates comparable.

Writes ``NAME.md`` and ``NAME.json`` (``--name``, default ``fleet``: command, event
count, cores, date, tables) into ``--out`` (default ``benchmarks/results``).
``--broker tansu`` runs each fleet on a fresh tansu broker instead of the mock, and
``--bootstrap-servers`` on any broker.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from types import FrameType

from benchmarks.datasets import stock, to_dicts
from benchmarks.fleet_brokers import BROKER, BROKER_TEXT, BROKERS, ExternalBroker
from benchmarks.fleet_latency import LatencyRun, run_latency
from benchmarks.fleet_processes import ROOT
from benchmarks.fleet_report import Summary, ms_text, rate_text, write_json, write_markdown
from benchmarks.fleet_throughput import run_throughput
from benchmarks.fleet_workload import CHOICES, KEYED_PARTITIONS, QUERIES, embedded_count, events_for
from cerfleet.kept_json import dumps_kept


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through the finally blocks that stop children


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.fleet", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--events", type=int, default=200_000, help="events per throughput run")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (throughput)")
    parser.add_argument(
        "--pin-workers",
        action="store_true",
        help="throughput: each worker on a core of its own (CPU affinity), as a Kubernetes "
        "static CPU manager places pods that ask for whole CPUs; the broker, the "
        "coordinator and this process still run on any core",
    )
    parser.add_argument(
        "--rate",
        type=float,
        nargs="+",
        default=[50_000.0],
        help="latency: events/s produced (several values: one latency run each)",
    )
    parser.add_argument(
        "--runs", type=int, default=3, help="throughput runs per query (0: skip throughput)"
    )
    parser.add_argument(
        "--query", choices=[*CHOICES, "both"], default="both", help="which query (default both)"
    )
    parser.add_argument(
        "--latency-seconds", type=float, default=10.0, help="latency: seconds (0: skip)"
    )
    parser.add_argument(
        "--latency-events",
        type=int,
        help="latency: replay this many events at every rate (default: rate × seconds, a "
        "different stream at each rate)",
    )
    parser.add_argument("--keyed-partitions", type=int, default=KEYED_PARTITIONS)
    parser.add_argument("--seed", type=int, default=1, help="throughput data seed")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--keep-logs", action="store_true", help="keep the processes' logs")
    parser.add_argument(
        "--broker",
        choices=sorted(BROKERS),
        default="mock",
        help="a fresh broker per run: librdkafka's mock cluster (default) or tansu",
    )
    parser.add_argument(
        "--bootstrap-servers", help="run against this broker instead (topics are left behind)"
    )
    parser.add_argument(
        "--name", default="fleet", help="results file names: NAME.md and NAME.json in --out"
    )
    args = parser.parse_args(argv)
    if args.bootstrap_servers:
        servers = args.bootstrap_servers
        BROKERS[servers] = lambda: ExternalBroker(servers)
        BROKER_TEXT[servers] = f"the broker at `{servers}`"
        BROKER[0] = servers
    else:
        BROKER[0] = args.broker
    if args.events < 1 or args.workers < 1 or args.runs < 0 or min(args.rate) <= 0:
        parser.error("--events, --workers and --rate must be positive, --runs not negative")
    if args.latency_events is not None and args.latency_events < 1:
        parser.error("--latency-events must be positive")
    if args.workers > args.keyed_partitions:
        print(
            f"note: {args.workers} workers share {args.keyed_partitions} keyed partitions; "
            "some will be idle",
            file=sys.stderr,
        )
    names = list(QUERIES) if args.query == "both" else [args.query]
    signal.signal(signal.SIGTERM, _on_sigterm)
    logs = Path(tempfile.mkdtemp(prefix="cerfleet-fleet-bench-"))
    ok = False
    load = [os.getloadavg()[0]]
    try:
        summaries: list[Summary] = []
        if args.runs:
            stocks = to_dicts(stock(args.events, seed=args.seed))
            for name in names:
                events = events_for(CHOICES[name], stocks, args.keyed_partitions)
                # Not 4 KiB each: orjson keeps its buffer.
                lines = [dumps_kept(e) for e in events]
                expected = embedded_count(CHOICES[name], events)
                runs = []
                for i in range(args.runs):
                    run = run_throughput(
                        CHOICES[name],
                        events,
                        logs / f"throughput-{name}-{i + 1}",
                        workers=args.workers,
                        keyed_partitions=args.keyed_partitions,
                        lines=lines,
                        expected=expected,
                        pinned=args.pin_workers,
                    )
                    runs.append(run)
                    print(
                        f"throughput {name} run {i + 1}: routing {rate_text(run.route_rate)} ev/s "
                        f"({run.route_seconds:.2f} s), workers {rate_text(run.worker_rate)} ev/s "
                        f"({run.worker_seconds:.2f} s; per process "
                        f"{rate_text(run.per_worker_rate)}; each on its own "
                        f"{', '.join(rate_text(r) for r in run.worker_rates)}), "
                        f"start {run.worker_start_seconds:.1f} s, "
                        f"{run.complex_events:,} complex events (embedded {expected:,})",
                        file=sys.stderr,
                        flush=True,
                    )
                summaries.append(Summary(name, runs, expected))
        latencies: list[tuple[str, LatencyRun]] = []
        if args.latency_seconds > 0:
            for name, rate in ((n, r) for n in names for r in args.rate):
                lat = run_latency(
                    CHOICES[name],
                    rate,
                    args.latency_seconds,
                    logs / f"latency-{name}-{rate:.0f}",
                    keyed_partitions=args.keyed_partitions,
                    count=args.latency_events,
                )
                latencies.append((name, lat))
                print(
                    f"latency {name} at {rate_text(rate)} ev/s: "
                    f"{rate_text(lat.achieved_rate)} ev/s produced, "
                    f"p50 {ms_text(lat.q(0.5))} ms, p99 {ms_text(lat.q(0.99))} ms, "
                    f"max {ms_text(lat.q(1.0))} ms over {lat.complex_events:,} complex events",
                    file=sys.stderr,
                    flush=True,
                )
        load.append(os.getloadavg()[0])
        text = write_markdown(args.out / f"{args.name}.md", argv, args, summaries, latencies, load)
        write_json(args.out / f"{args.name}.json", argv, summaries, latencies, load)
        print(text)
        print(f"wrote {args.out / args.name}.md and .json", file=sys.stderr)
        ok = True
    finally:
        if ok and not args.keep_logs:
            shutil.rmtree(logs, ignore_errors=True)
        else:
            print(f"process logs: {logs}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
