"""Equality correlations that become PARTITION BY keys.

``FILTER a[id] = b[id] AND b[id] = c[id]`` over a pattern whose every event is bound to
a, b or c says that all events of a complex event share one ``id``: exactly what
``PARTITION BY [id]`` says, which costs constant time per event where a correlation
checked at enumeration costs the branches it visits. ``equality_keys`` rewrites such
a pattern when the two surely mean the same:

* the equalities compare one attribute of two variables, each bound in every complex
  event (``_always``), neither under a ``+`` the filter is not under, the filter
  under no OR; they connect variables that together bind every event of the pattern;
* nothing in the query reads the stream around its events, which partitioning would
  change: no contiguity, absence or NOT(...) event, no EVENTS window, no PREV, and no
  CONSUME BY PARTITION over a declared partition (without one, CONSUME BY PARTITION
  means ANY and stays ANY);
* the strategy is ALL (the others choose among a correlated query's complex events
  inside the window, see ``evaluation.correlated``).

Lateness is the one thing the added key must not change: an event is late against
the latest clock of its *declared* partition (``QueryPlan.lateness_attrs``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from cerfleet import pattern
from cerfleet.pattern.walk import children, defines, subformulas

__all__ = ["equality_keys"]

_READS_THE_STREAM = (pattern.Contiguous, pattern.ContiguousPlus, pattern.Absent, pattern.NotEvent)
_PLUSES = (pattern.Plus, pattern.ContiguousPlus)


def _always(phi: pattern.Formula) -> set[str]:
    """Variables bound in every complex event of ``phi``."""
    if isinstance(phi, pattern.EventType):
        return {phi.name}
    if isinstance(phi, pattern.AnyEvent):
        return {phi.var}
    if isinstance(phi, pattern.As):
        return _always(phi.formula) | {phi.var}
    if isinstance(phi, pattern.Or):
        return _always(phi.left) & _always(phi.right)
    if isinstance(phi, pattern.Seq | pattern.And):
        return _always(phi.left) | _always(phi.right)
    if isinstance(phi, pattern.Plus | pattern.Filter):
        return _always(phi.formula)
    return set()


def _in_plus(phi: pattern.Formula) -> set[str]:
    """Variables defined somewhere under a ``+`` of ``phi``."""
    out: set[str] = set()
    for node in subformulas(phi):
        if isinstance(node, _PLUSES):
            for inner in subformulas(node.formula):
                if isinstance(inner, pattern.EventType):
                    out.add(inner.name)
                elif isinstance(inner, pattern.As):
                    out.add(inner.var)
    return out


def _equality(corr: pattern.Correlation) -> tuple[str, str, str] | None:
    pred = corr.pred
    if not isinstance(pred, pattern.Compare) or pred.op != "=":
        return None
    left, right = pred.left, pred.right
    if not (isinstance(left, pattern.VarAttr) and isinstance(right, pattern.VarAttr)):
        return None
    if left.back or right.back or left.attr != right.attr or left.var == right.var:
        return None
    return left.attr, left.var, right.var


def _conjuncts(theta: pattern.FilterExpr) -> Iterator[pattern.FilterExpr]:
    if isinstance(theta, pattern.FilterAnd):
        yield from _conjuncts(theta.left)
        yield from _conjuncts(theta.right)
    else:
        yield theta


def _candidates(
    phi: pattern.Formula, pluses: int, under_or: bool, plus_vars: set[str], always: set[str]
) -> Iterator[tuple[pattern.Correlation, tuple[str, str, str]]]:
    """The equalities that may turn into a key (see the module docstring)."""
    if isinstance(phi, pattern.Filter) and not under_or:
        for atom in _conjuncts(phi.filter):
            if not isinstance(atom, pattern.Correlation):
                continue
            eq = _equality(atom)
            if eq is None or not {eq[1], eq[2]} <= always:
                continue
            inner = [v for v in eq[1:] if defines(phi.formula, v)]
            outer_in_plus = any(v in plus_vars for v in eq[1:] if v not in inner)
            if outer_in_plus or (pluses and len(inner) > 1):
                continue
            yield atom, eq
    for _, child in children(phi):
        yield from _candidates(
            child,
            pluses + isinstance(phi, _PLUSES),
            under_or or isinstance(phi, pattern.Or),
            plus_vars,
            always,
        )


def _leaves(phi: pattern.Formula, above: frozenset[str] = frozenset()) -> Iterator[set[str]]:
    """For each event-binding leaf, the variables its events are bound to."""
    if isinstance(phi, pattern.EventType):
        yield {phi.name, *above}
    elif isinstance(phi, pattern.AnyEvent):
        yield {phi.var, *above}
    elif isinstance(phi, pattern.As):
        yield from _leaves(phi.formula, above | {phi.var})
    else:
        for _, child in children(phi):
            yield from _leaves(child, above)


def _component(edges: list[tuple[str, str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        v = todo.pop()
        for a, b in edges:
            for x, y in ((a, b), (b, a)):
                if x == v and y not in seen:
                    seen.add(y)
                    todo.append(y)
    return seen


def _eligible_query(form: pattern.Pattern) -> bool:
    # NEXT, LAST and MAX choose among a correlated query's complex events inside the
    # window, among all of them without correlations: only ALL means the same either way.
    if form.strategy is not pattern.Strategy.ALL:
        return False
    if form.within is not None and form.within.kind is pattern.WindowKind.EVENTS:
        return False
    if form.consume is pattern.Consume.PARTITION and form.partition_by:
        return False
    return not any(isinstance(n, _READS_THE_STREAM) for n in subformulas(form.where))


def equality_keys(form: pattern.Pattern) -> tuple[pattern.Pattern, tuple[str, ...]]:
    """The pattern with equality correlations turned into PARTITION BY attributes, and
    those attributes (``()``: unchanged). Call on a pattern without PREV."""
    if not _eligible_query(form):
        return form, ()
    always = _always(form.where)
    plus_vars = _in_plus(form.where)
    found = list(_candidates(form.where, 0, False, plus_vars, always))
    leaves = list(_leaves(form.where))
    keys: list[str] = []
    used: set[int] = set()
    for attr in dict.fromkeys(eq[0] for _, eq in found):
        edges = [(eq[1], eq[2]) for _, eq in found if eq[0] == attr]
        component = _component(edges, edges[0][0])
        if all(leaf & component for leaf in leaves):
            keys.append(attr)
            used |= {id(a) for a, eq in found if eq[0] == attr and eq[1] in component}
    if not keys:
        return form, ()
    where = _without(form.where, used)
    partition_by = tuple(dict.fromkeys((*form.partition_by, *keys)))
    consume = form.consume
    if consume is pattern.Consume.PARTITION:
        consume = pattern.Consume.ANY  # no declared partition: PARTITION meant ANY
    added = tuple(k for k in keys if k not in form.partition_by)
    rewritten = dataclasses.replace(form, where=where, partition_by=partition_by, consume=consume)
    return rewritten, added


def _without(phi: pattern.Formula, used: set[int]) -> pattern.Formula:
    rebuilt = {name: _without(child, used) for name, child in children(phi)}
    if rebuilt:
        phi = dataclasses.replace(phi, **rebuilt)  # type: ignore[arg-type]
    if isinstance(phi, pattern.Filter):
        rest = _drop(phi.filter, used)
        return phi.formula if rest is None else dataclasses.replace(phi, filter=rest)
    return phi


def _drop(theta: pattern.FilterExpr, used: set[int]) -> pattern.FilterExpr | None:
    if id(theta) in used:
        return None
    if isinstance(theta, pattern.FilterAnd):
        left, right = _drop(theta.left, used), _drop(theta.right, used)
        if left is None or right is None:
            return left if right is None else right
        return dataclasses.replace(theta, left=left, right=right)
    return theta
