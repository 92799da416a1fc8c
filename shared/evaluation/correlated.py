"""Enumeration with correlations checked on the way (``cea.correlation``).

The walk is Algorithm 2's (``enumeration``), down the tECS from a complex event's last
event to its first. Every tagged event it fixes is checked at once against the events
fixed before it on the same branch (the later ones): each correlation is tried on every
combination of events that the new event completes, and the branch is dropped at the
first violation, so no branch is walked on past an event that already rules it out.
Since each combination is checked when its earliest event is fixed, a branch that
reaches its start has had every combination checked.

The instance of a ``+`` an event belongs to is read from the tags while walking: the
events carrying ``^p`` start the iterations of ``+`` p, so, walking backwards, the
number of ``^p`` passed so far numbers the iteration (``_arrive``).

Running correlations (MATCH_RECOGNIZE's DEFINE on other rows) are checked once a
branch reaches its first event, on the branch's tagged events (``evaluation.running``).

Guarantees: per event, the evaluator's work is constant as for any query; per complex
event, enumeration costs the branches it visits (pruned early), not the output size
alone: a query whose correlations reject most runs may visit many branches per complex
event. Complex events with equal start and positions found on different branches
(the same events bound differently) are output once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from cerfleet import pattern
from cerfleet.cea.construction import is_tag
from cerfleet.cea.correlation import Check, CorrelationPlan, Slot
from cerfleet.cea.predicates import Predicate, compile_predicate
from cerfleet.complex_event import ComplexEvent
from cerfleet.evaluation.running import RunningPredicate
from cerfleet.evaluation.tecs import BOTTOM, OUTPUT, Node, TaggedNode
from cerfleet.pattern.walk import map_var_attrs, var_attrs

Event = Mapping[str, Any]
# A fixed event: (position, event, tags, iteration number per ``+`` tag it lies in).
Item = tuple[int, Event, frozenset[str], Mapping[str, int]]
# The fixed events of a branch, latest first (persistent, so pushing is O(1)).
Items = tuple[Item, "Items"] | None
Counters = tuple[tuple[str, int], ...]


def _name(var: str, back: int, attr: str) -> str:
    return f"{var}\0{back}\0{attr}"


class _CompiledCheck:
    """A check's predicate over one combination, given as ``{(var, back): event}``."""

    def __init__(self, check: Check) -> None:
        self.check = check
        self.reads = sorted({(r.var, r.back, r.attr) for r in var_attrs(check.pred)})
        self.pred: Predicate = compile_predicate(_renamed(check.pred))

    def holds(self, combo: Mapping[tuple[str, int], Event]) -> bool:
        row = {_name(v, b, a): combo[v, b].get(a) for v, b, a in self.reads}
        return self.pred(row)


def _renamed(pred: pattern.Pred) -> pattern.Pred:
    """The predicate with each ``x[attr]`` read as the attribute ``x\\0back\\0attr`` of one
    row: the unary predicate compiler then gives correlations the same comparisons."""
    return map_var_attrs(pred, lambda r: pattern.Attr(_name(r.var, r.back, r.attr), r.span))


