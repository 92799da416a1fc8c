"""The output of MATCH_RECOGNIZE: complex events → rows of JSON (ONE ROW PER MATCH,
ALL ROWS PER MATCH, ALL MATCHES), with the MEASURES.

The engine's complex events carry their rows but not which variable each row was
bound to. ``labels`` finds that by re-matching the rows against the row pattern
(small: one match's rows), taking the standard's preferred assignment: alternatives
left first, greedy quantifiers longest first (SQL:2016's "preferment"), among those
covering exactly the complex event's rows. A DEFINE that reads other rows of the
match is judged on the labels chosen so far (the standard's running semantics).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from cerfleet.cea.predicates import Predicate
from cerfleet.complex_event import ComplexEvent
from cerfleet.evaluation.lag import is_lag_name
from cerfleet.evaluation.running import RunningPredicate
from cerfleet.match_recognize import syntax as s
from cerfleet.match_recognize.nfa import labels

__all__ = ["MatchWriter", "check_measures", "labels"]

Row = Mapping[str, Any]
_AGGREGATES = frozenset({"SUM", "AVG", "MIN", "MAX"})
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def check_measures(query: s.Query, names: set[str]) -> None:
    """Reject MEASURES the output stage cannot compute (naming line and column)."""
    seen: set[str] = set()
    columns = {c.attr for c in query.partition} if query.rows != "ALL" else set()
    for m in query.measures:
        if m.name in seen:
            query.fail(f"measure {m.name} is named twice", m.span)
        if m.name in columns:
            query.fail(f"measure {m.name} has the name of a PARTITION BY column", m.span)
        seen.add(m.name)
        _check(query, m.expr, names)


def _check(query: s.Query, e: s.Expr | s.Star, names: set[str]) -> None:
    if isinstance(e, s.Col | s.Star):
        if e.var is not None and e.var not in names:
            query.fail(f"{e.var} is not a variable of the PATTERN", e.span)
        if isinstance(e, s.Star):
            query.fail("* is only an argument of COUNT", e.span)
    elif isinstance(e, s.Bin):
        _check(query, e.left, names)
        _check(query, e.right, names)
    elif isinstance(e, s.Unary):
        _check(query, e.operand, names)
    elif isinstance(e, s.Call):
        arity = {"MATCH_NUMBER": 0, "CLASSIFIER": 0}.get(e.name, 1)
        if e.name not in {"FIRST", "LAST", "COUNT", "MATCH_NUMBER", "CLASSIFIER", *_AGGREGATES}:
            query.fail(
                f"{e.name}() is not supported in MEASURES (FIRST, LAST, COUNT, SUM, AVG, "
                "MIN, MAX, MATCH_NUMBER, CLASSIFIER)",
                e.span,
            )
        if len(e.args) != arity:
            query.fail(f"{e.name} takes {arity} argument{'s' * (arity != 1)}", e.span)
        for arg in e.args:
            if isinstance(arg, s.Star) and e.name == "COUNT":
                if arg.var is not None and arg.var not in names:
                    query.fail(f"{arg.var} is not a variable of the PATTERN", arg.span)
            elif not isinstance(arg, s.Col):
                query.fail(f"the argument of {e.name} must be a column (v.attr or attr)", e.span)
            else:
                _check(query, arg, names)


# ---------------------------------------------------------------- measures


class _Match:
    """One match, or (ALL ROWS PER MATCH) its prefix up to the current row."""

    def __init__(self, rows: Sequence[Row], names: Sequence[str], number: int) -> None:
        self.rows = rows
        self.names = names
        self.number = number

    def values(self, col: s.Col) -> list[Any]:
        """``col`` in the rows bound to its variable (every row when it has none)."""
        return [
            row.get(col.attr)
            for row, name in zip(self.rows, self.names, strict=True)
            if col.var is None or name == col.var
        ]

    def eval(self, e: s.Expr) -> Any:
        if isinstance(e, s.Lit):
            return e.value
        if isinstance(e, s.Col):
            found = self.values(e)
            return found[-1] if found else None
        if isinstance(e, s.Call):
            return self._call(e)
        if isinstance(e, s.Unary):
            v = self.eval(e.operand)
            if e.op == "NOT":
                return None if not isinstance(v, bool) else not v
            return -v if _number(v) else None
        return _binary(e.op, self.eval(e.left), self.eval(e.right))

    def _call(self, e: s.Call) -> Any:
        if e.name == "MATCH_NUMBER":
            return self.number
        if e.name == "CLASSIFIER":
            return self.names[-1] if self.names else None
        arg = e.args[0]
        if not isinstance(arg, s.Col):
            assert isinstance(arg, s.Star)  # check_measures allows nothing else
            star = arg.var
            return sum(1 for n in self.names if star is None or n == star)
        found = self.values(arg)
        if e.name == "FIRST":
            return found[0] if found else None
        if e.name == "LAST":
            return found[-1] if found else None
        present = [v for v in found if v is not None]
        if e.name == "COUNT":
            return len(present)
        if e.name in ("MIN", "MAX"):
            try:
                return (min if e.name == "MIN" else max)(present) if present else None
            except TypeError:
                return None  # values that do not compare (a string and a number)
        numbers = [v for v in present if _number(v)]
        if not numbers or len(numbers) != len(present):
            return None
        total = sum(numbers)
        return total if e.name == "SUM" else total / len(numbers)


def _number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _binary(op: str, a: Any, b: Any) -> Any:
    if op in ("AND", "OR"):
        if not isinstance(a, bool) or not isinstance(b, bool):
            return None
        return (a and b) if op == "AND" else (a or b)
    if a is None or b is None:
        return None
    if op in s.COMPARISONS:
        if _number(a) != _number(b) or (not _number(a) and type(a) is not type(b)):
            return None
        return {
            "=": a == b,
            "!=": a != b,
            "<": a < b,
            "<=": a <= b,
            ">": a > b,
            ">=": a >= b,
        }[op]
    if not _number(a) or not _number(b):
        return None
    if op in ("/", "%") and b == 0:
        return None
    return {"+": a + b, "-": a - b, "*": a * b, "/": a / b if op == "/" else 0, "%": a % b}[op]


class MatchWriter:
    """Complex events of one MATCH_RECOGNIZE query → JSON Lines bytes.

    ONE ROW PER MATCH and ALL MATCHES: one object per match, the PARTITION BY columns
    then the MEASURES. ALL ROWS PER MATCH: one object per row of the match, the row's
    attributes then the MEASURES over the match up to that row (the standard's
    RUNNING semantics). MATCH_NUMBER counts the matches of each partition from 1.
    """

    def __init__(
        self,
        query: s.Query,
        defines: Mapping[str, Predicate],
        running: Mapping[str, RunningPredicate] | None = None,
    ) -> None:
        self.query = query
        self.defines = dict(defines)
        self.running = dict(running or {})
        self.partition = [c.attr for c in query.partition]
        self.numbers: dict[Any, int] = {}

    def rows(self, ce: ComplexEvent) -> list[dict[str, Any]]:
        """The output objects of one complex event."""
        events = ce.events

        def cond(var: str, i: int, before: Sequence[str]) -> bool:
            pred = self.defines.get(var)
            if pred is not None and not pred(events[i]):
                return False
            check = self.running.get(var)
            if check is None:
                return True
            names = [frozenset({x}) for x in (*before, var)]
            return check.holds(events[: i + 1], names, i)

        names = labels(self.query.regex, events, cond, running=bool(self.running))
        number = self.numbers[ce.key] = self.numbers.get(ce.key, 0) + 1
        if self.query.rows == "ALL":
            out = []
            for i, row in enumerate(events):
                prefix = _Match(events[: i + 1], names[: i + 1], number)
                obj = {k: v for k, v in row.items() if not is_lag_name(k)}
                obj.update((m.name, prefix.eval(m.expr)) for m in self.query.measures)
                out.append(obj)
            return out
        match = _Match(events, names, number)
        obj = dict(zip(self.partition, ce.key or (), strict=False))
        obj.update((m.name, match.eval(m.expr)) for m in self.query.measures)
        return [obj]

    def export(self) -> list[list[Any]]:
        """The output state carried across complex events, as JSON: MATCH_NUMBER's count
        per partition key, ``[key values or null, count]`` pairs."""
        return [[None if k is None else list(k), n] for k, n in self.numbers.items()]

    def restore(self, state: Sequence[Sequence[Any]]) -> None:
        """Continue from ``export``'s state (a checkpoint's): MATCH_NUMBER goes on counting."""
        self.numbers = {(None if k is None else tuple(k)): int(n) for k, n in state}

    def __call__(self, complex_events: Sequence[ComplexEvent]) -> bytes:
        return b"".join(
            _encode(obj).encode() + b"\n" for ce in complex_events for obj in self.rows(ce)
        )
