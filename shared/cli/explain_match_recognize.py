"""What ``cerfleet explain`` adds for a MATCH_RECOGNIZE query: where each DEFINE went.

Each DEFINE's top-level conjuncts are either unary predicates of the automaton (the row
alone, PREV included: a lagged column the evaluator keeps per partition) or, when they
read other rows of the match, correlations checked during enumeration. Then the
partition key the fleet routes by, the skip mode with what it costs per event, and the
output stage's cost per match (labelling the rows).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cerfleet import pattern
from cerfleet.match_recognize import syntax as s
from cerfleet.match_recognize.nfa import Nfa

if TYPE_CHECKING:
    from cerfleet.query import CompiledQuery

__all__ = ["describe_match_recognize"]

_ROWS = {"ONE": "ONE ROW PER MATCH", "ALL": "ALL ROWS PER MATCH", "MATCHES": "ALL MATCHES"}
_SKIPS = {
    "MATCHES": (
        "every match (strategy ALL, no consumption): constant time per event to update "
        "the automaton; the matches ending at one event are enumerated with output-linear "
        "delay (see output per event)"
    ),
    "PAST LAST ROW": (
        "CONSUME BY PARTITION: a match resets its partition's runs (constant time), so the "
        "next match starts after its last row; constant time per event (fixed-length pattern)"
    ),
    "TO NEXT ROW": (
        "no consumption: each start row has at most one match (fixed-length pattern); "
        "constant time per event"
    ),
}


def describe_match_recognize(text: str, compiled: CompiledQuery) -> list[str]:
    """The lines ``explain`` adds for the MATCH_RECOGNIZE query ``text``."""
    from cerfleet.match_recognize.translate import compile_text, variables

    query, _, translator = compile_text(text, skipping=compiled.selecting)
    lines = ["match_recognize:"]
    lines.append(f"  rows: {_ROWS[query.rows]}")
    keys = ", ".join(c.attr for c in query.partition)
    lines.append(
        f"  partition key: {keys} (the fleet routes and keeps MATCH_NUMBER by it)"
        if keys
        else "  partition key: (none: one partition, one MATCH_NUMBER sequence)"
    )
    names = list(dict.fromkeys(v.name for v in variables(query.regex)))
    defined = {d.var: d for d in query.defines}
    for var in names:
        unary, running = translator.defines.get(var), translator.running.get(var)
        if var not in defined:
            lines.append(f"  DEFINE {var}: none (any row)")
            continue
        lines.append(f"  DEFINE {var}:")
        for pred in _conjuncts(unary):
            lines.append(f"    unary predicate (in the automaton): {_source(query.source, pred)}")
        for pred in _conjuncts(running):
            lines.append(
                f"    correlation checked during enumeration: {_source(query.source, pred)}"
            )
    lags = ", ".join(f"PREV({a}, {n})" for a, n in compiled.lags)
    lines.append(
        f"  lagged PREV columns: {lags} (kept per partition, read as unary attributes)"
        if lags
        else "  lagged PREV columns: none"
    )
    kind = "MATCHES" if query.rows == "MATCHES" else (query.skip or ("PAST LAST ROW",))[0]
    clause = "ALL MATCHES" if kind == "MATCHES" else f"AFTER MATCH SKIP {kind}"
    if compiled.selecting:
        lines.append(f"  skip: {clause}: {_selection_cost(query, bool(translator.running))}")
    else:
        lines.append(f"  skip: {clause}: {_SKIPS[kind]}")
    if translator.running:
        labelling = (
            "each match's rows are labelled by a search of the row pattern that checks the "
            "correlations on the labels so far: it may try every labelling of a match's rows"
        )
    else:
        labelling = (
            "each match's rows are labelled by a search of the row pattern, "
            "O(pattern states x rows) per match"
        )
    lines.append(f"  output stage: {labelling}; MEASURES over the labelled rows")
    return lines


def _selection_cost(query: s.Query, running: bool) -> str:
    """What the standard's selection (``match_recognize.selection``) costs per row."""
    from cerfleet.match_recognize.selection import MAX_THREADS

    states = sum(read is not None for read in Nfa(query.regex).reads)
    if running:
        # A thread per state and path summary (``match_recognize.paths``).
        per_row = (
            f"O(states x distinct path summaries) = O({states} x path summaries) thread "
            "steps per row, a path summary being the rows the DEFINEs reading other rows "
            "can still reach (per variable read, its first or last n + 1 rows so far)"
        )
        if query.within is not None:
            per_row += ", per start row under WITHIN"
        per_row += f"; at most {MAX_THREADS} threads per partition, else the query fails"
    elif query.within is None:
        per_row = f"O(states) = O({states}) thread steps per row"
    else:
        per_row = (
            f"O(states x rows in the window) = O({states} x rows in the window) thread "
            "steps per row (under WITHIN threads are kept per state and start row)"
        )
    return (
        "the standard's preferred match from each start row (a variable-length pattern, "
        "a reluctant quantifier or SKIP TO FIRST/LAST v), chosen by a Pike VM over the "
        f"ordered row-pattern automaton per partition, not by the automaton above: {per_row}; "
        "plus re-reads: a match final only some rows after its last row (a greedy "
        "quantifier that might grow, a preferred alternative still alive) is returned then, "
        "and the rows from the next start row are read again, each once more per such "
        "match; memory: the rows since the earliest live start"
    )


def _conjuncts(pred: pattern.Pred | None) -> list[pattern.Pred]:
    """The top-level conjuncts of ``pred``, in source order."""
    if pred is None:
        return []
    if isinstance(pred, pattern.PAnd):
        return [*_conjuncts(pred.left), *_conjuncts(pred.right)]
    return [pred]


def _source(text: str, pred: pattern.Pred) -> str:
    """The text ``pred`` was written as in the query (its span), on one line."""
    span = pred.span
    if span is None:
        return type(pred).__name__
    lines = text.splitlines()
    if span.line == span.end_line:
        part = lines[span.line - 1][span.column - 1 : span.end_column - 1]
    else:
        part = " ".join(
            [
                lines[span.line - 1][span.column - 1 :],
                *lines[span.line : span.end_line - 1],
                lines[span.end_line - 1][: span.end_column - 1],
            ]
        )
    return " ".join(part.split())
