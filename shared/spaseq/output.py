"""SPAseq's output stage: the automaton's complex events (sets of instants) to the
query's result rows, by the semantics of Definitions 8–16 (with the choices the paper
leaves open, stated in the README).

For each complex event, every way of giving its instants to the SEQ elements in order
(one each; one or more for ``X+``) is judged: the mappings are joined element by
element, stateful FILTERs read the joined mapping, ``,`` wants the next instant,
``;`` wants no instant between with a compatible match, and all instants must lie in
one tumbling window. The mappings left, projected, are the rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from cerfleet.cea.graph_match import Solution, compile_graph_match
from cerfleet.cea.predicates import compile_predicate
from cerfleet.rdf.instants import TIME
from cerfleet.spaseq import syntax as s
from cerfleet.spaseq.translate import gpm_pred

__all__ = ["Rows"]

Instant = Mapping[str, Any]
# Kleene+ runs remembered (``Rows._iterations_ok``) before the memory is dropped.
_REACH_LIMIT = 200_000
# A solution of an element and the stateful filters it must pass once joined.
_Sol = tuple[Solution, tuple[Callable[[Any], bool], ...]]


def _compatible(a: Solution, b: Solution) -> bool:
    small, big = (a, b) if len(a) <= len(b) else (b, a)
    for k, v in small.items():
        w = big.get(k)
        if w is not None and (type(w) is not type(v) or w != v):
            return False
    return True


class Rows:
    """Result rows of one query: ``rows(positions, instants)``."""

    def __init__(self, query: s.Query) -> None:
        self.query = query
        self._gpm = {
            name: compile_graph_match(gpm_pred(g), compile_predicate)
            for name, g in query.gpms.items()
        }
        self._stateful = {
            name: tuple(compile_predicate(p) for p in g.stateful) for name, g in query.gpms.items()
        }
        if query.select is None:
            names: list[str] = []
            for element in query.elements:
                for ref in s.refs(element.bop):
                    names.extend(sorted(query.gpms[ref].all_variables() - set(names)))
            self.select: tuple[str, ...] = tuple(dict.fromkeys(names))
        else:
            self.select = query.select
        self.window = query.within_ms
        self._reach: dict[tuple[Any, ...], list[Any]] = {}
        kleene = [e.kleene for e in query.elements]
        self._kleene_after = [any(kleene[i + 1 :]) for i in range(len(kleene))]

    def _alternatives(self, bop: s.BOp, instant: Instant) -> list[list[_Sol]]:
        """The mapping sets of ``bop`` at an instant: one per choice of a side of each
        ``|`` (Definition 9 is a union of (time, mappings) pairs, not of mappings)."""
        if isinstance(bop, s.Ref):
            return [[(m, self._stateful[bop.name]) for m in self._gpm[bop.name](instant)]]
        left = self._alternatives(bop.left, instant)
        right = self._alternatives(bop.right, instant)
        if isinstance(bop, s.Disj):
            return left + right
        return [
            [({**a, **b}, fa + fb) for a, fa in xs for b, fb in ys if _compatible(a, b)]
            for xs in left
            for ys in right
        ]

    def _bop(self, bop: s.BOp, instant: Instant) -> list[_Sol]:
        return [sol for alt in self._alternatives(bop, instant) for sol in alt]

    def _extend(self, xs: list[Solution], sols: list[_Sol]) -> list[Solution]:
        out = []
        for x in xs:
            for y, filters in sols:
                if _compatible(x, y):
                    merged = {**x, **y}
                    if all(f(merged) for f in filters):
                        out.append(merged)
        return out

    def _labelings(self, positions: Sequence[int], i: int, k: int) -> Iterator[list[list[int]]]:
        elements = self.query.elements
        if i == len(elements):
            if k == len(positions):
                yield []
            return
        rest = len(elements) - i - 1
        most = len(positions) - k - rest if elements[i].kleene else 1
        # With no Kleene+ after it, the elements left take one position each: this
        # one takes exactly what remains (trying every length costs O(n) per match).
        least = most if not self._kleene_after[i] else 1
        for n in range(max(least, 1), most + 1):
            for tail in self._labelings(positions, i + 1, k + n):
                yield [list(positions[k : k + n]), *tail]

    def _in_window(self, instants: Sequence[Instant], positions: Sequence[int]) -> bool:
        if self.window is None:
            return True
        lo = instants[positions[0]]["timestamp"]
        hi = instants[positions[-1]]["timestamp"]
        return bool(hi <= (lo // self.window + 1) * self.window)

    def _skips_compatible(
        self, xs: list[Solution], bop: s.BOp, instants: Sequence[Instant], a: int, b: int
    ) -> bool:
        """Whether an instant strictly between positions a and b has a match of ``bop``
        compatible with ``xs`` (Definition 11: then b is not the next one)."""
        return any(self._extend(xs, self._bop(bop, instants[q])) for q in range(a + 1, b))

    def _iterations_ok(
        self, key: tuple[Any, ...], x: Solution, bop: s.BOp, instants: Sequence[Instant], upto: int
    ) -> bool:
        """Whether the Kleene+ iterations at positions ``key[-1]`` to ``upto - 1`` are
        all compatible with ``x``. Candidates ending at later events extend the same
        runs of positions: how far the run stays compatible is kept per (mappings
        before, mapping, first position), so each position is judged once per run."""
        state = self._reach.get(key)
        if state is None:
            if len(self._reach) > _REACH_LIMIT:
                self._reach.clear()
            state = self._reach[key] = [key[-1], False]
        while not state[1] and state[0] < upto:
            if self._extend([x], self._bop(bop, instants[state[0]])):
                state[0] += 1
            else:
                state[1] = True
        return bool(state[0] >= upto)

    def _judge(
        self,
        groups: list[list[int]],
        instants: Sequence[Instant],
        i: int,
        xs: list[Solution],
        path: tuple[Any, ...] = (),
    ) -> Iterator[list[Solution]]:
        """The mapping sets of the matches giving ``groups`` to the elements from the
        ``i``-th on, after ``xs`` (the mappings of the elements before, which ``path``
        identifies: the earlier groups and the sides of ``|`` taken)."""
        if i == len(groups):
            yield xs
            return
        element, group = self.query.elements[i], groups[i]
        last = groups[i - 1][-1] if i else -1
        op = self.query.ops[i - 1] if i else None
        first = group[0]
        if op == "," and first != last + 1:
            return
        if op == ";" and self._skips_compatible(xs, element.bop, instants, last, first):
            return
        if not element.kleene:
            for k, alt in enumerate(self._alternatives(element.bop, instants[first])):
                if ys := self._extend(xs, alt):
                    yield from self._judge(groups, instants, i + 1, ys, (*path, first, k))
            return
        # Iterations: ; between them when the Kleene+ leads (Def. 13), else , (Def. 14);
        # each must be compatible with the mappings before, the last one's are kept.
        for a, b in itertools.pairwise(group):
            if i == 0 and self._skips_compatible(xs, element.bop, instants, a, b):
                return
            if i > 0 and b != a + 1:
                return
        kept = []
        for xi, x in enumerate(xs):
            if i == 0:
                ok = all(self._extend([x], self._bop(element.bop, instants[q])) for q in group[:-1])
            else:  # contiguous: group is first .. group[-1]
                ok = self._iterations_ok((path, xi, first), x, element.bop, instants, group[-1])
            if ok:
                kept.extend(self._extend([x], self._bop(element.bop, instants[group[-1]])))
        if kept:
            yield from self._judge(groups, instants, i + 1, kept, (*path, tuple(group)))

    def rows(self, positions: Sequence[int], instants: Sequence[Instant]) -> list[dict[str, Any]]:
        """The rows of the complex event at ``positions`` (indexes into ``instants``)."""
        if not positions or not self._in_window(instants, positions):
            return []
        time = instants[positions[-1]][TIME]
        out: list[dict[str, Any]] = []
        for groups in self._labelings(positions, 0, 0):
            for mapping in itertools.chain.from_iterable(self._judge(groups, instants, 0, [{}])):
                row: dict[str, Any] = {v: mapping.get(v) for v in self.select}
                row["time"] = time
                out.append(row)
        return out
