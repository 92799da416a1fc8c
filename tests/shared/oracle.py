"""A brute-force reference evaluator for CEQL: the test oracle.

It implements the denotational semantics of CORE (Fig. 2 of the paper) as
literally as possible, by materialising every valuation, so that the engine
(automata + tECS) can be checked against it on small inputs. It shares nothing
with the engine except the AST: predicates have their own tiny interpreter here.
Clarity wins over speed everywhere; keep streams and formulas small.

Semantics choices beyond the paper (the engine must agree):

* Predicates: a missing or None attribute makes every comparison false
  (``!=`` included) and IN / IN RANGE / LIKE false; values of different kinds
  (string, number, bool) never compare (false); bools are not numbers; int and
  float compare numerically; arithmetic is on numbers only and is undefined
  (so the comparison is false) on a missing operand or division by zero.
  ``NOT p`` and the negated forms ``NOT IN`` / ``NOT LIKE`` are plain boolean
  negation of the positive predicate.
* PARTITION BY: one substream per distinct tuple of values; events with a
  missing or None partition attribute are in no substream. Positions inside
  a substream are local (0, 1, ...) and are mapped back to the global index.
* WITHIN n EVENTS bounds ``end - start`` in local positions. Clock windows
  (``WITHIN n [attr]`` and time units) bound ``clock(end) - clock(start)`` and
  drop complex events whose start or end lacks a numeric clock; "late" events
  (clock below the maximum clock already kept in the substream) are removed
  from the substream before evaluation.

* Streams: without a stream field every event is in every stream of FROM and ``S>E``
  is E; with one, an event whose stream is not in FROM is read as an event of a type
  no query names (it keeps its position), and ``S>E`` is an E whose stream is S.
* ``φ1 AND φ2`` (not in the paper): a valuation of φ1 and one of φ2 with the same
  end give the valuation from the smaller start to that end binding each variable to
  the union of its positions in both.

Selection strategies and consumption policies (also beyond the paper):

* Order of evaluation, per substream: late events are dropped, then every
  complex event ``(start, end, D)`` is computed (valuations, then projection:
  D is the projected positions), then the selection strategy keeps some of
  them, then WITHIN filters the kept ones. A strategy therefore does not see
  the window: ``SELECT NEXT * ... WHERE A ; B WITHIN 1 EVENTS`` over A A B
  selects {0, 2} and the window then drops it, so nothing is output.
* The competitors of a complex event are the complex events of the query in
  the same substream with the same ``end``; they are compared on D only, so
  complex events with the same D and different starts are all kept or all
  dropped. ALL keeps everything; STRICT keeps a D that is contiguous in the
  substream's positions (∅ and singletons are); NEXT / LAST keep the maximum
  D for ≤next / ≤last (§4 of the Foundations paper, with the maximum rather
  than the printed minimum); MAX keeps a D that no competitor's D strictly
  contains.
* CONSUME BY ANY is a sequential process over the input with one restart
  index r (initially 0): the outputs at position j are the complex events
  ending at j of the query evaluated over the input events with index >= r
  only (strategy and window included); if there is at least one, r becomes
  j + 1. CONSUME BY PARTITION keeps one restart index per substream and an
  output only moves its own substream's; without PARTITION BY it is ANY.
  Late events are dropped over the whole input, before any of this.
* LIMIT is not modelled: the engine may output any ``n`` of the complex
  events of one ``end``.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cerfleet import pattern

Event = Mapping[str, Any]
Key = tuple[Any, ...]
# A correlation waiting for its outer variables: the correlation and the positions
# bound so far to each of its variables (those of the filtered formula first).
Pending = tuple[pattern.Correlation, tuple[tuple[str, frozenset[int]], ...]]
OracleResult = tuple[int, int, tuple[int, ...], Key | None]

__all__ = [
    "Valuation",
    "evaluate_formula",
    "is_contiguous",
    "last_le",
    "next_le",
    "oracle_by_end",
    "oracle_eval",
    "select_positions",
]


# ------------------------------------------------------------------- valuations


@dataclass(frozen=True)
class Valuation:
    """``V = ([start, end], μ)``; μ is stored as sorted ``(variable, positions)``
    pairs holding only the variables with a non-empty set of positions, so two
    equal valuations are equal (and hash equally) as Python values."""

    start: int
    end: int
    mu: tuple[tuple[str, frozenset[int]], ...]
    # Correlations still waiting for a variable bound above their filter (see _filter).
    pending: frozenset[Pending] = frozenset()

    @staticmethod
    def make(
        start: int,
        end: int,
        mu: Mapping[str, frozenset[int]],
        pending: frozenset[Pending] = frozenset(),
    ) -> Valuation:
        return Valuation(start, end, tuple(sorted((x, ps) for x, ps in mu.items() if ps)), pending)

    def get(self, var: str) -> frozenset[int]:
        """``V(var)``: the empty set for unbound variables."""
        return dict(self.mu).get(var, frozenset())

    def data(self) -> frozenset[int]:
        """``⋃_X V(X)``: the positions of the complex event ``C_V``."""
        return frozenset().union(*(ps for _, ps in self.mu))


# ------------------------------------------------------------------- predicates

# An expression that has no value on an event (missing attribute, 1/0, ...).
_UNDEFINED = object()
# Where ``_read_streams`` keeps an event's stream, and its value when no field names it.
_STREAM = "\0stream"
_EVERY_STREAM = object()
# The type of an event outside FROM's streams: no type a query can name.
_NO_TYPE = "\0no type"

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind(value: object) -> str | None:
    """The comparison domain of a value: values only compare within one domain."""
    if isinstance(value, bool):
        return "bool"
    if _is_number(value):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def eval_expr(expr: pattern.Expr, event: Event) -> Any:
    """The value of ``expr`` on ``event``, or ``_UNDEFINED``."""
    if isinstance(expr, pattern.Attr):
        value = event.get(expr.name)
        return _UNDEFINED if value is None else value
    if isinstance(expr, pattern.Const):
        return expr.value
    if isinstance(expr, pattern.Neg):
        value = eval_expr(expr.operand, event)
        return -value if _is_number(value) else _UNDEFINED
    if isinstance(expr, pattern.Arith):
        left, right = eval_expr(expr.left, event), eval_expr(expr.right, event)
        if not (_is_number(left) and _is_number(right)):
            return _UNDEFINED
        if expr.op in ("/", "%") and right == 0:
            return _UNDEFINED
        ops: dict[str, Callable[[Any, Any], Any]] = {
            "+": operator.add,
            "-": operator.sub,
            "*": operator.mul,
            "/": operator.truediv,
            "%": operator.mod,
        }
        return ops[expr.op](left, right)
    raise TypeError(f"not an expression: {expr!r}")


def compare(op: str, left: Any, right: Any) -> bool:
    """``left op right`` under the oracle's rules (see the module docstring)."""
    if left is _UNDEFINED or right is _UNDEFINED:
        return False
    kind = _kind(left)
    if kind is None or kind != _kind(right):
        return False
    if kind == "bool" and op not in ("=", "!="):
        return False  # bools are unordered
    return _COMPARE[op](left, right)


