"""Algorithm 1 of CORE (§4.3): evaluation of an I/O-deterministic CEA over one substream.

Used for ALL and STRICT (STRICT is a product automaton, not a competition).
Per event the work is O(|Q|·|Δ|) in the determinised automaton, independent of
the number of partial matches and of the window length: every active state
owns one union-list, and union-lists hold at most |Q| nodes.

Expired states (research notes §3.12): τ = clock(j) − ε never decreases
(clocks are non-decreasing per substream), so a union-list entry whose
``tmax < τ`` can never contribute again: it is dropped before the event is
processed, and a state whose first entry is dropped leaves the active set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cerfleet.evaluation.determinization import NONE, DetCEA
from cerfleet.evaluation.relevance import Relevance
from cerfleet.evaluation.substream import NodeOf, NodeRef, SubstreamEvaluator, nodes_of
from cerfleet.evaluation.tecs import Node, UnionList, extend, insert, merge, new_bottom, prune


class Evaluator(SubstreamEvaluator):
    """One instance of Algorithm 1; ``T`` of the paper is ``active``, ordered by first
    insertion, which Algorithm 1 needs (it is decreasing max-start)."""

    __slots__ = ("active",)

    def __init__(self, dcea: DetCEA, epsilon: float) -> None:
        super().__init__(dcea, epsilon)
        self.active: dict[int, UnionList] = {}

    def advance(
        self, j: int, event: Mapping[str, Any], letter: int, clock: float | None
    ) -> list[Node]:
        self.tick(clock)
        tau = self.tau
        step = self.dcea.step
        made = self.made
        new: dict[int, UnionList] = {}
        # q0 first, then T in insertion order: decreasing max-start, which keeps every
        # insert's precondition max(n) <= max(n0) (App. B.3). ExecTrans is inlined: this
        # loop is the engine's hot path.
        pending: list[tuple[int, UnionList]] = []
        if clock is not None:
            pending.append((self.dcea.initial, [new_bottom(j, clock)]))
        pending.extend(self.active.items())
        for p, ul in pending:
            prune(ul, tau)
            if not ul:
                continue  # expired: no run in it can end inside a future window
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
        self.active = new
        self.after_event(made)
        if clock is None:
            return []
        is_final = self.dcea.is_final
        return [merge(ul) for q, ul in new.items() if is_final[q]]

    def reset(self) -> None:
        self.active = {}

    def relevant(self, rel: Relevance) -> frozenset[int]:
        return rel.of_states(tuple(self.active))

    @property
    def idle(self) -> bool:
        return not self.active

    def export(self, ref: NodeRef) -> Any:
        return [[self.states(q), [ref(n) for n in ul]] for q, ul in self.active.items()]

    def load(self, state: Any, node: NodeOf) -> None:
        self.active = {self.intern(states): [node(i) for i in ids] for states, ids in state}

    def roots(self) -> list[Node]:
        return nodes_of(list(self.active.values()))
