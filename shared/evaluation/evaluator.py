"""Algorithm 1 of CORE (§4.3): evaluation of an I/O-deterministic CEA over one (sub)stream.

Per event the work is O(|Q|·|Δ|) in the determinised automaton, independent of
the number of partial matches and of the window length: every active state
owns one union-list, and union-lists hold at most |Q| nodes.

Two things the paper leaves to the implementation (research notes §3.10, §3.12):

* **Expired states.** τ = clock(j) − ε never decreases (clocks are
  non-decreasing per substream), so a union-list entry whose ``tmax < τ`` can
  never contribute again: it is dropped before the event is processed, and a
  state whose first entry is dropped leaves the active set.
* **Reclamation.** A live node can still point at an expired sub-DAG through a
  union node's right child. Every union node that may persist is queued in
  creation order; once the queue has doubled since the last sweep, the sweep
  cuts right children that fell out of the window (amortised O(1) per node).
  After a sweep nothing in the window reaches anything outside it, so CPython
  reclaims the expired nodes and memory stays flat on an endless stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.evaluation.determinization import NONE, DetCEA
from shared.evaluation.tecs import DEAD, Node, UnionList, extend, insert, merge, new_bottom

_MIN_SWEEP = 4096  # union nodes queued before the first sweep: keeps sweeps rare on small windows


class Evaluator:
    """One instance of Algorithm 1.

    Paper names: ``A`` is ``dcea``, ``T`` is ``active`` (ordered by first
    insertion, which Algorithm 1 needs: decreasing max-start), ``ε`` is
    ``epsilon``, ``τ`` is ``tau``.
    """

    __slots__ = ("active", "clock", "dcea", "epsilon", "last_clock", "made", "sweep_at", "tau")

    def __init__(self, dcea: DetCEA, epsilon: float) -> None:
        self.dcea = dcea
        self.epsilon = epsilon
        self.active: dict[int, UnionList] = {}
        self.tau = float("-inf")
        self.clock = 0  # positions seen in this substream: the clock of EVENTS windows
        self.last_clock = float("-inf")  # latest clock seen: later events may not go back
        # Reclaiming only matters with a window; without one every node stays reachable.
        self.made: list[Node] | None = [] if epsilon != float("inf") else None
        self.sweep_at = _MIN_SWEEP

    def advance(
        self, j: int, event: Mapping[str, Any], letter: int, clock: float | None
    ) -> list[Node]:
        """Process the event at global position ``j``; return one node per final state
        reached, whose complex events (within τ) end at ``j``.

        ``clock`` is the event's window clock, or None when it has none (under a time
        or attribute window): such an event can neither start nor end a complex event.
        """
        if clock is not None:
            self.tau = clock - self.epsilon
            self.last_clock = clock
        tau = self.tau
        step = self.dcea.step
        made = self.made
        new: dict[int, UnionList] = {}

        def exec_trans(p: int, ul: UnionList) -> None:
            marked_to, unmarked_to = step(p, letter)
            n: Node | None = None
            if marked_to != NONE:
                n = merge(ul, made)
                o = extend(n, j, event)
                if marked_to in new:
                    insert(new[marked_to], o, made)
                else:
                    new[marked_to] = [o]
            if unmarked_to != NONE:
                if unmarked_to in new:
                    insert(new[unmarked_to], n if n is not None else merge(ul, made), made)
                else:
                    new[unmarked_to] = ul  # handed over: each list is consumed once per event

        if clock is not None:
            exec_trans(self.dcea.initial, [new_bottom(j, clock)])
        for p, ul in self.active.items():
            if ul[0].tmax < tau:
                continue
            while ul[-1].tmax < tau:
                ul.pop()
            exec_trans(p, ul)
        self.active = new
        if made is not None and len(made) >= self.sweep_at:
            self._sweep()
        if clock is None:
            return []
        is_final = self.dcea.is_final
        return [merge(ul) for q, ul in new.items() if is_final[q]]

    def _sweep(self) -> None:
        assert self.made is not None
        tau = self.tau
        keep: list[Node] = []
        for u in self.made:
            if u.tmax < tau:
                continue  # expired itself: only reachable through right children cut below
            right = u.right
            assert right is not None
            if right.tmax < tau:
                u.right = DEAD
            else:
                keep.append(u)
        self.made = keep
        self.sweep_at = max(2 * len(keep), _MIN_SWEEP)

    @property
    def idle(self) -> bool:
        """No partial match is alive: the substream's state can be forgotten."""
        return not self.active
