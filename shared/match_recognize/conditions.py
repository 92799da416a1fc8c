"""MATCH_RECOGNIZE DEFINE conditions → predicates of the pattern form.

A condition on the row's own attributes and on ``PREV`` (the partition's previous rows,
a lagged value) is unary; one on other rows of the match (``a.attr``, ``FIRST``,
``LAST``) reads them through ``RunningAttr``, the standard's running semantics: the
rows matched up to the row under test. What is accepted, in DEFINE v:

* ``attr``, ``v.attr``, ``LAST(v.attr)``, ``LAST(attr)``: the row itself;
* ``PREV(v.attr [, n])``, ``PREV(attr [, n])``: the n-th previous row of the partition;
* ``a.attr`` (a another variable), ``LAST(a.attr [, n])``: the last row bound to a so
  far, n rows back among a's (``LAST(v.attr, 1)``: v's row before this one);
* ``FIRST(a.attr [, n])``: the first row bound to a in the match (n-th from it), if
  matched by now (a may be v);
* ``FIRST(attr [, n])``, ``LAST(attr, n)``: the match's rows whatever their variable.

The rest (``NEXT``, ``PREV`` of another variable, aggregates, navigation nested in
navigation) is rejected naming its line and column.
"""

from __future__ import annotations

from cerfleet import pattern
from cerfleet.match_recognize import syntax as s
from cerfleet.pattern.walk import running_attrs

__all__ = ["Conditions", "split"]

# Functions of the standard a DEFINE may not use yet, with why.
_NOT_YET = {
    "NEXT": "NEXT (the next row) in DEFINE is not supported (a row's condition sees "
    "only the rows up to it)",
}
# The most rows back FIRST/LAST may count.
MAX_OFFSET = 1000


class Conditions:
    """Translates the DEFINE conditions of one query (``names``: its variables)."""

    def __init__(self, query: s.Query, names: set[str]) -> None:
        self.q = query
        self.names = names

    def condition(self, e: s.Expr, var: str) -> pattern.Pred:
        return self._condition(e, var)

    def _condition(self, e: s.Expr, var: str) -> pattern.Pred:
        if isinstance(e, s.Bin) and e.op in s.LOGICAL:
            left, right = self._condition(e.left, var), self._condition(e.right, var)
            if e.op == "AND":
                return pattern.PAnd(left, right, span=e.span)
            return pattern.POr(left, right, span=e.span)
        if isinstance(e, s.Unary) and e.op == "NOT":
            return pattern.PNot(self._condition(e.operand, var), span=e.span)
        if isinstance(e, s.Bin) and e.op in s.COMPARISONS:
            return pattern.Compare(
                e.op, self._value(e.left, var), self._value(e.right, var), span=e.span
            )
        if isinstance(e, s.Lit) and isinstance(e.value, bool):
            return pattern.BoolLit(e.value, span=e.span)
        self.q.fail("expected a condition (a comparison, AND, OR, NOT, TRUE or FALSE)", e.span)
        raise AssertionError  # fail raises

    def _prev(self, e: s.Call, var: str) -> pattern.Prev:
        # PREV(v.attr, n) in DEFINE v is the n-th row before v's row in the partition,
        # inside or before the match: a property of the stream (pattern.Prev).
        reason = _prev_error(self.q, e, var)
        if reason is not None:
            self.q.fail(reason, e.span)
        col = e.args[0]
        assert isinstance(col, s.Col)
        n = e.args[1] if len(e.args) == 2 else None
        offset = n.value if isinstance(n, s.Lit) and isinstance(n.value, int) else 1
        return pattern.Prev(col.attr, offset, span=e.span)

    def _row_var(self, col: s.Col, var: str) -> None:
        if col.var is not None and col.var not in self.names:
            self.q.fail(
                f"DEFINE {var} refers to {col.var}.{col.attr}, but {col.var} is not a "
                "variable of the PATTERN",
                col.span,
            )

    def _navigation(self, e: s.Call, var: str) -> pattern.Expr:
        """``FIRST(v.attr [, n])``, ``LAST(v.attr [, n])`` over the rows matched so far."""
        if not 1 <= len(e.args) <= 2 or not isinstance(e.args[0], s.Col):
            self.q.fail(
                f"{e.name} takes a column and an optional offset: {e.name}(v.attr [, n])", e.span
            )
        col = e.args[0]
        assert isinstance(col, s.Col)
        self._row_var(col, var)
        n = 0
        if len(e.args) == 2:
            lit = e.args[1]
            if (
                not isinstance(lit, s.Lit)
                or isinstance(lit.value, bool)
                or not isinstance(lit.value, int)
            ):
                self.q.fail(f"the offset of {e.name} must be a whole number", lit.span)
            assert isinstance(lit, s.Lit) and isinstance(lit.value, int)
            if lit.value > MAX_OFFSET:
                self.q.fail(f"the offset of {e.name} must be at most {MAX_OFFSET}", lit.span)
            n = lit.value
        last = e.name == "LAST"
        if last and n == 0 and col.var in (None, var):
            return pattern.Attr(col.attr, span=e.span)  # the current row itself
        return pattern.RunningAttr(var, col.var, col.attr, last, n, span=e.span)

    def _value(self, e: s.Expr, var: str) -> pattern.Expr:
        if isinstance(e, s.Col):
            self._row_var(e, var)
            if e.var is not None and e.var != var:
                # Another variable's column: its last row so far (the standard's running
                # semantics, LAST(a.attr)).
                return pattern.RunningAttr(var, e.var, e.attr, span=e.span)
            return pattern.Attr(e.attr, span=e.span)
        if isinstance(e, s.Lit):
            return pattern.Const(e.value, span=e.span)
        if isinstance(e, s.Unary) and e.op == "-":
            return pattern.Neg(self._value(e.operand, var), span=e.span)
        if isinstance(e, s.Bin) and e.op not in s.COMPARISONS | s.LOGICAL:
            return pattern.Arith(
                e.op, self._value(e.left, var), self._value(e.right, var), span=e.span
            )
        if isinstance(e, s.Call) and e.name == "PREV":
            return self._prev(e, var)
        if isinstance(e, s.Call) and e.name in ("FIRST", "LAST"):
            return self._navigation(e, var)
        if isinstance(e, s.Call):
            reason = _NOT_YET.get(e.name, f"{e.name}() in DEFINE is not supported")
            self.q.fail(reason, e.span)
        self.q.fail("expected a value (an attribute, a literal or arithmetic)", e.span)
        raise AssertionError  # fail raises


