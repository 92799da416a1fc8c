"""A MATCH_RECOGNIZE syntax tree in the pattern form, or an error naming what the
engine cannot do exactly.

The mapping (the README's MATCH_RECOGNIZE section states it for users):

* a pattern variable ``v`` is ``AnyEvent(v)`` (a row, whatever its type), filtered by
  ``v``'s DEFINE condition as a unary predicate: ``AnyEvent(v) FILTER v[cond]``;
  the conjuncts of a DEFINE that read other rows of the match (``a.attr``,
  ``FIRST``/``LAST``) become one running ``Correlation`` filtering the whole pattern
  (``RunningAttr``; ``evaluation.running`` checks it, with the standard's running
  semantics: a condition on a row sees the rows matched up to it);
* concatenation is ``Contiguous`` (rows of the partition, none skipped), ``|`` is
  ``Or``, ``X+`` is ``ContiguousPlus``; ``*``, ``?`` and ``{n,m}`` expand into these
  (``nonempty`` says how an optional part is dropped from a concatenation);
* ``PARTITION BY`` is the partitioning; ``WITHIN`` a window on the ORDER BY
  attribute (milliseconds) or, without ORDER BY, on the time field;
* the match selection: ``ALL MATCHES`` is every complex event (strategy ALL, no
  consumption); ``AFTER MATCH SKIP PAST LAST ROW`` is ``CONSUME BY PARTITION`` and
  ``SKIP TO NEXT ROW`` no consumption, both only for fixed-length patterns, where
  every match from a start row covers the same rows so the standard's preference
  cannot pick a different row set than the engine's first-ending match. The other
  skip modes and patterns are ``stream``'s (``compile_text(..., skipping=True)``).
"""

from __future__ import annotations

from cerfleet import pattern
from cerfleet.cea.correlation import RunningCheck
from cerfleet.cea.predicates import compile_predicate
from cerfleet.evaluation.lag import unary
from cerfleet.evaluation.running import RunningPredicate
from cerfleet.match_recognize import syntax as s
from cerfleet.match_recognize.conditions import Conditions, split
from cerfleet.match_recognize.measures import MatchWriter, check_measures
from cerfleet.match_recognize.parser import parse

__all__ = ["compile_text", "parse_and_check", "variables", "writer"]

# Bounds on ``{n,m}``: the expansion copies the body up to m times.
MAX_REPEAT = 32
# Bound on the expanded formula (optional parts nested in quantifiers multiply).
MAX_NODES = 20_000


def parse_and_check(text: str) -> pattern.Pattern:
    """The front-end of ``languages.FRONTENDS``: text → pattern form."""
    return compile_text(text)[1]


def compile_text(
    text: str, *, skipping: bool = False
) -> tuple[s.Query, pattern.Pattern, _Translator]:
    """The syntax tree, the pattern form, and the translator holding each variable's
    DEFINE split into its unary part and its running part (the output stage needs
    them). ``skipping``: for the standard's match selection (``stream``), which takes
    every AFTER MATCH SKIP mode and reluctant quantifiers over any pattern; the form's
    options then say nothing of the selection."""
    query = parse(text)
    translator = _Translator(query, skipping)
    form = translator.translate()
    return query, form, translator


def writer(text: str, *, skipping: bool = False) -> MatchWriter:
    """The writer of ``languages.WRITERS``: the query's own output stage, judging rows
    with the very predicates the engine evaluates (``skipping``: of a query
    ``stream.RowPatternEvaluator`` runs)."""
    query, _, t = compile_text(text, skipping=skipping)
    return MatchWriter(
        query,
        {v: compile_predicate(unary(p)) for v, p in t.defines.items()},
        {v: RunningPredicate(RunningCheck(v, unary(p))) for v, p in t.running.items()},
    )


def variables(regex: s.Regex) -> list[s.Var]:
    """The pattern's variable occurrences, in source order."""
    if isinstance(regex, s.Var):
        return [regex]
    if isinstance(regex, s.Quant):
        return variables(regex.body)
    return variables(regex.left) + variables(regex.right)


def lengths(regex: s.Regex) -> tuple[int, int | None]:
    """The fewest and most rows a match of ``regex`` covers (None: unbounded)."""
    if isinstance(regex, s.Var):
        return 1, 1
    if isinstance(regex, s.Quant):
        lo, hi = lengths(regex.body)
        top = None if hi is None or regex.high is None else hi * regex.high
        return lo * regex.low, top
    (a, b), (c, d) = lengths(regex.left), lengths(regex.right)
    if isinstance(regex, s.Cat):
        return a + c, None if b is None or d is None else b + d
    return min(a, c), None if b is None or d is None else max(b, d)


