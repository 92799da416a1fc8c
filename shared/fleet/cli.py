"""Fleet client subcommands: ``submit``, ``remove``, ``queries``, ``produce``, ``consume``
and ``dev``. Kafka clients are imported inside the handlers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cerfleet.errors import CerfleetError
from cerfleet.fleet.options import add_fleet_options

if TYPE_CHECKING:
    from cerfleet.fleet.settings import FleetSettings

__all__ = ["DEFAULT_IDLE_TIMEOUT", "register"]

# ``consume`` ends this long after the last record: people run it to look at a topic
# and expect their prompt back, as with ``cerfleet run``; ``--follow`` keeps waiting.
DEFAULT_IDLE_TIMEOUT = 5.0


def _topic_streams(pairs: list[str] | None) -> dict[str, str] | None:
    """``--topic-stream TOPIC=STREAM`` options as a map (None when there are none)."""
    if not pairs:
        return None
    out: dict[str, str] = {}
    for pair in pairs:
        topic, eq, stream = pair.rpartition("=")
        if not eq or not topic or not stream:
            raise CerfleetError(f"--topic-stream {pair!r}: expected TOPIC=STREAM")
        if out.get(topic, stream) != stream:
            raise CerfleetError(f"--topic-stream: topic {topic!r} mapped to two streams")
        out[topic] = stream
    return out


def _duration(text: str) -> float:
    from cerfleet.events.reorder import parse_duration

    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "submit",
        help="register (or replace) a query with the fleet",
        description="Validate QUERY and register it as NAME; a query that does not compile is "
        "rejected and nothing is registered.",
    )
    p.add_argument("name", metavar="NAME", help="query name: letters, digits, . _ -")
    p.add_argument(
        "query", metavar="QUERY", help="file holding the query (CEQL or MATCH_RECOGNIZE)"
    )
    p.add_argument(
        "--language",
        help="ceql or match_recognize (default: match_recognize when the query uses "
        "MATCH_RECOGNIZE, else ceql; as cerfleet run tells them apart)",
    )
    p.add_argument(
        "--input-topic", "-i", action="append", required=True, help="input topic (repeatable)"
    )
    p.add_argument("--output-topic", "-o", required=True, help="topic for the complex events")
    p.add_argument(
        "--output-partitions",
        type=_positive_int,
        metavar="N",
        help="partitions of the output topic if it does not exist yet and submit creates it "
        "(default 8, like keyed topics: each keyed partition then writes to an output "
        "partition of its own; env CERFLEET_OUTPUT_PARTITIONS); an existing topic is left "
        "as it is",
    )
    p.add_argument("--type-field", default="type", help="attribute holding the event type")
    p.add_argument("--time-field", default="timestamp", help="attribute holding the event time")
    p.add_argument(
        "--allow-unbounded",
        action="store_true",
        help="register a query whose complex events per event can grow exponentially (an "
        "iteration + without WITHIN or LIMIT under ALL; see cerfleet explain); workers cut "
        "each event's output at --max-outputs-per-event",
    )
    p.add_argument(
        "--max-outputs-per-event",
        type=_positive_int,
        metavar="N",
        help="the most complex events one event may make this query emit; every worker "
        "cuts there, flags the output record and counts the cut in "
        "cerfleet_worker_truncated_events_total (default 10,000)",
    )
    p.add_argument(
        "--topic-stream",
        action="append",
        metavar="TOPIC=STREAM",
        help="the records of input TOPIC are events of stream STREAM of FROM (repeatable; "
        "as --stream-field in cerfleet run). Without it every event is in every stream "
        "of FROM; with it an unmapped topic's events are in none",
    )
    p.add_argument(
        "--max-lateness",
        type=_duration,
        metavar="DURATION",
        help="evaluate each keyed partition's events in --time-field order when they "
        "arrive at most DURATION (500ms, 2s, 1m, 1h) after a later one, as cerfleet run "
        "--max-lateness; later ones are late (default: the query's BOUNDED_TIME "
        "quarantine, else arrival order)",
    )
    add_fleet_options(p)
    p.set_defaults(handler=_submit)

    p = subparsers.add_parser("remove", help="unregister a query")
    p.add_argument("name", metavar="NAME")
    add_fleet_options(p)
    p.set_defaults(handler=_remove)

    p = subparsers.add_parser("queries", help="list the registered queries")
    add_fleet_options(p)
    p.set_defaults(handler=_queries)

    p = subparsers.add_parser(
        "produce", help="publish a JSON Lines file to a topic, one record per line"
    )
    p.add_argument("file", metavar="FILE", help="JSON Lines file, or - for stdin")
    p.add_argument("--topic", "-t", required=True)
    p.add_argument("--key-field", help="use this attribute's value as the record key")
    add_fleet_options(p)
    p.set_defaults(handler=_produce)

    p = subparsers.add_parser(
        "consume",
        help="print a topic's records, one per line, and stop once it is quiet",
        description="Print TOPIC from its beginning (all partitions, no consumer group), "
        "one record per line, and stop after --idle-timeout seconds without a new record "
        f"(default {DEFAULT_IDLE_TIMEOUT:g}), or keep waiting with --follow.",
    )
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--max", type=_positive_int, help="stop after this many records")
    ends = p.add_mutually_exclusive_group()
    ends.add_argument(
        "--idle-timeout",
        type=_seconds,
        default=DEFAULT_IDLE_TIMEOUT,
        metavar="SECONDS",
        help=f"stop after this many seconds without a record (default {DEFAULT_IDLE_TIMEOUT:g})",
    )
    ends.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="keep waiting for new records until Ctrl-C, like tail -f",
    )
    p.add_argument("--headers", action="store_true", help="print records with their headers")
    p.add_argument(
        "--unique",
        action="store_true",
        help="print each complex event once: skip an output record whose cerfleet-origin "
        "header was printed before (a worker that stood still can publish a few outputs "
        "twice without --transactions)",
    )
    add_fleet_options(p)
    p.set_defaults(handler=_consume)

    p = subparsers.add_parser(
        "dev",
        help="a local broker, a coordinator and two workers, until Ctrl-C or SIGTERM",
        description="Start a local Kafka-protocol broker (librdkafka's mock cluster, memory "
        "only), a coordinator and workers, and print the bootstrap address.",
    )
    p.add_argument("--workers", type=_positive_int, default=2, help="worker processes (default 2)")
    p.add_argument(
        "--example",
        action="store_true",
        help="also register the bundled stock query and publish the bundled events",
    )
    p.add_argument("--metrics-port", type=int, help="first metrics port (workers take the next)")
    p.add_argument(
        "--log-level",
        help="of the coordinator and workers: DEBUG, INFO, WARNING (default), ERROR "
        "(env CERFLEET_LOG_LEVEL)",
    )
    p.set_defaults(handler=_dev)


def _client_settings(args: argparse.Namespace, **extra: Any) -> FleetSettings:
    """Settings of a one-shot client command (not a service)."""
    from cerfleet.fleet.service import settings_from_args
    from cerfleet.fleet.settings import FleetSettings

    settings = settings_from_args(FleetSettings, args, **extra)
    # librdkafka logs every failed connection attempt, twenty lines a second against an
    # unreachable broker; the command reports the failure itself, once, when its
    # --timeout runs out. -X log_level=7 (or CERFLEET_KAFKA) brings the logs back.
    settings.kafka.setdefault("log_level", "2")
    return settings


def _submit(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from cerfleet.bounds import DEFAULT_MAX_OUTPUTS_PER_EVENT, unbounded_output
    from cerfleet.fleet.registry import QuerySpec, write
    from cerfleet.fleet.service import validation_problems
    from cerfleet.fleet.topics import ensure_topics
    from cerfleet.languages import DEFAULT, detect

    settings = _client_settings(args, output_partitions=args.output_partitions)
    try:
        text = Path(args.query).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise CerfleetError(f"cannot read query file {args.query}: {reason}") from exc
    language = (args.language or detect(text)).lower()
    try:
        spec = QuerySpec(
            name=args.name,
            ceql=text,
            input_topics=tuple(args.input_topic),
            output_topic=args.output_topic,
            type_field=args.type_field,
            time_field=args.time_field,
            max_outputs_per_event=args.max_outputs_per_event or DEFAULT_MAX_OUTPUTS_PER_EVENT,
            topic_streams=_topic_streams(args.topic_stream),
            max_lateness=args.max_lateness,
            language=None if language == DEFAULT else language,
        )
    except ValidationError as exc:
        raise CerfleetError(f"cannot register {args.name!r}: {validation_problems(exc)}") from exc
    compiled = spec.compile()  # CEQLError / CerfleetError: reported by main, nothing registered
    # The language's own selection outputs the matches it picks, not the automaton's.
    unbounded = None if compiled.selecting else unbounded_output(compiled.pattern)
    if unbounded is not None and not args.allow_unbounded:
        raise CerfleetError(
            f"cannot register {spec.name!r}: {unbounded}; add WITHIN or LIMIT, or pass "
            "--allow-unbounded"
        )
    client = settings.client_config()
    # Created here rather than left to the first worker with an output to publish, so
    # the count asked for applies. An existing topic with another count is reported
    # only when a count was asked for (flag, environment or file), not for the default.
    ensure_topics(
        client,
        {spec.output_topic: settings.output_partitions},
        timeout=settings.timeout,
        report_mismatch="output_partitions" in settings.model_fields_set,
    )
    offset = write(client, settings.registry_topic, spec.name, spec)
    print(f"registered {spec.name} (version {offset})", file=sys.stderr)
    return 0


def _remove(args: argparse.Namespace) -> int:
    from cerfleet.fleet.registry import Registry, write

    settings = _client_settings(args)
    client = settings.client_config()
    registry = Registry(client, settings.registry_topic)
    try:
        registry.catch_up(settings.timeout)
        if args.name not in registry.current:
            raise CerfleetError(f"no query named {args.name!r} is registered")
    finally:
        registry.close()
    offset = write(client, settings.registry_topic, args.name, None)
    print(f"removed {args.name} (registry offset {offset})", file=sys.stderr)
    return 0


def _queries(args: argparse.Namespace) -> int:
    import orjson

    from cerfleet.fleet.registry import Registry

    settings = _client_settings(args)
    registry = Registry(settings.client_config(), settings.registry_topic)
    try:
        registry.catch_up(settings.timeout)
        for _, entry in sorted(registry.current.items()):
            doc = {"version": entry.version, **entry.spec.model_dump()}
            sys.stdout.write(orjson.dumps(doc).decode() + "\n")
    finally:
        registry.close()
    print(f"{len(registry.current)} queries", file=sys.stderr)
    return 0


def _produce(args: argparse.Namespace) -> int:
    from cerfleet.fleet.clients import produce_lines

    settings = _client_settings(args)
    # Opened before any broker round trip: a wrong path is the likelier mistake.
    try:
        stream = sys.stdin.buffer if args.file == "-" else open(args.file, "rb")  # noqa: SIM115
    except OSError as exc:
        raise CerfleetError(f"cannot read {args.file}: {exc.strerror}") from exc
    try:
        n = produce_lines(settings, stream, args.topic, args.key_field)
    except OSError as exc:  # e.g. a directory opens but does not read
        raise CerfleetError(f"cannot read {args.file}: {exc.strerror}") from exc
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    print(f"produced {n} records to {args.topic}", file=sys.stderr)
    return 0


def _consume(args: argparse.Namespace) -> int:
    from cerfleet.fleet.clients import consume_topic
    from cerfleet.fleet.origins import Repeats

    settings = _client_settings(args)
    idle = None if args.follow else args.idle_timeout
    repeats = Repeats() if args.unique else None
    n = consume_topic(settings, args.topic, sys.stdout, args.max, idle, args.headers, repeats)
    skipped = "" if repeats is None else f", skipped {repeats.dropped} repeated"
    print(f"consumed {n} records from {args.topic}{skipped}", file=sys.stderr)
    return 0


def _dev(args: argparse.Namespace) -> int:
    from cerfleet.fleet.dev import run_dev

    return run_dev(args.workers, args.example, args.metrics_port, args.log_level)
