"""``PREV(attr, n)``: lagged values, a property of each partition's stream.

A predicate reading the n-th previous event of its partition stays unary once that
value travels with the event: the plan rewrites every ``pattern.Prev(attr, n)`` into
an attribute of a reserved name (``lag_name``), and the stream evaluator supplies it,
keeping per partition the last values of the attributes PREV reads. The previous
events are those of the partition's substream: late events (dropped from it) and
events in no partition do not count; restarts by consumption do not forget them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from cerfleet import pattern
from cerfleet.events.columns import column

if TYPE_CHECKING:
    import numpy as np
else:
    from cerfleet.lazy_numpy import np

Key = tuple[Any, ...]


def lag_name(attr: str, n: int) -> str:
    """The reserved attribute holding ``PREV(attr, n)`` (no JSON field is named so)."""
    return f"\0prev{n}\0{attr}"


def without_prev(form: pattern.Pattern) -> tuple[pattern.Pattern, tuple[tuple[str, int], ...]]:
    """``form`` with each ``Prev(attr, n)`` read as ``Attr(lag_name(attr, n))``, and the
    ``(attr, n)`` pairs found (empty: the form unchanged)."""
    found: set[tuple[str, int]] = set()
    where = _formula(form.where, found)
    if not found:
        return form, ()
    return replace(form, where=where), tuple(sorted(found))


def unary(pred: pattern.Pred) -> pattern.Pred:
    """``pred`` with PREV read as the reserved attributes (of events the evaluator
    output: they keep their lagged values)."""
    return _pred(pred, set())


def is_lag_name(name: str) -> bool:
    return name.startswith("\0prev")


def _formula(phi: pattern.Formula, found: set[tuple[str, int]]) -> pattern.Formula:
    if isinstance(phi, pattern.EventType | pattern.AnyEvent):
        return phi
    if isinstance(phi, pattern.Filter):
        return replace(phi, formula=_formula(phi.formula, found), filter=_filter(phi.filter, found))
    if isinstance(phi, pattern.As | pattern.Plus | pattern.ContiguousPlus):
        return replace(phi, formula=_formula(phi.formula, found))
    if isinstance(phi, pattern.Seq | pattern.Or | pattern.And | pattern.Contiguous):
        return replace(phi, left=_formula(phi.left, found), right=_formula(phi.right, found))
    if isinstance(phi, pattern.NotEvent):
        return phi if phi.pred is None else replace(phi, pred=_pred(phi.pred, found))
    if isinstance(phi, pattern.Absent):
        pred = None if phi.pred is None else _pred(phi.pred, found)
        left, right = _formula(phi.left, found), _formula(phi.right, found)
        return replace(phi, left=left, pred=pred, right=right)
    raise TypeError(f"not a CEL formula: {phi!r}")


def _filter(theta: pattern.FilterExpr, found: set[tuple[str, int]]) -> pattern.FilterExpr:
    if isinstance(theta, pattern.FilterAtom):
        return replace(theta, pred=_pred(theta.pred, found))
    if isinstance(theta, pattern.Correlation):
        # Only a running correlation reads the checked event's own lagged values; the
        # others read bound events' attributes and have no PREV to replace.
        return replace(theta, pred=_pred(theta.pred, found))
    return replace(theta, left=_filter(theta.left, found), right=_filter(theta.right, found))


def _pred(pred: pattern.Pred, found: set[tuple[str, int]]) -> pattern.Pred:
    if isinstance(pred, pattern.Compare):
        return replace(pred, left=_expr(pred.left, found), right=_expr(pred.right, found))
    if isinstance(pred, pattern.InList | pattern.InRange | pattern.Like):
        return replace(pred, expr=_expr(pred.expr, found))
    if isinstance(pred, pattern.PNot):
        return replace(pred, operand=_pred(pred.operand, found))
    if isinstance(pred, pattern.PAnd | pattern.POr):
        return replace(pred, left=_pred(pred.left, found), right=_pred(pred.right, found))
    return pred


def _expr(expr: pattern.Expr, found: set[tuple[str, int]]) -> pattern.Expr:
    if isinstance(expr, pattern.Prev):
        found.add((expr.attr, expr.n))
        return pattern.Attr(lag_name(expr.attr, expr.n), span=expr.span)
    if isinstance(expr, pattern.Neg):
        return replace(expr, operand=_expr(expr.operand, found))
    if isinstance(expr, pattern.Arith):
        return replace(expr, left=_expr(expr.left, found), right=_expr(expr.right, found))
    return expr


class _Lagged(Mapping[str, Any]):
    """An event seen with its lagged values (only for computing its letter)."""

    __slots__ = ("_event", "_lags")

    def __init__(self, event: Mapping[str, Any], lags: dict[str, Any]) -> None:
        self._event = event
        self._lags = lags

    def __getitem__(self, name: str) -> Any:
        if name in self._lags:
            return self._lags[name]
        return self._event[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._event
        yield from self._lags

    def __len__(self) -> int:
        return len(self._event) + len(self._lags)


class Lags:
    """Per partition key, the last ``depth`` values of the attributes PREV reads."""

    def __init__(self, specs: tuple[tuple[str, int], ...]) -> None:
        self.specs = specs
        self.attrs = tuple(sorted({a for a, _ in specs}))
        self.depth = max(n for _, n in specs)
        self._slot = {a: i for i, a in enumerate(self.attrs)}
        self.history: dict[Key, list[tuple[Any, ...]]] = {}

    def values(self, key: Key, before: Sequence[tuple[Any, ...]] = ()) -> dict[str, Any]:
        """The lagged values of an event of ``key`` coming after ``before`` (events of
        this batch not yet pushed); an absent value is None (missing)."""
        seen = self.history.get(key, [])
        out: dict[str, Any] = {}
        for attr, n in self.specs:
            back = len(before) - n
            row = before[back] if back >= 0 else (seen[back] if -back <= len(seen) else None)
            out[lag_name(attr, n)] = None if row is None else row[self._slot[attr]]
        return out

    def view(self, key: Key, event: Mapping[str, Any]) -> Mapping[str, Any]:
        return _Lagged(event, self.values(key))

    def push(self, key: Key, rows: Sequence[tuple[Any, ...]]) -> None:
        if rows:
            self.history[key] = (self.history.get(key, []) + list(rows))[-self.depth :]

    def own(self, event: Mapping[str, Any]) -> tuple[Any, ...]:
        """What a later event's PREV reads of ``event``."""
        return tuple(_value(event.get(a)) for a in self.attrs)

    def batch(
        self,
        groups: Sequence[tuple[Key, np.ndarray, np.ndarray]],
        row: Callable[[int], Mapping[str, Any]],
        n: int,
        columns: Mapping[str, np.ndarray] | None = None,
    ) -> tuple[dict[str, np.ndarray], Callable[[int], Mapping[str, Any]]]:
        """The lagged columns of a columnar batch, and its rows seen with their lagged
        values, from ``groups``: per key, its rows and which of them are late (they read their
        lags but are not one); the history moves past the batch.

        Per key it is a shift of the key's rows that are not late, with the history in
        front: row r of the key reads the n-th of those before it, a few numpy calls per
        key and lag rather than a loop over rows (``columns``: the batch's columns, where
        the attributes PREV reads are taken from when present)."""
        names = [lag_name(a, k) for a, k in self.specs]
        values = {a: self._source(a, columns, row, n) for a in self.attrs}
        lagged = {name: np.full(n, None, dtype=object) for name in names}
        for key, idx, late in groups:
            seen = self.history.get(key, [])
            kept = idx[~late]
            # For each row of the key: how many of its kept rows come before it.
            before = np.cumsum(~late) - (~late)
            for attr in self.attrs:
                slot = self._slot[attr]
                old = np.fromiter((r[slot] for r in seen), dtype=object, count=len(seen))
                ext = np.concatenate((old, values[attr][kept]))
                for (a, k), name in zip(self.specs, names, strict=True):
                    if a != attr:
                        continue
                    at = len(seen) + before - k
                    ok = at >= 0
                    lagged[name][idx[ok]] = ext[at[ok]]
            tail = [values[a][kept[-self.depth :]].tolist() for a in self.attrs]
            self.push(key, list(zip(*tail, strict=True)))
        per_row = {name: col.tolist() for name, col in lagged.items()}
        cols = {name: column(vals) for name, vals in per_row.items()}

        def seen_row(i: int) -> Mapping[str, Any]:
            return _Lagged(row(i), {name: vals[i] for name, vals in per_row.items()})

        return cols, seen_row

    @staticmethod
    def _source(
        attr: str,
        columns: Mapping[str, np.ndarray] | None,
        row: Callable[[int], Mapping[str, Any]],
        n: int,
    ) -> np.ndarray:
        """``attr`` of every row of the batch as Python values (None: missing)."""
        if columns is not None and attr in columns:
            found = (_value(v) for v in columns[attr].tolist())
        else:
            found = (_value(row(i).get(attr)) for i in range(n))
        return np.fromiter(found, dtype=object, count=n)

    def export(self) -> list[list[Any]]:
        return [[list(key), [list(r) for r in rows]] for key, rows in self.history.items()]

    def load(self, data: list[list[Any]]) -> None:
        self.history = {tuple(key): [tuple(r) for r in rows] for key, rows in data}