def _variable_length(regex: s.Regex) -> s.Regex | None:
    """The innermost construct that lets matches differ in length (None: fixed length)."""
    low, high = lengths(regex)
    if low == high:
        return None
    assert not isinstance(regex, s.Var)  # one row: fixed
    parts = [regex.body] if isinstance(regex, s.Quant) else [regex.left, regex.right]
    for part in parts:
        found = _variable_length(part)
        if found is not None:
            return found
    return regex


class _Translator:
    def __init__(self, query: s.Query, skipping: bool = False) -> None:
        self.q = query
        self.skipping = skipping
        self.names = {v.name for v in variables(query.regex)}
        self.defines: dict[str, pattern.Pred] = {}  # the unary part of each DEFINE
        self.running: dict[str, pattern.Pred] = {}  # the part reading other rows

    def translate(self) -> pattern.Pattern:
        q = self.q
        names = self.names
        conditions = Conditions(q, names)
        seen: set[str] = set()
        for d in q.defines:
            if d.var not in names:
                q.fail(f"DEFINE {d.var}: {d.var} is not a variable of the PATTERN", d.span)
            if d.var in seen:
                q.fail(f"{d.var} is defined twice", d.span)
            seen.add(d.var)
            own, others = split(conditions.condition(d.cond, d.var))
            if own is not None:
                self.defines[d.var] = own
            if others is not None:
                self.running[d.var] = others
        check_measures(q, names)
        formula, nullable = self._regex(q.regex)
        if nullable or formula is None:
            q.fail(
                "this PATTERN matches zero rows (an empty match), which is not supported: "
                "make at least one element mandatory",
                q.regex.span or variables(q.regex)[0].span,
            )
        assert formula is not None
        if _size(formula) > MAX_NODES:
            q.fail(f"this PATTERN expands to more than {MAX_NODES} nodes", q.regex.span)
        if self.running:
            checks = [pattern.Correlation(p, span=p.span) for p in self.running.values()]
            theta: pattern.FilterExpr = checks[0]
            for more in checks[1:]:
                theta = pattern.FilterAnd(theta, more)
            formula = pattern.Filter(formula, theta, span=q.regex.span)
        strategy, consume = self._selection()
        return pattern.Pattern(
            where=formula,
            select=None,
            strategy=strategy,
            streams=(q.stream,),
            partition_by=tuple(self._column(c, "PARTITION BY") for c in q.partition),
            partition_spans=tuple(c.span for c in q.partition),
            within=self._window(),
            consume=consume,
        )

    # ------------------------------------------------------------------ options

    def _column(self, col: s.Col, clause: str) -> str:
        if col.var is not None and col.var != self.q.stream:
            self.q.fail(f"{clause} names a column of {self.q.stream}, not of {col.var}", col.span)
        return col.attr

    def _selection(self) -> tuple[pattern.Strategy, pattern.Consume]:
        q = self.q
        kind = None if q.skip is None else q.skip[0]
        if self.skipping:
            return self._skipping()
        if kind in ("TO FIRST", "TO LAST"):
            q.fail(
                f"AFTER MATCH SKIP {kind} <variable> is not supported "
                "(supported: PAST LAST ROW, TO NEXT ROW, and ALL MATCHES)",
                q.skip_span,
            )
        if q.rows == "MATCHES":
            if kind not in (None, "TO CURRENT ROW"):
                q.fail(
                    f"ALL MATCHES with AFTER MATCH SKIP {kind} is not supported: ALL MATCHES "
                    "reports every match (only SKIP TO CURRENT ROW may accompany it)",
                    q.skip_span,
                )
            return pattern.Strategy.ALL, pattern.Consume.NONE
        if kind == "TO CURRENT ROW":
            q.fail(
                "AFTER MATCH SKIP TO CURRENT ROW is supported only with ALL MATCHES", q.skip_span
            )
        varying = _variable_length(q.regex)
        if varying is not None:
            what = f"quantifier {varying.text}" if isinstance(varying, s.Quant) else "'|'"
            q.fail(
                f"{what} lets matches differ in length, which AFTER MATCH SKIP "
                f"{kind or 'PAST LAST ROW'} (the default) does not support: the standard "
                "prefers matches (greedy, leftmost alternative) that the engine cannot "
                "choose exactly; use ALL MATCHES, a fixed-length pattern, or cerfleet run "
                "(match_recognize.stream), which selects them",
                varying.span,
            )
        consume = pattern.Consume.NONE if kind == "TO NEXT ROW" else pattern.Consume.PARTITION
        return pattern.Strategy.ALL, consume

    def _skipping(self) -> tuple[pattern.Strategy, pattern.Consume]:
        q = self.q
        if q.rows == "MATCHES":
            q.fail("ALL MATCHES selects no match: it is not a skip mode", q.rows_span)
        if q.skip is not None and q.skip[0] == "TO CURRENT ROW":
            q.fail(
                "AFTER MATCH SKIP TO CURRENT ROW is supported only with ALL MATCHES", q.skip_span
            )
        if q.skip is not None and q.skip[1] is not None and q.skip[1] not in self.names:
            q.fail(
                f"AFTER MATCH SKIP {q.skip[0]} {q.skip[1]}: {q.skip[1]} is not a variable of "
                "the PATTERN",
                q.skip_span,
            )
        return pattern.Strategy.ALL, pattern.Consume.NONE

    def _window(self) -> pattern.Window | None:
        q = self.q
        if len(q.order) > 1:
            q.fail("ORDER BY takes one time attribute", q.order[1].span)
        if q.within is None:
            return None
        amount, unit = q.within
        if q.order:
            attr = self._column(q.order[0], "ORDER BY")
            ms = amount * pattern.TIME_UNITS_MS[unit]
            return pattern.Window(pattern.WindowKind.ATTRIBUTE, ms, attr=attr, span=q.within_span)
        return pattern.Window(pattern.WindowKind.TIME, amount, unit=unit, span=q.within_span)

    # ------------------------------------------------------------------ row pattern

    def _atom(self, var: s.Var) -> pattern.Formula:
        atom = pattern.AnyEvent(var.name, span=var.span)
        pred = self.defines.get(var.name)
        if pred is None:
            return atom  # an undefined variable matches any row
        return pattern.Filter(atom, pattern.FilterAtom(var.name, pred), span=var.span)

    def _regex(self, r: s.Regex) -> tuple[pattern.Formula | None, bool]:
        """``(N, nullable)``: the formula of r's non-empty matches (None: it has none)
        and whether r also matches zero rows."""
        if isinstance(r, s.Var):
            return self._atom(r), False
        if isinstance(r, s.Alt):
            (a, an), (b, bn) = self._regex(r.left), self._regex(r.right)
            return _or(a, b), an or bn
        if isinstance(r, s.Cat):
            return _cat(self._regex(r.left), self._regex(r.right))
        # A reluctant quantifier matches the same rows as the greedy one; only its
        # labels differ, which the output stage prefers as the standard does.
        if (r.high is not None and r.high > MAX_REPEAT) or r.low > MAX_REPEAT:
            self.q.fail(f"quantifier {r.text}: at most {MAX_REPEAT} repetitions", r.span)
        if lengths(r.body)[0] == 0:
            self.q.fail(
                f"quantifier {r.text} applies to a group that can match zero rows, which is "
                "not supported (the standard's empty iterations)",
                r.span,
            )
        body = self._regex(r.body)
        if r.high == 0:
            self.q.fail(f"quantifier {r.text} matches nothing", r.span)
        out: tuple[pattern.Formula | None, bool] = (None, True)
        if r.high is None:
            # X{n,} = X{n-1} X+ (X* for n = 0), X+ being ``:+``.
            plus = None if body[0] is None else pattern.ContiguousPlus(body[0], span=r.span)
            for _ in range(r.low - 1):
                out = _cat(out, body)
            return _cat(out, (plus, body[1] or r.low == 0))
        for _ in range(r.low):
            out = _cat(out, body)
        # ``X{0,k}`` right-nested, ``(X (X (X)?)?)?``: linear in k where a left chain of
        # ``X?`` would double at every step.
        tail: tuple[pattern.Formula | None, bool] = (None, True)
        for _ in range(r.high - r.low):
            tail = (_cat(body, tail)[0], True)
        return _cat(out, tail)


