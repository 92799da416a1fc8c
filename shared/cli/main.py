"""``cerfleet``: the command-line entry point and its subcommand registry.

Each subcommand lives in its own module exposing ``register(subparsers) -> None``,
which adds a parser and sets ``handler=<callable(args) -> int>`` as its default.
Modules are imported when the parser is built, not at import time, and a
module whose package is not installed (``cerfleet.workers``,
``cerfleet.coordinator`` in a slim install) is skipped, so those packages plug in without this file
depending on them. Registration modules should stay light: import heavy
dependencies (Kafka clients, the engine) inside the handler.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from cerfleet.errors import CerfleetError

__all__ = ["COMMAND_MODULES", "build_parser", "main"]

PROG = "cerfleet"

# Order is the order in ``cerfleet --help``.
COMMAND_MODULES: tuple[str, ...] = (
    "cerfleet.cli.run",
    "cerfleet.cli.explain",
    "cerfleet.workers.cli",
    "cerfleet.coordinator.cli",
    "cerfleet.fleet.cli",
    "cerfleet.workers.backfill.cli",
)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PROG)
    except PackageNotFoundError:  # running from a source checkout, not installed
        return "unknown (not installed)"


class _VersionAction(argparse.Action):
    # argparse's "version" action wants the text when the parser is built, and
    # importlib.metadata costs a quarter of ``cerfleet --help``'s start-up.
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(f"{PROG} {_version()}")
        parser.exit()


def _import_optional(name: str) -> Any | None:
    """Import a command module, or None when its top-level package is absent.

    Only a missing package is tolerated: an ImportError raised from inside an
    installed package is a real bug and propagates.
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        missing = err.name or ""
        if name == missing or name.startswith(missing + "."):
            return None
        raise


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error reported on one line (exit code 2, as before).

    The full usage block would bury the one line that says what is wrong; ``--help``
    is where the usage is. Subcommand parsers are of this class too (argparse makes
    them with the class of their parent).
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser(modules: Sequence[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Complex event recognition: run CEQL queries over event streams.",
    )
    parser.add_argument(
        "--version", action=_VersionAction, nargs=0, help="show the version and exit"
    )
    subparsers = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    for name in modules:
        module = _import_optional(name)
        if module is not None:
            module.register(subparsers)
    return parser


def _silence_stdout() -> None:
    # After a reader closed the pipe (``| head``), Python would still try to
    # flush stdout at exit and print "Exception ignored ... BrokenPipeError".
    # Pointing the descriptor at /dev/null makes that last flush harmless.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a descriptor (captured in tests)
        pass


def main(argv: list[str] | None = None) -> int:
    """Run ``cerfleet`` with ``argv`` (default: the process arguments); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        # argparse exits for --help, --version and usage errors; return the code
        # instead so main() is callable from tests and other programs.
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = handler(args)
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except KeyboardInterrupt:
        return 130
    except CerfleetError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        # A file the user named (or a directory, a permission) in a place no handler
        # anticipated: still the user's mistake, not a bug worth a traceback.
        where = f"{err.filename}: " if err.filename else ""
        print(f"{PROG}: {where}{err.strerror or err}", file=sys.stderr)
        return 2
    except Exception as err:
        if not _is_kafka_error(err):
            raise
        print(f"{PROG}: Kafka: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    return code


def _is_kafka_error(err: Exception) -> bool:
    # Checked through sys.modules: importing confluent_kafka here would load it for
    # every command, ``cerfleet --help`` and ``cerfleet run`` included.
    kafka = sys.modules.get("confluent_kafka")
    return kafka is not None and isinstance(err, kafka.KafkaException)
