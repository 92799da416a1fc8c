"""A pattern compiled to its determinised CEA: what every evaluator of a query shares.

The compiler's stages, each a module named for the paper's concept::

    Pattern ──construction──▶ CEA ──determinization──▶ det-CEA
    (pattern)  (cea/construction)    (evaluation/determinization)

``QueryPlan`` holds the result with the query's options and the per-event helpers
(letters, partition keys, schema checks, clocks). It consumes only the pattern form;
front-ends and the stream-level evaluator sit above it (``cerfleet.query``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from cerfleet import pattern
from cerfleet.cea.construction import compile_formula
from cerfleet.cea.correlation import split_correlations
from cerfleet.cea.equality_keys import equality_keys
from cerfleet.cea.predicates import compile_predicate
from cerfleet.cea.strict import strict_product
from cerfleet.cea.vector_predicates import compile_vector_predicate
from cerfleet.complex_event import KeyValue
from cerfleet.evaluation.determinization import DetCEA
from cerfleet.evaluation.evaluator import Evaluator
from cerfleet.evaluation.lag import lag_name, without_prev
from cerfleet.evaluation.letters import BatchLetters
from cerfleet.evaluation.maximal import MaxCEA, MaxEvaluator
from cerfleet.evaluation.priority import PriorityEvaluator
from cerfleet.evaluation.substream import SubstreamEvaluator
from cerfleet.evaluation.tagged import TaggedEvaluator
from cerfleet.evaluation.window import clock_of, epsilon_of
from cerfleet.events.ingest import JsonDecoder
from cerfleet.events.timestamps import parse_timestamp
from cerfleet.pattern.walk import var_attrs
from cerfleet.stream_qualifiers import resolve_streams

if TYPE_CHECKING:
    import numpy as np
else:
    from cerfleet.lazy_numpy import np

_SCALARS = (str, int, float, bool)
# Integers up to this size are exact as float64 and stay far from int64 overflow.
_EXACT = 2**53


class QueryPlan:
    """A pattern compiled to its determinised CEA, with the query's options.

    Compiling is the expensive, once-per-query part; evaluators are cheap and the
    det-CEA's transition cache is shared by all evaluators of the query.

    ``attributes`` is every event attribute the query reads: the type field, the
    attributes in its filters, the PARTITION BY attributes and the window's clock
    (the time field of a time window, the attribute of ``WITHIN n [attr]``). Columns
    of these alone give ``process_columns`` the same result as the whole events
    (``cerfleet.events.columns.columns_of`` builds them).
    """

    def __init__(
        self,
        form: pattern.Pattern,
        *,
        text: str,
        type_field: str,
        time_field: str,
        stream_field: str | None = None,
    ) -> None:
        self.text = text
        self.type_field = type_field
        self.time_field = time_field
        self.stream_field = stream_field
        # FROM and ``S>E`` as filter atoms on the stream field (cerfleet.stream_qualifiers).
        form = resolve_streams(form, stream_field)
        self.pattern = form
        # PREV reads as reserved attributes the stream evaluator supplies (evaluation.lag).
        unary, self.lags = without_prev(form)
        # Equalities tying every event to one value are PARTITION BY keys (cea.equality_keys);
        # the other correlations are checked at enumeration, the automaton gets the rest.
        self.implicit_keys: tuple[str, ...] = ()
        if not self.lags:
            unary, self.implicit_keys = equality_keys(unary)
        unary, self.correlation = split_correlations(unary)
        tagging = None if self.correlation is None else self.correlation.tagging
        cea, atoms = compile_formula(unary.where, unary.select, tagging=tagging)
        self.strategy = form.strategy
        if self.strategy is pattern.Strategy.STRICT:
            cea = strict_product(cea)
        self.cea = cea
        self.dcea = DetCEA(cea, [compile_predicate(p) for p in atoms.preds], type_field)
        self._atom_preds = atoms.preds
        self._batch: BatchLetters | None = None
        self._json_decoder: JsonDecoder | None = None
        self.max_cea = (
            MaxCEA(self.dcea)
            if self.strategy is pattern.Strategy.MAX and self.correlation is None
            else None
        )
        # Declared keys route the fleet and label complex events; the evaluator's
        # substreams also split on the implicit ones.
        self.partition_attrs = self.pattern.partition_by
        self.key_attrs = (*self.partition_attrs, *self.implicit_keys)
        self.partitioned = bool(self.partition_attrs)  # declared: what the fleet routes by
        self.keyed = bool(self.key_attrs)  # the evaluator keeps one substream per key
        self.consume = unary.consume
        self.clock = clock_of(self.pattern.within, time_field)
        self.epsilon = epsilon_of(self.pattern.within)
        self.limit = self.pattern.limit
        self._schema = _schema_of(form)
        parts = _PredicateParts(self._atom_preds)
        # What letters read; what the vector forms might compute inexactly.
        self._letter_attributes = frozenset({type_field, *parts.attributes})
        self._arithmetic = parts.arithmetic
        self._arithmetic_attributes = parts.arithmetic_attributes
        self._big_constant = parts.big_constant
        window_attributes: set[str] = set()
        if self.pattern.within is not None and self.pattern.within.kind is pattern.WindowKind.TIME:
            window_attributes.add(time_field)
        elif self.pattern.within is not None and self.pattern.within.attr is not None:
            window_attributes.add(self.pattern.within.attr)
        lagged = {lag_name(a, n) for a, n in self.lags}
        correlated = (
            set()
            if self.correlation is None
            else {r.attr for c in self.correlation.checks for r in var_attrs(c.pred)}
        )
        self.attributes: frozenset[str] = frozenset(
            {*(self._letter_attributes - lagged), *(a for a, _ in self.lags)}
            | {*self.key_attrs, *window_attributes, *correlated}
        )
        # Identifies the query a snapshot belongs to: same text and field names.
        self.fingerprint = hashlib.sha256(
            "\0".join((text, type_field, time_field, *filter(None, [stream_field]))).encode()
        ).hexdigest()

    @property
    def atom_predicates(self) -> tuple[pattern.Pred, ...]:
        """The filter predicates the automaton's guards test, by atom number."""
        return tuple(self._atom_preds)

    @property
    def batch(self) -> BatchLetters:
        """Letters of columnar batches, built on first use (the numpy fast path)."""
        if self._batch is None:
            self._batch = BatchLetters(
                self.dcea, [compile_vector_predicate(p) for p in self._atom_preds]
            )
        return self._batch

    @property
    def json_decoder(self) -> JsonDecoder:
        """Decodes JSON records straight into this query's columns (``events.ingest``),
        judging them as every reader does, the schema check included."""
        if self._json_decoder is None:
            declared = {name for attrs in self._schema.values() for name in attrs}
            self._json_decoder = JsonDecoder(
                self.attributes,
                self.type_field,
                check=self.check_event if self._schema else None,
                check_attributes=declared,
            )
        return self._json_decoder

    def batch_letters_exact(self, columns: Mapping[str, np.ndarray], *, originals: bool) -> bool:
        """Whether ``batch.letters(columns)`` surely equals the scalar letters of the events
        the columns stand for: the original events when ``originals``, else the rows of
        the columns themselves (``RowView``).

        The vector forms compute in float64 and int64 where Python computes with exact
        integers, so integers beyond 2**53 (in an integer column, in a constant or in an
        arithmetic step, bounded from each column's largest magnitude) may differ. With
        originals, an object column may also hold a value its row does not rebuild (NaN
        reads as missing), so only number, boolean and string columns are trusted.
        """
        if self._big_constant:
            return False
        magnitude: dict[str, float] = {}  # Python ints (exact sums and products) or inf
        for name in self._letter_attributes:
            col = columns.get(name)
            if col is None or not len(col):
                continue
            kind = col.dtype.kind
            if kind in "iu":
                m = max(-int(col.min()), int(col.max()))
                if m > _EXACT:
                    return False
                magnitude[name] = m
            elif kind == "f":
                if name in self._arithmetic_attributes:
                    largest = float(np.fmax.reduce(np.abs(col), initial=0.0))
                    magnitude[name] = largest if math.isinf(largest) else math.ceil(largest)
            elif kind not in "bU" and originals:
                return False
        return all(_int_bound(expr, magnitude) <= _EXACT for expr in self._arithmetic)

    def substream_evaluator(self) -> SubstreamEvaluator:
        """A fresh evaluator for one substream, by selection strategy."""
        if self.correlation is not None:
            # NEXT, LAST and MAX then select among the correlated complex events.
            return TaggedEvaluator(self.dcea, self.epsilon)
        if self.strategy in (pattern.Strategy.NEXT, pattern.Strategy.LAST):
            return PriorityEvaluator(
                self.dcea, self.epsilon, last=self.strategy is pattern.Strategy.LAST
            )
        if self.max_cea is not None:
            return MaxEvaluator(self.max_cea, self.epsilon)
        return Evaluator(self.dcea, self.epsilon)

    def partition_key(self, event: Mapping[str, Any]) -> tuple[KeyValue, ...] | None:
        """The event's PARTITION BY values; ``()`` without PARTITION BY; None when an
        attribute is missing, null, NaN or not a scalar (the event belongs to no partition)."""
        return _key(event, self.key_attrs)

    def visible_key(self, key: tuple[KeyValue, ...]) -> tuple[KeyValue, ...] | None:
        """A substream's key as complex events show it: the declared PARTITION BY values
        (None without PARTITION BY), never the keys made from equalities."""
        if not self.partition_attrs:
            return None
        return key[: len(self.partition_attrs)] if self.implicit_keys else key

    def lateness_key(self, event: Mapping[str, Any]) -> tuple[KeyValue, ...] | None:
        """The declared partition an event is late in (``cea.equality_keys``)."""
        return _key(event, self.partition_attrs)

    def check_event(self, event: Mapping[str, Any]) -> str | None:
        """Under ``DECLARE STREAM``, why the event violates the schema (None if it does not)."""
        declared = self._schema.get(event.get(self.type_field))  # type: ignore[arg-type]
        if declared is None:
            return None
        for name, atype in declared.items():
            value = event.get(name)
            if value is not None and not _has_type(value, atype):
                return (
                    f"attribute {name!r} of {event.get(self.type_field)} should be "
                    f"{atype.value}, got {type(value).__name__} {value!r}"
                )
        return None


