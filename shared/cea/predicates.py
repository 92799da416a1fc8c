"""Unary predicates ``P`` of ``X[P]``, compiled from the AST into closures.

Predicates never execute user text as Python: each AST node becomes a small
closure over already-parsed constants.

Missing values (CEQL semantics): an attribute that is absent or null makes every
comparison false, ``!=`` included; so do IN, IN RANGE and LIKE (a whole-value
match in linear time: ``cea.regex``). Comparing a
string with a number is false, booleans are not numbers, arithmetic on a
non-number or a division by zero yields "missing". ``NOT`` is plain negation of
the sub-predicate's truth value.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from cerfleet import pattern
from cerfleet.cea.regex import compile_like

Event = Mapping[str, Any]
Predicate = Callable[[Event], bool]
_ValueFn = Callable[[Event], Any]


class _Missing:
    """The value of an absent attribute or of failed arithmetic."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _same_kind(a: object, b: object) -> bool:
    """Whether two present values may be compared (numbers, strings, booleans)."""
    if is_number(a):
        return is_number(b)
    if isinstance(a, str):
        return isinstance(b, str)
    if isinstance(a, bool):
        return isinstance(b, bool)
    return False


def _compile_expr(expr: pattern.Expr) -> _ValueFn:
    if isinstance(expr, pattern.Attr):
        name = expr.name

        def attr(event: Event) -> Any:
            value = event.get(name, MISSING)
            return MISSING if value is None else value

        return attr
    if isinstance(expr, pattern.Const):
        value = expr.value
        return lambda _event: value
    if isinstance(expr, pattern.Neg):
        inner = _compile_expr(expr.operand)

        def neg(event: Event) -> Any:
            v = inner(event)
            return -v if is_number(v) else MISSING

        return neg
    if isinstance(expr, pattern.Arith):
        return _compile_arith(expr)
    raise TypeError(f"not a value expression: {expr!r}")


def _compile_arith(expr: pattern.Arith) -> _ValueFn:
    left = _compile_expr(expr.left)
    right = _compile_expr(expr.right)
    op = expr.op

    def arith(event: Event) -> Any:
        a = left(event)
        b = right(event)
        if not (is_number(a) and is_number(b)):
            return MISSING
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if b == 0:
            return MISSING
        if op == "/":
            return a / b
        return a % b

    return arith


def compile_predicate(pred: pattern.Pred) -> Predicate:
    """Turn a predicate AST into ``event -> bool``."""
    if isinstance(pred, pattern.Compare):
        return _compile_compare(pred)
    if isinstance(pred, pattern.InList):
        return _compile_in_list(pred)
    if isinstance(pred, pattern.InRange):
        return _compile_in_range(pred)
    if isinstance(pred, pattern.Like):
        return _compile_like(pred)
    if isinstance(pred, pattern.BoolLit):
        value = pred.value
        return lambda _event: value
    if isinstance(pred, pattern.PNot):
        inner = compile_predicate(pred.operand)
        return lambda event: not inner(event)
    if isinstance(pred, pattern.PAnd):
        a, b = compile_predicate(pred.left), compile_predicate(pred.right)
        return lambda event: a(event) and b(event)
    if isinstance(pred, pattern.POr):
        a, b = compile_predicate(pred.left), compile_predicate(pred.right)
        return lambda event: a(event) or b(event)
    if isinstance(pred, pattern.GraphMatch):
        from cerfleet.cea.graph_match import compile_graph_match

        found = compile_graph_match(pred, compile_predicate)
        return lambda event: bool(found(event))
    raise TypeError(f"not a predicate: {pred!r}")


def _compile_compare(pred: pattern.Compare) -> Predicate:
    left = _compile_expr(pred.left)
    right = _compile_expr(pred.right)
    cmp = COMPARE[pred.op]

    # The common shape `attr op constant` gets a direct closure: it is the hot path.
    if isinstance(pred.left, pattern.Attr) and isinstance(pred.right, pattern.Const):
        name = pred.left.name
        const = pred.right.value
        # ``_same_kind(v, const)`` decided once for the constant's kind: per event it was
        # a third of a letter's cost on the row path (a paced worker's small batches).
        if is_number(const):

            def attr_vs_number(event: Event) -> bool:
                v = event.get(name)
                kind = type(v)
                if kind is int or kind is float:
                    return cmp(v, const)
                return is_number(v) and cmp(v, const)

            return attr_vs_number
        if isinstance(const, str):

            def attr_vs_string(event: Event) -> bool:
                v = event.get(name)
                return isinstance(v, str) and cmp(v, const)

            return attr_vs_string

        def attr_vs_const(event: Event) -> bool:
            v = event.get(name)
            return v is not None and _same_kind(v, const) and cmp(v, const)

        return attr_vs_const

    def compare(event: Event) -> bool:
        a = left(event)
        b = right(event)
        if a is MISSING or b is MISSING or not _same_kind(a, b):
            return False
        return cmp(a, b)

    return compare


def _compile_in_list(pred: pattern.InList) -> Predicate:
    value = _compile_expr(pred.expr)
    options = [c.value for c in pred.values]
    negated = pred.negated

    def in_list(event: Event) -> bool:
        v = value(event)
        found = v is not MISSING and any(_same_kind(v, o) and v == o for o in options)
        return found != negated

    return in_list


def _compile_in_range(pred: pattern.InRange) -> Predicate:
    value = _compile_expr(pred.expr)
    low, high = pred.low.value, pred.high.value
    negated = pred.negated

    def in_range(event: Event) -> bool:
        v = value(event)
        inside = (
            v is not MISSING and _same_kind(v, low) and _same_kind(v, high) and low <= v <= high
        )
        return inside != negated

    return in_range


def _compile_like(pred: pattern.Like) -> Predicate:
    value = _compile_expr(pred.expr)
    fullmatch = compile_like(pred.pattern)
    negated = pred.negated

    def like(event: Event) -> bool:
        v = value(event)
        matched = isinstance(v, str) and fullmatch(v)
        return matched != negated

    return like
