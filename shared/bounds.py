"""What a query can cost: its automaton's size and how many complex events one event
may end. Read by ``cerfleet explain``, ``submit`` and the workers' registry checks.

Under the ALL strategy every subset of the events an iteration (``+``) could bind
is its own complex event, so ``A+`` has 2ⁿ⁻¹ complex events ending at its n-th A:
a window bounds n, LIMIT bounds the count. Without either, one event's output can
grow exponentially with the stream, which the fleet refuses unless told otherwise
(workers still cut it at ``max_outputs_per_event``). The other strategies select
among those complex events (NEXT, LAST, MAX) or keep contiguous runs (STRICT) and
are not flagged.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from cerfleet import pattern
from cerfleet.plan import QueryPlan

__all__ = [
    "DEFAULT_MAX_OUTPUTS_PER_EVENT",
    "AutomatonSize",
    "automaton_size",
    "iterations",
    "unbounded_output",
]

# What the fleet cuts one event's output for one query at unless ``submit`` says
# otherwise (registered with the query: ``QuerySpec.max_outputs_per_event``).
DEFAULT_MAX_OUTPUTS_PER_EVENT = 10_000


@dataclass(frozen=True, slots=True)
class AutomatonSize:
    states: int
    transitions: int
    atoms: int  # distinct filter predicates the guards test

    def __str__(self) -> str:
        return f"{self.states} states, {self.transitions} transitions, {self.atoms} atoms"


def automaton_size(plan: QueryPlan) -> AutomatonSize:
    cea = plan.cea
    return AutomatonSize(len(cea.states), len(cea.transitions), cea.atoms)


def iterations(formula: pattern.Formula) -> Iterator[pattern.Plus | pattern.ContiguousPlus]:
    """Every ``φ+`` and ``φ:+`` in ``formula``, outermost first (``φ:+`` too: its body
    may skip events, so it can be as prolific as ``+``)."""
    match formula:
        case pattern.Plus(formula=inner) | pattern.ContiguousPlus(formula=inner):
            yield formula
            yield from iterations(inner)
        case pattern.As(formula=inner) | pattern.Filter(formula=inner):
            yield from iterations(inner)
        case (
            pattern.Seq(left=left, right=right)
            | pattern.Or(left=left, right=right)
            | pattern.Contiguous(left=left, right=right)
            | pattern.Absent(left=left, right=right)
            | pattern.And(left=left, right=right)
        ):
            yield from iterations(left)
            yield from iterations(right)


def unbounded_output(form: pattern.Pattern) -> str | None:
    """Why one event's complex events can grow exponentially with the stream, or None."""
    plus = next(iterations(form.where), None)
    if plus is None or form.strategy is not pattern.Strategy.ALL:
        return None
    if form.within is not None or form.limit is not None:
        return None
    where = ""
    if plus.span is not None:
        where = f" (line {plus.span.line}, column {plus.span.column})"
    return (
        f"an iteration '+'{where} without WITHIN or LIMIT under the ALL strategy: the "
        "complex events ending at one event can double with every matching event"
    )