def holds(pred: pattern.Pred, event: Event) -> bool:
    """``event ⊨ pred``."""
    if isinstance(pred, pattern.BoolLit):
        return pred.value
    if isinstance(pred, pattern.Compare):
        return compare(pred.op, eval_expr(pred.left, event), eval_expr(pred.right, event))
    if isinstance(pred, pattern.InList):
        value = eval_expr(pred.expr, event)
        found = any(compare("=", value, c.value) for c in pred.values)
        return found != pred.negated
    if isinstance(pred, pattern.InRange):
        value = eval_expr(pred.expr, event)
        inside = compare("<=", pred.low.value, value) and compare("<=", value, pred.high.value)
        return inside != pred.negated
    if isinstance(pred, pattern.Like):
        value = eval_expr(pred.expr, event)
        matched = isinstance(value, str) and re.fullmatch(pred.pattern, value) is not None
        return matched != pred.negated
    if isinstance(pred, pattern.InStream):
        stream = event.get(_STREAM, _EVERY_STREAM)
        return stream is _EVERY_STREAM or (isinstance(stream, str) and stream in pred.streams)
    if isinstance(pred, pattern.PNot):
        return not holds(pred.operand, event)
    if isinstance(pred, pattern.PAnd):
        return holds(pred.left, event) and holds(pred.right, event)
    if isinstance(pred, pattern.POr):
        return holds(pred.left, event) or holds(pred.right, event)
    raise TypeError(f"not a predicate: {pred!r}")


