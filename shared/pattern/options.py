"""The pattern form's query options around a formula, and the whole ``Pattern``."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from cerfleet.pattern.formulas import Formula
from cerfleet.pattern.predicates import Span, _span


class Strategy(enum.Enum):
    ALL = "ALL"
    NEXT = "NEXT"
    LAST = "LAST"
    MAX = "MAX"
    STRICT = "STRICT"


class Consume(enum.Enum):
    NONE = "NONE"
    ANY = "ANY"
    PARTITION = "PARTITION"


class WindowKind(enum.Enum):
    EVENTS = "EVENTS"  # positions in the (partition's) stream
    TIME = "TIME"  # the --time-field timestamp, in milliseconds
    ATTRIBUTE = "ATTRIBUTE"  # a numeric attribute of the events


TIME_UNITS_MS: dict[str, int] = {
    "MILLISECONDS": 1,
    "SECONDS": 1000,
    "MINUTES": 60_000,
    "HOURS": 3_600_000,
}


@dataclass(frozen=True)
class Window:
    """``WITHIN amount EVENTS``, ``WITHIN amount UNIT`` or ``WITHIN amount [attr]``.

    ``unit`` is the upper-case time unit for TIME windows (a key of TIME_UNITS_MS),
    ``attr`` the attribute for ATTRIBUTE windows.
    """

    kind: WindowKind
    amount: int | float
    unit: str | None = None
    attr: str | None = None
    span: Span | None = _span()

    @property
    def epsilon(self) -> int | float:
        """The bound ε on ``clock(end) - clock(start)``, in the clock's own unit."""
        if self.kind is WindowKind.TIME:
            assert self.unit is not None
            return self.amount * TIME_UNITS_MS[self.unit]
        return self.amount


class AttrType(enum.Enum):
    INT = "int"
    DOUBLE = "double"
    STRING = "string"
    BOOLEAN = "boolean"
    PRIMARY_TIME = "primary_time"


@dataclass(frozen=True)
class EventDecl:
    name: str
    attributes: tuple[tuple[str, AttrType], ...]
    span: Span | None = _span()


@dataclass(frozen=True)
class StreamDecl:
    """A declared stream: the schema of each event type it carries (CEQL's
    ``DECLARE STREAM S { EVENT E { a: type, ... }, ... }``)."""

    name: str
    events: tuple[EventDecl, ...]
    span: Span | None = _span()


class QuarantineKind(enum.Enum):
    """CORE's quarantine policies: how the events of a set of streams are ordered
    before queries over exactly that set see them."""

    DIRECT = "DIRECT"  # in arrival order
    BOUNDED_TIME = "BOUNDED_TIME"  # in time order within a lateness bound
    FIXED_TIME = "FIXED_TIME"  # each held a span of wall-clock time (refused)


@dataclass(frozen=True)
class Quarantine:
    """One policy of ``CREATE QUARANTINE { ... }``: its kind, its span in milliseconds
    (None for DIRECT) and the set of streams it governs."""

    kind: QuarantineKind
    streams: tuple[str, ...]
    span_ms: int | float | None = None
    span: Span | None = _span()
    stream_spans: tuple[Span | None, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class Pattern:
    """A whole pattern: the formula ``where`` and the options around it.

    ``select`` is None for ``SELECT *`` and otherwise the projected variables in
    source order. ``partition_by`` flattens ``[a, b], [c]`` to ``(a, b, c)``.
    ``limit`` is ``LIMIT n`` (None: unlimited).
    """

    where: Formula
    select: tuple[str, ...] | None = None
    strategy: Strategy = Strategy.ALL
    streams: tuple[str, ...] = ()
    partition_by: tuple[str, ...] = ()
    within: Window | None = None
    consume: Consume = Consume.NONE
    limit: int | None = None
    declarations: tuple[StreamDecl, ...] = ()
    quarantines: tuple[Quarantine, ...] = ()
    select_spans: tuple[Span | None, ...] = field(default=(), compare=False, repr=False)
    # Parallel to ``streams`` and ``partition_by``, and the ``n`` of ``LIMIT n``,
    # so semantic errors about them can point at the text.
    stream_spans: tuple[Span | None, ...] = field(default=(), compare=False, repr=False)
    partition_spans: tuple[Span | None, ...] = field(default=(), compare=False, repr=False)
    limit_span: Span | None = field(default=None, compare=False, repr=False)

    @property
    def quarantine(self) -> Quarantine | None:
        """The declared policy for the query's streams: CORE applies a policy to the
        queries whose FROM names exactly its set of streams (None: no such policy, the
        events are seen in arrival order as under DIRECT)."""
        mine = set(self.streams)
        return next((q for q in self.quarantines if set(q.streams) == mine), None)

    @property
    def max_lateness(self) -> float | None:
        """The lateness bound (milliseconds of the time field) a BOUNDED_TIME policy for
        the query's streams sets; None: arrival order."""
        policy = self.quarantine
        if policy is None or policy.kind is not QuarantineKind.BOUNDED_TIME:
            return None
        assert policy.span_ms is not None
        return float(policy.span_ms)
