"""CPU cost per event of the fleet's own work, without Kafka: the inputs of the scale model.

Run ``python -m benchmarks.fleet_cpu [--events N] [--runs K] [--batch B]
[--query both|partitioned|global|balanced] [--label L] [--out DIR]``.

The fleet benchmark (``benchmarks.fleet``) measures wall-clock rates on a shared
machine, where a busy neighbour halves them. This one measures CPU seconds
(``time.process_time``) of the work the fleet's processes do per record, in this
process, on the fleet benchmark's events and queries:

* **worker**: ``PartitionState.process`` over keyed batches of ``--batch`` records
  (judging, decoding, evaluating, enumerating), then the output record, key and origin
  tag of every complex event (what is handed to the producer). By default the worker's
  ``batch_size`` (2,000), what it reads at a time from a backlog; under a paced load a
  worker reads a few to a few dozen records at a time, which the engine takes row by
  row;
* **coordinator**: what routing needs of each record, ``--batch`` records at a time:
  its verdict and its group's record key (``KeyExtractor`` where it exists, else
  ``decode_event`` and ``key_of`` per record, as the coordinator did before batches).

The Kafka client's own cost (fetching, producing, compression, delivery reports) is
not in it: the fleet benchmark has it. Medians of ``--runs``; the complex events are
counted and compared with the embedded engine's. ``--label`` names the row (run it on
two checkouts to compare them); results are appended to ``DIR/fleet-cpu.json`` (a run
replaces its label's rows of the queries it measured) and the table rewritten in
``DIR/fleet-cpu.md``. ``--query balanced`` measures the key-balanced query, whose
PARTITION BY value (the desk) is an int.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from benchmarks.datasets import stock, to_dicts
from benchmarks.fleet_workload import (
    CHOICES,
    KEYED_PARTITIONS,
    QUERIES,
    TIME_FIELD,
    embedded_count,
    events_for,
)
from cerfleet.fleet.groups import groups_of
from cerfleet.fleet.records import DEFAULT_LIMITS, Rejected, decode_event
from cerfleet.fleet.registry import QuerySpec, RegistryHistory
from cerfleet.fleet.settings import WorkerSettings
from cerfleet.kept_json import dumps_kept
from cerfleet.workers.catalog import Catalog
from cerfleet.workers.partition import PartitionState, Record
from cerfleet.workers.query_run import output_records

ROOT = Path(__file__).resolve().parent.parent
BATCH: int = WorkerSettings.model_fields["batch_size"].default  # a backlog's batch
PREFIX = "k."


def catalog_of(query: str) -> tuple[Catalog, Any]:
    history = RegistryHistory()
    spec = QuerySpec(
        name="bench",
        ceql=query,
        input_topics=("stock",),
        output_topic="matches",
        time_field=TIME_FIELD,
    )
    history.apply(0, key=b"bench", value=spec.model_dump_json().encode())
    (group,) = groups_of(history.current, PREFIX).values()
    return Catalog(history, PREFIX), group


def worker_seconds(
    catalog: Catalog, group: Any, lines: list[bytes], size: int = BATCH
) -> tuple[float, int, float]:
    """CPU seconds to process ``lines`` as one keyed partition in batches of ``size``,
    the outputs made, and the CPU seconds of those spent making the output records
    (key, value and headers, as the worker hands them to its producer)."""
    batches = [
        [Record(s + i, line, ("stock", 0, s + i), 1) for i, line in enumerate(lines[s : s + size])]
        for s in range(0, len(lines), size)
    ]
    state = PartitionState(group.keyed_topic, 0, catalog)
    # Bounded as a worker's is (and as the embedded count is): a burst of the stock
    # stream passes the cap on what one event may emit.
    state.limit(*WorkerSettings().partition_limits())
    keyed = (group.keyed_topic, 0)
    outputs = 0
    formatting = 0.0
    clock = time.process_time
    started = clock()
    for batch in batches:
        outs, dead = state.process(batch)
        assert not dead
        if outs:
            at = clock()
            for _ in output_records(keyed, outs):
                pass
            formatting += clock() - at
            outputs += len(outs)
    return clock() - started, outputs, formatting


def coordinator_seconds(group: Any, lines: list[bytes], size: int = BATCH) -> float:
    """CPU seconds to judge and key ``lines`` for ``group``, ``size`` at a time."""
    route: Callable[[list[bytes]], object]
    try:
        from cerfleet.coordinator.partition_keys import KeyExtractor
    except ImportError:  # a checkout from before batches: record by record
        from cerfleet.fleet.keyed import key_of

        attrs = group.id.partition_attrs
        type_fields = group.type_fields

        def route(batch: list[bytes]) -> object:
            keys = []
            for value in batch:
                event = decode_event(value, DEFAULT_LIMITS)
                if isinstance(event, Rejected) or any(
                    not isinstance(event.get(f), str) for f in type_fields
                ):
                    keys.append(None)
                    continue
                keys.append(key_of(event, attrs) if attrs else b"[]")
            return keys
    else:
        route = KeyExtractor([group], DEFAULT_LIMITS).extract  # type: ignore[assignment]
    chunks = [lines[s : s + size] for s in range(0, len(lines), size)]
    started = time.process_time()
    for chunk in chunks:
        route(chunk)
    return time.process_time() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fleet_cpu", description=__doc__)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--batch", type=int, default=BATCH, help="records per batch")
    parser.add_argument(
        "--query",
        choices=["both", *CHOICES],
        default="both",
        help="both: the partitioned and global queries; balanced: keys spread over the "
        "input partitions (an int PARTITION BY value, the desk)",
    )
    parser.add_argument("--label", default="this checkout")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    stream = to_dicts(stock(args.events))
    rows = []
    chosen = QUERIES if args.query == "both" else {args.query: CHOICES[args.query]}
    for name, query in chosen.items():
        events = events_for(query, stream, KEYED_PARTITIONS)
        # Values of their own size, as a consumer hands them: orjson.dumps returns its
        # 4 KiB write buffer, which cost the worker 15% more CPU over 100,000 events.
        lines = [dumps_kept(e) for e in events]
        catalog, group = catalog_of(query)
        expected = embedded_count(query, events)
        work = [worker_seconds(catalog, group, lines, args.batch) for _ in range(args.runs)]
        route = [coordinator_seconds(group, lines, args.batch) for _ in range(args.runs)]
        w = statistics.median(s for s, _, _ in work)
        c = statistics.median(route)
        outputs = {o for _, o, _ in work}
        formatting = statistics.median(f / max(o, 1) for _, o, f in work)
        row = {
            "label": args.label,
            "query": name,
            "events": args.events,
            "batch": args.batch,
            "runs": args.runs,
            "worker_cpu_us_per_event": w / args.events * 1e6,
            "worker_ev_per_cpu_s": args.events / w,
            "output_cpu_us_per_complex_event": formatting * 1e6,
            "coordinator_cpu_us_per_event": c / args.events * 1e6,
            "coordinator_ev_per_cpu_s": args.events / c,
            "complex_events": sorted(outputs),
            "embedded_complex_events": expected,
            "equal": outputs == {expected},
            "date": datetime.date.today().isoformat(),
            "load_average": os.getloadavg()[0],
        }
        rows.append(row)
        print(
            f"{args.label} {name}, batches of {args.batch:,}: "
            f"worker {row['worker_cpu_us_per_event']:.2f} µs/event "
            f"({row['worker_ev_per_cpu_s']:,.0f} ev per CPU s; output records "
            f"{row['output_cpu_us_per_complex_event']:.2f} µs each), coordinator "
            f"{row['coordinator_cpu_us_per_event']:.2f} µs/event "
            f"({row['coordinator_ev_per_cpu_s']:,.0f} ev per CPU s), "
            f"{sorted(outputs)} complex events (embedded {expected})",
            file=sys.stderr,
        )
    store = args.out / "fleet-cpu.json"
    previous = orjson.loads(store.read_bytes()) if store.exists() else []
    # A run replaces its own label's rows of the queries it measured, no others.
    measured = {(r["label"], r["query"]) for r in rows}
    kept = [r for r in previous if (r["label"], r["query"]) not in measured]
    all_rows = kept + rows
    args.out.mkdir(parents=True, exist_ok=True)
    store.write_bytes(orjson.dumps(all_rows, option=orjson.OPT_INDENT_2) + b"\n")
    table = [
        "# Fleet CPU cost per event (no Kafka)",
        "",
        f"`python -m benchmarks.fleet_cpu` on {platform.python_version()}, "
        f"{os.cpu_count()} cores; CPU seconds (`time.process_time`), median of the runs. "
        "Worker: judging, decoding, evaluating, enumerating and serialising outputs; "
        "of that, output record: key, value and headers of one complex event (µs each; "
        "- in rows from before it was measured); "
        "coordinator: verdict and record key of every record.",
        "",
        "| checkout | query | events | batch | worker µs/event | worker ev per CPU s "
        "| output record µs | coordinator µs/event | coordinator ev per CPU s "
        "| complex events (embedded) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in all_rows:
        mark = "equal" if r["equal"] else "**differ**"
        per_output = r.get("output_cpu_us_per_complex_event")
        table.append(
            f"| {r['label']} | {r['query']} | {r['events']:,} | {r.get('batch', BATCH):,} "
            f"| {r['worker_cpu_us_per_event']:.2f} | {r['worker_ev_per_cpu_s']:,.0f} "
            f"| {'-' if per_output is None else f'{per_output:.2f}'} "
            f"| {r['coordinator_cpu_us_per_event']:.2f} | {r['coordinator_ev_per_cpu_s']:,.0f} "
            f"| {', '.join(f'{o:,}' for o in r['complex_events'])} "
            f"({r['embedded_complex_events']:,}, {mark}) |"
        )
    (args.out / "fleet-cpu.md").write_text("\n".join(table) + "\n", encoding="utf-8")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
