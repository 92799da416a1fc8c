"""The fleet's common command-line flags, with nothing but argparse imported: every
``cerfleet`` command registers its parser at start-up, ``cerfleet --help`` included, so
this module must stay free of pydantic, Kafka clients and the engine (the settings the
flags feed are built by :func:`cerfleet.fleet.service.settings_from_args`, in handlers).
"""

from __future__ import annotations

import argparse

__all__ = ["add_fleet_options", "add_service_options"]


def add_fleet_options(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("Kafka and fleet settings")
    g.add_argument(
        "--bootstrap-servers", "-b", help="Kafka bootstrap servers (env CERFLEET_BOOTSTRAP_SERVERS)"
    )
    g.add_argument(
        "-X",
        dest="kafka_props",
        action="append",
        metavar="KEY=VALUE",
        help="librdkafka property for every client, e.g. -X security.protocol=SASL_SSL "
        "(repeatable)",
    )
    g.add_argument("--config", metavar="FILE", help="TOML file with settings")
    g.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="how long to wait for the broker before giving up (default 10; env CERFLEET_TIMEOUT)",
    )
    g.add_argument("--registry-topic", help="query registry topic (default cerfleet.queries)")
    g.add_argument("--keyed-topic-prefix", help="prefix of keyed topics (default cerfleet.keyed.)")
    g.add_argument("--dead-letter-topic", help="dead-letter topic (default cerfleet.dead-letters)")


def add_service_options(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("service")
    g.add_argument("--metrics-port", type=int, help="serve /metrics and /healthz on this port")
    g.add_argument("--log-level", help="DEBUG, INFO (default), WARNING, ERROR")
