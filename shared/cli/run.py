"""``cerfleet run QUERY EVENTS``: evaluate one CEQL query over a file or stdin.

Complex events go to stdout as compact JSON, one per line, flushed as soon as
they are found so the command works at the end of a live pipe. Everything
else (malformed lines, errors, the final summary) goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from cerfleet.errors import CEQLError
from cerfleet.events.reader import FORMATS, EventReader, MalformedEvent

if TYPE_CHECKING:
    from cerfleet.complex_event import ComplexEvent

__all__ = ["register", "run"]

EXIT_OK = 0
EXIT_USAGE = 2


def register(subparsers: Any) -> None:
    """Add the ``run`` subcommand to the ``cerfleet`` parser."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="evaluate a CEQL query over an event file or stdin",
        description=(
            "Evaluate the CEQL query in QUERY over the events in EVENTS and print each "
            "complex event as one JSON object per line."
        ),
    )
    parser.add_argument("query", metavar="QUERY", help="file holding the CEQL query")
    parser.add_argument(
        "events", metavar="EVENTS", help="JSON Lines or CSV event file, or - for stdin"
    )
    parser.add_argument(
        "--type-field", default="type", help="attribute holding the event type (default: type)"
    )
    parser.add_argument(
        "--time-field",
        default="timestamp",
        help="attribute holding the event time, for WITHIN ... SECONDS etc. (default: timestamp)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help="event format; auto means csv for *.csv, else jsonl (default: auto)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="stop with exit code 2 at the first malformed line"
    )
    parser.add_argument("--quiet", action="store_true", help="do not print the final summary")
    parser.add_argument(
        "--max-outputs-per-event",
        type=_positive,
        metavar="N",
        help="print at most N complex events per event and report on stderr each event "
        "whose output was cut (default: unlimited)",
    )
    parser.set_defaults(handler=run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _error(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _json_writer(out: TextIO) -> Callable[[ComplexEvent], None]:
    # ensure_ascii=False keeps names readable; compact separators keep one
    # complex event on one short line.
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def write(event: ComplexEvent) -> None:
        out.write(dumps(event.to_dict()))
        out.write("\n")

    return write


def run(args: argparse.Namespace) -> int:
    """Handler of ``cerfleet run``; returns the exit code."""
    # Imported here so ``cerfleet --help``/``--version`` work without loading
    # the compiler (and its grammar).
    from cerfleet.query import compile_query

    query_path: str = args.query
    try:
        text = Path(query_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        _error(f"{query_path}: cannot read query file: {_describe(err)}")
        return EXIT_USAGE
    try:
        compiled = compile_query(text, type_field=args.type_field, time_field=args.time_field)
    except CEQLError as err:
        _error(f"{query_path}: {err}")
        return EXIT_USAGE

    malformed = 0

    def report(line: int, reason: str) -> None:
        nonlocal malformed
        malformed += 1
        _error(f"{reader.name}:{line}: {reason}")

    try:
        reader = EventReader(
            args.events,
            format=args.format,
            type_field=args.type_field,
            strict=args.strict,
            on_malformed=report,
        )
    except OSError as err:
        _error(f"{args.events}: cannot read event file: {_describe(err)}")
        return EXIT_USAGE

    evaluator = compiled.evaluator()
    evaluator.max_outputs = args.max_outputs_per_event
    out = sys.stdout
    write = _json_writer(out)
    events = 0
    complex_events = 0
    with reader:
        try:
            for line, event in reader:
                problem = compiled.check_event(event)
                if problem is not None:
                    # A schema violation is a malformed line like any other: it
                    # takes no position in the stream.
                    if args.strict:
                        raise MalformedEvent(line, problem, reader.name)
                    report(line, problem)
                    continue
                events += 1
                found = evaluator.process(event)
                if evaluator.last_late:
                    _error(
                        f"{reader.name}:{line}: late event: its time is earlier than one "
                        "already seen in its partition; it takes part in no complex event"
                    )
                if evaluator.truncated_ends:
                    evaluator.truncated_ends.clear()
                    _error(
                        f"{reader.name}:{line}: more than {evaluator.max_outputs} complex "
                        "events end at this event; the rest are not printed"
                    )
                if found:
                    for complex_event in found:
                        write(complex_event)
                    out.flush()
                    complex_events += len(found)
        except MalformedEvent as err:
            _error(str(err))
            return EXIT_USAGE
        except OSError as err:
            if isinstance(err, BrokenPipeError):
                raise  # handled (quietly) by main()
            _error(f"{reader.name}: read error: {_describe(err)}")
            return EXIT_USAGE
    out.flush()
    if not args.quiet:
        late = f", {evaluator.late} late events ignored" if evaluator.late else ""
        cut = f", {evaluator.truncated} events truncated" if evaluator.truncated else ""
        _error(
            f"{events} events, {complex_events} complex events, "
            f"{malformed} malformed lines skipped{late}{cut}"
        )
    return EXIT_OK


def _describe(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err)
