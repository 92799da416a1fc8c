"""Walking the pattern form: a formula's sub-formulas, the variables it defines, the
``VarAttr`` reads of a predicate, and a predicate with those reads rewritten.

The compiler stages and the front-ends that look at correlations share these, so that
what "defines a variable" or "reads a variable" means is written once."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from cerfleet.pattern.formulas import AnyEvent, As, EventType, Formula
from cerfleet.pattern.predicates import (
    Arith,
    Attr,
    BoolLit,
    Compare,
    Expr,
    Neg,
    PAnd,
    PNot,
    POr,
    Pred,
    RunningAttr,
    VarAttr,
)

__all__ = [
    "as_attr",
    "children",
    "defines",
    "map_var_attrs",
    "running_attrs",
    "subformulas",
    "var_attrs",
]

_CHILDREN = ("formula", "left", "right")


def children(phi: Formula) -> Iterator[tuple[str, Formula]]:
    """The formula's direct sub-formulas, by field name (``Absent``'s excluded event and
    ``NotEvent``'s are no formulas)."""
    for name in _CHILDREN:
        child = getattr(phi, name, None)
        if child is not None:
            yield name, child


def subformulas(phi: Formula) -> Iterator[Formula]:
    """``phi`` and every formula under it, parents first."""
    yield phi
    for _, child in children(phi):
        yield from subformulas(child)


def defines(phi: Formula, var: str) -> bool:
    """Whether ``phi`` binds events to ``var``: an event type of that name, ``AS var`` or
    a row variable (a ``NOT(...)`` event binds none of its own)."""
    return any(
        (isinstance(node, EventType) and node.name == var)
        or (isinstance(node, As | AnyEvent) and node.var == var)
        for node in subformulas(phi)
    )


def var_attrs(node: object) -> Iterator[VarAttr]:
    """Every ``VarAttr`` of a predicate or expression."""
    if isinstance(node, VarAttr):
        yield node
        return
    for name in ("left", "right", "operand", "expr"):
        child = getattr(node, name, None)
        if child is not None:
            yield from var_attrs(child)


def running_attrs(node: object) -> Iterator[RunningAttr]:
    """Every ``RunningAttr`` of a predicate or expression."""
    if isinstance(node, RunningAttr):
        yield node
        return
    for name in ("left", "right", "operand", "expr"):
        child = getattr(node, name, None)
        if child is not None:
            yield from running_attrs(child)


def map_var_attrs(pred: Pred, read: Callable[[VarAttr], Expr]) -> Pred:
    """A correlation's comparison with each ``VarAttr`` replaced by ``read(it)``."""

    def expr(e: Expr) -> Expr:
        if isinstance(e, VarAttr):
            return read(e)
        if isinstance(e, Arith):
            return Arith(e.op, expr(e.left), expr(e.right), e.span)
        if isinstance(e, Neg):
            return Neg(expr(e.operand), e.span)
        return e

    if isinstance(pred, Compare):
        return Compare(pred.op, expr(pred.left), expr(pred.right), pred.span)
    # Boolean combinations of comparisons (SPAseq's stateful FILTERs are correlations).
    if isinstance(pred, PNot):
        return PNot(map_var_attrs(pred.operand, read), pred.span)
    if isinstance(pred, PAnd | POr):
        left, right = map_var_attrs(pred.left, read), map_var_attrs(pred.right, read)
        return type(pred)(left, right, pred.span)
    if isinstance(pred, BoolLit):
        return pred
    raise TypeError(f"not a correlation's comparison: {pred!r}")


def as_attr(ref: VarAttr) -> Expr:
    """``x[attr]`` read as ``attr`` of the event under test (a one-variable comparison)."""
    return Attr(ref.attr, ref.span)