# ----------------------------------------------------------------- CEL (Fig. 2)


def evaluate_formula(
    formula: pattern.Formula, events: Sequence[Event], type_field: str = "type"
) -> set[Valuation]:
    """``⦇formula⦈(S)``: every valuation of the formula over ``events``."""
    valuations = _evaluate(formula, events, type_field)
    if not any(v.pending for v in valuations):
        return valuations
    return _resolve(formula, valuations, events)


def _evaluate(formula: pattern.Formula, events: Sequence[Event], type_field: str) -> set[Valuation]:
    if isinstance(formula, pattern.EventType):
        return {
            Valuation.make(i, i, {formula.name: frozenset({i})})
            for i, event in enumerate(events)
            if event.get(type_field) == formula.name
        }
    if isinstance(formula, pattern.As):
        return {
            Valuation.make(v.start, v.end, {**dict(v.mu), formula.var: v.data()}, v.pending)
            for v in evaluate_formula(formula.formula, events, type_field)
        }
    if isinstance(formula, pattern.Filter):
        inner = evaluate_formula(formula.formula, events, type_field)
        return _apply_filter(inner, formula.filter, events, formula.formula)
    if isinstance(formula, pattern.Or):
        return evaluate_formula(formula.left, events, type_field) | evaluate_formula(
            formula.right, events, type_field
        )
    if isinstance(formula, pattern.Seq):
        return _sequence(
            evaluate_formula(formula.left, events, type_field),
            evaluate_formula(formula.right, events, type_field),
        )
    if isinstance(formula, pattern.Plus):
        return _iterate(evaluate_formula(formula.formula, events, type_field))
    if isinstance(formula, pattern.NotEvent):
        # One event that is not an R satisfying p, bound to the marker variable "!R".
        return {
            Valuation.make(i, i, {f"!{formula.etype}": frozenset({i})})
            for i, event in enumerate(events)
            if not _is(event, formula.etype, formula.pred, type_field)
        }
    if isinstance(formula, pattern.Absent):
        return _absent(formula, events, type_field)
    if isinstance(formula, pattern.Contiguous):
        return _sequence(
            evaluate_formula(formula.left, events, type_field),
            evaluate_formula(formula.right, events, type_field),
            contiguous=True,
        )
    if isinstance(formula, pattern.ContiguousPlus):
        return _iterate(evaluate_formula(formula.formula, events, type_field), contiguous=True)
    if isinstance(formula, pattern.And):
        return _conjoin(
            evaluate_formula(formula.left, events, type_field),
            evaluate_formula(formula.right, events, type_field),
        )
    raise TypeError(f"not a formula: {formula!r}")


