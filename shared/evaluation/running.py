"""Running correlations checked on one complex event (``cea.correlation.RunningCheck``).

MATCH_RECOGNIZE's DEFINE conditions may read other rows of the match: ``A.price`` in
DEFINE B is the last row bound to A so far, ``FIRST(A.price)`` the first, ``LAST(B.price,
1)`` the row bound to B before the current one. Which row that is depends on how the
rows before it were bound, so no automaton can check it per event; it is checked on a
whole branch of the tECS (one assignment of variables to the complex event's events),
by the correlated enumeration and by the MATCH_RECOGNIZE output stage alike: both call
``RunningPredicate.holds`` with the rows and the variables bound to them.

Cost: per row bound to the checked variable, one pass over the rows before it for each
read (the rows of one match, not the stream).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from cerfleet import pattern
from cerfleet.cea.correlation import RunningCheck
from cerfleet.cea.predicates import Predicate, compile_predicate
from cerfleet.pattern.walk import running_attrs

__all__ = ["RunningPredicate"]

Event = Mapping[str, Any]


def _name(read: pattern.RunningAttr) -> str:
    # NUL cannot occur in a field name read from JSON by accident.
    which = "last" if read.last else "first"
    return f"\0{read.var or ''}\0{which}\0{read.n}\0{read.attr}"


class _View(Mapping[str, Any]):
    """The checked event's attributes, and the values of the running reads."""

    __slots__ = ("_event", "_reads")

    def __init__(self, event: Event, reads: dict[str, Any]) -> None:
        self._event = event
        self._reads = reads

    def __getitem__(self, name: str) -> Any:
        if name in self._reads:
            return self._reads[name]
        return self._event[name]

    def get(self, name: str, default: Any = None) -> Any:
        if name in self._reads:
            return self._reads[name]
        return self._event.get(name, default)

    def __iter__(self) -> Iterator[str]:
        yield from self._event
        yield from self._reads

    def __len__(self) -> int:
        return len(self._event) + len(self._reads)


class RunningPredicate:
    """One running check, compiled: the unary predicate compiler's comparisons over the
    checked event seen with its running reads."""

    def __init__(self, check: RunningCheck) -> None:
        self.at = check.at
        self.reads = list(dict.fromkeys(running_attrs(check.pred)))
        self.pred: Predicate = compile_predicate(_renamed(check.pred))

    def holds(self, rows: Sequence[Event], names: Sequence[frozenset[str]], i: int) -> bool:
        """Whether the check holds at row ``i`` (bound to ``at``), ``rows`` being the
        match's rows in order and ``names`` the variables each is bound to."""
        values: dict[str, Any] = {}
        for read in self.reads:
            values[_name(read)] = _read(read, rows, names, i)
        return self.pred(_View(rows[i], values))

    def holds_reading(self, event: Event, value: Callable[[pattern.RunningAttr], Any]) -> bool:
        """Whether the check holds at ``event``, each running read's value given by
        ``value`` (a caller that keeps only the rows the reads can reach)."""
        return self.pred(_View(event, {_name(read): value(read) for read in self.reads}))

    def holds_everywhere(self, rows: Sequence[Event], names: Sequence[frozenset[str]]) -> bool:
        """Whether the check holds at every row bound to ``at``."""
        return all(self.holds(rows, names, i) for i, n in enumerate(names) if self.at in n)


def _read(
    read: pattern.RunningAttr, rows: Sequence[Event], names: Sequence[frozenset[str]], i: int
) -> Any:
    var, n = read.var, read.n
    steps = range(i, -1, -1) if read.last else range(i + 1)
    for k in steps:
        if var is None or var in names[k]:
            if n == 0:
                return rows[k].get(read.attr)
            n -= 1
    return None


def _renamed(pred: pattern.Pred) -> pattern.Pred:
    """``pred`` with each running read an attribute of the view (``_name``)."""
    if isinstance(pred, pattern.Compare):
        return replace(pred, left=_expr(pred.left), right=_expr(pred.right))
    if isinstance(pred, pattern.InList | pattern.InRange | pattern.Like):
        return replace(pred, expr=_expr(pred.expr))
    if isinstance(pred, pattern.PNot):
        return replace(pred, operand=_renamed(pred.operand))
    if isinstance(pred, pattern.PAnd | pattern.POr):
        return replace(pred, left=_renamed(pred.left), right=_renamed(pred.right))
    if isinstance(pred, pattern.BoolLit):
        return pred
    raise TypeError(f"not a running correlation's predicate: {pred!r}")


def _expr(e: pattern.Expr) -> pattern.Expr:
    if isinstance(e, pattern.RunningAttr):
        return pattern.Attr(_name(e), e.span)
    if isinstance(e, pattern.Arith):
        return replace(e, left=_expr(e.left), right=_expr(e.right))
    if isinstance(e, pattern.Neg):
        return replace(e, operand=_expr(e.operand))
    if isinstance(e, pattern.VarAttr | pattern.Prev):
        raise TypeError(f"not read by a running correlation: {e!r}")
    return e
