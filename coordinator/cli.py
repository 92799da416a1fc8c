"""``cerfleet coordinator``: the router service's command. Kafka clients are imported
inside the handler."""

from __future__ import annotations

import argparse
from typing import Any

from cerfleet.fleet.options import add_fleet_options, add_service_options

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "coordinator",
        help="route input topics onto keyed topics, one per query group",
        description="Group the registered queries by input topics and PARTITION BY attributes "
        "and copy every input event onto each group's keyed topic.",
    )
    add_fleet_options(p)
    add_service_options(p)
    p.add_argument("--group-id", help="coordinators' consumer group (cerfleet-coordinator)")
    p.add_argument("--keyed-partitions", type=int, help="partitions of new keyed topics (8)")
    p.add_argument("--batch-size", type=int, help="records per consume call (default 10000)")
    p.set_defaults(handler=_coordinator)


def _coordinator(args: argparse.Namespace) -> int:
    from prometheus_client import CollectorRegistry

    from cerfleet.coordinator.metrics import RouterMetrics
    from cerfleet.coordinator.router import Router
    from cerfleet.fleet.service import serve, settings_from_args
    from cerfleet.fleet.settings import CoordinatorSettings

    settings = settings_from_args(
        CoordinatorSettings,
        args,
        group_id=args.group_id,
        keyed_partitions=args.keyed_partitions,
        batch_size=args.batch_size,
    )
    registry = CollectorRegistry()
    router = Router(settings, RouterMetrics(registry))

    def health() -> tuple[bool, str]:
        return router.ready, "routing" if router.ready else "starting"

    return serve("coordinator", settings, registry, health, router.run)