class Correlator:
    """Checks a correlated query's correlations while enumerating its complex events."""

    def __init__(self, plan: CorrelationPlan, *, prune: bool = True) -> None:
        self.plan = plan
        self.checks = [_CompiledCheck(c) for c in plan.checks]
        self.running = [RunningPredicate(c) for c in plan.running]
        # False: walk every branch to its end and drop the violating complex events then
        # (enumerate-then-filter), what the benchmark compares pruning with.
        self.prune = prune
        self.visited = 0  # tECS output nodes walked (pruned enumeration's cost)
        self.pruned = 0  # branches dropped by a violated correlation

    def enumerate(
        self, n: Node, tau: float
    ) -> Iterator[tuple[int, tuple[int, ...], tuple[Event, ...]]]:
        """Like ``enumeration.enumerate_node``, with the correlations checked."""
        if n.tmax < tau:
            return
        # The marked positions and events: the walk's path, as in ``enumerate_node``.
        positions: list[int] = []
        events: list[Event] = []
        stack: list[tuple[Node, int, Items, Counters, bool]] = [(n, 0, None, (), True)]
        while stack:
            node, depth, items, counters, ok = stack.pop()
            del positions[depth:]
            del events[depth:]
            while True:
                kind = node.kind
                if kind == BOTTOM:
                    if ok and (not self.running or self._running_hold(items)):
                        yield node.pos, tuple(positions[::-1]), tuple(events[::-1])
                    break
                if kind == OUTPUT:
                    self.visited += 1
                    if isinstance(node, TaggedNode):
                        arrived = self._arrive(node, items, counters)
                        if arrived is None:
                            if self.prune:
                                self.pruned += 1
                                break
                            ok = False
                            arrived = self._arrive(node, items, counters, check=False)
                            assert arrived is not None
                        items, counters = arrived
                        if node.marked:
                            positions.append(node.pos)
                            events.append(node.event)  # type: ignore[arg-type]
                    else:
                        positions.append(node.pos)
                        events.append(node.event)  # type: ignore[arg-type]
                    node = node.left  # type: ignore[assignment]
                else:
                    right = node.right
                    assert right is not None
                    if right.tmax >= tau:
                        stack.append((right, len(positions), items, counters, ok))
                    node = node.left  # type: ignore[assignment]

    def _running_hold(self, items: Items) -> bool:
        fixed = _to_list(items)  # the branch's tagged events, earliest first
        rows = [it[1] for it in fixed]
        names = [frozenset(t for t in it[2] if not is_tag(t)) for it in fixed]
        return all(check.holds_everywhere(rows, names) for check in self.running)

    def _arrive(
        self, node: TaggedNode, items: Items, counters: Counters, *, check: bool = True
    ) -> tuple[Items, Counters] | None:
        """Fix ``node``'s event on the branch: None if a correlation fails (``check``:
        False fixes it unchecked, for enumerate-then-filter)."""
        tags = node.tags
        count = dict(counters)
        ids = {t[1:]: count.get(t[1:], 0) for t in tags if t.startswith("@p")}
        for t in tags:
            if t.startswith("^"):
                count["p" + t[2:]] = count.get("p" + t[2:], 0) + 1
        item: Item = (node.pos, node.event, tags, ids)  # type: ignore[assignment]
        fixed: Items = (item, items)
        if check and not all(self._holds_with(c, item, fixed) for c in self.checks):
            return None
        return fixed, tuple(sorted(count.items()))

    def _holds_with(self, compiled: _CompiledCheck, item: Item, fixed: Items) -> bool:
        check = compiled.check
        fits = [s for s in check.slots if _fits(s, item)]
        if not fits:
            return True
        pool = _to_list(fixed)  # earliest first: the new item, then the later ones
        for slot in fits:
            for new in _tuples_with(slot, item, pool):
                instance = _instance(new[0], check.pluses) if slot.inner else None
                others = [s for s in check.slots if s is not slot]
                for combo in _combos(check, others, pool, instance, new, slot):
                    if not compiled.holds(combo):
                        return False
        return True


def _fits(slot: Slot, item: Item) -> bool:
    tags = item[2]
    if slot.var is not None and slot.defs.isdisjoint(tags):
        return False  # not bound to the variable by a place the slot counts
    return slot.scope is None or slot.scope in tags


def _instance(item: Item, pluses: Sequence[str]) -> tuple[int, ...]:
    ids = item[3]
    return tuple(ids.get(p[1:], -1) for p in pluses)


def _to_list(items: Items) -> list[Item]:
    out: list[Item] = []
    while items is not None:
        item, items = items
        out.append(item)
    return out


