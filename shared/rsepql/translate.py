"""An RSEP-QL query in the pattern form, over the instants of ``cerfleet.rdf.instants``
(one position per distinct timestamp of the streamset).

Semantics (seed 003, with the research notes' errata): the report policy is *content
change* — an evaluation at every instant — and results are pushed, each once, at the
first evaluation that has it. ``E1 SEQ … SEQ En`` (unrestricted SEQ, Eq. (7)) has a
result for items ``g1 … gn`` of the events' windows' streams at strictly increasing
instants ``t1 < … < tn`` whose mappings are compatible; under Eq. (4) and the window
functions, item ``gi`` is visible at evaluation time ``t`` when it is in its window
there, and restricting ``Ei`` to ``[0, t(i+1) − 1]`` is the order. A RANGE window
(width α, sliding by the time unit) only loses items as ``t`` grows and a landmark
never does, so a result is first visible at ``t = tn`` or never: each result is
reported at its last item, when

* ``gi`` is in a LND ``t0`` window: ``ti ≥ t0`` — a unary predicate on the item;
* ``gi`` is in a RANGE α window: ``tn − α < ti`` — a correlation between ``Ei`` and
  ``En`` (checked by the engine while enumerating; the last item is always in its
  own RANGE window).

Each BEP is a ``GraphMatch`` on its window's stream; SEQ is ``Seq`` (every later
item, skip-till-any); the query's time window is the widest RANGE when every element
but the last has one (a bound the correlations refine). The output stage
(``rsepql.output``) joins the mappings (the substitution μ2(E1) of Eq. (7)).

With a STEP window a result is reported at a later close (``rsepql.closes``), so
the correlation of a RANGE α STEP β element is the bound ``tn − ti < α + β`` and
``cerfleet run`` holds each result until its close. FIRST/LAST, SEQ^c/SEQ^r/SEQ^n
and ``MATCH CONSUMING`` have no pattern form: ``rsepql.evaluation`` runs them. The
front-end of the fleet and the backfills, which report each complex event at its
last event, refuses both at the construct's place.
"""

from __future__ import annotations

from cerfleet import pattern
from cerfleet.rdf.instants import TYPE
from cerfleet.rsepql import syntax as s
from cerfleet.rsepql.parser import parse

__all__ = ["bep_pred", "parse_and_check", "to_pattern"]

_TIME = "timestamp"  # the instant's time in ms (``rdf.instants``)


def parse_and_check(text: str) -> pattern.Pattern:
    """The front-end of ``languages.FRONTENDS``: text → pattern form."""
    query = parse(text)
    if query.per_evaluation() or query.stepped():
        raise s.error(text, *_why_not(query))
    return to_pattern(query)


def _why_not(query: s.Query) -> tuple[str, pattern.Span | None]:
    tail = (
        "it is evaluated at the query's evaluation times, which `cerfleet run` does; "
        "the automata of the fleet and the backfills report each complex event at its "
        "last event"
    )
    node = None if query.expr is None else s.selective(query.expr)
    if node is not None:
        what = node.which.upper() if isinstance(node, s.Pick) else f"SEQ^{node.policy}"
        return f"{what} selects among an evaluation's matches: {tail}", node.span
    if query.stepped():
        return "a window with STEP reports at its closes: " + tail, query.stepped()[0].step_span
    return "MATCH CONSUMING consumes input across evaluations: " + tail, query.consuming_span


def bep_pred(query: s.Query, name: str) -> pattern.GraphMatch:
    bep = query.events[name]
    local: pattern.Pred | None = None
    for f in bep.filters:
        local = f if local is None else pattern.PAnd(local, f)
    return pattern.GraphMatch(query.stream_of(name), bep.triples, local, span=bep.span)


def to_pattern(query: s.Query) -> pattern.Pattern:
    formula: pattern.Formula | None = None
    last = len(query.chain) - 1
    correlations: list[pattern.Correlation] = []
    widths: list[int] = []
    for i, name in enumerate(query.chain):
        var = f"E{i}"
        window = query.windows[query.events[name].window]
        pred: pattern.Pred = bep_pred(query, name)
        if window.kind == "landmark":
            since = pattern.Compare(">=", pattern.Attr(_TIME), pattern.Const(window.ms))
            pred = pattern.PAnd(since, pred)
        elif window.kind == "range" and i < last:
            # t_last - t_i < alpha; with STEP beta, the close c that reports it is
            # after t_last - beta, and t_i > c - alpha: a bound, rsepql.closes decides.
            width = window.ms + (window.step_ms or 0)
            gap = pattern.Arith(
                "-", pattern.VarAttr(f"E{last}", _TIME), pattern.VarAttr(var, _TIME)
            )
            correlations.append(
                pattern.Correlation(pattern.Compare("<", gap, pattern.Const(width)))
            )
        if i < last:
            widths.append(window.ms + (window.step_ms or 0) if window.kind == "range" else -1)
        one: pattern.Formula = pattern.Filter(
            pattern.As(pattern.EventType(TYPE), var), pattern.FilterAtom(var, pred)
        )
        formula = one if formula is None else pattern.Seq(formula, one)
    assert formula is not None
    theta: pattern.FilterExpr | None = None
    for corr in correlations:
        theta = corr if theta is None else pattern.FilterAnd(theta, corr)
    if theta is not None:
        formula = pattern.Filter(formula, theta)
    within = None
    if widths and min(widths) > 0:
        within = pattern.Window(pattern.WindowKind.TIME, max(widths), "MILLISECONDS")
    return pattern.Pattern(where=formula, within=within)