def _conjoin(left: Iterable[Valuation], right: Iterable[Valuation]) -> set[Valuation]:
    """``⦇φ1 AND φ2⦈``: every pair of valuations with the same end, joined: the earlier
    start, the common end, each variable bound to the union of its two sets."""
    right = list(right)
    out: set[Valuation] = set()
    for v1 in left:
        for v2 in right:
            if v1.end != v2.end:
                continue
            mu = {var: v1.get(var) | v2.get(var) for var, _ in (*v1.mu, *v2.mu)}
            pending = v1.pending | v2.pending
            out.add(Valuation.make(min(v1.start, v2.start), v1.end, mu, pending))
    return out


def _apply_filter(
    valuations: set[Valuation],
    filt: pattern.FilterExpr,
    events: Sequence[Event],
    filtered: pattern.Formula,
) -> set[Valuation]:
    # θ1 AND θ2 ≡ nested filters; θ1 OR θ2 ≡ union of the two filtered sets.
    if isinstance(filt, pattern.FilterAtom):
        return {v for v in valuations if all(holds(filt.pred, events[i]) for i in v.get(filt.var))}
    if isinstance(filt, pattern.Correlation):
        return _correlate(valuations, filt, events, filtered)
    if isinstance(filt, pattern.FilterAnd):
        once = _apply_filter(valuations, filt.left, events, filtered)
        return _apply_filter(once, filt.right, events, filtered)
    if isinstance(filt, pattern.FilterOr):
        return _apply_filter(valuations, filt.left, events, filtered) | _apply_filter(
            valuations, filt.right, events, filtered
        )
    raise TypeError(f"not a filter: {filt!r}")


# ------------------------------------------------------------------ correlations
#
# ``φ FILTER θ`` with θ comparing variables: θ must hold for every combination of the
# events bound to the variables it names. A variable defined in φ takes its positions
# in φ's valuation (one iteration of each + around the filter, since + concatenates
# valuations of its body); a variable defined outside φ waits ("pending") until the
# lowest enclosing formula defining it, whose valuation gives its positions.
# ``PREV(x)`` pairs each position of x with the one before it in x's positions.


def _defines(formula: pattern.Formula, var: str) -> bool:
    if isinstance(formula, pattern.EventType):
        return formula.name == var
    if isinstance(formula, pattern.As) and formula.var == var:
        return True
    if isinstance(formula, pattern.NotEvent):
        return False
    return any(
        _defines(getattr(formula, name), var)
        for name in ("formula", "left", "right")
        if hasattr(formula, name)
    )


def _refs(node: object) -> list[pattern.VarAttr]:
    if isinstance(node, pattern.VarAttr):
        return [node]
    out: list[pattern.VarAttr] = []
    for name in ("left", "right", "operand"):
        if hasattr(node, name):
            out += _refs(getattr(node, name))
    return out


def _correlate(
    valuations: set[Valuation],
    corr: pattern.Correlation,
    events: Sequence[Event],
    filtered: pattern.Formula,
) -> set[Valuation]:
    names = {r.var for r in _refs(corr.pred)}
    out: set[Valuation] = set()
    for v in valuations:
        bound = tuple(sorted((x, v.get(x)) for x in names if _defines(filtered, x)))
        if len(bound) == len(names):
            if _all_hold(corr, dict(bound), events):
                out.add(v)
        else:
            out.add(Valuation(v.start, v.end, v.mu, v.pending | {(corr, bound)}))
    return out


def _resolve(
    formula: pattern.Formula, valuations: set[Valuation], events: Sequence[Event]
) -> set[Valuation]:
    """Give waiting correlations the positions of the variables ``formula`` defines."""
    out: set[Valuation] = set()
    for v in valuations:
        keep = True
        pending: set[Pending] = set()
        for corr, bound in v.pending:
            have = dict(bound)
            for x in {r.var for r in _refs(corr.pred)} - set(have):
                if _defines(formula, x):
                    have[x] = v.get(x)
            if len(have) < len({r.var for r in _refs(corr.pred)}):
                pending.add((corr, tuple(sorted(have.items()))))
            elif not _all_hold(corr, have, events):
                keep = False
                break
        if keep:
            out.add(Valuation(v.start, v.end, v.mu, frozenset(pending)))
    return out


