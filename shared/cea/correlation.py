"""Correlations: what of a query's filters compares events with each other, and how.

A ``pattern.Correlation`` names several variables (``b[price] > a[price] * 1.05``) or
an iteration's previous event (``b[price] > PREV(b)[price]``). No automaton with a
fixed set of states can check those on the stream (Foundations §9: they need unbounded
memory), so the compiler splits a correlated query in two:

* the **unary part** (every other filter) becomes the CEA as for any query, so each
  event still costs constant time;
* the **correlations** are checked while the tECS is enumerated (``evaluation.
  correlated``): the automaton's transitions carry *tags* — the correlated variables
  an event is bound to, the filtered formula it lies in (``@fN``), the ``+`` it lies in
  (``@pN``) and whether it starts one of that ``+``'s iterations (``^pN``) — from which
  the walk down a branch of the tECS knows, for each event it fixes, which variable and
  which instance of which formula it belongs to, and drops the branch as soon as the
  events fixed so far violate a correlation.

Semantics (the README's "Correlation" section states them for users): a correlation
written on ``φ FILTER θ`` holds when θ holds for every combination of the events bound
to the variables it names, where a variable defined inside φ takes its events within
one instance of φ (one iteration of every ``+`` around the filter) and a variable
defined outside φ takes those of the instance of the lowest enclosing formula that
defines it; ``PREV(x)`` pairs each event bound to x with the one bound to x just before
it in the same instance. A correlation may not sit under a filter ``OR``.

A *running* correlation (``RunningAttr``, MATCH_RECOGNIZE's DEFINE on other rows of
the match) is checked per event bound to its ``at`` variable against the complex
event's events before it, once a branch of the walk reaches its first event: it must
filter the whole formula (no ``+`` around it), so one branch is one instance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cerfleet import pattern
from cerfleet.cea.construction import Tagging
from cerfleet.errors import CerfleetError
from cerfleet.pattern.walk import (
    as_attr,
    children,
    defines,
    map_var_attrs,
    running_attrs,
    subformulas,
    var_attrs,
)

__all__ = [
    "Check",
    "CorrelationError",
    "CorrelationPlan",
    "RunningCheck",
    "Slot",
    "split_correlations",
]


class CorrelationError(CerfleetError):
    """A correlation the engine cannot give a meaning to (it names where)."""


@dataclass(frozen=True)
class Slot:
    """One role events play in a check.

    ``var`` is the variable (None: the *anchor*, any event of the filtered formula,
    for a correlation naming only outer variables); ``pair``: the check reads
    ``PREV(var)``, so the slot's values are (event, previous event) pairs; ``scope``:
    the tag the slot's events carry (None: every event of the run); ``pluses``: the
    ``+`` tags whose iteration the slot's events must share with the check's instance.
    """

    var: str | None
    pair: bool
    inner: bool
    scope: str | None
    pluses: tuple[str, ...]
    # The tags of the places binding ``var`` that count: those inside the formula whose
    # instance the slot takes its events from (an ``AS var`` around it binds others).
    defs: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Check:
    """One correlation to check: its predicate, the slots it reads, the ``+`` tags that
    make up one instance of its filtered formula, and where it was written."""

    pred: pattern.Pred
    slots: tuple[Slot, ...]
    pluses: tuple[str, ...]
    span: pattern.Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class RunningCheck:
    """A running correlation: ``pred`` must hold at every event bound to ``at``."""

    at: str
    pred: pattern.Pred
    span: pattern.Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class CorrelationPlan:
    checks: tuple[Check, ...]
    tagging: Tagging
    running: tuple[RunningCheck, ...] = ()

    @property
    def variables(self) -> frozenset[str]:
        return self.tagging.variables


class _Splitter:
    def __init__(self) -> None:
        self.fscopes: dict[int, str] = {}  # filtered formula -> its tag
        self.dscopes: dict[int, str] = {}  # a place binding a correlated variable -> its tag
        self.pscopes: dict[int, str] = {}  # a + around a correlation -> its tag
        self.iterations: dict[int, str] = {}
        self.variables: set[str] = set()
        self.checks: list[Check] = []
        self.running: list[RunningCheck] = []
        self._count = 0
        self._found: list[tuple[list[pattern.Formula], pattern.Correlation]] = []

    def tag(self, kind: str) -> str:
        self._count += 1
        return f"{kind}{self._count}"

    # -- pass 1: strip the correlations, remembering each with the path above it

    def strip(self, phi: pattern.Formula, path: list[pattern.Formula]) -> pattern.Formula:
        here = [*path, phi]
        if isinstance(phi, pattern.Filter):
            inner = self.strip(phi.formula, here)
            unary = self._filter(phi.filter, here)
            out: pattern.Formula = (
                inner if unary is None else pattern.Filter(inner, unary, phi.span)
            )
            # The stripped node stands for the filtered formula in ``_found``'s paths.
            self._replace(phi, out)
            return out
        stripped = {name: self.strip(child, here) for name, child in children(phi)}
        # Always a new node: tags are given by identity, and a front-end may share one
        # node object between two places of its formula.
        out = type(phi)(**{**phi.__dict__, **stripped})
        self._replace(phi, out)
        return out

    def _replace(self, old: pattern.Formula, new: pattern.Formula) -> None:
        for path, _ in self._found:
            for i, node in enumerate(path):
                if node is old:
                    path[i] = new

    def _filter(
        self, theta: pattern.FilterExpr, path: list[pattern.Formula], under_or: bool = False
    ) -> pattern.FilterExpr | None:
        if isinstance(theta, pattern.Correlation) and any(running_attrs(theta.pred)):
            self._running(theta, path, under_or)
            return None
        if isinstance(theta, pattern.Correlation):
            refs = list(var_attrs(theta.pred))
            names = {r.var for r in refs}
            if len(names) == 1 and all(r.back == 0 for r in refs):
                unary = map_var_attrs(theta.pred, as_attr)
                return pattern.FilterAtom(next(iter(names)), unary, theta.span)
            if under_or:
                raise CorrelationError(
                    _at(theta.span) + "a correlation cannot be one side of a filter OR: "
                    "write the two cases as two formulas joined by OR"
                )
            self._found.append((list(path), theta))
            return None
        if isinstance(theta, pattern.FilterAtom):
            return theta
        left = self._filter(theta.left, path, under_or or isinstance(theta, pattern.FilterOr))
        right = self._filter(theta.right, path, under_or or isinstance(theta, pattern.FilterOr))
        if left is None or right is None:
            return left if right is None else right
        return type(theta)(left, right, theta.span)

    def _running(
        self, theta: pattern.Correlation, path: list[pattern.Formula], under_or: bool
    ) -> None:
        reads = list(running_attrs(theta.pred))
        at = {r.at for r in reads}
        if len(at) > 1 or any(var_attrs(theta.pred)):
            raise CorrelationError(
                _at(theta.span) + "a running correlation reads the match as seen from one "
                "variable's events, and nothing through x[attr]"
            )
        if under_or or len(path) > 1:
            raise CorrelationError(
                _at(theta.span) + "a running correlation must filter the whole formula"
            )
        self.variables.update(at)
        self.variables.update(r.var for r in reads if r.var is not None)
        if any(r.var is None for r in reads):
            # A read over every row of the match needs every variable's events tagged.
            for node in subformulas(path[0]):
                if isinstance(node, pattern.EventType):
                    self.variables.add(node.name)
                elif isinstance(node, pattern.As | pattern.AnyEvent):
                    self.variables.add(node.var)
        self.running.append(RunningCheck(next(iter(at)), theta.pred, theta.span))

    # -- pass 2: the slots and tags of each correlation, on the stripped formula

    def plan(self) -> None:
        for path, corr in self._found:
            self._plan(path, corr)

    def _scope_tag(self, node: pattern.Formula) -> str:
        tag = self.fscopes.get(id(node))
        if tag is None:
            tag = self.fscopes[id(node)] = self.tag("@f")
        return tag

    def _defs(self, scope: pattern.Formula, var: str) -> frozenset[str]:
        """Tags of the places under ``scope`` that bind ``var``."""
        out = set()
        for node in subformulas(scope):
            named = node.name if isinstance(node, pattern.EventType) else getattr(node, "var", None)
            if named == var and isinstance(node, pattern.EventType | pattern.As | pattern.AnyEvent):
                tag = self.dscopes.get(id(node))
                if tag is None:
                    tag = self.dscopes[id(node)] = self.tag("#d")
                out.add(tag)
        return frozenset(out)

    def _plus_tag(self, node: pattern.Formula) -> str:
        tag = self.pscopes.get(id(node))
        if tag is None:
            tag = self.pscopes[id(node)] = self.tag("@p")
            self.iterations[id(node)] = "^" + tag[1:]
        return tag

    def _plan(self, path: list[pattern.Formula], corr: pattern.Correlation) -> None:
        filtered = path[-1]  # the formula the filter applied to, correlations stripped
        pluses = [n for n in path[:-1] if isinstance(n, _PLUSES)]
        refs = list(var_attrs(corr.pred))
        by_var: dict[str, bool] = {}
        for r in refs:
            by_var[r.var] = by_var.get(r.var, False) or r.back > 0
        slots: list[Slot] = []
        scope = self._scope_tag(filtered)
        plus_tags = tuple(self._plus_tag(p) for p in pluses)
        has_inner = False
        for var, pair in by_var.items():
            self.variables.add(var)
            if defines(filtered, var):
                has_inner = True
                slots.append(Slot(var, pair, True, scope, plus_tags, self._defs(filtered, var)))
                continue
            if pair:
                raise CorrelationError(
                    _at(corr.span) + f"PREV({var}) needs {var} bound inside the formula "
                    "the FILTER applies to"
                )
            owner = next((i for i in range(len(path) - 2, -1, -1) if defines(path[i], var)), None)
            if owner is None:
                raise CorrelationError(_at(corr.span) + f"variable {var} is bound nowhere")
            outer_pluses = tuple(self._plus_tag(p) for p in path[:owner] if isinstance(p, _PLUSES))
            outer_scope = None if owner == 0 else self._scope_tag(path[owner])
            defs = self._defs(path[owner], var)
            slots.append(Slot(var, False, False, outer_scope, outer_pluses, defs))
        if not has_inner:
            slots.append(Slot(None, False, True, scope, plus_tags))
        self.checks.append(Check(corr.pred, tuple(slots), plus_tags, corr.span))


_PLUSES = (pattern.Plus, pattern.ContiguousPlus)


def _at(span: pattern.Span | None) -> str:
    return "" if span is None else f"line {span.line}, column {span.column}: "


def split_correlations(form: pattern.Pattern) -> tuple[pattern.Pattern, CorrelationPlan | None]:
    """The pattern with its correlations removed (one-variable ones become unary filter
    atoms), and the plan to check the others at enumeration (None: there are none)."""
    splitter = _Splitter()
    where = splitter.strip(form.where, [])
    if not splitter._found and not splitter.running:
        return _with(form, where), None
    splitter.plan()
    scopes: dict[int, frozenset[str]] = {}
    for table in (splitter.fscopes, splitter.pscopes, splitter.dscopes):
        for node, tag in table.items():
            scopes[node] = scopes.get(node, frozenset()) | {tag}
    tagging = Tagging(scopes, splitter.iterations, frozenset(splitter.variables))
    plan = CorrelationPlan(tuple(splitter.checks), tagging, tuple(splitter.running))
    return _with(form, where), plan


def _with(form: pattern.Pattern, where: pattern.Formula) -> pattern.Pattern:
    import dataclasses

    return dataclasses.replace(form, where=where)
