"""What every per-substream evaluator shares: window clocks, τ and node reclamation.

One evaluator runs per PARTITION BY key. The strategy decides which algorithm:
Algorithm 1 for ALL and STRICT (``evaluator.Evaluator``), the priority-ordered
Algorithms 5/6 for NEXT and LAST (``priority.PriorityEvaluator``), and the
superset-tracking construction for MAX (``maximal.MaxEvaluator``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cerfleet.evaluation.determinization import DetCEA
from cerfleet.evaluation.reclamation import Reclaimer, unions_under
from cerfleet.evaluation.relevance import Relevance
from cerfleet.evaluation.tecs import Node, UnionList

NodeRef = Callable[[Node], int]
NodeOf = Callable[[int], Node]


class SubstreamEvaluator:
    """Base of the evaluators: ``advance`` one event, ``reset`` on consumption, and
    ``export`` / ``load`` the state for snapshots.

    Paper names: ``A`` is ``dcea``, ``ε`` is ``epsilon``, ``τ = clock(j) − ε`` is ``tau``.
    """

    __slots__ = ("clock", "dcea", "epoch", "epsilon", "last_clock", "reclaimer", "tau")

    def __init__(self, dcea: DetCEA, epsilon: float) -> None:
        self.dcea = dcea
        self.epsilon = epsilon
        self.tau = float("-inf")
        self.clock = 0  # positions seen in this substream: the clock of EVENTS windows
        self.last_clock = float("-inf")  # latest clock seen: later events may not go back
        self.epoch = 0  # the query's CONSUME BY ANY epoch this substream last restarted in
        # Reclaiming only matters with a window; without one every node stays reachable.
        # Made with the substream's first union node: most keys under many-key PARTITION
        # BY never make one, and a queue cost each about 100 bytes.
        self.reclaimer: Reclaimer | None = None

    @property
    def made(self) -> list[Node] | None:
        """Where this event's new union nodes go (None: nowhere, there is no window);
        hand it to ``after_event``."""
        if self.reclaimer is not None:
            return self.reclaimer.made
        return None if self.epsilon == float("inf") else []

    def tick(self, clock: float | None) -> None:
        """Move the window to the event's clock (None: the event has no clock)."""
        if clock is not None:
            self.tau = clock - self.epsilon
            self.last_clock = clock

    def after_event(self, made: list[Node] | None) -> None:
        reclaimer = self.reclaimer
        if reclaimer is None:
            if not made:
                return  # no union node yet: nothing to reclaim
            reclaimer = self.reclaimer = Reclaimer()
            reclaimer.made = made  # swept when it would have been with a queue from the start
        reclaimer.maybe_sweep(self.tau)

    def advance(
        self, j: int, event: Mapping[str, Any], letter: int, clock: float | None
    ) -> list[Node]:
        """Process the event at global position ``j``; return nodes whose complex events
        (within τ) end at ``j`` and are selected by the strategy.

        ``clock`` is the event's window clock, or None when it has none (under a time or
        attribute window): such an event can neither start nor end a complex event.
        """
        raise NotImplementedError

    def reset(self) -> None:
        """Consumption: drop every partial match, as if the substream restarted now."""
        raise NotImplementedError

    def relevant(self, rel: Relevance) -> frozenset[int]:
        """The batch letters that would change this evaluator's state; an event with
        any other letter changes nothing but the clocks (see ``batch``)."""
        raise NotImplementedError

    @property
    def idle(self) -> bool:
        """No partial match is alive: the substream's state could be forgotten."""
        raise NotImplementedError

    def export(self, ref: NodeRef) -> Any:
        """The strategy-specific state as JSON-ready data, nodes as ``ref(node)`` ids and
        deterministic states as sorted lists of CEA states."""
        raise NotImplementedError

    def load(self, state: Any, node: NodeOf) -> None:
        raise NotImplementedError

    def roots(self) -> list[Node]:
        """Every node the state holds directly (for reclamation after a restore)."""
        raise NotImplementedError

    def rebuild_reclaimer(self) -> None:
        if self.epsilon != float("inf"):
            unions = unions_under(self.roots())
            self.reclaimer = Reclaimer(unions) if unions else None

    def states(self, sid: int) -> list[int]:
        return sorted(self.dcea.states[sid])

    def intern(self, states: list[int]) -> int:
        return self.dcea.intern(frozenset(states))


def nodes_of(lists: list[UnionList]) -> list[Node]:
    return [n for ul in lists for n in ul]
