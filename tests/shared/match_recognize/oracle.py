"""A brute-force evaluator of MATCH_RECOGNIZE's semantics: the test oracle.

It shares nothing with the front-end or the engine. Patterns are nested tuples
(``("var", "A")``, ``("cat", l, r)``, ``("alt", l, r)``, ``("rep", body, lo, hi)``,
hi None for unbounded; ``("rep", body, lo, hi, False)``: reluctant); DEFINE conditions
are Python functions of the partition's rows and a row's index (PREV reads the rows
before it), or ``Running`` ones that also
see the match so far (the standard's running semantics: a condition on row r sees the
rows matched up to r and the variables they were matched to).

Which rows a pattern matches is decided by Python's own regular expressions over
a string with one character per row: variable v is the class of the characters of
the rows its condition holds on. Python's backtracking tries alternatives left
first, greedy quantifiers longest first and reluctant ones (``*?``) shortest first,
which is the standard's preferment, so ``re.match`` from a start row is the
standard's preferred match from that row (SQL:2016 AFTER MATCH SKIP). The
preferred *labels* of a match (which row is which variable) are the first parse, in
preferment order, of an explicit
enumeration of all parses (``_parses``), an iteration that matches no row being
no iteration.

Semantics implemented (per partition, rows in arrival order):

* ``MATCHES`` (Esper's ALL MATCHES): every interval of rows [s, e] the pattern
  matches exactly, each once, with the preferred labels among its parses;
* ``PAST LAST ROW``: from s = 0: the preferred match from s if any (then s = e + 1),
  else s + 1; ``NEXT ROW``: the same but s + 1 after a match too; ``TO FIRST v`` /
  ``TO LAST v``: s = the first / last row the match's preferred labels bind to v,
  unless v has no row or that row is the match's first (the standard's error, which
  the engine answers by resuming at s + 1, as TO NEXT ROW);
* with ``Running`` conditions a row's class depends on the match so far, so the
  preferred match from s is instead the first of the explicit enumeration of parses
  (``_parses``, in preferment order) and ALL MATCHES every interval some parse covers;
* WITHIN: late rows (time below one already kept in the partition) are dropped
  first; a match is kept only if ``t(e) - t(s) <= window`` (the bound is
  inclusive, as the engine's WITHIN); under a skip mode the window is part of the
  pattern: the preferred match from s among those within it (``re.match`` with
  ``endpos`` at the last row within the window).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Row = Mapping[str, Any]
Regex = tuple[Any, ...]
# A DEFINE condition on row i of its partition's rows (PREV reads rows before i).
Cond = Callable[[Sequence[Row], int], bool]


class Running:
    """A DEFINE condition reading other rows of the match: ``fn(rows, i, match)`` where
    ``match`` lists ``(row index, variable)`` of the match's rows up to and including
    row i (bound to the variable being defined)."""

    def __init__(self, fn: Callable[[Sequence[Row], int, list[tuple[int, str]]], bool]) -> None:
        self.fn = fn


# ok(var, i, s, before): whether row i may be bound to var in a match starting at row s
# whose rows s..i-1 are bound to the letters of ``before``.
Ok = Callable[[str, int, int, str], bool]


def variables(r: Regex) -> list[str]:
    if r[0] == "var":
        return [r[1]]
    if r[0] == "rep":
        return variables(r[1])
    return variables(r[1]) + variables(r[2])


def span(r: Regex) -> tuple[int, float]:
    """Fewest and most rows of a match (inf: unbounded)."""
    if r[0] == "var":
        return 1, 1
    if r[0] == "rep":
        lo, hi = span(r[1])
        return lo * r[2], (float("inf") if r[3] is None else hi * r[3])
    (a, b), (c, d) = span(r[1]), span(r[2])
    if r[0] == "cat":
        return a + c, b + d
    return min(a, c), max(b, d)


def _python_re(r: Regex, classes: Mapping[str, str]) -> str:
    if r[0] == "var":
        chars = classes[r[1]]
        return f"[{chars}]" if chars else "(?!)"
    if r[0] == "cat":
        return _python_re(r[1], classes) + _python_re(r[2], classes)
    if r[0] == "alt":
        return f"(?:{_python_re(r[1], classes)}|{_python_re(r[2], classes)})"
    hi = "" if r[3] is None else str(r[3])
    lazy = "" if _greedy(r) else "?"
    return f"(?:{_python_re(r[1], classes)}){{{r[2]},{hi}}}{lazy}"


def _greedy(r: Regex) -> bool:
    return len(r) < 5 or bool(r[4])


def _parses(
    r: Regex, ok: Ok, i: int, n: int, s: int | None = None, before: str = ""
) -> list[tuple[int, str]]:
    """All ``(end, labels)`` of r from row i (rows < n), in preferment order, without
    repeats, the match having started at row s (i by default) with ``before`` the
    labels of rows s..i-1. Labels are one variable letter per row."""
    s = i if s is None else s
    out: list[tuple[int, str]] = []
    if r[0] == "var":
        if i < n and ok(r[1], i, s, before):
            out = [(i + 1, r[1])]
    elif r[0] == "alt":
        out = _parses(r[1], ok, i, n, s, before) + _parses(r[2], ok, i, n, s, before)
    elif r[0] == "cat":
        out = [
            (k, x + y)
            for j, x in _parses(r[1], ok, i, n, s, before)
            for k, y in _parses(r[2], ok, j, n, s, before + x)
        ]
    else:
        out = _iterations(r, ok, i, n, 0, s, before)
    return list(dict.fromkeys(out))


def _iterations(r: Regex, ok: Ok, i: int, n: int, done: int, s: int, before: str) -> list:
    more: list[tuple[int, str]] = []
    if r[3] is None or done < r[3]:
        for j, x in _parses(r[1], ok, i, n, s, before):
            if j > i:
                more += [(k, x + y) for k, y in _iterations(r, ok, j, n, done + 1, s, before + x)]
    stop = [(i, "")] if done >= r[2] else []
    return more + stop if _greedy(r) else stop + more


def evaluate(
    regex: Regex,
    defines: Mapping[str, Cond | Running],
    rows: Sequence[Row],
    *,
    mode: str,
    partition: Sequence[str] = (),
    window: tuple[str, float] | None = None,
) -> list[tuple[tuple[Any, ...], list[int], str]]:
    """The matches: ``(key, global row indexes, labels)``, per partition in start order."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for g, row in enumerate(rows):
        key = tuple(row.get(a) for a in partition)
        if any(v is None for v in key):
            continue
        groups.setdefault(key, []).append(g)
    if window is not None:
        # A row whose time is below one already kept in its partition is late: it is
        # no row of the partition (PREV skips it too).
        for key, idx in groups.items():
            kept: list[int] = []
            for g in idx:
                if not kept or rows[g][window[0]] >= max(rows[k][window[0]] for k in kept):
                    kept.append(g)
            groups[key] = kept
    found = []
    for key, idx in groups.items():
        sub = [rows[g] for g in idx]
        for s, e in _intervals(regex, defines, sub, mode, window):
            ok = _ok(defines, sub)
            labels = next(lab for end, lab in _parses(regex, ok, s, e + 1) if end == e + 1)
            found.append((key, [idx[k] for k in range(s, e + 1)], labels))
    return found


