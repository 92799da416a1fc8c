"""Command-line options of the two Spark jobs.

Kept free of pyspark: ``cerfleet compact`` / ``cerfleet backfill`` declare the
very same options (so ``--help`` documents them and they are checked before
Spark starts), then hand them on to ``spark-submit``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from cerfleet.errors import CerfleetError
from cerfleet.events.timestamps import parse_timestamp
from cerfleet.fleet.options import add_fleet_options

if TYPE_CHECKING:
    from cerfleet.workers.backfill.job_query import JobQuery

__all__ = [
    "add_backfill_arguments",
    "add_compact_arguments",
    "check_backfill",
    "check_compact",
    "time_bound",
]


def time_bound(text: str | None, flag: str) -> int | None:
    """``--since`` / ``--until``: milliseconds since the epoch, or ISO-8601."""
    if text is None:
        return None
    ms = parse_timestamp(text)
    if ms is None:
        raise CerfleetError(f"{flag} {text!r}: expected milliseconds or an ISO-8601 time")
    return int(ms)


def _add_range(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("what to read")
    g.add_argument(
        "--topic",
        "-t",
        dest="topics",
        action="append",
        metavar="TOPIC",
        help="input topic (repeatable); with --jsonl, the topic name the file's records get",
    )
    g.add_argument(
        "--since", help="records from this Kafka timestamp on (ms since the epoch, or ISO-8601)"
    )
    g.add_argument("--until", help="records before this Kafka timestamp")
    g.add_argument(
        "--start-offset", type=int, help="first offset of every partition (default: the oldest)"
    )
    g.add_argument(
        "--end-offset", type=int, help="offset to stop before, in every partition (default: end)"
    )
    g.add_argument(
        "--max-records-per-task",
        type=int,
        default=1_000_000,
        help="split partitions into Spark tasks of at most this many offsets (default 1000000)",
    )
    g.add_argument(
        "--jsonl",
        metavar="FILE",
        help="read a JSON Lines file (read by the driver) instead of Kafka: one record per "
        "line, offsets are line numbers",
    )


def add_compact_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--archive", required=True, metavar="DIR", help="Parquet archive to add to")
    _add_range(parser)
    parser.add_argument(
        "--time-field",
        default="timestamp",
        help="with --jsonl: attribute whose time becomes the record timestamp (default timestamp)",
    )
    add_fleet_options(parser)


def add_backfill_arguments(parser: argparse.ArgumentParser) -> None:
    q = parser.add_argument_group("the query")
    q.add_argument("--query", "-q", metavar="NAME", help="a query registered with the fleet")
    q.add_argument(
        "--ceql",
        metavar="FILE",
        help="a query file: CEQL, MATCH_RECOGNIZE, SPAseq or RSEP-QL (instead of --query)",
    )
    q.add_argument(
        "--language",
        help="with --ceql: ceql or match_recognize (default: told apart as cerfleet run does)",
    )
    q.add_argument("--name", help="with --ceql: the query name in outputs (default: file stem)")
    q.add_argument("--type-field", help="with --ceql: attribute holding the event type")
    q.add_argument("--time-field", help="with --ceql: attribute holding the event time")
    s = parser.add_argument_group("where the events are (one of)")
    s.add_argument("--archive", metavar="DIR", help="a Parquet archive written by compact")
    s.add_argument(
        "--from-kafka",
        action="store_true",
        help="read the topics directly (the query's input topics unless --topic)",
    )
    _add_range(parser)
    o = parser.add_argument_group("outputs")
    o.add_argument("--output", "-o", metavar="DIR", help="write complex events as Parquet here")
    o.add_argument(
        "--mode",
        choices=("error", "overwrite", "append"),
        default="error",
        help="when --output exists (default error)",
    )
    o.add_argument("--output-topic", help="publish complex events to this Kafka topic")
    o.add_argument(
        "--bad-records",
        metavar="DIR",
        help="Parquet directory for records that cannot be evaluated (default: OUTPUT/_bad, "
        "or the dead-letter topic without --output)",
    )
    p = parser.add_argument_group("parallelism")
    p.add_argument(
        "--partitions",
        type=int,
        help="evaluation tasks (default: 4 per core); keys are spread over them",
    )
    p.add_argument(
        "--slices",
        type=int,
        help="time slices for a windowed query without PARTITION BY (default: --partitions)",
    )
    add_fleet_options(parser)


def check_compact(args: argparse.Namespace) -> None:
    """Raise ``CerfleetError`` for options a compaction cannot run with; called by
    ``cerfleet compact`` before Spark starts (``--dry-run`` too) and by the job."""
    topics = list(args.topics or [])
    if not topics:
        raise CerfleetError("give the topic(s) to compact with --topic")
    if args.jsonl is not None:
        if len(topics) != 1:
            raise CerfleetError("--jsonl takes one --topic: the name its records are filed under")
        if not Path(args.jsonl).is_file():
            raise CerfleetError(f"--jsonl {args.jsonl}: no such file")
    time_bound(args.since, "--since")
    time_bound(args.until, "--until")


def check_backfill(args: argparse.Namespace) -> JobQuery | None:
    """Raise ``CerfleetError`` (``CEQLError`` with line and column) for options a backfill
    cannot run with; return the ``--ceql`` file's query, or None for a registered one.

    Called by ``cerfleet backfill`` before Spark starts, and by the job itself, which
    may be started by spark-submit directly."""
    sources = [args.archive is not None, args.from_kafka, args.jsonl is not None]
    if sum(sources) != 1:
        raise CerfleetError("give exactly one of --archive DIR, --from-kafka and --jsonl FILE")
    if (args.query is None) == (args.ceql is None):
        raise CerfleetError("give exactly one of --query NAME and --ceql FILE")
    if args.output is None and args.output_topic is None:
        raise CerfleetError("nowhere to write: give --output DIR and/or --output-topic TOPIC")
    time_bound(args.since, "--since")
    time_bound(args.until, "--until")
    if args.ceql is None:
        return None
    # The engine loads only now: ``register`` runs on every ``cerfleet`` start-up.
    from cerfleet.languages import detect
    from cerfleet.workers.backfill.job_query import JobQuery

    path = Path(args.ceql)
    if not path.is_file():
        raise CerfleetError(f"--ceql {args.ceql}: no such file")
    text = path.read_text(encoding="utf-8")
    job = JobQuery(
        args.name or path.stem,
        text,
        args.type_field or "type",
        args.time_field or "timestamp",
        (args.language or detect(text)).lower(),
    )
    job.validate()
    return job