def _or(a: pattern.Formula | None, b: pattern.Formula | None) -> pattern.Formula | None:
    if a is None or b is None:
        return a if b is None else b
    return pattern.Or(a, b)


def _cat(
    left: tuple[pattern.Formula | None, bool], right: tuple[pattern.Formula | None, bool]
) -> tuple[pattern.Formula | None, bool]:
    """``L R`` where each side may also match zero rows: its non-empty matches are
    ``NL : NR``, plus ``NR`` when L may be empty and ``NL`` when R may be."""
    (a, an), (b, bn) = left, right
    out: pattern.Formula | None = None if a is None or b is None else pattern.Contiguous(a, b)
    if an:
        out = _or(out, b)
    if bn:
        out = _or(out, a)
    return out, an and bn


def _size(phi: pattern.Formula, memo: dict[int, int] | None = None) -> int:
    """Nodes of the formula as a tree (what construction builds); shared subformulas
    are counted once per use but computed once (by identity: hashing a formula is as
    slow as walking its tree)."""
    memo = {} if memo is None else memo
    found = memo.get(id(phi))
    if found is not None:
        return found
    size = 1
    if isinstance(phi, pattern.Filter | pattern.As | pattern.Plus | pattern.ContiguousPlus):
        size += _size(phi.formula, memo)
    elif isinstance(phi, pattern.Or | pattern.Contiguous | pattern.Seq):
        size += _size(phi.left, memo) + _size(phi.right, memo)
    memo[id(phi)] = size
    return size