def _ok(defines: Mapping[str, Cond | Running], sub: Sequence[Row]) -> Ok:
    def ok(var: str, i: int, s: int, before: str) -> bool:
        cond = defines.get(var)
        if cond is None:
            return True
        if isinstance(cond, Running):
            match = [(s + k, v) for k, v in enumerate(before)] + [(i, var)]
            return cond.fn(sub, i, match)
        return cond(sub, i)

    return ok


def _intervals(
    regex: Regex,
    defines: Mapping[str, Cond | Running],
    sub: Sequence[Row],
    mode: str,
    window: tuple[str, float] | None,
) -> list[tuple[int, int]]:
    if any(isinstance(c, Running) for c in defines.values()):
        return _parsed_intervals(regex, defines, sub, mode, window)
    chars = [chr(0x100 + i) for i in range(len(sub))]
    classes = {
        v: "".join(c for i, c in enumerate(chars) if v not in defines or defines[v](sub, i))
        for v in set(variables(regex))
    }
    compiled = re.compile(_python_re(regex, classes))
    text = "".join(chars)

    def in_window(s: int, e: int) -> bool:
        return window is None or sub[e][window[0]] - sub[s][window[0]] <= window[1]

    n = len(sub)
    if mode == "MATCHES":
        return [
            (s, e)
            for e in range(n)
            for s in range(e + 1)
            if compiled.fullmatch(text, s, e + 1) and in_window(s, e)
        ]
    out = []
    s = 0
    while s < n:
        m = compiled.match(text, s, _window_end(sub, s, window))
        if m is not None and m.end() > s:
            out.append((s, m.end() - 1))
            s = _resume(regex, defines, sub, mode, s, m.end() - 1)
        else:
            s += 1
    return out


