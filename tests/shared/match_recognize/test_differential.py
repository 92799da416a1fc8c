"""Random MATCH_RECOGNIZE queries: the engine (both evaluator paths) and the output
stage against the brute-force oracle, which shares no code with them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from cerfleet.complex_event import ComplexEvent
from cerfleet.errors import MatchRecognizeError
from cerfleet.evaluation.query_evaluator import QueryEvaluator
from cerfleet.events.columns import columns_of
from cerfleet.match_recognize.translate import writer
from cerfleet.query import Evaluator, compile_query
from tests.shared.match_recognize import oracle

VARS = ("A", "B", "C")
OPS = {"=": int.__eq__, "!=": int.__ne__, "<>": int.__ne__, "<": int.__lt__}
OPS.update({"<=": int.__le__, ">": int.__gt__, ">=": int.__ge__})


def _regexes(max_leaves: int = 4) -> st.SearchStrategy[oracle.Regex]:
    """Patterns with every quantifier, greedy or reluctant, and alternations."""
    leaf = st.sampled_from(VARS).map(lambda v: ("var", v))
    bounds = st.sampled_from([(1, None), (0, None), (0, 1), (2, 2), (1, 2), (0, 2), (2, None)])

    def extend(inner: st.SearchStrategy[oracle.Regex]) -> st.SearchStrategy[oracle.Regex]:
        return st.one_of(
            st.tuples(st.just("cat"), inner, inner),
            st.tuples(st.just("alt"), inner, inner),
            st.tuples(inner, bounds, st.booleans()).map(lambda t: ("rep", t[0], *t[1], t[2])),
        )

    return st.recursive(leaf, extend, max_leaves=max_leaves)


def text_of(r: oracle.Regex) -> str:
    if r[0] == "var":
        return str(r[1])
    if r[0] == "cat":
        return f"{_group(r[1], 'cat')} {_group(r[2], 'cat')}"
    if r[0] == "alt":
        return f"{text_of(r[1])} | {text_of(r[2])}"
    lo, hi = r[2], r[3]
    quant = {(1, None): "+", (0, None): "*", (0, 1): "?"}.get((lo, hi))
    if quant is None:
        quant = f"{{{lo}}}" if lo == hi else f"{{{lo},{'' if hi is None else hi}}}"
    body = r[1]
    lazy = "?" if len(r) > 4 and not r[4] else ""
    return (str(body[1]) if body[0] == "var" else f"({text_of(body)})") + quant + lazy


def _group(r: oracle.Regex, ctx: str) -> str:
    return f"({text_of(r)})" if r[0] == "alt" else text_of(r)


@st.composite
def _conditions(draw: Any, var: str, others: tuple[str, ...] | None = None) -> tuple[str, Any]:
    """A DEFINE condition on the row's own x and y and on PREV of them, and, given the
    pattern's variables ``others``, on other rows of the match (``o.x``, ``FIRST``,
    ``LAST``): its text and its meaning, a function of the partition's rows and the
    row's index (an ``oracle.Running`` of them and the match so far when it reads other
    rows; ``others`` None: no such reads). A missing value (PREV before the first row,
    no row of a variable yet) makes a comparison false and NOT plain negation."""
    running = False

    def value() -> tuple[str, Any]:
        nonlocal running
        a = draw(st.sampled_from("xy"))
        if others is not None and draw(st.integers(0, 2)) == 0:
            running = True
            return _navigation(draw, var, others, a)
        q = draw(st.sampled_from(["", f"{var}."]))
        back = draw(st.sampled_from([0, 0, 1, 2]))
        if not back:
            return f"{q}{a}", lambda rows, i, m, a=a: rows[i][a]
        text = f"PREV({q}{a})" if back == 1 and draw(st.booleans()) else f"PREV({q}{a}, {back})"
        return text, lambda rows, i, m, a=a, k=back: rows[i - k][a] if i >= k else None

    def atom() -> tuple[str, Any]:
        op = draw(st.sampled_from(sorted(OPS)))
        (lt, lf), (rt, rf) = value(), value()
        shape = draw(st.sampled_from(["const", "sum", "pair"]))
        c = draw(st.integers(0, 2))
        if shape == "const":
            return f"{lt} {op} {c}", lambda r, i, m, f=lf, op=op, c=c: _cmp(op, f(r, i, m), c)
        if shape == "pair":
            return f"{lt} {op} {rt}", lambda r, i, m, f=lf, g=rf, op=op: _cmp(
                op, f(r, i, m), g(r, i, m)
            )
        return f"{lt} + {rt} {op} {c}", lambda r, i, m, f=lf, g=rf, op=op, c=c: _cmp(
            op, _add(f(r, i, m), g(r, i, m)), c
        )

    text, fn = atom()
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["AND", "OR", "NOT"]))
        other, g = atom()
        if kind == "NOT":
            text, fn = f"NOT ({text})", lambda r, i, m, f=fn: not f(r, i, m)
        elif kind == "AND":
            text, fn = f"({text}) AND {other}", lambda r, i, m, f=fn, g=g: f(r, i, m) and g(r, i, m)
        else:
            text, fn = f"({text}) OR {other}", lambda r, i, m, f=fn, g=g: f(r, i, m) or g(r, i, m)
    if running:
        return text, oracle.Running(fn)
    return text, lambda rows, i, f=fn, v=var: f(rows, i, [(i, v)])


def _navigation(draw: Any, var: str, others: tuple[str, ...], a: str) -> tuple[str, Any]:
    """A read of another row of the match, in one of the accepted forms: ``o.a`` and
    ``LAST(o.a [, n])`` (o's last row so far, n rows back), ``FIRST(o.a [, n])``, o
    another variable, the row's own variable or none (every row of the match)."""
    o = draw(st.sampled_from([*others, var, None]))
    col = a if o is None else f"{o}.{a}"
    form = draw(st.sampled_from(["plain", "LAST", "FIRST"]))
    if form == "plain" and o not in (None, var):
        text, last, n = col, True, 0
    else:
        last = form != "FIRST"
        n = draw(st.sampled_from([0, 0, 0, 1, 2]))  # n > 0 is null more often
        fn_name = "LAST" if last else "FIRST"
        text = f"{fn_name}({col})" if n == 0 and draw(st.booleans()) else f"{fn_name}({col}, {n})"

    def read(rows: Any, i: int, match: list[tuple[int, str]]) -> Any:
        mine = [k for k, v in match if o is None or v == o]
        if n >= len(mine):
            return None
        return rows[mine[-1 - n] if last else mine[n]][a]

    return text, read


def _cmp(op: str, a: int | None, b: int | None) -> bool:
    return a is not None and b is not None and bool(OPS[op](a, b))


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


@st.composite
def _fixed(draw: Any, length: int, depth: int = 0) -> oracle.Regex:
    """A pattern whose matches all have ``length`` rows (alternatives of equal length,
    ``{n}``): what SKIP PAST LAST ROW and TO NEXT ROW accept."""
    choice = draw(st.integers(0, 2 if depth < 2 else 0))
    if choice == 1:
        return ("alt", draw(_fixed(length, depth + 1)), draw(_fixed(length, depth + 1)))
    if choice == 2 and length > 1:
        times = draw(st.sampled_from([n for n in (2, 3) if length % n == 0] or [1]))
        return ("rep", draw(_fixed(length // times, depth + 1)), times, times)
    out: oracle.Regex = ("var", draw(st.sampled_from(VARS)))
    for _ in range(length - 1):
        out = ("cat", out, ("var", draw(st.sampled_from(VARS))))
    return out


@st.composite
def cases(
    draw: Any, fixed: bool = False, cross: bool = False, selected: bool = False
) -> dict[str, Any]:
    """A random query and stream; ``selected``: a skip mode (TO FIRST/LAST v included)
    over a variable-length pattern, every DEFINE reading other rows of the match."""
    regex = draw(_fixed(draw(st.integers(1, 4))) if fixed else _regexes())
    if selected:
        low, high = oracle.span(regex)
        assume(low != high and low > 0 and not _nullable_iteration(regex))
    used = sorted(set(oracle.variables(regex)))
    defines = {}
    for v in used:
        if selected or draw(st.integers(0, 3)):  # an undefined variable now and then
            others = tuple(o for o in used if o != v) if cross else None
            defines[v] = draw(_conditions(v, others))
    if selected:
        assume(any(isinstance(fn, oracle.Running) for _, fn in defines.values()))
    modes = ["PAST LAST ROW", "NEXT ROW"] if fixed else ["MATCHES", "PAST LAST ROW", "NEXT ROW"]
    if selected:
        modes = [
            "PAST LAST ROW",
            "NEXT ROW",
            *(f"TO {e} {v}" for e in ("FIRST", "LAST") for v in used),
        ]
    mode = draw(st.sampled_from(modes))
    rows_per = "ONE" if mode == "MATCHES" else draw(st.sampled_from(["ONE", "ALL"]))
    n = draw(st.integers(0, 9))
    window = draw(st.sampled_from([None, 2, 5]))
    # Under a window some rows come late (time going back), which the engine drops.
    least = -1500 if window is not None and draw(st.booleans()) else 0
    gaps = draw(st.lists(st.integers(least, 3000), min_size=n, max_size=n))
    rows = [
        {
            "type": "r",
            "p": draw(st.integers(0, 1)),
            "x": draw(st.integers(0, 2)),
            "y": draw(st.integers(0, 2)),
            "ts": sum(gaps[: i + 1]),
        }
        for i in range(n)
    ]
    wanted = [("n", "COUNT", None, None), ("cls", "CLASSIFIER", None, None)]
    for i, v in enumerate(used):
        fn = draw(st.sampled_from(["FIRST", "LAST", "SUM", "MIN", "MAX", "COUNT"]))
        wanted.append((f"m{i}", fn, v, None if fn == "COUNT" else draw(st.sampled_from("xy"))))
    return {
        "regex": regex,
        "defines": defines,
        "mode": mode,
        "rows_per": rows_per,
        "rows": rows,
        "partition": draw(st.sampled_from([(), ("p",)])),
        "window": window,
        "cut": draw(st.integers(0, n)),
        "wanted": wanted,
    }


def query_text(case: dict[str, Any]) -> str:
    parts = ["SELECT * FROM Rows MATCH_RECOGNIZE ("]
    if case["partition"]:
        parts.append("PARTITION BY " + ", ".join(case["partition"]))
    parts.append("ORDER BY ts")
    measures = []
    for name, fn, var, attr in case["wanted"]:
        arg = "" if fn == "CLASSIFIER" else (f"{var}.*" if attr is None else f"{var}.{attr}")
        arg = "*" if fn == "COUNT" and var is None else arg
        measures.append(f"{fn}({arg}) AS {name}")
    measures.append("MATCH_NUMBER() AS k")
    parts.append("MEASURES " + ", ".join(measures))
    if case["mode"] == "MATCHES":
        parts.append("ALL MATCHES")
    else:
        parts.append("ONE ROW PER MATCH" if case["rows_per"] == "ONE" else "ALL ROWS PER MATCH")
        skip = {"NEXT ROW": "TO NEXT ROW"}.get(case["mode"], case["mode"])
        parts.append(f"AFTER MATCH SKIP {skip}")
    parts.append(f"PATTERN ({text_of(case['regex'])})")
    if case["window"] is not None:
        parts.append(f"WITHIN INTERVAL '{case['window']}' SECONDS")
    defines = [f"{v} AS {t}" for v, (t, _) in case["defines"].items()]
    if defines:
        parts.append("DEFINE " + ", ".join(defines))
    return "\n  ".join(parts) + "\n)"


def expected(case: dict[str, Any]) -> list[tuple[tuple[int, ...], list[dict[str, Any]]]]:
    window = None if case["window"] is None else ("ts", case["window"] * 1000)
    found = oracle.evaluate(
        case["regex"],
        {v: fn for v, (_, fn) in case["defines"].items()},
        case["rows"],
        mode=case["mode"],
        partition=case["partition"],
        window=window,
    )
    numbers: dict[tuple[Any, ...], int] = {}
    out = []
    for key, idx, labels in found:
        number = numbers[key] = numbers.get(key, 0) + 1
        rows = [case["rows"][g] for g in idx]
        if case["rows_per"] == "ALL":
            objs = []
            for i, row in enumerate(rows):
                m = oracle.measures(case["wanted"], rows[: i + 1], labels[: i + 1])
                objs.append({**row, **m, "k": number})
        else:
            m = oracle.measures(case["wanted"], rows, labels)
            objs = [{**dict(zip(case["partition"], key, strict=True)), **m, "k": number}]
        out.append((tuple(idx), objs))
    return out


def _nullable_iteration(r: oracle.Regex) -> bool:
    """A quantified group that can match zero rows (rejected)."""
    if r[0] == "var":
        return False
    if r[0] == "rep":
        return oracle.span(r[1])[0] == 0 or _nullable_iteration(r[1])
    return _nullable_iteration(r[1]) or _nullable_iteration(r[2])


def _reluctant(r: oracle.Regex) -> bool:
    if r[0] == "var":
        return False
    if r[0] == "rep":
        return (len(r) > 4 and not r[4]) or _reluctant(r[1])
    return _reluctant(r[1]) or _reluctant(r[2])


def _sorted(found: list[tuple[tuple[int, ...], list[dict[str, Any]]]]) -> list[Any]:
    return sorted(found, key=lambda f: (f[0][-1], f[0][0]))


def _drop_numbers(found: list[Any]) -> list[Any]:
    # Under ALL MATCHES the order of matches ending on the same row is the engine's.
    return [(idx, [{k: v for k, v in o.items() if k != "k"} for o in objs]) for idx, objs in found]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_engine_matches_oracle(case: dict[str, Any]) -> None:
    check(case)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(fixed=True))
def test_skip_modes_on_fixed_length_patterns(case: dict[str, Any]) -> None:
    check(case)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(cross=True))
def test_defines_on_other_rows_match_oracle(case: dict[str, Any]) -> None:
    # DEFINEs reading other rows of the match (a running correlation), every mode.
    check(case)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(fixed=True, cross=True))
def test_skip_modes_with_defines_on_other_rows(case: dict[str, Any]) -> None:
    check(case)


@settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(cases(cross=True, selected=True))
def test_selection_with_defines_on_other_rows(case: dict[str, Any]) -> None:
    # Every skip mode over a variable-length pattern, each DEFINE reading other rows
    # (or, drawn so, only its own row): the Pike VM keeps a thread per path summary.
    check(case)


def check(case: dict[str, Any]) -> None:
    text = query_text(case)
    low, high = oracle.span(case["regex"])
    rejected = low == 0 or _nullable_iteration(case["regex"])
    # A skip mode over a variable-length pattern: the standard's selection.
    selected = case["mode"] != "MATCHES" and low != high
    event("rejected" if rejected else f"{case['mode']}, {case['rows_per']}")
    if rejected:
        with pytest.raises(MatchRecognizeError):
            compile_query(text, language="match_recognize")
        return
    query = compile_query(text, language="match_recognize")
    assert query.selecting == selected, text
    if selected:
        event("the standard's selection")
    want = _sorted(expected(case))
    rows = case["rows"]
    write = writer(text, skipping=selected)
    by_rows: list[Any] = []
    ev = query.evaluator()
    for r in rows:
        by_rows += [(ce.positions, write.rows(ce)) for ce in ev.process(r)]
    by_rows += [(ce.positions, write.rows(ce)) for ce in _finish(ev)]
    write = writer(text, skipping=selected)
    ev = query.evaluator()
    columns = columns_of(rows, query.attributes)
    found = ev.process_columns(columns, events=rows) + _finish(ev)
    by_columns = [(ce.positions, write.rows(ce)) for ce in found]
    # Two batches, the evaluator snapshotted and restored between them.
    write = writer(text, skipping=selected)
    ev = query.evaluator()
    cut = case["cut"]
    first = ev.process_columns(columns_of(rows[:cut], query.attributes), events=rows[:cut])
    ev = query.restore(ev.snapshot())
    rest = ev.process_columns(
        columns_of(rows[cut:], query.attributes),
        events=rows[cut:],
        positions=range(cut, len(rows)),
    )
    by_batches = [(ce.positions, write.rows(ce)) for ce in first + rest + _finish(ev)]
    if case["mode"] == "MATCHES":
        want = _drop_numbers(want)
        by_rows, by_columns = _drop_numbers(by_rows), _drop_numbers(by_columns)
        by_batches = _drop_numbers(by_batches)
    assert _sorted(by_batches) == want, text
    event("some match" if want else "no match")
    if want and _reluctant(case["regex"]):
        event("some match, a reluctant quantifier")
    if any(isinstance(fn, oracle.Running) for _, fn in case["defines"].values()):
        event("a DEFINE reading other rows")
    if want and any(isinstance(fn, oracle.Running) for _, fn in case["defines"].values()):
        event("some match, a DEFINE reading other rows")
    assert _sorted(by_rows) == want, text
    assert _sorted(by_columns) == want, text


def _finish(ev: Evaluator) -> list[ComplexEvent]:
    """The end of the input: what the standard's selection still held back."""
    return [] if isinstance(ev, QueryEvaluator) else ev.finish()
