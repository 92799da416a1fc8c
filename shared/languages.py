"""The query languages: each a front-end turning text into the pattern form.

A front-end is a module of its own (its grammar file beside it) exposing a function
``text -> pattern.Pattern`` that raises ``CEQLError`` (line, column, what was expected)
on bad text. This table names them; they are imported on first use, so the compiler
never depends on a front-end and no front-end on another.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from cerfleet import pattern
from cerfleet.errors import CerfleetError

Frontend = Callable[[str], pattern.Pattern]

# Language name → "module:function".
FRONTENDS: dict[str, str] = {
    "ceql": "cerfleet.ceql.parser:parse_and_check",
}

DEFAULT = "ceql"


def frontend(language: str) -> Frontend:
    """The parse function of ``language`` (``CerfleetError`` naming the known ones if
    there is no such language)."""
    target = FRONTENDS.get(language.lower())
    if target is None:
        known = ", ".join(sorted(FRONTENDS))
        raise CerfleetError(f"unknown query language {language!r} (known: {known})")
    module, _, name = target.partition(":")
    parse: Frontend = getattr(importlib.import_module(module), name)
    return parse


def parse(text: str, language: str = DEFAULT) -> pattern.Pattern:
    """``text`` in the pattern form, through the front-end of ``language``."""
    return frontend(language)(text)