def _all_hold(
    corr: pattern.Correlation, bound: Mapping[str, frozenset[int]], events: Sequence[Event]
) -> bool:
    refs = _refs(corr.pred)
    prev_vars = {r.var for r in refs if r.back}
    choices: list[list[tuple[str, tuple[int, ...]]]] = []
    for x in sorted({r.var for r in refs}):
        positions = sorted(bound[x])
        if x in prev_vars:  # (this one, the one before) pairs
            choices.append([(x, (b, a)) for a, b in itertools.pairwise(positions)])
        else:
            choices.append([(x, (p,)) for p in positions])
    for combo in itertools.product(*choices):
        env = {(x, back): events[ps[back]] for x, ps in combo for back in range(len(ps))}
        if not _cross_holds(corr.pred, env):
            return False
    return True


def _cross_value(expr: pattern.Expr, env: Mapping[tuple[str, int], Event]) -> Any:
    if isinstance(expr, pattern.VarAttr):
        value = env[expr.var, expr.back].get(expr.attr)
        return _UNDEFINED if value is None else value
    if isinstance(expr, pattern.Arith | pattern.Neg):
        # Evaluate the operands here, then the operator with the unary interpreter.
        if isinstance(expr, pattern.Neg):
            return eval_expr(pattern.Neg(_const(_cross_value(expr.operand, env))), {})
        left, right = _cross_value(expr.left, env), _cross_value(expr.right, env)
        return eval_expr(pattern.Arith(expr.op, _const(left), _const(right)), {})
    return eval_expr(expr, {})


def _const(value: Any) -> pattern.Expr:
    # An undefined operand stays undefined: a missing attribute of an empty event.
    return pattern.Attr("\0missing") if value is _UNDEFINED else pattern.Const(value)


def _cross_holds(pred: pattern.Pred, env: Mapping[tuple[str, int], Event]) -> bool:
    assert isinstance(pred, pattern.Compare), pred
    return compare(pred.op, _cross_value(pred.left, env), _cross_value(pred.right, env))


def _is(event: Event, etype: str, pred: pattern.Pred | None, type_field: str) -> bool:
    """Whether ``event`` is an ``etype`` event satisfying ``pred`` (None: TRUE)."""
    return event.get(type_field) == etype and (pred is None or holds(pred, event))


def _absent(formula: pattern.Absent, events: Sequence[Event], type_field: str) -> set[Valuation]:
    """``⦇φ1 ; !ψ ; φ2⦈``: the pairs of ``φ1 ; φ2`` with no ψ event strictly between."""
    left = evaluate_formula(formula.left, events, type_field)
    right = list(evaluate_formula(formula.right, events, type_field))
    return {
        _concat(v1, v2)
        for v1 in left
        for v2 in right
        if v1.end < v2.start
        and not any(
            _is(events[k], formula.etype, formula.pred, type_field)
            for k in range(v1.end + 1, v2.start)
        )
    }


def _concat(v1: Valuation, v2: Valuation) -> Valuation:
    """``V1 · V2`` for ``V1.end < V2.start``: joined interval, pointwise union."""
    mu = dict(v1.mu)
    for var, positions in v2.mu:
        mu[var] = mu.get(var, frozenset()) | positions
    return Valuation.make(v1.start, v2.end, mu, v1.pending | v2.pending)


class OracleTooLarge(Exception):
    """The brute force would pair more valuations than ``PAIR_BUDGET`` in one step."""


# Pairs one sequencing step may try. Nested ``+`` over a 10-event stream can have
# thousands of valuations per interval, and pairing them all took this evaluator past
# a quarter of an hour on one drawn case; a case over the budget is one the oracle
# cannot decide in time, which the differential suites discard (and count) rather than
# wait for.
PAIR_BUDGET = 1_000_000