class _PredicateParts:
    """What the filter predicates read: attributes, top-level arithmetic expressions
    (and the attributes under them), and whether an integer constant exceeds 2**53."""

    def __init__(self, preds: list[pattern.Pred]) -> None:
        attributes: set[str] = set()
        arithmetic: list[pattern.Expr] = []
        under_arithmetic: set[str] = set()
        self.big_constant = False
        for pred in preds:
            for expr in _expressions(pred):
                names = {e.name for e in _subexpressions(expr) if isinstance(e, pattern.Attr)}
                attributes |= names
                if isinstance(expr, pattern.Arith | pattern.Neg):
                    arithmetic.append(expr)
                    under_arithmetic |= names
                for e in _subexpressions(expr):
                    if isinstance(e, pattern.Const) and _is_big_int(e.value):
                        self.big_constant = True
        self.attributes = frozenset(attributes)
        self.arithmetic = tuple(arithmetic)
        self.arithmetic_attributes = frozenset(under_arithmetic)


def _is_big_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) > _EXACT


def _expressions(pred: pattern.Pred) -> Iterator[pattern.Expr]:
    """The value expressions of a predicate (constants of IN lists and ranges included)."""
    match pred:
        case pattern.Compare(left=left, right=right):
            yield left
            yield right
        case pattern.InList(expr=expr, values=values):
            yield expr
            yield from values
        case pattern.InRange(expr=expr, low=low, high=high):
            yield from (expr, low, high)
        case pattern.Like(expr=expr):
            yield expr
        case pattern.PNot(operand=operand):
            yield from _expressions(operand)
        case pattern.PAnd(left=left, right=right) | pattern.POr(left=left, right=right):
            yield from _expressions(left)
            yield from _expressions(right)


