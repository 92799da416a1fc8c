"""What both Spark jobs do as scripts: parse, run, print a summary line and its JSON."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from cerfleet.errors import CerfleetError

__all__ = ["job_main"]


def job_main(
    prog: str,
    description: str,
    declare: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], dict[str, Any]],
    describe: Callable[[dict[str, Any]], str],
    argv: Sequence[str] | None,
) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    declare(parser)
    args = parser.parse_args(argv)
    try:
        result = run(args)
    except CerfleetError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    # The last line is for programs (tests, benchmarks, schedulers): the same, as JSON.
    print(describe(result), flush=True)
    print(json.dumps({"summary": result}), flush=True)
    return 0
