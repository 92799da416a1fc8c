"""``cerfleet run QUERY EVENTS``: evaluate one query (CEQL or MATCH_RECOGNIZE) over a
file or stdin.

Complex events (for MATCH_RECOGNIZE, its output rows) go to stdout as compact JSON,
one per line, flushed as soon as they are found so the command works at the end of a
live pipe. Everything
else (malformed lines, errors, the final summary) goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from cerfleet.errors import CEQLError
from cerfleet.events.reader import FORMATS, STDIN, STDIN_NAME, MalformedEvent

if TYPE_CHECKING:
    from cerfleet.pattern import Pattern

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
        "events",
        metavar="EVENTS",
        nargs="?",
        help="JSON Lines or CSV event file, or - for stdin (SPAseq: --stream instead)",
    )
    parser.add_argument(
        "--stream",
        action="append",
        metavar="NAME=FILE",
        help="SPAseq: a TriG file for the query's FROM STREAM NAME (repeatable)",
    )
    parser.add_argument(
        "--background",
        action="append",
        metavar="IRI=FILE",
        help="SPAseq: the Turtle/TriG file of the background graph GRAPH <IRI>",
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
        "--stream-field",
        default=None,
        help="attribute naming an event's stream: FROM keeps those streams' events and "
        "S>E reads it (default: none, every event is in every FROM stream)",
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
    parser.add_argument(
        "--language",
        default=None,
        help=(
            "query language: ceql, match_recognize, spaseq or rsepql (default: "
            "match_recognize when the query uses MATCH_RECOGNIZE, spaseq when it has "
            "DEFINE GPM, rsepql when it has EVENT ON, else ceql)"
        ),
    )
    parser.add_argument("--quiet", action="store_true", help="do not print the final summary")
    parser.add_argument(
        "--max-outputs-per-event",
        type=_positive,
        metavar="N",
        help="print at most N complex events per event and report on stderr each event "
        "whose output was cut (default: unlimited)",
    )
    parser.add_argument(
        "--max-lateness",
        type=_duration,
        metavar="DURATION",
        help="evaluate events in --time-field order when they arrive at most DURATION "
        "(500ms, 2s, 1m, 1h) after a later event; later ones stay late (default: none, "
        "input order)",
    )
    parser.set_defaults(handler=run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _duration(text: str) -> float:
    from cerfleet.events.reorder import parse_duration

    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _lateness(form: Pattern, flag: float | None) -> float | str | None:
    """The lateness bound: the query's CREATE QUARANTINE policy for its streams, else
    ``--max-lateness``; a message when both are given and disagree."""
    policy = form.quarantine
    if policy is None or flag == form.max_lateness:
        return flag
    if flag is not None:
        declared = form.max_lateness
        said = "arrival order" if declared is None else f"a bound of {declared:g} ms"
        return (
            f"--max-lateness {flag:g} ms contradicts the query's {policy.kind.value} "
            f"quarantine ({said}); give one of them"
        )
    return form.max_lateness


def _error(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Handler of ``cerfleet run``; returns the exit code."""
    # Imported here so ``cerfleet --help``/``--version`` work without loading
    # the compiler (and its grammar).
    from cerfleet.evaluation.query_evaluator import QueryEvaluator
    from cerfleet.languages import FRONTENDS, Writer, detect, writer
    from cerfleet.output import json_lines
    from cerfleet.query import compile_query
    from cerfleet.streams import steps

    query_path: str = args.query
    try:
        text = Path(query_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        _error(f"{query_path}: cannot read query file: {_describe(err)}")
        return EXIT_USAGE
    language: str = (args.language or detect(text)).lower()
    if language not in FRONTENDS:
        _error(f"unknown query language {language!r} (known: {', '.join(sorted(FRONTENDS))})")
        return EXIT_USAGE
    if language in ("spaseq", "rsepql"):
        from cerfleet.cli.rdf_run import run_rdf

        return run_rdf(args, text, language)
    if args.events is None:
        _error("EVENTS is required (an event file, or - for stdin)")
        return EXIT_USAGE
    write: Writer
    try:
        # A MATCH_RECOGNIZE skip mode the automaton cannot select compiles too: its
        # evaluator is the standard's selection (``compiled.selecting``).
        compiled = compile_query(
            text,
            type_field=args.type_field,
            time_field=args.time_field,
            language=language,
            stream_field=args.stream_field,
        )
        write = writer(language, text) or json_lines
    except CEQLError as err:
        _error(f"{query_path}: {err}")
        return EXIT_USAGE
    max_lateness = _lateness(compiled.pattern, args.max_lateness)
    if isinstance(max_lateness, str):
        _error(f"{query_path}: {max_lateness}")
        return EXIT_USAGE

    source: BinaryIO
    if args.events == STDIN:
        name = STDIN_NAME
        source = sys.stdin.buffer
    else:
        name = args.events
        try:
            source = open(args.events, "rb")  # noqa: SIM115 - closed below
        except OSError as err:
            _error(f"{args.events}: cannot read event file: {_describe(err)}")
            return EXIT_USAGE

    evaluator = compiled.evaluator()
    evaluator.max_outputs = args.max_outputs_per_event
    out = _binary(sys.stdout)
    events = complex_events = malformed = 0
    clocks = None
    warned = False
    progress = _Progress.for_input(source, quiet=args.quiet)
    try:
        for step in steps(
            compiled,
            evaluator,
            source,
            format=args.format,
            strict=args.strict,
            max_lateness=max_lateness,
        ):
            for line, reason in step.reports:
                _error(f"{name}:{line}: {reason}")
            clocks = step.clocks
            if not warned and clocks is not None and (warning := clocks.warning()):
                _error(warning)  # once, after the first batch with events
                warned = True
            events += step.events
            malformed += step.malformed
            if step.complex_events:
                out.write(write(step.complex_events))
                out.flush()
                complex_events += len(step.complex_events)
            if progress is not None:
                progress.show(step.bytes_read, events, complex_events)
        if not isinstance(evaluator, QueryEvaluator) and (pending := evaluator.finish()):
            out.write(write(pending))  # the end of the input makes them final
            complex_events += len(pending)
    except MalformedEvent as err:
        _error(f"{name}:{err.line}: {err.reason}" if err.source is None else str(err))
        return EXIT_USAGE
    except OSError as err:
        if isinstance(err, BrokenPipeError):
            raise  # handled (quietly) by main()
        _error(f"{name}: read error: {_describe(err)}")
        return EXIT_USAGE
    finally:
        if progress is not None:
            progress.close()
        if source is not sys.stdin.buffer:
            source.close()
    out.flush()
    if not args.quiet:
        late = f", {evaluator.late} late events ignored" if evaluator.late else ""
        cut = f", {evaluator.truncated} events truncated" if evaluator.truncated else ""
        if clocks is not None and clocks.unreadable:
            cut += f", {clocks.unreadable} events without a readable clock"
        if clocks is not None and clocks.warning() is not None and not warned:
            _error(clocks.warning() or "")
        _error(
            f"{events} events, {complex_events} complex events, "
            f"{malformed} malformed lines skipped{late}{cut}"
        )
    return EXIT_OK


class _Progress:
    """One line on a terminal's stderr, redrawn at most every ``PERIOD`` seconds after a
    batch (batches are 1 MiB, so it costs nothing per event): bytes read of the file's
    size, events, events/s and complex events."""

    PERIOD = 0.25

    def __init__(self, total: int) -> None:
        self.total = total
        self.start = time.monotonic()
        self.shown = 0.0

    @classmethod
    def for_input(cls, source: BinaryIO, *, quiet: bool) -> _Progress | None:
        """A bar for a regular file read while stderr is a terminal, else None."""
        if quiet or not sys.stderr.isatty():
            return None
        try:
            info = os.fstat(source.fileno())
        except (OSError, ValueError, AttributeError):
            return None
        return cls(info.st_size) if stat.S_ISREG(info.st_mode) and info.st_size else None

    def show(self, read: int | None, events: int, complex_events: int) -> None:
        now = time.monotonic()
        if read is None or now - self.shown < self.PERIOD:
            return
        self.shown = now
        rate = events / max(now - self.start, 1e-9)
        sys.stderr.write(
            f"\r{100 * read / self.total:5.1f}% of {self.total / 1e6:,.1f} MB, "
            f"{events:,} events ({rate:,.0f}/s), {complex_events:,} complex events\x1b[K"
        )
        sys.stderr.flush()

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")  # the summary line takes its place
            sys.stderr.flush()


class _TextSink:
    """Bytes written to a text stream without a binary buffer (an embedding program's
    ``io.StringIO``, say): the output is UTF-8 JSON, so it decodes as it is."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, data: bytes) -> None:
        self._stream.write(data.decode("utf-8", "surrogateescape"))

    def flush(self) -> None:
        self._stream.flush()


def _binary(stream: TextIO) -> BinaryIO | _TextSink:
    buffer = getattr(stream, "buffer", None)
    return buffer if buffer is not None else _TextSink(stream)


def _describe(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err)
