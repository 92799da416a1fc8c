"""Hypothesis strategies for random CEQL queries and event streams.

Queries are over event types A, B, C (and D, which streams never contain),
variables u, v, w, integer attributes x, y in 0..3 (z is never present) and a
string attribute s over "ab" that LIKE patterns (``like_patterns``) test.
Streams carry x, y, s, a partition attribute k in 0..1 and a mostly
non-decreasing clock t; attributes are sometimes missing or None.

Formulas are kept small (at most ``max_size`` CEL nodes, ``+`` nested at most
``max_plus_depth`` deep) because the oracle materialises every valuation and
``+`` can produce exponentially many of them.

Time windows (``WITHIN n MILLISECONDS``) are measured on ``TIME_FIELD``: pass
it as ``time_field`` to both the engine and the oracle.

``queries`` draws ``SELECT ALL`` without consumption unless told which selection
strategies and consumption policies to draw from.

``decided`` gives up a drawn case the oracle cannot decide in time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, TypeVar

from hypothesis import event, reject
from hypothesis import strategies as st

from cerfleet import pattern
from tests.shared.oracle import OracleTooLarge

T = TypeVar("T")


def decided(oracle: Callable[[], T]) -> T:
    """The oracle's answer; the case is rejected where it has too many valuations to
    pair in time (``OracleTooLarge``)."""
    try:
        return oracle()
    except OracleTooLarge:
        event("discarded: the oracle could not decide it in time")
        reject()


EVENT_TYPES = ("A", "B", "C")
ABSENT_TYPE = "D"  # in queries, never in streams
VARIABLES = ("u", "v", "w")
ATTRIBUTES = ("x", "y")
MISSING_ATTRIBUTE = "z"  # in predicates, never in events
STRING_ATTRIBUTE = "s"
PARTITION_ATTRIBUTE = "k"
TIME_FIELD = "t"

__all__ = [
    "ABSENT_TYPE",
    "EVENT_TYPES",
    "TIME_FIELD",
    "event_types",
    "formulas",
    "like_patterns",
    "predicates",
    "queries",
    "streams",
]

_SMALL = st.integers(min_value=0, max_value=3)


# ------------------------------------------------------------------- predicates


def _attributes() -> st.SearchStrategy[pattern.Attr]:
    # z is rare: it is never present, so the predicate is constant.
    return st.sampled_from((*ATTRIBUTES, *ATTRIBUTES, MISSING_ATTRIBUTE)).map(pattern.Attr)


def _consts() -> st.SearchStrategy[pattern.Const]:
    return _SMALL.map(pattern.Const)


def _expressions() -> st.SearchStrategy[pattern.Expr]:
    """Mostly a bare attribute; sometimes ``attr op const`` or ``attr op attr``."""
    arith = st.builds(
        pattern.Arith,
        op=st.sampled_from(("+", "-", "*")),
        left=_attributes(),
        right=st.one_of(_consts(), _attributes()),
    )
    return st.one_of(_attributes(), _attributes(), _attributes(), arith)


# LIKE's syntax is RE2's, the oracle's is Python's re: patterns are drawn from the
# part where both agree on the whole-value matches (no anchors, no \d or \b, whose
# Unicode meanings differ, nothing RE2 refuses).
_LIKE_ATOMS = st.sampled_from(("a", "b", "ab", ".", "[ab]", "[^a]", "a?"))
_LIKE_QUANTIFIERS = st.sampled_from(("*", "+", "?", "{1,2}", "*?", "{2}"))


@cache
def like_patterns() -> st.SearchStrategy[str]:
    """Small regular expressions over "ab": concatenation, |, groups, quantifiers."""
    return st.recursive(
        _LIKE_ATOMS,
        lambda sub: st.one_of(
            st.tuples(sub, sub).map("".join),
            st.tuples(sub, sub).map("|".join),
            st.tuples(sub, _LIKE_QUANTIFIERS).map(lambda t: f"(?:{t[0]}){t[1]}"),
            sub.map(lambda p: f"({p})"),
        ),
        max_leaves=4,
    )


def _atomic_predicates() -> st.SearchStrategy[pattern.Pred]:
    compare_const = st.builds(
        pattern.Compare,
        op=st.sampled_from(("=", "!=", "<", ">=", "<=", ">")),
        left=_expressions(),
        right=_consts(),
    )
    compare_attrs = st.builds(
        pattern.Compare,
        op=st.sampled_from(("=", "!=", "<")),
        left=_attributes(),
        right=_attributes(),
    )
    in_list = st.builds(
        pattern.InList,
        expr=_attributes(),
        values=st.lists(_consts(), min_size=1, max_size=3).map(tuple),
        negated=st.booleans(),
    )
    in_range = st.builds(
        pattern.InRange, expr=_attributes(), low=_consts(), high=_consts(), negated=st.booleans()
    )
    like = st.builds(
        pattern.Like,
        # x: LIKE on a number is false, as on a missing value.
        st.sampled_from((STRING_ATTRIBUTE, STRING_ATTRIBUTE, "x")).map(pattern.Attr),
        like_patterns(),
        st.booleans(),
    )
    return st.one_of(
        compare_const,
        compare_const,
        compare_const,
        compare_attrs,
        in_list,
        in_range,
        like,
        st.builds(pattern.BoolLit, st.booleans()),
    )


@cache  # strategies are immutable; building them per draw is what makes generation slow
def predicates(max_depth: int = 2) -> st.SearchStrategy[pattern.Pred]:
    """Unary predicates with NOT / AND / OR nested at most ``max_depth`` deep."""
    if max_depth <= 0:
        return _atomic_predicates()
    sub = predicates(max_depth - 1)
    return st.one_of(
        _atomic_predicates(),
        _atomic_predicates(),
        st.builds(pattern.PNot, sub),
        st.builds(pattern.PAnd, sub, sub),
        st.builds(pattern.POr, sub, sub),
    )


@cache
def _filters(bound: tuple[str, ...]) -> st.SearchStrategy[pattern.FilterExpr]:
    """``X[P]`` atoms over the given bound names, up to two combined by AND / OR."""
    atom = st.builds(pattern.FilterAtom, var=st.sampled_from(bound), pred=predicates())
    return st.one_of(
        atom,
        atom,
        st.builds(pattern.FilterAnd, atom, atom),
        st.builds(pattern.FilterOr, atom, atom),
    )


# ---------------------------------------------------------------------- formulas


# By ``dense`` (see ``formulas``).
_TYPE_NAMES = {
    False: st.sampled_from((*EVENT_TYPES, *EVENT_TYPES, *EVENT_TYPES, ABSENT_TYPE)),
    True: st.sampled_from(EVENT_TYPES),
}
_VARIABLE_NAMES = st.sampled_from(VARIABLES)


def _node_kinds(binary: bool, plus: bool, dense: bool) -> st.SearchStrategy[str]:
    """The kinds of inner node possible with room for two operands or not, with
    ``+`` still allowed or not; dense formulas have relatively fewer filters."""
    kinds: tuple[str, ...] = ("as", "filter")
    if plus:
        kinds += ("plus", "plus", "cplus")
    if binary:
        kinds += ("seq", "seq", "seq", "seq", "cseq", "cseq", "absent", "or", "or")
    if dense:
        kinds = tuple(kind for kind in kinds if kind != "filter") * 2 + ("filter",)
    return st.sampled_from(kinds)


_NODE_KINDS = {
    (binary, plus, dense): _node_kinds(binary, plus, dense)
    for binary in (False, True)
    for plus in (False, True)
    for dense in (False, True)
}


def event_types(formula: pattern.Formula) -> set[str]:
    """The event types a formula mentions."""
    if isinstance(formula, pattern.EventType):
        return {formula.name}
    if isinstance(formula, pattern.NotEvent):
        return set()
    if isinstance(
        formula, pattern.Seq | pattern.Contiguous | pattern.Absent | pattern.Or | pattern.And
    ):
        return event_types(formula.left) | event_types(formula.right)
    return event_types(formula.formula)


def _has_not(formula: pattern.Formula) -> bool:
    if isinstance(formula, pattern.NotEvent):
        return True
    if isinstance(formula, pattern.EventType):
        return False
    if isinstance(
        formula, pattern.Seq | pattern.Contiguous | pattern.Absent | pattern.Or | pattern.And
    ):
        return _has_not(formula.left) or _has_not(formula.right)
    return _has_not(formula.formula)


def _bound(formula: pattern.Formula) -> set[str]:
    """The variables a filter over ``formula`` may name: bound, and never to a NOT(...)
    event (the query checker refuses a filter that could narrow one)."""
    return _bound_any(formula) - _negated(formula)


def _negated(formula: pattern.Formula) -> set[str]:
    """The variables of ``AS`` over a formula holding a NOT(...) event."""
    if isinstance(formula, pattern.EventType | pattern.NotEvent):
        return set()
    if isinstance(
        formula, pattern.Seq | pattern.Contiguous | pattern.Absent | pattern.Or | pattern.And
    ):
        return _negated(formula.left) | _negated(formula.right)
    inner = _negated(formula.formula)
    if isinstance(formula, pattern.As) and _has_not(formula.formula):
        inner.add(formula.var)
    return inner


def _bound_any(formula: pattern.Formula) -> set[str]:
    """The variables (event types included) a formula can bind."""
    if isinstance(formula, pattern.EventType):
        return {formula.name}
    if isinstance(formula, pattern.NotEvent):
        return set()  # bound to no variable a filter may name
    if isinstance(formula, pattern.As):
        return _bound_any(formula.formula) | {formula.var}
    if isinstance(
        formula, pattern.Seq | pattern.Contiguous | pattern.Absent | pattern.Or | pattern.And
    ):
        return _bound_any(formula.left) | _bound_any(formula.right)
    return _bound_any(formula.formula)


_BINARY: dict[str, Any] = {
    "seq": pattern.Seq,
    "cseq": pattern.Contiguous,
    "absent": pattern.Absent,
    "or": pattern.Or,
}
# One leaf in eight is a NOT(...) event.
_LEAF_ROLL = st.integers(0, 7)
# What NOT(...) and `; !... ;` exclude: a type, half the time narrowed by a predicate.
_EXCLUDED_PREDICATES = st.one_of(st.none(), predicates(max_depth=1))
_ITERATIONS: dict[str, Any] = {"plus": pattern.Plus, "cplus": pattern.ContiguousPlus}


def _formula_of_size(draw: st.DrawFn, size: int, plus_depth: int, dense: bool) -> pattern.Formula:
    """A formula of exactly ``size`` CEL nodes (filters count as one node).

    A plain function driven by ``draw`` rather than a composite strategy, so no
    strategy objects are built per node."""
    if size <= 1:
        if draw(_LEAF_ROLL) == 0:
            return pattern.NotEvent(draw(_TYPE_NAMES[dense]), draw(_EXCLUDED_PREDICATES))
        return pattern.EventType(draw(_TYPE_NAMES[dense]))
    kind = draw(_NODE_KINDS[size >= 3, plus_depth > 0, dense])
    if kind in _BINARY:
        left_size = draw(st.integers(min_value=1, max_value=size - 2))
        left = _formula_of_size(draw, left_size, plus_depth, dense)
        right = _formula_of_size(draw, size - 1 - left_size, plus_depth, dense)
        if kind == "absent":
            excluded = draw(_TYPE_NAMES[dense])
            return pattern.Absent(left, excluded, draw(_EXCLUDED_PREDICATES), right)
        return _BINARY[kind](left, right)
    if kind in _ITERATIONS:
        inner = _formula_of_size(draw, size - 1, plus_depth - 1, dense)
        return _ITERATIONS[kind](inner)
    inner = _formula_of_size(draw, size - 1, plus_depth, dense)
    if kind == "as":
        return pattern.As(inner, draw(_VARIABLE_NAMES))
    bound = tuple(sorted(_bound(inner)))
    if not bound:  # only NOT(...) events: nothing a filter may name
        return inner
    return pattern.Filter(inner, draw(_filters(bound)))


@st.composite
def formulas(
    draw: st.DrawFn, max_size: int = 8, max_plus_depth: int = 2, dense: bool = False
) -> pattern.Formula:
    """CEL formulas of 1..max_size nodes.

    ``dense`` formulas match more, and more ways per event, as selection
    strategies and consumption need: at least 2 nodes, no absent event type,
    and ``+``, ``;`` and OR more often than FILTER."""
    size = draw(st.integers(min_value=2 if dense else 1, max_value=max_size))
    return _formula_of_size(draw, size, max_plus_depth, dense)


# ----------------------------------------------------------------------- queries


# Amounts from 0: ε = 0 keeps the complex events whose events share one clock value.
_WINDOWS: st.SearchStrategy[pattern.Window | None] = st.one_of(
    st.none(),
    st.builds(pattern.Window, st.just(pattern.WindowKind.EVENTS), st.integers(0, 4)),
    st.builds(
        pattern.Window,
        st.just(pattern.WindowKind.ATTRIBUTE),
        st.integers(0, 5),
        attr=st.just(TIME_FIELD),
    ),
    st.builds(
        pattern.Window,
        st.just(pattern.WindowKind.TIME),
        st.integers(0, 5),
        unit=st.just("MILLISECONDS"),
    ),
)


_NO_STRATEGY_CLAUSES = (pattern.Strategy.ALL,)
_LIMITS = st.sampled_from((1, 1, 2, 3))
_NO_CONSUMPTION = (pattern.Consume.NONE,)


@st.composite
def queries(
    draw: st.DrawFn,
    max_size: int = 8,
    max_plus_depth: int = 2,
    projections: bool = True,
    partitions: bool = True,
    windows: bool = True,
    strategies: Sequence[pattern.Strategy] = _NO_STRATEGY_CLAUSES,
    consumes: Sequence[pattern.Consume] = _NO_CONSUMPTION,
    limits: bool = False,
    dense: bool = False,
) -> pattern.Pattern:
    """Queries ``SELECT [strategy] * | vars FROM S WHERE φ [PARTITION BY [k]]
    [WITHIN ...] [CONSUME BY ...] [LIMIT n]``.

    The strategy and the consumption policy are drawn from ``strategies`` and
    ``consumes`` (by default ALL and NONE only). With ``limits`` half of the
    queries without consumption get ``LIMIT 1..3`` (mostly 1); queries with a
    consumption policy never have a LIMIT (which complex events it lets through
    is unspecified, and consumption would depend on it).

    ``dense`` queries have ``dense`` formulas (see ``formulas``) and PARTITION BY
    half of the time instead of a quarter (three quarters with CONSUME BY
    PARTITION, so that partitions consume independently).
    """
    where = draw(formulas(max_size=max_size, max_plus_depth=max_plus_depth, dense=dense))
    select: tuple[str, ...] | None = None
    names = sorted(_bound(where))
    if projections and names and draw(st.integers(0, 3)) == 0:
        select = tuple(draw(st.lists(st.sampled_from(names), min_size=1, unique=True)))
    strategy = draw(st.sampled_from(tuple(strategies)))
    consume = draw(st.sampled_from(tuple(consumes)))
    partition_by: tuple[str, ...] = ()
    # 1 in 4, or 1 in 2 when dense, and 3 in 4 when dense with CONSUME BY PARTITION.
    partition_roll = draw(st.integers(0, 3))
    if partitions and (
        partition_roll == 0
        or (dense and partition_roll == 1)
        or (dense and consume is pattern.Consume.PARTITION and partition_roll == 2)
    ):
        partition_by = (PARTITION_ATTRIBUTE,)
    within = draw(_WINDOWS) if windows else None
    limit: int | None = None
    if limits and consume is pattern.Consume.NONE and draw(st.booleans()):
        limit = draw(_LIMITS)
    return pattern.Pattern(
        where=where,
        select=select,
        strategy=strategy,
        streams=("S",),
        partition_by=partition_by,
        within=within,
        consume=consume,
        limit=limit,
    )


# ----------------------------------------------------------------------- streams


_STREAM_TYPES = ("A", "A", "B", "B", "C")
_EVENT_ATTRIBUTES = (
    ("x", _SMALL),
    ("y", _SMALL),
    (STRING_ATTRIBUTE, st.text(alphabet="ab", max_size=3)),
    ("k", st.integers(0, 1)),
)
_ROLL = st.integers(0, 19)


def _event(draw: st.DrawFn, types: st.SearchStrategy[str], clock: int | None) -> dict[str, Any]:
    """One event with clock t = ``clock`` (no t when None); each of x, y, s, k is
    occasionally None or missing altogether."""
    event: dict[str, Any] = {"type": draw(types)}
    for name, values in _EVENT_ATTRIBUTES:
        roll = draw(_ROLL)
        if roll == 0:
            continue
        event[name] = None if roll == 1 else draw(values)
    if clock is not None:
        event[TIME_FIELD] = clock
    return event


# Clock increments: mostly 0..2, sometimes a step back that makes a late event.
_STEPS = st.sampled_from((0, 0, 1, 1, 1, 1, 2, 2, 2, -1, -3))


@st.composite
def streams(
    draw: st.DrawFn,
    min_size: int = 0,
    max_size: int = 10,
    types: Sequence[str] = _STREAM_TYPES,
) -> list[dict[str, Any]]:
    """0..10 events whose clock t mostly grows by 0..2, sometimes steps back
    (a late event) and sometimes is missing. Event types are drawn from
    ``types`` (repeat a type to make it more frequent)."""
    type_names = st.sampled_from(tuple(types))
    # sampled_from draws sizes uniformly; integers() would favour tiny streams.
    size = draw(st.sampled_from(range(min_size, max_size + 1)))
    clock = draw(_SMALL)
    out = []
    for _ in range(size):
        clock += draw(_STEPS)
        has_clock = draw(_ROLL) > 1
        out.append(_event(draw, type_names, clock if has_clock else None))
    return out
