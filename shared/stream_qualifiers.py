"""Which stream an event is in: ``FROM S1, S2`` and ``S>E`` resolved against the field
that names an event's stream (``--stream-field``; in the fleet, the input topic).

Without a stream field every event belongs to every stream of FROM (``S>E`` is E). With
one, an event whose stream is not in FROM is, to the query, an event of no type it
names: it matches no ``R``, it is not an R that ``NOT(R)`` or a gap ``; !R ;`` excludes,
and it still takes its position (it breaks ``:`` and counts in ``WITHIN n EVENTS``,
like an event of a type the query does not mention). ``S>E`` is an E event of stream S.

Both become unary filter atoms on the stream field (``field IN (...)``), so the
automaton, the predicate compilers and the columnar path need nothing new, and the
field joins the attributes the query reads.
"""

from __future__ import annotations

from dataclasses import replace

from cerfleet import pattern

__all__ = ["resolve_streams"]


def resolve_streams(form: pattern.Pattern, stream_field: str | None) -> pattern.Pattern:
    """``form`` with its stream qualifiers and FROM turned into filter atoms."""
    if stream_field is None:
        return replace(form, where=_formula(form.where, None, None))
    in_from = _in(stream_field, form.streams)
    return replace(form, where=_formula(form.where, stream_field, in_from))


def _in(field: str, streams: tuple[str, ...]) -> pattern.InList:
    return pattern.InList(pattern.Attr(field), tuple(pattern.Const(s) for s in streams))


def _and(pred: pattern.Pred | None, in_from: pattern.Pred | None) -> pattern.Pred | None:
    if in_from is None:
        return pred
    return in_from if pred is None else pattern.PAnd(pred, in_from)


def _formula(
    phi: pattern.Formula, field: str | None, in_from: pattern.Pred | None
) -> pattern.Formula:
    match phi:
        case pattern.EventType(name=name):
            return (
                phi if in_from is None else pattern.Filter(phi, pattern.FilterAtom(name, in_from))
            )
        case pattern.NotEvent(pred=pred):
            return replace(phi, pred=_and(_maybe(pred, field), in_from))
        case pattern.Absent(left=left, pred=pred, right=right):
            return replace(
                phi,
                left=_formula(left, field, in_from),
                pred=_and(_maybe(pred, field), in_from),
                right=_formula(right, field, in_from),
            )
        case pattern.Filter(formula=inner, filter=theta):
            return replace(
                phi, formula=_formula(inner, field, in_from), filter=_filter(theta, field)
            )
        case (
            pattern.As(formula=inner)
            | pattern.Plus(formula=inner)
            | pattern.ContiguousPlus(formula=inner)
        ):
            return replace(phi, formula=_formula(inner, field, in_from))
        case (
            pattern.Seq(left=left, right=right)
            | pattern.Or(left=left, right=right)
            | pattern.And(left=left, right=right)
            | pattern.Contiguous(left=left, right=right)
        ):
            return replace(
                phi, left=_formula(left, field, in_from), right=_formula(right, field, in_from)
            )
        case pattern.AnyEvent():
            return phi
    raise TypeError(f"not a CEL formula: {phi!r}")


def _filter(theta: pattern.FilterExpr, field: str | None) -> pattern.FilterExpr:
    if isinstance(theta, pattern.FilterAtom):
        return replace(theta, pred=_pred(theta.pred, field))
    if isinstance(theta, pattern.Correlation):
        return theta  # compares attributes of bound events, never their streams
    return replace(theta, left=_filter(theta.left, field), right=_filter(theta.right, field))


def _pred(pred: pattern.Pred, field: str | None) -> pattern.Pred:
    match pred:
        case pattern.InStream(streams=streams):
            return pattern.BoolLit(True) if field is None else _in(field, streams)
        case pattern.PNot(operand=operand):
            return replace(pred, operand=_pred(operand, field))
        case pattern.PAnd(left=left, right=right) | pattern.POr(left=left, right=right):
            return replace(pred, left=_pred(left, field), right=_pred(right, field))
    return pred


def _maybe(pred: pattern.Pred | None, field: str | None) -> pattern.Pred | None:
    return None if pred is None else _pred(pred, field)
