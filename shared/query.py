"""Compile a CEQL query once; create evaluators from it.

The pipeline, stage by stage (each a module named for the paper's concept)::

    text ──parse──▶ CEQL AST ──construction──▶ CEA ──determinization──▶ det-CEA
         (ceql/parser)        (cea/construction)   (evaluation/determinization)

    det-CEA + stream ──Algorithm 1──▶ tECS ──Algorithm 2──▶ complex events
                   (evaluation/evaluator)  (evaluation/enumeration)
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from shared.cea.construction import compile_formula
from shared.cea.predicates import compile_predicate
from shared.cea.strict import strict_product
from shared.cea.vector_predicates import compile_vector_predicate
from shared.ceql import ast
from shared.ceql.parser import parse_and_check
from shared.complex_event import KeyValue
from shared.evaluation.batch import BatchLetters
from shared.evaluation.determinization import DetCEA
from shared.evaluation.evaluator import Evaluator
from shared.evaluation.maximal import MaxCEA, MaxEvaluator
from shared.evaluation.priority import PriorityEvaluator
from shared.evaluation.query_evaluator import QueryEvaluator
from shared.evaluation.substream import SubstreamEvaluator
from shared.evaluation.window import clock_of, epsilon_of
from shared.events.timestamps import parse_timestamp

_SCALARS = (str, int, float, bool)


class CompiledQuery:
    """A query compiled to its determinised CEA, ready to evaluate streams.

    Compiling is the expensive, once-per-query part; ``evaluator()`` is cheap and
    the det-CEA's transition cache is shared by all evaluators of the query.
    """

    def __init__(self, text: str, *, type_field: str = "type", time_field: str = "timestamp"):
        self.text = text
        self.type_field = type_field
        self.time_field = time_field
        self.ast: ast.Query = parse_and_check(text)
        cea, atoms = compile_formula(self.ast.where, self.ast.select)
        self.strategy = self.ast.strategy
        if self.strategy is ast.Strategy.STRICT:
            cea = strict_product(cea)
        self.cea = cea
        self.dcea = DetCEA(cea, [compile_predicate(p) for p in atoms.preds], type_field)
        self._atom_preds = atoms.preds
        self._batch: BatchLetters | None = None
        self.max_cea = MaxCEA(self.dcea) if self.strategy is ast.Strategy.MAX else None
        self.consume = self.ast.consume
        self.partition_attrs = self.ast.partition_by
        self.partitioned = bool(self.partition_attrs)
        self.clock = clock_of(self.ast.within, time_field)
        self.epsilon = epsilon_of(self.ast.within)
        self.limit = self.ast.limit
        self._schema = _schema_of(self.ast)
        # Identifies the query a snapshot belongs to: same text and field names.
        self.fingerprint = hashlib.sha256(
            "\0".join((text, type_field, time_field)).encode()
        ).hexdigest()

    @property
    def batch(self) -> BatchLetters:
        """Letters of columnar batches, built on first use (the numpy fast path)."""
        if self._batch is None:
            self._batch = BatchLetters(
                self.dcea, [compile_vector_predicate(p) for p in self._atom_preds]
            )
        return self._batch

    def evaluator(self) -> QueryEvaluator:
        return QueryEvaluator(self)

    def substream_evaluator(self) -> SubstreamEvaluator:
        """A fresh evaluator for one substream, by selection strategy."""
        if self.strategy in (ast.Strategy.NEXT, ast.Strategy.LAST):
            return PriorityEvaluator(
                self.dcea, self.epsilon, last=self.strategy is ast.Strategy.LAST
            )
        if self.max_cea is not None:
            return MaxEvaluator(self.max_cea, self.epsilon)
        return Evaluator(self.dcea, self.epsilon)

    def restore(self, data: bytes) -> QueryEvaluator:
        """An evaluator continuing exactly where the one that made ``data`` stopped."""
        from shared.evaluation.snapshot import load

        return load(self, data)

    def partition_key(self, event: Mapping[str, Any]) -> tuple[KeyValue, ...] | None:
        """The event's PARTITION BY values; ``()`` without PARTITION BY; None when an
        attribute is missing, null, NaN or not a scalar (the event belongs to no partition)."""
        if not self.partitioned:
            return ()
        key = []
        for attr in self.partition_attrs:
            value = event.get(attr)
            # NaN is how columnar batches spell a missing number.
            if value is None or not isinstance(value, _SCALARS) or value != value:
                return None
            key.append(value)
        return tuple(key)

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


def compile_query(
    text: str, *, type_field: str = "type", time_field: str = "timestamp"
) -> CompiledQuery:
    """Parse, check and compile a CEQL query; raises ``CEQLError`` with line and column."""
    return CompiledQuery(text, type_field=type_field, time_field=time_field)


def _has_type(value: object, atype: ast.AttrType) -> bool:
    is_num = isinstance(value, int | float) and not isinstance(value, bool)
    if atype is ast.AttrType.INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if atype is ast.AttrType.DOUBLE:
        return is_num
    if atype is ast.AttrType.STRING:
        return isinstance(value, str)
    if atype is ast.AttrType.BOOLEAN:
        return isinstance(value, bool)
    return is_num or parse_timestamp(value) is not None


def _schema_of(query: ast.Query) -> dict[str, dict[str, ast.AttrType]]:
    schema: dict[str, dict[str, ast.AttrType]] = {}
    for stream in query.declarations:
        for event in stream.events:
            schema.setdefault(event.name, {}).update(event.attributes)
    return schema