def _tuples(slot: Slot, pool: list[Item]) -> list[tuple[Item, ...]]:
    """The slot's values among the fixed events: single events, or (event, previous
    event) pairs, consecutive within one instance."""
    mine = [it for it in pool if _fits(slot, it)]
    if not slot.pair:
        return [(it,) for it in mine]
    pairs: list[tuple[Item, ...]] = []
    last: dict[tuple[int, ...], Item] = {}
    for it in mine:  # earliest first
        inst = _instance(it, slot.pluses)
        if inst in last:
            pairs.append((it, last[inst]))
        last[inst] = it
    return pairs


def _tuples_with(slot: Slot, item: Item, pool: list[Item]) -> list[tuple[Item, ...]]:
    """The slot's values that ``item`` (the earliest fixed event) completes."""
    if not slot.pair:
        return [(item,)]
    inst = _instance(item, slot.pluses)
    for later in pool[1:]:
        if _fits(slot, later) and _instance(later, slot.pluses) == inst:
            return [(later, item)]  # the next one bound to the variable: item is its PREV
    return []


def _combos(
    check: Check,
    others: list[Slot],
    pool: list[Item],
    instance: tuple[int, ...] | None,
    new: tuple[Item, ...],
    slot: Slot,
) -> Iterator[dict[tuple[str, int], Event]]:
    choices: list[list[tuple[Slot, tuple[Item, ...]]]] = []
    for other in others:
        values = _tuples(other, pool)
        choices.append([(other, v) for v in values])
    for pick in itertools.product(*choices):
        chosen = [(slot, new), *pick]
        # Inner slots share one instance of the filtered formula; outer ones agree with it
        # on the + that enclose their own defining formula.
        inner = {_instance(v[0], check.pluses) for s, v in chosen if s.inner}
        if len(inner) > 1:
            continue
        inst = next(iter(inner)) if inner else instance
        if inst is not None and any(
            _instance(v[0], s.pluses) != inst[: len(s.pluses)] for s, v in chosen if not s.inner
        ):
            continue
        combo: dict[tuple[str, int], Event] = {}
        for s, v in chosen:
            if s.var is None:
                continue
            combo[s.var, 0] = v[0][1]
            if s.pair:
                combo[s.var, 1] = v[1][1]
        yield combo


def correlated_complex_events(
    correlator: Correlator,
    strategy: pattern.Strategy,
    finals: list[Node],
    tau: float,
    j: int,
    key: Any,
    limit: int | None,
    cap: int | None,
) -> tuple[list[ComplexEvent], bool]:
    """The complex events ending at ``j`` that satisfy the correlations, then selected
    by the strategy (NEXT, LAST, MAX compare the correlated ones: the window, then the
    correlations, then the strategy), then cut by LIMIT and by the host's ``cap``."""
    selects = strategy in (pattern.Strategy.NEXT, pattern.Strategy.LAST, pattern.Strategy.MAX)
    if cap is not None and limit is not None and limit <= cap:
        cap = None
    seen: set[tuple[int, tuple[int, ...]]] = set()
    out: list[ComplexEvent] = []
    for node in finals:
        for start, positions, events in correlator.enumerate(node, tau):
            if (start, positions) in seen:
                continue
            seen.add((start, positions))
            if not selects and cap is not None and len(out) >= cap:
                return out, True
            out.append(ComplexEvent(start, j, positions, key, events))
            if not selects and limit is not None and len(out) >= limit:
                return out, False
    if selects and out:
        out = _select(strategy, out)
        if limit is not None:
            out = out[:limit]
        if cap is not None and len(out) > cap:
            return out[:cap], True
    return out, False


def _select(strategy: pattern.Strategy, out: list[ComplexEvent]) -> list[ComplexEvent]:
    sets = {frozenset(ce.positions) for ce in out}
    if strategy is pattern.Strategy.MAX:
        kept = {d for d in sets if not any(d < other for other in sets)}
    else:
        last = strategy is pattern.Strategy.LAST
        best = next(iter(sets))
        for d in sets:
            diff = best ^ d
            if diff and ((max(diff) if last else min(diff)) in d):
                best = d
        kept = {best}
    return [ce for ce in out if frozenset(ce.positions) in kept]
