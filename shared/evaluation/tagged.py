"""Algorithm 1 for correlated queries: the same walk over the determinised CEA, where
an event's outputs are a mark *and* tags (``cea.correlation``), so that enumeration can
tell which variable and which formula instance each event of a branch belongs to.

Per event the work stays O(|Q|·|Δ|): the tags only split a state's transitions into
more (target, mark, tags) groups, a number fixed by the automaton.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cerfleet.evaluation.evaluator import Evaluator
from cerfleet.evaluation.tecs import Node, TaggedNode, UnionList, extend, insert, merge, new_bottom
from cerfleet.evaluation.tecs import prune as prune_list


class TaggedEvaluator(Evaluator):
    __slots__ = ()

    def advance(
        self, j: int, event: Mapping[str, Any], letter: int, clock: float | None
    ) -> list[Node]:
        self.tick(clock)
        tau = self.tau
        step = self.dcea.step_tagged
        made = self.made
        new: dict[int, UnionList] = {}
        pending: list[tuple[int, UnionList]] = []
        if clock is not None:
            pending.append((self.dcea.initial, [new_bottom(j, clock)]))
        pending.extend(self.active.items())
        for p, ul in pending:
            prune_list(ul, tau)
            if not ul:
                continue
            n: Node | None = None
            for target, marking, tags in step(p, letter):
                if not marking and not tags:
                    # ∘ and untagged (always the last group): the runs go on unchanged.
                    if target in new:
                        insert(new[target], n if n is not None else merge(ul, made), made)
                    else:
                        new[target] = ul
                    continue
                if n is None:
                    n = merge(ul, made)
                o = extend(n, j, event) if not tags else TaggedNode(j, n, event, marking, tags)
                if target in new:
                    insert(new[target], o, made)
                else:
                    new[target] = [o]
        self.active = new
        self.after_event(made)
        if clock is None:
            return []
        is_final = self.dcea.is_final
        return [merge(ul) for q, ul in new.items() if is_final[q]]
