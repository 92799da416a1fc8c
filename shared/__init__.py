"""cerfleet: complex event recognition with CORE's guarantees (query → pattern form →
CEA → tECS).

Compile a query once, then feed events to evaluators::

    from cerfleet import compile_query
    query = compile_query(open("q.ceql").read())
    evaluator = query.evaluator()
    for event in events:
        for complex_event in evaluator.process(event):
            print(complex_event.to_dict())
    state = evaluator.snapshot()            # bytes
    evaluator = query.restore(state)        # continues exactly where it stopped

The engine imports neither Kafka nor Spark. ``cerfleet.fleet`` holds what the fleet's
services share; the services are ``cerfleet.coordinator`` and ``cerfleet.workers`` (its
Spark jobs under ``cerfleet.workers.backfill``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from cerfleet.errors import CEQLError, CerfleetError, EventError, SnapshotError

if TYPE_CHECKING:
    from cerfleet.complex_event import ComplexEvent
    from cerfleet.evaluation.query_evaluator import QueryEvaluator
    from cerfleet.pattern import Pattern
    from cerfleet.query import CompiledQuery, compile_query

# The engine (numpy, the CEQL grammar) loads on first use, not with the package: every
# ``cerfleet`` command imports this package, and most of them never compile a query.
_LAZY = {
    "ComplexEvent": "cerfleet.complex_event",
    "CompiledQuery": "cerfleet.query",
    "Pattern": "cerfleet.pattern",
    "QueryEvaluator": "cerfleet.evaluation.query_evaluator",
    "compile_query": "cerfleet.query",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cerfleet' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


__all__ = [
    "CEQLError",
    "CerfleetError",
    "CompiledQuery",
    "ComplexEvent",
    "EventError",
    "Pattern",
    "QueryEvaluator",
    "SnapshotError",
    "compile_query",
]
