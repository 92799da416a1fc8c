"""A SPAseq query in the pattern form: the automaton does the sequencing, one position
per instant of the streamset (``cerfleet.rdf.instants``).

* a GPM is a ``GraphMatch`` predicate (its own FILTERs included); ``&`` is ``PAnd``
  and ``|`` is ``POr`` of them on one instant; an element is ``I AS Ei FILTER Ei[p]``;
* ``,`` (strict contiguity over the whole streamset) is ``Contiguous``; ``:``
  (skip-till-any) is ``Seq``; ``;`` (skip-till-next) is ``Absent`` of the element's
  own predicate when the element is one GPM that shares no variable with earlier
  elements and has no stateful filter (then "the next compatible match" is "the next
  match"), else ``Seq``, the output stage keeping only the next compatible one;
* ``X+`` after an operator is ``ContiguousPlus`` (Definition 14 joins iterations with
  ``,``); a leading ``X+`` is ``Plus`` (Definition 13 joins them with ``;``: the output
  stage drops the iterations that skipped a match);
* ``WITHIN`` is a time window (sliding, so it keeps every match of SPAseq's tumbling
  windows; the output stage keeps those inside one tumbling window).

Shared variables and stateful filters are also correlations (``spaseq.correlations``):
necessary conditions of the join that the engine checks while enumerating, and a
variable every GPM binds may partition the instants (``partition=True``; the caller
then sets each instant's ``rdf.instants.KEY``). What the automaton keeps is thus a
superset of the matches, with every match; the output stage (``spaseq.output``)
joins the mappings and applies what depends on them.
"""

from __future__ import annotations

from cerfleet import pattern
from cerfleet.rdf.instants import KEY, TYPE
from cerfleet.spaseq import syntax as s
from cerfleet.spaseq.check import parse
from cerfleet.spaseq.correlations import correlations, export_prefix, partition_variable

__all__ = ["bop_pred", "gpm_pred", "parse_and_check", "to_pattern"]


def parse_and_check(text: str) -> pattern.Pattern:
    """The front-end of ``languages.FRONTENDS``: text → pattern form."""
    return to_pattern(parse(text))


def gpm_pred(gpm: s.Gpm) -> pattern.GraphMatch:
    local: pattern.Pred | None = None
    for pred in gpm.local:
        local = pred if local is None else pattern.PAnd(local, pred)
    return pattern.GraphMatch(
        gpm.stream,
        gpm.triples,
        local,
        gpm.background,
        gpm.background_triples,
        export=export_prefix(gpm.name),
        optional=gpm.optional,
        absent=gpm.absent,
        span=gpm.span,
    )


def bop_pred(bop: s.BOp, gpms: dict[str, s.Gpm]) -> pattern.Pred:
    if isinstance(bop, s.Ref):
        return gpm_pred(gpms[bop.name])
    left, right = bop_pred(bop.left, gpms), bop_pred(bop.right, gpms)
    return pattern.PAnd(left, right) if isinstance(bop, s.Conj) else pattern.POr(left, right)


def _independent(element: s.Element, gpms: dict[str, s.Gpm], earlier: set[str]) -> bool:
    if not isinstance(element.bop, s.Ref):
        return False
    gpm = gpms[element.bop.name]
    return not gpm.stateful and not (gpm.all_variables() & earlier)


def to_pattern(
    query: s.Query, *, correlate: bool = False, partition: bool = False
) -> pattern.Pattern:
    """``correlate``: the shared variables and stateful filters the engine can check
    are correlations (``cerfleet run`` leaves them to the output stage, measured
    faster); ``partition``: partitioned by ``partition_variable``'s values when there
    is one (the caller sets each instant's ``KEY``)."""
    formula: pattern.Formula | None = None
    earlier: set[str] = set()
    for i, element in enumerate(query.elements):
        var = f"E{i}"
        pred = bop_pred(element.bop, query.gpms)
        one: pattern.Formula = pattern.Filter(
            pattern.As(pattern.EventType(TYPE), var), pattern.FilterAtom(var, pred)
        )
        if element.kleene:
            one = pattern.Plus(one) if i == 0 else pattern.ContiguousPlus(one)
        if formula is None:
            formula = one
        else:
            op = query.ops[i - 1]
            if op == ",":
                formula = pattern.Contiguous(formula, one)
            elif op == ";" and _independent(element, query.gpms, earlier):
                formula = pattern.Absent(formula, TYPE, pred, one)
            else:
                formula = pattern.Seq(formula, one)
        for name in s.refs(element.bop):
            earlier |= query.gpms[name].all_variables()
    assert formula is not None
    if correlate:
        theta: pattern.FilterExpr | None = None
        for corr in correlations(query):
            theta = corr if theta is None else pattern.FilterAnd(theta, corr)
        if theta is not None:
            formula = pattern.Filter(formula, theta)
    within = None
    if query.within is not None:
        within = pattern.Window(pattern.WindowKind.TIME, query.within[0], query.within[1])
    keyed = partition and partition_variable(query) is not None
    return pattern.Pattern(where=formula, within=within, partition_by=(KEY,) if keyed else ())