def _subexpressions(expr: pattern.Expr) -> Iterator[pattern.Expr]:
    yield expr
    if isinstance(expr, pattern.Neg):
        yield from _subexpressions(expr.operand)
    elif isinstance(expr, pattern.Arith):
        yield from _subexpressions(expr.left)
        yield from _subexpressions(expr.right)


def _int_bound(expr: pattern.Expr, magnitude: Mapping[str, float]) -> float:
    """A bound on ``|expr|`` where Python may compute it as an integer; 0 where it is
    surely a float or missing (floats compute alike in Python and numpy); inf once an
    integer step may exceed 2**53. ``magnitude``: the largest ``|value|`` per numeric
    column, rounded up to an int (absent: no number, so arithmetic on it is missing).
    Bounds are Python ints, so they are exact themselves."""
    bound: float
    if isinstance(expr, pattern.Attr):
        bound = magnitude.get(expr.name, 0)
    elif isinstance(expr, pattern.Const):
        value = expr.value
        bound = 0 if isinstance(value, bool) or not isinstance(value, int) else abs(value)
    elif isinstance(expr, pattern.Neg):
        bound = _int_bound(expr.operand, magnitude)
    elif not isinstance(expr, pattern.Arith):  # PREV, read as an attribute before this
        raise TypeError(f"not a value expression: {expr!r}")
    else:
        left = _int_bound(expr.left, magnitude)
        right = _int_bound(expr.right, magnitude)
        if math.inf in (left, right):
            return math.inf
        if expr.op == "/":
            return 0  # true division: a float
        if expr.op == "%":
            bound = right  # |a % b| < |b|
        elif expr.op == "*":
            bound = left * right
        else:
            bound = left + right
    return bound if bound <= _EXACT else math.inf


def _has_type(value: object, atype: pattern.AttrType) -> bool:
    is_num = isinstance(value, int | float) and not isinstance(value, bool)
    if atype is pattern.AttrType.INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if atype is pattern.AttrType.DOUBLE:
        return is_num
    if atype is pattern.AttrType.STRING:
        return isinstance(value, str)
    if atype is pattern.AttrType.BOOLEAN:
        return isinstance(value, bool)
    return is_num or parse_timestamp(value) is not None


def _schema_of(query: pattern.Pattern) -> dict[str, dict[str, pattern.AttrType]]:
    schema: dict[str, dict[str, pattern.AttrType]] = {}
    for stream in query.declarations:
        for event in stream.events:
            schema.setdefault(event.name, {}).update(event.attributes)
    return schema


def _key(event: Mapping[str, Any], attrs: tuple[str, ...]) -> tuple[KeyValue, ...] | None:
    """The event's values of ``attrs``; None when one is missing, null, NaN or not a
    scalar (the event belongs to no partition)."""
    key = []
    for attr in attrs:
        value = event.get(attr)
        # NaN is how columnar batches spell a missing number.
        if value is None or not isinstance(value, _SCALARS) or value != value:
            return None
        key.append(value)
    return tuple(key)
