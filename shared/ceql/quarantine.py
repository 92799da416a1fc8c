"""Checks on CORE's ``CREATE QUARANTINE`` policies, and what cerfleet honours of them.

CORE keys a policy by its set of streams and applies it to the queries whose FROM
names exactly that set (a query over another set gets DIRECT). cerfleet keeps that
rule and maps the policies onto its one reordering mechanism, the event-time
lateness bound of ``events.reorder``:

* ``DIRECT { S }``: arrival order, as without a policy.
* ``BOUNDED_TIME span { S }``: time order within ``span`` (``--max-lateness``). CORE
  measures the bound against its wall clock (after estimating the clock's offset from
  the first 1,000 events, which it drops); cerfleet measures it against the largest
  event time seen, so a replay of the same input gives the same complex events.
* ``FIXED_TIME span { S }`` holds each event for ``span`` of wall-clock time after it
  arrived: what it releases depends on when events arrive, not on the events, which
  no replay can reproduce. Refused.

When no policy names exactly the query's streams, one naming some of them would
silently not apply in CORE; it is refused here, so nobody believes their events are
re-ordered when they are not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from cerfleet import pattern

__all__ = ["check_quarantines"]

Fail = Callable[[str, pattern.Span | None, str | None], NoReturn]


def check_quarantines(query: pattern.Pattern, fail: Fail) -> None:
    """Raise (through ``fail``) at the first policy cerfleet cannot honour exactly."""
    declared = {decl.name for decl in query.declarations}
    mine = set(query.streams)
    seen: dict[frozenset[str], pattern.Quarantine] = {}
    for policy in query.quarantines:
        name = policy.kind.value
        if policy.kind is pattern.QuarantineKind.FIXED_TIME:
            fail(
                "FIXED_TIME is not supported: it holds each event for a span of wall-clock "
                "time after its arrival, so what it releases depends on when events "
                "arrive and no replay could give the same complex events",
                policy.span,
                "BOUNDED_TIME (time order within a bound of event time) or DIRECT",
            )
        if policy.kind is pattern.QuarantineKind.BOUNDED_TIME and policy.span_ms is None:
            fail(f"{name} needs a span", policy.span, f"{name} 10 SECONDS {{ S }}")
        spans = policy.stream_spans or (None,) * len(policy.streams)
        if declared:
            for stream, span in zip(policy.streams, spans, strict=False):
                if stream not in declared:
                    fail(
                        f"unknown stream '{stream}' in CREATE QUARANTINE",
                        span,
                        "a declared stream: " + ", ".join(sorted(declared)),
                    )
        streams = frozenset(policy.streams)
        if streams in seen:
            fail(
                "a second quarantine policy for the same streams",
                policy.span,
                "one policy per set of streams",
            )
        seen[streams] = policy
        if query.quarantine is None and streams & mine:
            fail(
                f"this {name} policy covers {', '.join(policy.streams)} but the query reads "
                f"{', '.join(query.streams)}: a policy applies to the queries over exactly "
                "its set of streams",
                policy.span,
                "a policy naming exactly the streams in FROM",
            )
