"""``cerfleet explain QUERY``: what a query compiles to and what it can cost.

Prints the automaton's size, the filter predicates its transitions test (unary), the
correlations (turned into partition keys, or checked at enumeration), the
event types, PARTITION BY keys, window, strategy, consumption and LIMIT, and
whether the complex events ending at one event can grow exponentially (see
``cerfleet.bounds``), the one thing ``cerfleet submit`` refuses by default.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cerfleet.errors import CEQLError

if TYPE_CHECKING:
    from cerfleet import pattern
    from cerfleet.query import CompiledQuery

__all__ = ["register"]

EXIT_OK = 0
EXIT_USAGE = 2


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "explain",
        help="show a query's automaton, predicates and output bounds",
        description="Compile the query in QUERY (CEQL, MATCH_RECOGNIZE, SPAseq or RSEP-QL, "
        "told apart as cerfleet run does) and describe it: automaton size, "
        "predicates, PARTITION BY keys, window, strategy, and whether one event's "
        "complex events can grow exponentially.",
    )
    parser.add_argument("query", metavar="QUERY", help="file holding the query")
    parser.add_argument("--type-field", default="type", help="attribute holding the event type")
    parser.add_argument(
        "--time-field", default="timestamp", help="attribute holding the event time"
    )
    parser.add_argument(
        "--language",
        default=None,
        help="ceql, match_recognize, spaseq or rsepql (default: told apart as cerfleet run does)",
    )
    parser.set_defaults(handler=explain)


def explain(args: argparse.Namespace) -> int:
    from cerfleet.query import compile_query

    try:
        text = Path(args.query).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        print(f"{args.query}: cannot read query file: {err}", file=sys.stderr)
        return EXIT_USAGE
    from cerfleet.languages import detect

    language = (args.language or detect(text)).lower()
    try:
        if language == "rsepql":
            lines = _rsepql(text)
            if lines is not None:
                for line in lines:
                    print(line)
                return EXIT_OK
        compiled = compile_query(
            text, type_field=args.type_field, time_field=args.time_field, language=language
        )
    except CEQLError as err:
        print(f"{args.query}: {err}", file=sys.stderr)
        return EXIT_USAGE
    lines = describe(compiled)
    if language == "match_recognize":
        from cerfleet.cli.explain_match_recognize import describe_match_recognize

        lines += describe_match_recognize(text, compiled)
    for line in lines:
        print(line)
    return EXIT_OK


def _rsepql(text: str) -> list[str] | None:
    """The description of an RSEP-QL query that ``cerfleet run`` evaluates at its
    evaluation times rather than with an automaton alone, which the fleet's front-end
    refuses (None: it compiles as any other)."""
    from cerfleet.query import CompiledQuery
    from cerfleet.rsepql.describe import closes
    from cerfleet.rsepql.describe import describe as describe_rsepql
    from cerfleet.rsepql.parser import parse
    from cerfleet.rsepql.translate import to_pattern

    query = parse(text)
    if query.per_evaluation():
        return describe_rsepql(query)
    if not query.stepped():
        return None
    form = to_pattern(query)
    return describe(CompiledQuery.from_pattern(form, text=text, language="rsepql")) + closes(query)


def describe(compiled: CompiledQuery) -> list[str]:
    """The lines ``explain`` prints."""
    from cerfleet import pattern
    from cerfleet.bounds import automaton_size, iterations, unbounded_output
    from cerfleet.ceql.printer import format_predicate

    form = compiled.pattern
    lines = [f"automaton: {automaton_size(compiled)}"]
    preds = compiled.atom_predicates
    lines.append(f"predicates: {len(preds)}")
    lines += [f"  [{i}] {_predicate(p, format_predicate)}" for i, p in enumerate(preds)]
    lines.append(f"event types: {', '.join(sorted(compiled.cea.event_types())) or '(none)'}")
    lines.append(f"partition by: {', '.join(form.partition_by) or '(none)'}")
    lines += _correlations(compiled)
    lines.append(f"window: {_window(form.within)}")
    if compiled.selecting:
        # The automaton (of every match) only decodes events: the language selects.
        lines.append("strategy: the language's own match selection (see below)")
        lines.append("consume by: the language's skip mode (see below)")
    else:
        lines.append(f"strategy: {form.strategy.value}")
        lines.append(f"consume by: {form.consume.value}")
    lines.append(f"limit: {form.limit if form.limit is not None else '(none)'}")
    reason = unbounded_output(form)
    if compiled.selecting:
        lines.append(
            "output per event: bounded by the matches pending in the partition "
            "(at most one per start row)"
        )
    elif reason is not None:
        lines.append(f"output per event: CAN GROW EXPONENTIALLY: {reason}")
    elif (
        form.strategy is pattern.Strategy.ALL
        and form.limit is None
        and next(iterations(form.where), None) is not None
    ):
        lines.append(
            "output per event: bounded by the window, but up to exponential in the "
            "number of events it holds (an iteration '+' under ALL)"
        )
    else:
        lines.append("output per event: bounded")
    return lines


def _correlations(compiled: CompiledQuery) -> list[str]:
    """Which filters compare events, and the guarantee each kind gets."""
    from cerfleet.ceql.printer import format_predicate

    lines = []
    if compiled.implicit_keys:
        lines.append(
            f"partition keys from equalities: {', '.join(compiled.implicit_keys)} "
            "(every event of the pattern tied to one value: constant time per event)"
        )
    plan = compiled.correlation
    if plan is None:
        if not compiled.implicit_keys:
            lines.append("correlations: none (every filter is unary, in the automaton)")
        return lines
    lines.append(
        f"correlations checked at enumeration: {len(plan.checks) + len(plan.running)} "
        "(constant time per event; enumeration prunes a branch at its first violation, so "
        "a complex event costs the branches visited, not only its size)"
    )
    lines += [f"  {format_predicate(check.pred)}" for check in plan.checks]
    # Running checks (MATCH_RECOGNIZE's DEFINEs reading other rows): per variable.
    lines += [f"  running, at each row bound to {check.at}" for check in plan.running]
    return lines


def _predicate(pred: pattern.Pred, fmt: Callable[[pattern.Pred], str]) -> str:
    """A predicate as CEQL prints it, with an RDF graph-pattern match (SPAseq's GPM,
    RSEP-QL's BEP) summarised: its stream, triple patterns, filter and background."""
    from cerfleet import pattern

    if isinstance(pred, pattern.GraphMatch):
        text = f"GRAPH MATCH on {pred.stream}: {len(pred.triples)} triple pattern(s)"
        if pred.filter is not None:
            text += f" FILTER {_predicate(pred.filter, fmt)}"
        if pred.background is not None:
            text += f", joined with <{pred.background}> ({len(pred.background_triples)})"
        return f"[{text}]"
    if isinstance(pred, pattern.PNot):
        return f"NOT ({_predicate(pred.operand, fmt)})"
    if isinstance(pred, pattern.PAnd | pattern.POr):
        word = "AND" if isinstance(pred, pattern.PAnd) else "OR"
        return f"({_predicate(pred.left, fmt)} {word} {_predicate(pred.right, fmt)})"
    return fmt(pred)


def _window(window: pattern.Window | None) -> str:
    if window is None:
        return "(none)"
    amount = f"{window.amount:g}" if isinstance(window.amount, float) else str(window.amount)
    if window.attr is not None:
        return f"{amount} [{window.attr}]"
    return f"{amount} {window.unit or window.kind.value}"
