"""Unary predicates over a columnar batch: one numpy boolean array per predicate.

The same semantics as ``predicates`` (the scalar closures), evaluated a column
at a time so a batch's bit vectors cost a few numpy passes instead of a Python
call per event and predicate. Columns are numpy arrays: numbers (int, or float
with NaN for a missing or null value), booleans, or strings (``U`` arrays).
LIKE runs the same linear-time matcher as the scalar closure over a string
column's values. Anything else (object arrays) falls back to the scalar closure
per row, so every predicate has a vector form; the differential tests check
that both forms agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from cerfleet import pattern
from cerfleet.cea.predicates import COMPARE, compile_predicate, is_number
from cerfleet.cea.regex import compile_like

if TYPE_CHECKING:
    import numpy as np
else:
    from cerfleet.lazy_numpy import np

Columns = Mapping[str, "np.ndarray"]
VectorPredicate = Callable[[Columns, int], "np.ndarray"]

_NUM, _STR, _BOOL = "num", "str", "bool"
# (values, valid, kind); kind None: every value is missing or of another kind
_Vec = tuple[Any, "np.ndarray", str | None]

# Batches re-evaluate the same few patterns; compiling one is far dearer than a match.
_like_matcher = lru_cache(maxsize=1024)(compile_like)


class _Fallback(Exception):
    """This sub-expression has no vector form here; use the scalar closure per row."""


def _kind_of_array(col: np.ndarray) -> str:
    if col.dtype.kind == "b":
        return _BOOL
    if col.dtype.kind in "iuf":
        return _NUM
    if col.dtype.kind == "U":
        return _STR
    raise _Fallback


def _kind_of_scalar(value: object) -> str:
    if isinstance(value, bool):
        return _BOOL
    if is_number(value):
        return _NUM
    return _STR


def _expr(expr: pattern.Expr, cols: Columns, n: int) -> _Vec:
    if isinstance(expr, pattern.Attr):
        col = cols.get(expr.name)
        if col is None:
            return None, np.zeros(n, dtype=bool), None
        valid = ~np.isnan(col) if col.dtype.kind == "f" else np.ones(n, dtype=bool)
        return col, valid, _kind_of_array(col)
    if isinstance(expr, pattern.Const):
        return expr.value, np.ones(n, dtype=bool), _kind_of_scalar(expr.value)
    if isinstance(expr, pattern.Neg):
        values, valid, operand_kind = _expr(expr.operand, cols, n)
        if operand_kind != _NUM:
            return None, np.zeros(n, dtype=bool), None
        return -values, valid, _NUM
    if not isinstance(expr, pattern.Arith):  # PREV: the plan reads it as an attribute
        raise TypeError(f"not a value expression: {expr!r}")
    left, lvalid, lkind = _expr(expr.left, cols, n)
    right, rvalid, rkind = _expr(expr.right, cols, n)
    if lkind != _NUM or rkind != _NUM:
        return None, np.zeros(n, dtype=bool), None
    valid = lvalid & rvalid
    with np.errstate(all="ignore"):
        if expr.op == "+":
            return left + right, valid, _NUM
        if expr.op == "-":
            return left - right, valid, _NUM
        if expr.op == "*":
            return left * right, valid, _NUM
        nonzero = np.broadcast_to(right != 0, (n,))
        safe = np.where(nonzero, right, 1)
        values = left / safe if expr.op == "/" else np.fmod(left, safe)
        if expr.op == "%":
            # Python's % takes the sign of the divisor; fmod that of the dividend.
            values = np.where((values != 0) & ((values < 0) != (safe < 0)), values + safe, values)
        return values, valid & nonzero, _NUM


def _pred(pred: pattern.Pred, cols: Columns, n: int) -> np.ndarray:
    if isinstance(pred, pattern.Compare):
        left, lvalid, lkind = _expr(pred.left, cols, n)
        right, rvalid, rkind = _expr(pred.right, cols, n)
        if lkind is None or lkind != rkind:
            return np.zeros(n, dtype=bool)
        return np.asarray(COMPARE[pred.op](left, right), dtype=bool) & lvalid & rvalid
    if isinstance(pred, pattern.InList):
        values, valid, kind = _expr(pred.expr, cols, n)
        options = [c.value for c in pred.values if _kind_of_scalar(c.value) == kind]
        found = np.zeros(n, dtype=bool)
        if kind is not None and options:
            found = np.isin(np.broadcast_to(values, (n,)), options) & valid
        return found != pred.negated
    if isinstance(pred, pattern.InRange):
        values, valid, kind = _expr(pred.expr, cols, n)
        low, high = pred.low.value, pred.high.value
        inside = np.zeros(n, dtype=bool)
        if kind is not None and _kind_of_scalar(low) == kind == _kind_of_scalar(high):
            inside = (values >= low) & (values <= high) & valid
        return inside != pred.negated
    if isinstance(pred, pattern.BoolLit):
        return np.full(n, pred.value, dtype=bool)
    if isinstance(pred, pattern.PNot):
        return ~_pred(pred.operand, cols, n)
    if isinstance(pred, pattern.PAnd):
        return _pred(pred.left, cols, n) & _pred(pred.right, cols, n)
    if isinstance(pred, pattern.POr):
        return _pred(pred.left, cols, n) | _pred(pred.right, cols, n)
    if isinstance(pred, pattern.Like):
        values, valid, kind = _expr(pred.expr, cols, n)
        matched = np.zeros(n, dtype=bool)
        if kind == _STR:
            fullmatch = _like_matcher(pred.pattern)
            strings = np.broadcast_to(values, (n,)).tolist()
            matched = np.fromiter(map(fullmatch, strings), dtype=bool, count=n) & valid
        return matched != pred.negated
    if isinstance(pred, pattern.GraphMatch):
        raise _Fallback  # a graph is no column: judged per row
    raise TypeError(f"not a predicate: {pred!r}")


def compile_vector_predicate(pred: pattern.Pred) -> VectorPredicate:
    """``(columns, n) -> bool array``; exact same truth values as the scalar predicate."""
    scalar = compile_predicate(pred)

    def vector(cols: Columns, n: int) -> np.ndarray:
        try:
            return np.broadcast_to(_pred(pred, cols, n), (n,))
        except _Fallback:
            rows = RowView(cols)
            return np.fromiter((scalar(rows.at(i)) for i in range(n)), dtype=bool, count=n)

    return vector


class RowView:
    """Rows of a columnar batch as plain dicts of Python values (NaN: absent).

    Values are read per row (``ndarray.item``) rather than converting whole columns:
    the fast path rebuilds only the few rows it processes.
    """

    def __init__(self, cols: Columns) -> None:
        self._cols = list(cols.items())

    def at(self, i: int) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for name, col in self._cols:
            v = col.item(i)
            if v is not None and v == v:  # NaN marks a missing value
                row[name] = v
        return row