def _sequence(
    left: Iterable[Valuation], right: Iterable[Valuation], *, contiguous: bool = False
) -> set[Valuation]:
    """``⦇φ1 ; φ2⦈`` from ``⦇φ1⦈`` and ``⦇φ2⦈``; ``⦇φ1 : φ2⦈`` when ``contiguous``:
    φ2 starts on the very next event of the substream."""
    left, right = list(left), list(right)
    if len(left) * len(right) > PAIR_BUDGET:
        raise OracleTooLarge(f"{len(left)} × {len(right)} valuations to pair")
    if contiguous:
        return {_concat(v1, v2) for v1 in left for v2 in right if v1.end + 1 == v2.start}
    return {_concat(v1, v2) for v1 in left for v2 in right if v1.end < v2.start}


def _iterate(base: set[Valuation], *, contiguous: bool = False) -> set[Valuation]:
    """``⦇φ+⦈`` = least fixpoint of ``X = ⦇φ⦈ ∪ ⦇φ⦈ ; X``.

    Iterates semi-naively: each round only extends the valuations found in the
    previous round, since the others were already extended. Every round makes
    intervals strictly longer, so this terminates on a finite stream.
    """
    result = set(base)
    frontier = set(base)
    while frontier:
        frontier = _sequence(base, frontier, contiguous=contiguous) - result
        result |= frontier
    return result


# ------------------------------------------------ projection, substreams, windows


def _project(v: Valuation, select: tuple[str, ...] | None) -> frozenset[int]:
    """The positions of the complex event after ``SELECT``: ``*`` keeps all."""
    if select is None:
        return v.data()
    return frozenset().union(*(ps for var, ps in v.mu if var in select))


def _numeric(value: Any) -> int | float | None:
    return value if _is_number(value) else None


def _substreams(
    query: pattern.Pattern, events: Sequence[Event]
) -> list[tuple[Key | None, list[int]]]:
    """The global indexes of each substream, with its partition key."""
    if not query.partition_by:
        return [(None, list(range(len(events))))]
    groups: dict[tuple[tuple[bool, Any], ...], tuple[Key, list[int]]] = {}
    for index, event in enumerate(events):
        values = tuple(event.get(attr) for attr in query.partition_by)
        if any(value is None for value in values):
            continue  # an event with a NULL partition attribute is in no partition
        # Bools are not numbers: keep True and 1 in different partitions.
        identity = tuple((isinstance(value, bool), value) for value in values)
        groups.setdefault(identity, (values, []))[1].append(index)
    return list(groups.values())


def _clock(query: pattern.Pattern, time_field: str) -> str | None:
    """The attribute a clock window is measured on, or None for other windows."""
    window = query.within
    if window is None or window.kind is pattern.WindowKind.EVENTS:
        return None
    if window.kind is pattern.WindowKind.TIME:
        return time_field
    return window.attr


def _drop_late(indexes: list[int], events: Sequence[Event], clock: str) -> list[int]:
    """Remove events whose clock is below the largest clock kept so far."""
    kept: list[int] = []
    latest: int | float | None = None
    for index in indexes:
        value = _numeric(events[index].get(clock))
        if value is not None and latest is not None and value < latest:
            continue
        if value is not None:
            latest = value
        kept.append(index)
    return kept


def _in_window(
    query: pattern.Pattern, start: int, end: int, local_events: Sequence[Event], clock: str | None
) -> bool:
    window = query.within
    if window is None:
        return True
    if clock is None:
        return end - start <= window.epsilon
    first = _numeric(local_events[start].get(clock))
    last = _numeric(local_events[end].get(clock))
    if first is None or last is None:
        return False
    return last - first <= window.epsilon


# --------------------------------------------------- selection strategies (§4)

LocalComplexEvent = tuple[int, int, frozenset[int]]
"""``(start, end, D)`` in the positions of one substream."""


