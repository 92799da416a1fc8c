"""Compile a CEQL query once; create evaluators from it.

The pipeline, stage by stage (each a module named for the paper's concept)::

    text ──parse──▶ CEQL AST ──construction──▶ CEA ──determinization──▶ det-CEA
         (ceql/parser)        (cea/construction)   (evaluation/determinization)

    det-CEA + stream ──Algorithm 1──▶ tECS ──Algorithm 2──▶ complex events
                   (evaluation/evaluator)  (evaluation/enumeration)
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from shared.cea.construction import compile_formula
from shared.cea.predicates import compile_predicate
from shared.ceql import ast
from shared.ceql.parser import parse_and_check
from shared.complex_event import KeyValue
from shared.errors import CEQLError
from shared.evaluation.determinization import DetCEA
from shared.evaluation.query_evaluator import QueryEvaluator
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
        _reject_unsupported(self.ast, text)
        cea, atoms = compile_formula(self.ast.where, self.ast.select)
        self.cea = cea
        self.dcea = DetCEA(cea, [compile_predicate(p) for p in atoms.preds], type_field)
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

    def evaluator(self) -> QueryEvaluator:
        return QueryEvaluator(self)

    def restore(self, data: bytes) -> QueryEvaluator:
        """An evaluator continuing exactly where the one that made ``data`` stopped."""
        from shared.evaluation.snapshot import load

        return load(self, data)

    def partition_key(self, event: Mapping[str, Any]) -> tuple[KeyValue, ...] | None:
        """The event's PARTITION BY values; ``()`` without PARTITION BY; None when an
        attribute is missing, null or not a scalar (the event belongs to no partition)."""
        if not self.partitioned:
            return ()
        key = []
        for attr in self.partition_attrs:
            value = event.get(attr)
            if value is None or not isinstance(value, _SCALARS):
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


def _reject_unsupported(query: ast.Query, text: str) -> None:
    """Selection strategies other than ALL and consumption other than NONE arrive with
    their automaton constructions; until then say so instead of silently doing ALL."""
    if query.strategy is not ast.Strategy.ALL:
        _fail(
            text,
            rf"\b{query.strategy.value}\b",
            f"selection strategy {query.strategy.value} is not supported yet",
            "ALL (or no strategy)",
        )
    if query.consume is not ast.Consume.NONE:
        _fail(
            text,
            r"\bCONSUME\b",
            f"CONSUME BY {query.consume.value} is not supported yet",
            "CONSUME BY NONE (or no CONSUME BY clause)",
        )


def _fail(text: str, pattern: str, message: str, expected: str) -> None:
    match = re.search(pattern, text, re.IGNORECASE)
    offset = match.start() if match else 0
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    length = match.end() - match.start() if match else 1
    raise CEQLError(
        message, line=line, column=column, source=text, length=length, expected=expected
    )
