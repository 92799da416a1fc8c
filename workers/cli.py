"""``cerfleet worker``: one process of the worker fleet (run as many as needed)."""

from __future__ import annotations

import argparse
from typing import Any

from cerfleet.fleet.options import add_fleet_options, add_service_options

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "worker",
        help="evaluate queries over keyed topics (join the worker group)",
        description="Join the worker consumer group, evaluate every registered query over "
        "the keyed partitions assigned to this process, publish complex events to the "
        "queries' output topics and checkpoint evaluator state. SIGTERM drains, "
        "checkpoints and leaves the group.",
    )
    add_fleet_options(p)
    add_service_options(p)
    p.add_argument("--group-id", help="consumer group of workers (default cerfleet-workers)")
    p.add_argument(
        "--checkpoint-interval", type=float, help="seconds between checkpoints (default 1)"
    )
    p.add_argument("--batch-size", type=int, help="records per consume call (default 2000)")
    p.add_argument(
        "--max-outputs-per-event",
        type=int,
        help="complex events one event may emit per query; the rest are dropped, counted "
        "and flagged (default 10000; the same on every worker of the group)",
    )
    p.add_argument(
        "--query-time-budget",
        type=float,
        help="seconds one query may take to evaluate one batch of a keyed partition; a "
        "query over it is suspended there (state kept, listed on /healthz) while the "
        "others go on, until removed or resubmitted (default 5; 0: no budget)",
    )
    p.add_argument(
        "--transactions",
        action="store_true",
        default=None,
        help="publish outputs, checkpoints and offsets in Kafka transactions "
        "(needs a broker that implements them)",
    )
    p.set_defaults(handler=_worker)


def _worker(args: argparse.Namespace) -> int:
    from cerfleet.fleet.service import serve, settings_from_args
    from cerfleet.fleet.settings import WorkerSettings
    from cerfleet.workers.metrics import WorkerMetrics
    from cerfleet.workers.worker import Worker

    settings = settings_from_args(
        WorkerSettings,
        args,
        group_id=args.group_id,
        checkpoint_interval=args.checkpoint_interval,
        batch_size=args.batch_size,
        transactions=args.transactions,
        max_outputs_per_event=args.max_outputs_per_event,
        query_time_budget=args.query_time_budget,
    )
    metrics = WorkerMetrics()
    worker = Worker(settings, metrics)
    return serve("worker", settings, metrics.registry, worker.health, worker.run)