def next_le(d1: frozenset[int], d2: frozenset[int]) -> bool:
    """``D1 ≤next D2``: equal, or the first position where they differ is in D2."""
    return d1 == d2 or min(d1 ^ d2) in d2


def last_le(d1: frozenset[int], d2: frozenset[int]) -> bool:
    """``D1 ≤last D2``: equal, or the last position where they differ is in D2."""
    return d1 == d2 or max(d1 ^ d2) in d2


def is_contiguous(positions: frozenset[int]) -> bool:
    """No gap between the smallest and the largest position (true for ∅ and singletons)."""
    return not positions or max(positions) - min(positions) + 1 == len(positions)


def _maximum(
    candidates: set[frozenset[int]], le: Callable[[frozenset[int], frozenset[int]], bool]
) -> frozenset[int]:
    """The D with ``D' le D`` for every candidate D'. A linear scan finds it because
    ``le`` is a total order (Lemma 1); the final check re-states the definition."""
    best = next(iter(candidates))
    for positions in candidates:
        if le(best, positions):
            best = positions
    assert all(le(positions, best) for positions in candidates), "not a total order"
    return best


def select_positions(
    strategy: pattern.Strategy, candidates: set[frozenset[int]]
) -> set[frozenset[int]]:
    """Which of the competitors' data sets (one ``end``) the strategy keeps."""
    if strategy is pattern.Strategy.ALL or not candidates:
        return set(candidates)
    if strategy is pattern.Strategy.STRICT:
        return {positions for positions in candidates if is_contiguous(positions)}
    if strategy is pattern.Strategy.NEXT:
        return {_maximum(candidates, next_le)}
    if strategy is pattern.Strategy.LAST:
        return {_maximum(candidates, last_le)}
    if strategy is pattern.Strategy.MAX:
        return {
            positions
            for positions in candidates
            if not any(positions < other for other in candidates if len(other) > len(positions))
        }
    raise TypeError(f"not a strategy: {strategy!r}")


def _select_strategy(
    strategy: pattern.Strategy, complex_events: set[LocalComplexEvent]
) -> set[LocalComplexEvent]:
    """Apply the selection strategy to one substream's complex events.

    Competitors are the complex events with the same ``end``; they are compared
    on their positions only, so complex events that differ only in ``start``
    stand or fall together.
    """
    by_end: dict[int, set[frozenset[int]]] = {}
    for _, end, positions in complex_events:
        by_end.setdefault(end, set()).add(positions)
    kept = {end: select_positions(strategy, candidates) for end, candidates in by_end.items()}
    return {ce for ce in complex_events if ce[2] in kept[ce[1]]}


# --------------------------------------------------------------------- queries


GlobalComplexEvent = tuple[int, int, tuple[int, ...]]


def _evaluate_substream(
    query: pattern.Pattern,
    events: Sequence[Event],
    indexes: Sequence[int],
    type_field: str,
    clock: str | None,
) -> set[GlobalComplexEvent]:
    """The query over the substream made of ``events[i] for i in indexes``:
    valuations, projection, strategy, then window; global positions."""
    local_events = [events[i] for i in indexes]
    valuations = evaluate_formula(query.where, local_events, type_field)
    complex_events = {(v.start, v.end, _project(v, query.select)) for v in valuations}
    if _correlated(query.where):
        # With correlations the window comes before the strategy: NEXT, LAST and MAX
        # choose among the correlated complex events inside the window.
        complex_events = {
            ce for ce in complex_events if _in_window(query, ce[0], ce[1], local_events, clock)
        }
    return {
        (indexes[start], indexes[end], tuple(sorted(indexes[p] for p in positions)))
        for start, end, positions in _select_strategy(query.strategy, complex_events)
        if _in_window(query, start, end, local_events, clock)
    }