def _value(v: Any) -> Any:
    # NaN is how columns spell a missing number.
    return None if v is None or (isinstance(v, float) and v != v) else v


class _Evaluator(Protocol):
    """What ``lag_groups`` reads of the stream evaluator."""

    @property
    def query(self) -> Any: ...

    @property
    def substreams(self) -> Mapping[Key, Any]: ...

    @property
    def evicted(self) -> Mapping[Key, float]: ...


def lag_groups(
    ev: _Evaluator,
    groups: Iterable[tuple[Key, np.ndarray]],
    clocks: np.ndarray | None,
    row: Callable[[int], Mapping[str, Any]],
    exact_keys: bool,
) -> list[tuple[Key, np.ndarray, np.ndarray]]:
    """Per substream of a columnar batch, keyed as ``QueryEvaluator.process_columns``
    keys them: its rows, and which are late (as ``_run_columns`` finds them)."""
    out = []
    for group_key, idx in groups:
        if not len(idx):
            continue
        key = group_key
        if exact_keys:
            key = ev.query.partition_key(row(int(idx[0]))) or group_key
        if clocks is None:
            late = np.zeros(len(idx), dtype=bool)
        else:
            sub = ev.substreams.get(key)
            # An evicted key still remembers its latest clock (QueryEvaluator._evict_if_idle).
            last = ev.evicted.get(key, float("-inf")) if sub is None else sub.last_clock
            mine = clocks[idx]
            late = mine < np.fmax.accumulate(np.concatenate(([last], mine)))[:-1]
        out.append((key, idx, late))
    return out
