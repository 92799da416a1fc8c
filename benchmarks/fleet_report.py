"""The fleet benchmark's results: the markdown tables and the JSON for tools."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka
import orjson

from benchmarks.fleet_brokers import BROKER, BROKER_TEXT
from benchmarks.fleet_latency import LatencyRun
from benchmarks.fleet_processes import BATCHED_PRODUCER, PACED_FETCH
from benchmarks.fleet_throughput import ThroughputRun


def rate_text(value: float) -> str:
    return f"{value:,.0f}"


def _ms_value(value: float | None) -> float | None:
    return None if value is None else value * 1000


def ms_text(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:,.1f}"


def _median_of_known(values: Iterable[float | None]) -> float | None:
    """The median of the values a run measured; None if none did."""
    found = [x for x in values if x is not None]
    return statistics.median(found) if found else None


@dataclass
class Summary:
    name: str
    runs: list[ThroughputRun]
    expected: int

    @property
    def route_rate(self) -> float:
        return statistics.median(r.route_rate for r in self.runs)

    @property
    def per_worker_rate(self) -> float:
        return statistics.median(r.per_worker_rate for r in self.runs)

    @property
    def busy_per_worker_rate(self) -> float | None:
        return _median_of_known(r.busy_per_worker_rate for r in self.runs)

    @property
    def start_seconds(self) -> float:
        return statistics.median(r.worker_start_seconds for r in self.runs)

    @property
    def outputs_ok(self) -> bool:
        return all(r.complex_events == self.expected for r in self.runs)

    @property
    def route_cpu_us(self) -> float | None:
        return _median_of_known(r.route_cpu_us for r in self.runs)

    @property
    def worker_cpu_us(self) -> float | None:
        return _median_of_known(r.worker_cpu_us for r in self.runs)

    def cores(self, role: str) -> float | None:
        return _median_of_known(r.cores.get(role) for r in self.runs)


def _rate_or_unknown(x: float | None) -> str:
    return "?" if x is None else rate_text(x)


def _us(x: float | None) -> str:
    return "?" if x is None else f"{x:.1f}"


def throughput_table(summaries: Sequence[Summary]) -> list[str]:
    head = (
        "| query | events | input / keyed partitions | workers | coordinator routing ev/s "
        "| worker ev/s per process | worker runs ev/s | all busy ev/s per process "
        "| worker start s "
        "| CPU µs per event: coordinator / worker | cores: workers / broker / idle "
        "| complex events (embedded) |"
    )
    lines = [head, "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|"]
    for s in summaries:
        r0 = s.runs[0]
        runs = ", ".join(rate_text(r.per_worker_rate) for r in s.runs)
        outputs = sorted({r.complex_events for r in s.runs})
        mark = "equal" if s.outputs_ok else "**differ**"
        lines.append(
            f"| {s.name} | {r0.events:,} | {r0.input_partitions} / {r0.keyed_partitions} "
            f"| {r0.workers} | {rate_text(s.route_rate)} "
            f"| **{rate_text(s.per_worker_rate)}** | {runs} "
            f"| {_rate_or_unknown(s.busy_per_worker_rate)} | {s.start_seconds:.1f} "
            f"| {_us(s.route_cpu_us)} / {_us(s.worker_cpu_us)} "
            f"| {' / '.join(_cores(s.cores(k)) for k in THROUGHPUT_CORES)} "
            f"| {', '.join(f'{o:,}' for o in outputs)} "
            f"({s.expected:,}, {mark}) |"
        )
    return lines


def latency_table(runs: Sequence[tuple[str, LatencyRun]]) -> list[str]:
    head = (
        "| query | target ev/s | events | achieved ev/s | worker ev/s | complex events "
        "(embedded) | largest burst | p50 ms | p99 ms | p99 after 1 s ms | max ms "
        "| worker histogram p50 / p99 ms "
        "| published → read p50 / p99 ms | drain s | records lost | late events "
        "| CPU cores: coordinator / worker / broker / benchmark |"
    )
    lines = [
        head,
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in runs:
        lines.append(
            f"| {name} | {rate_text(r.target_rate)} | {r.produced:,} "
            f"| {rate_text(r.achieved_rate)} "
            f"| {rate_text(r.worker_rate)} | {r.complex_events:,} ({r.expected:,}) "
            f"| {r.largest_burst:,} "
            f"| {ms_text(r.q(0.5))} | {ms_text(r.q(0.99))} | {ms_text(r.settled_q(0.99))} "
            f"| {ms_text(r.q(1.0))} "
            f"| {ms_text(r.worker_p50)} / {ms_text(r.worker_p99)} "
            f"| {ms_text(r.published_q(0.5))} / {ms_text(r.published_q(0.99))} "
            f"| {r.drain_seconds:.2f} | {r.lost:,} "
            f"| {r.late:,} "
            f"| {' / '.join(_cores(r.cores.get(k)) for k in CORES)} |"
        )
    return lines


CORES = ("coordinator", "workers", "broker", "benchmark")
THROUGHPUT_CORES = ("workers", "broker", "idle")


def _cores(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def write_markdown(
    path: Path,
    argv: Sequence[str],
    args: argparse.Namespace,
    summaries: Sequence[Summary],
    latencies: Sequence[tuple[str, LatencyRun]],
    load: Sequence[float] = (),
) -> str:
    command = " ".join(["python -m benchmarks.fleet", *argv])
    rates = ", ".join(f"{r:,.0f}" for r in args.rate)
    loads = " → ".join(f"{x:.2f}" for x in load)
    lines = [
        "# Fleet benchmark: coordinator and workers over Kafka",
        "",
        f"`{command}` on {datetime.date.today().isoformat()}: "
        + (
            f"throughput on {args.events:,} events, {args.runs} run(s), {args.workers} worker(s)"
            + (", each pinned to a core of its own; " if args.pin_workers else "; ")
            if summaries
            else ""
        )
        + (
            f"latency at {rates} ev/s "
            + (
                f"for {args.latency_seconds:g} s."
                if args.latency_events is None
                else f"over the same {args.latency_events:,} events each."
            )
            if latencies
            else "no latency run."
        ),
        "",
        f"{os.cpu_count()} cores"
        + (f" (1-minute load average {loads} at start → end)" if loads else "")
        + f", Python {platform.python_version()}, confluent-kafka "
        f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]}), "
        f"{platform.system()} {platform.machine()}. Broker: {BROKER_TEXT[BROKER[0]]}; "
        "the coordinator and each worker are separate processes with default settings "
        "except: in latency runs, consumers "
        f"`fetch.wait.max.ms={PACED_FETCH['fetch.wait.max.ms']}` (the mock holds a fetch "
        "that finds no data for the whole wait and tansu for up to about half of it, where "
        "Apache Kafka answers when data arrives; throughput runs keep the services' own "
        "waits, since a fetch of a backlog finds data at once), fast group timeouts, and, "
        "on the mock, "
        "zstd for the coordinator's keyed copies (it keeps about 5 MiB per partition). "
        "Everything runs on one machine and shares its cores.",
        "",
    ]
    if summaries:
        lines += [
            "## Throughput",
            "",
            f"Median of {args.runs} run(s). The N events are produced first (keyed by "
            "`name`), the coordinator routes all of them, then the workers start. Coordinator: "
            "records routed over first-to-last routed. Worker: keyed records processed over "
            "first-to-last processed, divided by the number of workers (a batch is counted "
            "once done: the records of the first one counted, whose work precedes the "
            "window, are left out of both rates); *all busy*: the same over the samples at "
            "which every worker had counted a batch and still had records left (the fleet "
            "running, without one worker's earlier start or later end); *start* is worker "
            "processes launched → first record processed (interpreter, group join, recovery). "
            "Metrics sampled every 0.2 s, every 0.05 s before a phase's first record and past "
            "90% of its records. Cores: CPU seconds a second over the workers' window "
            "(`/proc`, `benchmarks.fleet_cores`): every worker process together (all "
            "threads), the broker (tansu's process, or the mock's `rdk:mock` threads), and "
            "the machine's idle time; the coordinator's and this process's are in the JSON. "
            "Complex events: published by the fleet, with the "
            "embedded engine's count over the same events in brackets.",
            "",
            *throughput_table(summaries),
            "",
        ]
    if latencies:
        lines += [
            "## Latency",
            "",
            "Coordinator and one worker running, idle and warmed up; a producer thread "
            "publishes the events at the target rate: rate × seconds of them, or the same "
            "number at every rate (`--latency-events`), which replays the same events. "
            "Largest burst: the most complex events one of them ends (the embedded engine's); "
            "where bursts hold more than 1% of the complex events, the p99 is their tail. "
            "P99 after 1 s: of the complex events whose last event came a second or more "
            "into the run: the flowing stream's, without its start from idle. "
            "Latency: output record received − produce call of "
            "its last matched event (`sources[-1]`), through three batched producers "
            f"(`linger.ms={BATCHED_PRODUCER['linger.ms']}` for this one, the services' own "
            "setting for theirs) and two consumers. Worker histogram: "
            "`cerfleet_processing_latency_seconds` (keyed batch read → complex event handed "
            "to the producer), bucket-interpolated. Published → read: the worker's produce "
            "call (the output record's CreateTime) → received here, by the wall clock. "
            "Drain: last event produced → every keyed "
            "record processed (large when the worker is slower than the target rate). Late "
            "events: dropped by the worker as late (`cerfleet_worker_late_events_total`), "
            "which makes fewer complex events than the embedded engine's. CPU cores: each "
            "process's CPU seconds (`/proc`) over the produce phase; the mock's broker is the "
            "benchmark process's `rdk:mock` thread, counted as the broker's and not the "
            "benchmark's.",
            "",
            *latency_table(latencies),
            "",
        ]
    text = "\n".join(lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return text


def write_json(
    path: Path,
    argv: Sequence[str],
    summaries: Sequence[Summary],
    latencies: Sequence[tuple[str, LatencyRun]],
    load: Sequence[float] = (),
) -> None:
    """The tables' numbers, for tools (and the model in the results' notes)."""
    doc = {
        "command": " ".join(["python -m benchmarks.fleet", *argv]),
        "date": datetime.date.today().isoformat(),
        "broker": BROKER_TEXT[BROKER[0]],
        "cores": os.cpu_count(),
        "load_average": list(load),
        "throughput": [
            {
                "query": s.name,
                "events": s.runs[0].events,
                "input_partitions": s.runs[0].input_partitions,
                "keyed_partitions": s.runs[0].keyed_partitions,
                "workers": s.runs[0].workers,
                "workers_pinned": s.runs[0].pinned,
                "coordinator_ev_s": s.route_rate,
                "worker_ev_s_per_process": s.per_worker_rate,
                "all_busy_ev_s_per_process": s.busy_per_worker_rate,
                "runs": [
                    {
                        "coordinator_ev_s": r.route_rate,
                        "workers_ev_s": r.worker_rate,
                        "worker_ev_s_per_process": r.per_worker_rate,
                        "each_worker_ev_s": r.worker_rates,
                        "all_busy_ev_s_per_process": r.busy_per_worker_rate,
                        "all_busy_cores": r.busy_cores,
                        "worker_start_s": r.worker_start_seconds,
                        "coordinator_cpu_us_per_event": r.route_cpu_us,
                        "worker_cpu_us_per_event": r.worker_cpu_us,
                        "complex_events": r.complex_events,
                        "cores": r.cores,
                    }
                    for r in s.runs
                ],
                "embedded_complex_events": s.expected,
                "complex_events_equal": s.outputs_ok,
            }
            for s in summaries
        ],
        "latency": [
            {
                "query": name,
                "target_ev_s": r.target_rate,
                "achieved_ev_s": r.achieved_rate,
                "worker_ev_s": r.worker_rate,
                "complex_events": r.complex_events,
                "embedded_complex_events": r.expected,
                "p50_ms": _ms_value(r.q(0.5)),
                "p99_ms": _ms_value(r.q(0.99)),
                "p99_after_first_second_ms": _ms_value(r.settled_q(0.99)),
                "max_ms": _ms_value(r.q(1.0)),
                "worker_histogram_p50_ms": _ms_value(r.worker_p50),
                "worker_histogram_p99_ms": _ms_value(r.worker_p99),
                "published_to_read_p50_ms": _ms_value(r.published_q(0.5)),
                "published_to_read_p99_ms": _ms_value(r.published_q(0.99)),
                "drain_s": r.drain_seconds,
                "records_lost": r.lost,
                "late_events": r.late,
                "events": r.produced,
                "largest_burst": r.largest_burst,
                "cpu_cores": r.cores,
            }
            for name, r in latencies
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