def _correlated(formula: pattern.Formula) -> bool:
    if isinstance(formula, pattern.Filter) and _has_correlation(formula.filter):
        return True
    return any(
        _correlated(getattr(formula, name))
        for name in ("formula", "left", "right")
        if hasattr(formula, name)
    )


def _has_correlation(filt: pattern.FilterExpr) -> bool:
    if isinstance(filt, pattern.Correlation):
        # One variable without PREV is a filter on one event: no correlation.
        refs = _refs(filt.pred)
        return len({r.var for r in refs}) > 1 or any(r.back for r in refs)
    if isinstance(filt, pattern.FilterAnd | pattern.FilterOr):
        return _has_correlation(filt.left) or _has_correlation(filt.right)
    return False


def _read_streams(
    query: pattern.Pattern, events: Sequence[Event], type_field: str, stream_field: str | None
) -> list[Event]:
    """Copies of the events that say which stream each is in (for ``S>E``); with a stream
    field, an event outside FROM's streams becomes an event of no type the query names."""
    out: list[Event] = []
    for event in events:
        copy = dict(event)
        if stream_field is None:
            copy[_STREAM] = _EVERY_STREAM
        else:
            stream = event.get(stream_field)
            copy[_STREAM] = stream
            if not (isinstance(stream, str) and stream in query.streams):
                copy[type_field] = _NO_TYPE
        out.append(copy)
    return out


def oracle_by_end(
    query: pattern.Pattern,
    events: Sequence[Event],
    type_field: str = "type",
    time_field: str = "timestamp",
    stream_field: str | None = None,
) -> dict[int, set[OracleResult]]:
    """The complex events of ``query`` over ``events``, by the position of their
    ``end`` (the event whose processing outputs them); ends without output are absent.

    LIMIT is ignored: the engine may output any ``n`` of each set. ``stream_field``:
    the attribute naming an event's stream (None: every event is in every stream).
    """
    events = _read_streams(query, events, type_field, stream_field)
    clock = _clock(query, time_field)
    substreams = [
        (key, _drop_late(indexes, events, clock) if clock is not None else indexes)
        for key, indexes in _substreams(query, events)
    ]
    by_end: dict[int, set[OracleResult]] = {}
    if query.consume is pattern.Consume.NONE:
        for key, indexes in substreams:
            for start, end, positions in _evaluate_substream(
                query, events, indexes, type_field, clock
            ):
                by_end.setdefault(end, set()).add((start, end, positions, key))
        return by_end

    # Consumption: a sequential process. Each substream is evaluated as if the
    # input started at its restart index; an output at j restarts after j (every
    # substream for ANY, only the outputting one for PARTITION).
    restart = [0] * len(substreams)
    cache: dict[tuple[int, int], set[GlobalComplexEvent]] = {}
    for j in range(len(events)):
        for p, (key, indexes) in enumerate(substreams):
            if j not in indexes:
                continue  # only j's own substream has complex events ending at j
            r = restart[p]
            if (p, r) not in cache:
                suffix = [i for i in indexes if i >= r]
                cache[p, r] = _evaluate_substream(query, events, suffix, type_field, clock)
            output = {(start, end, ps, key) for start, end, ps in cache[p, r] if end == j}
            if not output:
                continue
            by_end.setdefault(j, set()).update(output)
            if query.consume is pattern.Consume.ANY:
                restart = [j + 1] * len(substreams)
            else:
                restart[p] = j + 1
    return by_end


def oracle_eval(
    query: pattern.Pattern,
    events: Sequence[Event],
    type_field: str = "type",
    time_field: str = "timestamp",
) -> set[OracleResult]:
    """Every complex event of ``query`` over ``events``.

    Returns ``(start, end, sorted positions, key)`` with global 0-based
    positions and ``key`` the PARTITION BY values (None without PARTITION BY).
    LIMIT is ignored.
    """
    results: set[OracleResult] = set()
    for output in oracle_by_end(query, events, type_field, time_field).values():
        results |= output
    return results