def _window_end(sub: Sequence[Row], s: int, window: tuple[str, float] | None) -> int:
    """One past the last row a match starting at s may end on (rows in time order)."""
    e = len(sub)
    if window is not None:
        while sub[e - 1][window[0]] - sub[s][window[0]] > window[1]:
            e -= 1
    return e


def _resume(
    regex: Regex,
    defines: Mapping[str, Cond | Running],
    sub: Sequence[Row],
    mode: str,
    s: int,
    e: int,
) -> int:
    """The next start row after the match [s, e] under skip ``mode``."""
    if mode == "PAST LAST ROW":
        return e + 1
    if mode == "NEXT ROW":
        return s + 1
    kind, var = mode.rsplit(" ", 1)
    ok = _ok(defines, sub)
    labels = next(lab for end, lab in _parses(regex, ok, s, e + 1) if end == e + 1)
    bound = [k for k, v in enumerate(labels) if v == var]
    if not bound:
        return s + 1
    target = s + (bound[0] if kind == "TO FIRST" else bound[-1])
    return target if target > s else s + 1


def _parsed_intervals(
    regex: Regex,
    defines: Mapping[str, Cond | Running],
    sub: Sequence[Row],
    mode: str,
    window: tuple[str, float] | None,
) -> list[tuple[int, int]]:
    """``_intervals`` from the enumeration of parses, for conditions that depend on the
    match so far (no row has a class of its own then)."""
    ok = _ok(defines, sub)
    n = len(sub)

    def in_window(s: int, e: int) -> bool:
        return window is None or sub[e][window[0]] - sub[s][window[0]] <= window[1]

    if mode == "MATCHES":
        found = {
            (s, end - 1)
            for s in range(n)
            for end, _ in _parses(regex, ok, s, n)
            if end > s and in_window(s, end - 1)
        }
        return sorted(found, key=lambda se: (se[1], se[0]))
    out = []
    s = 0
    while s < n:
        first = next(
            (end for end, _ in _parses(regex, ok, s, n) if end > s and in_window(s, end - 1)),
            None,
        )
        if first is not None:
            out.append((s, first - 1))
            s = _resume(regex, defines, sub, mode, s, first - 1)
        else:
            s += 1
    return out


def measures(
    wanted: Sequence[tuple[str, str, str | None, str | None]],
    rows: Sequence[Row],
    labels: str,
) -> dict[str, Any]:
    """``(name, function, variable, attribute)`` → value, over one match (or prefix)."""
    out: dict[str, Any] = {}
    for name, fn, var, attr in wanted:
        picked = [row for row, lab in zip(rows, labels, strict=True) if var is None or lab == var]
        values = [row[attr] for row in picked] if attr is not None else []
        if fn == "COUNT":
            out[name] = len(picked)
        elif fn == "FIRST":
            out[name] = values[0] if values else None
        elif fn == "LAST":
            out[name] = values[-1] if values else None
        elif fn == "SUM":
            out[name] = sum(values) if values else None
        elif fn == "MIN":
            out[name] = min(values) if values else None
        elif fn == "MAX":
            out[name] = max(values) if values else None
        elif fn == "CLASSIFIER":
            out[name] = labels[-1]
        else:
            raise ValueError(fn)
    return out