MAX_PREV = 1000


def _prev_error(q: s.Query, e: s.Call, var: str) -> str | None:
    """Why ``PREV(...)`` in DEFINE ``var`` is not supported (None: it is)."""
    if not 1 <= len(e.args) <= 2 or not isinstance(e.args[0], s.Col):
        return "PREV takes a column and an optional offset: PREV(v.attr [, n])"
    col = e.args[0]
    if col.var is not None and col.var != var:
        return (
            f"PREV({col.var}.{col.attr}) in DEFINE {var} navigates from another variable's "
            f"row, which is not supported yet (PREV({var}.{col.attr}) is)"
        )
    if len(e.args) == 2:
        n = e.args[1]
        if not isinstance(n, s.Lit) or isinstance(n.value, bool) or not isinstance(n.value, int):
            return "the offset of PREV must be a whole number"
        if not 1 <= n.value <= MAX_PREV:
            return f"the offset of PREV must be between 1 and {MAX_PREV}"
    return None


def split(pred: pattern.Pred) -> tuple[pattern.Pred | None, pattern.Pred | None]:
    """A DEFINE's top-level conjuncts: those on the row alone (unary, for the automaton)
    and those reading other rows of the match (a running correlation)."""
    parts: list[pattern.Pred] = []
    todo = [pred]
    while todo:
        p = todo.pop()
        if isinstance(p, pattern.PAnd):
            todo += [p.right, p.left]
        else:
            parts.append(p)
    own = [p for p in parts if not any(running_attrs(p))]
    others = [p for p in parts if any(running_attrs(p))]
    return _and(own), _and(others)


def _and(parts: list[pattern.Pred]) -> pattern.Pred | None:
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = pattern.PAnd(out, p, span=out.span)
    return out
