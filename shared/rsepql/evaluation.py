"""RSEP-QL queries that need their evaluation times: windows with STEP, FIRST/LAST,
the selection policies SEQ^c, SEQ^r, SEQ^n, and the consumption policy of
``MATCH CONSUMING`` (seed 003, Sections 3.2 and 4.2–4.4, with the research notes'
errata). The automata report a complex event at its last event and never look back,
while these choose among all the matches one evaluation sees (the earliest E2 that
has a compatible E1, say) and remove input between evaluations, so they are
evaluated here, at each evaluation time, over the windows' BEP matches.

* Evaluation times (ET): ``rsepql.closes`` — a STEP window's closes (*window
  close*), else every instant (*content change*).
* A window at evaluation time T: RANGE α STEP β holds the items with
  ⌊T/β⌋·β − α < t ≤ ⌊T/β⌋·β (β the time unit, 1 ms, without STEP); LND t0 those with
  t0 ≤ t ≤ T; no WIN every item up to T.
* Event mappings carry their first and last item and their justification: the
  occurrences (stream, item, triple) of the triples they matched. ≺ orders them by
  their end, then their start (the seed leaves ≺ to the application).
* SEQ^c keeps the E2 mappings that have a compatible E1 mapping strictly before
  them and are ≺-minimal among those that do (each judged with its own start, the
  prose of Eq. (10)), each with the ≺-first of its E1 mappings; SEQ^r the ≺-maximal
  with the ≺-last (Eq. (11) as written: one E2 end, which is not Example 10's
  printed second row). SEQ^n pairs the last E1 and the last E2 of the whole window
  when compatible and in ≺ order (Eq. (9)).
* ``MATCH CONSUMING`` (P^c = P^r, Appendix A): the triples justifying one
  evaluation's results are not input to later ones. Consumption is per occurrence,
  so the same triple arriving again is new input (the paper's "new coming triple").

Each row is reported once, at the first evaluation that has it, with ``time`` the
end of its event mapping.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson

from cerfleet import pattern
from cerfleet.cea.graph_match import Solution, compile_graph_match
from cerfleet.cea.predicates import compile_predicate
from cerfleet.kept_json import kept
from cerfleet.rdf.instants import TIME
from cerfleet.rdf.terms import BNode, Iri, Term
from cerfleet.rsepql import syntax as s
from cerfleet.rsepql.closes import evaluation_times
from cerfleet.rsepql.translate import bep_pred

__all__ = ["Evaluator"]

Occurrence = tuple[str, int, tuple[tuple[str, Any], ...]]  # stream, instant, triple
Key = tuple[tuple[str, tuple[str, Any]], ...]  # a mapping, hashable
# An event mapping: (μ, first instant, last instant, justification).
Event = tuple[Solution, int, int, frozenset[Occurrence]]


def _term_key(value: Term) -> tuple[str, Any]:
    """A term told apart as RDF does (an IRI never equals its text as a literal)."""
    if isinstance(value, Iri):
        return "iri", str(value)
    if isinstance(value, BNode):
        return "bnode", str(value)
    if isinstance(value, bool):
        return "bool", value
    if isinstance(value, str):
        return "str", value
    return "num", value


def _key(mu: Mapping[str, Term]) -> Key:
    return tuple(sorted((k, _term_key(v)) for k, v in mu.items()))


def _compatible(a: Mapping[str, Term], b: Mapping[str, Term]) -> bool:
    small, big = (a, b) if len(a) <= len(b) else (b, a)
    return all(k not in big or _term_key(v) == _term_key(big[k]) for k, v in small.items())


def _order(e: Event) -> tuple[int, int]:
    """≺: by end, then start."""
    return e[2], e[1]


class Evaluator:
    """``rows(instants)``: (evaluation time in ms, row) in evaluation order."""

    def __init__(self, query: s.Query) -> None:
        assert query.expr is not None
        self.query = query
        self.expr: s.Expr = query.expr
        self.matches = {
            name: compile_graph_match(bep_pred(query, name), compile_predicate)
            for name in set(query.chain)
        }
        self.select: tuple[str, ...] = query.selected()
        # Per BEP, per instant: its solutions with the occurrences each matched; and
        # the instants where it has any (increasing), so that an evaluation visits
        # the matches its windows hold rather than every instant read.
        self.found: dict[str, list[list[tuple[Solution, frozenset[Occurrence]]]]] = {
            name: [] for name in self.matches
        }
        self.where: dict[str, list[int]] = {name: [] for name in self.matches}
        # Per BEP, variable and value: the instants where a solution binds it so (a
        # substituted E1 of SEQ visits only those).
        self.index: dict[str, dict[str, dict[tuple[str, Any], list[int]]]] = {
            name: {} for name in self.matches
        }
        self.variables = {name: sorted(query.events[name].variables()) for name in self.matches}
        self.ms: list[int] = []
        self.consumed: set[Occurrence] = set()
        self.now = 0  # the evaluation time

    def _read(self, instant: Mapping[str, Any]) -> None:
        at = len(self.ms)
        self.ms.append(instant["timestamp"])
        for name, match in self.matches.items():
            bep = self.query.events[name]
            stream = self.query.stream_of(name)
            found = []
            for solution in match(instant):
                used = frozenset(
                    (stream, at, tuple(self._term(t, solution) for t in triple))
                    for triple in bep.triples
                )
                found.append((solution, used))
                for var, value in solution.items():
                    at_value = self.index[name].setdefault(var, {}).setdefault(_term_key(value), [])
                    if not at_value or at_value[-1] != at:
                        at_value.append(at)
            self.found[name].append(found)
            if found:
                self.where[name].append(at)

    @staticmethod
    def _term(term: pattern.GraphTerm, solution: Solution) -> tuple[str, Any]:
        if isinstance(term, pattern.GraphVar):
            return _term_key(solution[term.name])
        if isinstance(term, pattern.GraphIri):
            return "iri", term.value
        assert isinstance(term, pattern.GraphLiteral)
        return _term_key(term.value)

    def _held(self, window: s.Window) -> tuple[int, int]:
        """The instants ``window`` holds now: a range of positions."""
        now = self.now
        if window.kind == "range":
            beta = window.step_ms or 1
            close = now // beta * beta
            return bisect_right(self.ms, close - window.ms), bisect_right(self.ms, close)
        first = bisect_left(self.ms, window.ms) if window.kind == "landmark" else 0
        return first, bisect_right(self.ms, now)

    def rows(self, instants: Sequence[Mapping[str, Any]]) -> Iterator[tuple[int, dict[str, Any]]]:
        times = evaluation_times(self.query, [i["timestamp"] for i in instants])
        seen: set[bytes] = set()
        read = 0
        windows = [self.query.windows[self.query.events[n].window] for n in self.matches]
        held: list[tuple[int, int]] | None = None
        consumed_last = False
        for now in times:
            while read < len(instants) and instants[read]["timestamp"] <= now:
                self._read(instants[read])
                read += 1
            self.now = now
            # An evaluation reads the clock only through what the windows hold: with
            # the same contents and nothing consumed since, it repeats the last one.
            now_held = [self._held(w) for w in windows]
            if now_held == held and not consumed_last:
                continue
            held = now_held
            results = self._eval(self.expr, len(self.ms), {})
            consumed_last = self.query.consuming and bool(results)
            found: dict[bytes, dict[str, Any]] = {}
            for mu, _start, end, just in results.values():
                row: dict[str, Any] = {v: mu.get(v) for v in self.select}
                row["time"] = instants[end][TIME]
                found.setdefault(orjson.dumps(row, option=orjson.OPT_SORT_KEYS), row)
                if self.query.consuming:
                    self.consumed |= just
            for key in sorted(found):
                if key not in seen:
                    seen.add(kept(key))  # remembered for good: found's keys are not
                    yield now, found[key]

    def _eval(self, expr: s.Expr, upper: int, sub: Solution) -> dict[tuple[Key, int, int], Event]:
        """⟦expr⟧ over the items before instant ``upper`` (W^⊔[0, t−1]), with the
        bindings ``sub`` substituted; event mappings keyed by (μ, start, end)."""
        out: dict[tuple[Key, int, int], Event] = {}

        def add(e: Event) -> None:
            k = (_key(e[0]), e[1], e[2])
            have = out.get(k)
            out[k] = e if have is None else (have[0], e[1], e[2], have[3] | e[3])

        if isinstance(expr, s.Ref):
            first, end = self._held(self.query.windows[self.query.events[expr.name].window])
            found = self.found[expr.name]
            where = self.where[expr.name]
            for var in self.variables[expr.name]:
                if var in sub:
                    values = self.index[expr.name].get(var, {})
                    where = values.get(_term_key(sub[var]), [])
                    break
            for k in range(bisect_left(where, first), bisect_left(where, min(end, upper))):
                at = where[k]
                for solution, used in found[at]:
                    if _compatible(solution, sub) and not (used & self.consumed):
                        add((solution, at, at, used))
            return out
        if isinstance(expr, s.Pick):
            inner = list(self._eval(expr.operand, upper, sub).values())
            for e in _pick(inner, expr.which):
                add(e)
            return out
        if expr.policy == "n":
            lefts = _pick(list(self._eval(expr.left, upper, sub).values()), "last")
            rights = _pick(list(self._eval(expr.right, upper, sub).values()), "last")
            for e1 in lefts:
                for e2 in rights:
                    if _order(e1) < _order(e2) and _compatible(e1[0], e2[0]):
                        add(({**e1[0], **e2[0]}, e1[1], e2[2], e1[3] | e2[3]))
            return out
        rights = list(self._eval(expr.right, upper, sub).values())
        if expr.policy:
            # The ≺-least (c) or ≺-greatest (r) E2 with a compatible E1 before it:
            # visit the E2 mappings in that order and stop after the first such end.
            rights.sort(key=_order, reverse=expr.policy == "r")
        pairs = []
        best: tuple[int, int] | None = None
        for e2 in rights:
            if best is not None and _order(e2) != best:
                break
            lefts = list(self._eval(expr.left, min(upper, e2[1]), {**sub, **e2[0]}).values())
            if not lefts:
                continue
            if expr.policy:
                best = _order(e2)
                lefts = _pick(lefts, "first" if expr.policy == "c" else "last")
            pairs.append((e2, lefts))
        for e2, lefts in pairs:
            for e1 in lefts:
                add(({**e1[0], **e2[0]}, e1[1], e2[2], e1[3] | e2[3]))
        return out


def _pick(events: list[Event], which: str) -> list[Event]:
    """FIRST (Eq. (5)) or LAST (Eq. (6)): the ≺-least or ≺-greatest, ties kept."""
    if not events:
        return []
    orders = [_order(e) for e in events]
    best = min(orders) if which == "first" else max(orders)
    return [e for e, o in zip(events, orders, strict=True) if o == best]
