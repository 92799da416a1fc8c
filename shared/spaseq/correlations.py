"""SPAseq's shared variables and stateful filters as the engine's correlations, and the
shared variable that partitions the streamset.

A GPM's match is a *set* of mappings, and SPAseq joins them existentially; a
correlation compares one value per event. The bridge: every ``GraphMatch`` writes
into its event each variable that has one value in all its solutions
(``GraphMatch.export``), and each correlation is guarded so that it holds when a
value it reads is absent. Each correlation is then a *necessary* condition of the
join — it never drops a match the definitions keep — and the output stage
(``spaseq.output``) still computes the exact join on what the engine lets through.
On the usual streams (one trade, one reading per graph) the values are unique and
the engine alone rejects the incompatible runs, pruning the tECS walk.

What is compiled (the rest stays with the output stage only):

* a variable bound by an element and by an earlier one: equality of the two
  events' values;
* a stateful FILTER: the filter on the events binding the variables it reads;

both only between elements without ``|`` (a disjunction's other side may be the one
that matched), and only in queries without Kleene+: a result keeps the *last*
iteration's bindings where a correlation reads every iteration, and checking a run's
iterations on every branch the enumeration walks measured slower than the output
stage's check, which remembers how far a run stays compatible (``SEQ(A, B+, C)`` of
``benchmarks.rdf``: 652 events/s without, 18 with the iterations checked, 162 with
only the non-Kleene elements checked).

**Partition key.** A variable bound by every GPM of SEQ ties all the events of a
result to one value: when nothing in the query reads the stream around its events
(no ``,``, no Kleene+ after an operator, hence none of ``;``'s ``Absent``), the
instants are routed by that value (``partition_variable``) and each key's runs
meet only that key's events, constant time per event, as CEQL's equality
correlations become PARTITION BY keys.
"""

from __future__ import annotations

from collections.abc import Iterator

from cerfleet import pattern
from cerfleet.spaseq import syntax as s

__all__ = ["correlations", "export_prefix", "partition_variable"]


def export_prefix(gpm: str) -> str:
    """The attribute prefix under which GPM ``gpm`` writes its unique bindings."""
    return f"@{gpm}?"


def _has_disjunction(bop: s.BOp) -> bool:
    if isinstance(bop, s.Ref):
        return False
    return isinstance(bop, s.Disj) or _has_disjunction(bop.left) or _has_disjunction(bop.right)


def _reads(pred: pattern.Pred | pattern.Expr) -> Iterator[str]:
    if isinstance(pred, pattern.Attr):
        yield pred.name
        return
    for name in ("left", "right", "operand", "expr"):
        child = getattr(pred, name, None)
        if child is not None:
            yield from _reads(child)


def _rewrite(pred: pattern.Pred, where: dict[str, tuple[str, str]]) -> pattern.Pred:
    """The filter with each variable ``?v`` read as ``E[@G?v]`` of the event binding it."""

    def expr(e: pattern.Expr) -> pattern.Expr:
        if isinstance(e, pattern.Attr):
            var, gpm = where[e.name]
            return pattern.VarAttr(var, export_prefix(gpm) + e.name, span=e.span)
        if isinstance(e, pattern.Arith):
            return pattern.Arith(e.op, expr(e.left), expr(e.right), e.span)
        if isinstance(e, pattern.Neg):
            return pattern.Neg(expr(e.operand), e.span)
        return e

    if isinstance(pred, pattern.Compare):
        return pattern.Compare(pred.op, expr(pred.left), expr(pred.right), pred.span)
    if isinstance(pred, pattern.PNot):
        return pattern.PNot(_rewrite(pred.operand, where), pred.span)
    if isinstance(pred, pattern.PAnd | pattern.POr):
        return type(pred)(_rewrite(pred.left, where), _rewrite(pred.right, where), pred.span)
    return pred


def _guarded(pred: pattern.Pred, where: dict[str, tuple[str, str]]) -> pattern.Correlation:
    """``pred`` on the events' exported values, true when one of them is absent (the
    solutions disagree: only the output stage's join can tell)."""
    out = _rewrite(pred, where)
    for name in sorted(where):
        var, gpm = where[name]
        read = pattern.VarAttr(var, export_prefix(gpm) + name)
        out = pattern.POr(pattern.PNot(pattern.Compare("=", read, read)), out)
    return pattern.Correlation(out, span=pred.span)


def correlations(query: s.Query) -> list[pattern.Correlation]:
    """The necessary conditions of the module docstring, each over two or more of the
    element variables ``E0``, ``E1``, …"""
    out: list[pattern.Correlation] = []
    if any(e.kleene for e in query.elements):
        # The enumeration of a Kleene+ walks each run's every iteration per branch; the
        # correlator's bookkeeping on those walks costs more than the output stage's
        # check, which remembers how far a run stays compatible (README, measured).
        return out
    earlier: dict[str, tuple[str, str]] = {}  # variable -> (element var, GPM) binding it
    for i, element in enumerate(query.elements):
        names = s.refs(element.bop)
        evar = f"E{i}"
        if not _has_disjunction(element.bop):
            mine: dict[str, tuple[str, str]] = {}
            for n in names:
                for v in sorted(query.gpms[n].variables()):
                    mine.setdefault(v, (evar, n))
            for n in names:
                gpm = query.gpms[n]
                for v in sorted(gpm.variables()):
                    if v in earlier:
                        out.append(_equal(v, earlier[v], (evar, n)))
                for f in gpm.stateful:
                    reads: dict[str, tuple[str, str]] = {}
                    for v in _reads(f):
                        if v in gpm.variables():
                            reads[v] = (evar, n)
                        elif v in mine:
                            reads[v] = mine[v]
                        elif v in earlier:
                            reads[v] = earlier[v]
                        else:
                            break
                    else:
                        if len({var for var, _ in reads.values()}) > 1:
                            out.append(_guarded(f, reads))
        if not _has_disjunction(element.bop):
            for n in names:
                for v in sorted(query.gpms[n].variables()):
                    earlier.setdefault(v, (evar, n))
    return out


def _equal(name: str, a: tuple[str, str], b: tuple[str, str]) -> pattern.Correlation:
    left = pattern.VarAttr(a[0], export_prefix(a[1]) + name)
    right = pattern.VarAttr(b[0], export_prefix(b[1]) + name)
    out: pattern.Pred = pattern.Compare("=", left, right)
    for read in (right, left):
        out = pattern.POr(pattern.PNot(pattern.Compare("=", read, read)), out)
    return pattern.Correlation(out)


def partition_variable(query: s.Query) -> str | None:
    """The variable every GPM of SEQ binds, when the instants may be routed by it (see
    the module docstring); None if there is none or the query reads the stream."""
    if "," in query.ops or any(e.kleene for e in query.elements[1:]):
        return None
    shared: set[str] | None = None
    for element in query.elements:
        for n in s.refs(element.bop):
            names = set(query.gpms[n].variables())
            shared = names if shared is None else shared & names
    if not shared:
        return None
    return min(shared)
