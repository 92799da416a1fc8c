"""``cerfleet compact`` and ``cerfleet backfill``: the Spark jobs, through spark-submit."""

from __future__ import annotations

import argparse
from typing import Any

from cerfleet.workers.backfill.options import add_backfill_arguments, add_compact_arguments

__all__ = ["register"]


def register(subparsers: Any) -> None:
    compact = subparsers.add_parser(
        "compact",
        help="archive topic ranges as Parquet, once per record (Spark)",
        description="Read a range of one or more topics (all partitions, in parallel Spark "
        "tasks) and append the records the archive lacks, partitioned by date. Builds and "
        "runs the spark-submit command (--dry-run prints it).",
    )
    add_compact_arguments(compact)
    _spark(compact)
    compact.set_defaults(handler=_compact)
    backfill = subparsers.add_parser(
        "backfill",
        help="run a query over archived events (Spark), same answers as the fleet",
        description="Evaluate a registered query (--query) or a CEQL file (--ceql) over an "
        "archive, a topic range or a JSON Lines file, in parallel by PARTITION BY key or by "
        "time slice, and write complex events in the fleet's output format to Parquet and/or "
        "a topic. Builds and runs the spark-submit command (--dry-run prints it).",
    )
    add_backfill_arguments(backfill)
    _spark(backfill)
    backfill.set_defaults(handler=_backfill)


def _spark(parser: argparse.ArgumentParser) -> None:
    from cerfleet.workers.backfill.submit import add_spark_options

    add_spark_options(parser)


def _compact(args: argparse.Namespace) -> int:
    from cerfleet.workers.backfill.options import check_compact
    from cerfleet.workers.backfill.submit import submit

    check_compact(args)  # what the job would find only after Spark started: now
    return submit("compact", args, add_compact_arguments)


def _backfill(args: argparse.Namespace) -> int:
    from cerfleet.workers.backfill.options import check_backfill
    from cerfleet.workers.backfill.submit import submit

    check_backfill(args)  # what the job would find only after Spark started: now
    return submit("backfill", args, add_backfill_arguments)
