"""Fleet client subcommands: ``submit``, ``remove``, ``queries``, ``produce``, ``consume``
and ``dev``. Kafka clients are imported inside the handlers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cerfleet.fleet.service import add_fleet_options, settings_from_args

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "submit",
        help="register (or replace) a query with the fleet",
        description="Validate QUERY and register it as NAME; a query that does not compile is "
        "rejected and nothing is registered.",
    )
    p.add_argument("name", metavar="NAME", help="query name: letters, digits, . _ -")
    p.add_argument("query", metavar="QUERY", help="file holding the CEQL query")
    p.add_argument(
        "--input-topic", "-i", action="append", required=True, help="input topic (repeatable)"
    )
    p.add_argument("--output-topic", "-o", required=True, help="topic for the complex events")
    p.add_argument(
        "--output-partitions",
        type=int,
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
        "each event's output at their max_outputs_per_event",
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

    p = subparsers.add_parser("consume", help="print a topic's records, one per line")
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--max", type=int, help="stop after this many records")
    p.add_argument(
        "--idle-timeout", type=float, help="stop after this many seconds without a record"
    )
    p.add_argument("--headers", action="store_true", help="print records with their headers")
    add_fleet_options(p)
    p.set_defaults(handler=_consume)

    p = subparsers.add_parser(
        "dev",
        help="a local broker, a coordinator and two workers, until Ctrl-C",
        description="Start a local Kafka-protocol broker (librdkafka's mock cluster, memory "
        "only), a coordinator and workers, and print the bootstrap address.",
    )
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument(
        "--example",
        action="store_true",
        help="also register the bundled stock query and publish the bundled events",
    )
    p.add_argument("--metrics-port", type=int, help="first metrics port (workers take the next)")
    p.set_defaults(handler=_dev)


def _submit(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from cerfleet.bounds import unbounded_output
    from cerfleet.errors import CerfleetError
    from cerfleet.fleet.registry import QuerySpec, write
    from cerfleet.fleet.settings import FleetSettings
    from cerfleet.fleet.topics import ensure_topics

    settings = settings_from_args(FleetSettings, args, output_partitions=args.output_partitions)
    try:
        text = Path(args.query).read_text(encoding="utf-8")
    except OSError as exc:
        raise CerfleetError(f"cannot read query file {args.query}: {exc.strerror}") from exc
    try:
        spec = QuerySpec(
            name=args.name,
            ceql=text,
            input_topics=tuple(args.input_topic),
            output_topic=args.output_topic,
            type_field=args.type_field,
            time_field=args.time_field,
        )
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise CerfleetError(f"cannot register {args.name!r}: {problems}") from exc
    compiled = spec.compile()  # CEQLError / CerfleetError: reported by main, nothing registered
    unbounded = unbounded_output(compiled.pattern)
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
        report_mismatch="output_partitions" in settings.model_fields_set,
    )
    offset = write(client, settings.registry_topic, spec.name, spec)
    print(f"registered {spec.name} (version {offset})", file=sys.stderr)
    return 0


def _remove(args: argparse.Namespace) -> int:
    from cerfleet.errors import CerfleetError
    from cerfleet.fleet.registry import Registry, write
    from cerfleet.fleet.settings import FleetSettings

    settings = settings_from_args(FleetSettings, args)
    client = settings.client_config()
    registry = Registry(client, settings.registry_topic)
    try:
        registry.catch_up()
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
    from cerfleet.fleet.settings import FleetSettings

    settings = settings_from_args(FleetSettings, args)
    registry = Registry(settings.client_config(), settings.registry_topic)
    try:
        registry.catch_up()
        for _, entry in sorted(registry.current.items()):
            doc = {"version": entry.version, **entry.spec.model_dump()}
            sys.stdout.write(orjson.dumps(doc).decode() + "\n")
    finally:
        registry.close()
    print(f"{len(registry.current)} queries", file=sys.stderr)
    return 0


def _produce(args: argparse.Namespace) -> int:
    from cerfleet.fleet.clients import produce_lines
    from cerfleet.fleet.settings import FleetSettings

    settings = settings_from_args(FleetSettings, args)
    stream = sys.stdin.buffer if args.file == "-" else open(args.file, "rb")  # noqa: SIM115
    try:
        n = produce_lines(settings, stream, args.topic, args.key_field)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    print(f"produced {n} records to {args.topic}", file=sys.stderr)
    return 0


def _consume(args: argparse.Namespace) -> int:
    from cerfleet.fleet.clients import consume_topic
    from cerfleet.fleet.settings import FleetSettings

    settings = settings_from_args(FleetSettings, args)
    n = consume_topic(settings, args.topic, sys.stdout, args.max, args.idle_timeout, args.headers)
    print(f"consumed {n} records from {args.topic}", file=sys.stderr)
    return 0


def _dev(args: argparse.Namespace) -> int:
    from cerfleet.fleet.dev import run_dev

    return run_dev(args.workers, args.example, args.metrics_port)
