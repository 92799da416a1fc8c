"""What ``cerfleet explain`` says of an RSEP-QL query that ``rsepql.evaluation`` runs
(FIRST/LAST, a policy SEQ or ``MATCH CONSUMING``): its evaluation times, its
windows, each operator's reading, the consumption policy and the guarantees it
keeps; and, for an unrestricted SEQ chain with a STEP window (automata, described as
for the other languages), when its results are reported."""

from __future__ import annotations

from cerfleet.rsepql import syntax as s

__all__ = ["closes", "describe"]

_MEANING = {
    "": "unrestricted (Eq. (7)): every compatible E1 before each E2",
    "c": "chronological (Eq. (10)): the earliest E2 that has a compatible E1 before it, "
    "with the earliest such E1",
    "r": "recent (Eq. (11)): the latest E2 that has a compatible E1 before it, "
    "with the latest such E1",
    "n": "naive, C-SPARQL's (Eq. (9)): the last E1 and the last E2 of the window, "
    "when compatible and in order",
    "first": "Eq. (5): the event mappings no other precedes (≺: by end, then start)",
    "last": "Eq. (6): the event mappings no other follows (≺: by end, then start)",
}


def _seconds(ms: int) -> str:
    return f"{ms / 1000:g} s"


def _text(expr: s.Expr) -> str:
    if isinstance(expr, s.Ref):
        return expr.name
    if isinstance(expr, s.Pick):
        inner = _text(expr.operand)
        return expr.which.upper() + (inner if inner.startswith("(") else f"({inner})")
    op = "SEQ" + (f"^{expr.policy}" if expr.policy else "")
    return f"({_text(expr.left)} {op} {_text(expr.right)})"


def _operators(expr: s.Expr, seen: dict[str, str]) -> None:
    if isinstance(expr, s.Ref):
        return
    if isinstance(expr, s.Pick):
        seen.setdefault(expr.which.upper(), _MEANING[expr.which])
        _operators(expr.operand, seen)
        return
    seen.setdefault("SEQ" + (f"^{expr.policy}" if expr.policy else ""), _MEANING[expr.policy])
    _operators(expr.left, seen)
    _operators(expr.right, seen)


def _window(w: s.Window) -> str:
    if w.kind == "range":
        step = f" STEP {_seconds(w.step_ms)}" if w.step_ms is not None else ""
        return f"RANGE {_seconds(w.ms)}{step}"
    if w.kind == "landmark":
        return f"LND from {_seconds(w.ms)}"
    return "identity (every item so far)"


def closes(query: s.Query) -> list[str]:
    """The report lines of an unrestricted chain with STEP windows."""
    every = ", ".join(f"every {_seconds(w.step_ms or 0)} (<{w.name}>)" for w in query.stepped())
    return [
        f"evaluation times: window close: {every}",
        "reported at: the first close at which every item of a complex event is in its "
        "window (cerfleet run holds it until then; the fleet's front-end refuses STEP)",
    ]


def describe(query: s.Query) -> list[str]:
    """The lines ``explain`` prints for ``query``."""
    assert query.expr is not None
    stepped = query.stepped()
    if stepped:
        closes = ", ".join(f"every {_seconds(w.step_ms or 0)} (<{w.name}>)" for w in stepped)
        times = f"window close: {closes}"
    else:
        times = "content change: every instant of the streams"
    lines = [
        "evaluated by: cerfleet run, at each evaluation time (not an automaton)",
        f"evaluation times: {times}",
        "windows:",
    ]
    lines += [f"  <{w.name}> on <{w.stream}>: {_window(w)}" for w in query.windows.values()]
    lines.append("events:")
    for name in dict.fromkeys(query.chain):
        bep = query.events[name]
        extra = f", {len(bep.filters)} FILTER" if bep.filters else ""
        lines.append(f"  {name} on <{bep.window}>: {len(bep.triples)} triple pattern(s){extra}")
    lines.append(f"event pattern: {_text(query.expr)}")
    seen: dict[str, str] = {}
    _operators(query.expr, seen)
    lines += [f"  {op}: {meaning}" for op, meaning in seen.items()]
    lines.append(
        "consumption: CONSUMING (P^c = P^r): the triples that justify one evaluation's "
        "results are not input to later evaluations"
        if query.consuming
        else "consumption: none (every evaluation sees all its windows hold)"
    )
    lines.append(
        "cost: each evaluation combines the BEP matches its windows hold; neither "
        "constant time per event nor output-linear enumeration"
    )
    return lines
