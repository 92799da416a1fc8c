"""The query languages: each a front-end turning text into the pattern form.

A front-end is a module of its own (its grammar file beside it) exposing a function
``text -> pattern.Pattern`` that raises ``CEQLError`` (line, column, what was expected)
on bad text. This table names them; they are imported on first use, so the compiler
never depends on a front-end and no front-end on another.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from cerfleet import pattern
from cerfleet.complex_event import ComplexEvent
from cerfleet.errors import CerfleetError

if TYPE_CHECKING:
    from cerfleet.match_recognize.selecting import SelectingEvaluator
    from cerfleet.plan import QueryPlan

Frontend = Callable[[str], pattern.Pattern]
Writer = Callable[[Sequence[ComplexEvent]], bytes]

# Language name → "module:function".
FRONTENDS: dict[str, str] = {
    "ceql": "cerfleet.ceql.parser:parse_and_check",
    "match_recognize": "cerfleet.match_recognize.translate:parse_and_check",
    "spaseq": "cerfleet.spaseq.translate:parse_and_check",
    "rsepql": "cerfleet.rsepql.translate:parse_and_check",
}

# Languages whose output is not the complex events themselves: "module:function"
# taking the query text and returning a function complex events → JSON Lines bytes.
WRITERS: dict[str, str] = {
    "match_recognize": "cerfleet.match_recognize.selecting:writer",
}

# Languages some of whose queries select matches in a way the automaton cannot (the
# standard's preferred matches of MATCH_RECOGNIZE): "module:function" taking the query
# text and returning None (compiled as usual) or the ``Selection`` that runs it.
SELECTIONS: dict[str, str] = {
    "match_recognize": "cerfleet.match_recognize.selecting:selection",
}

DEFAULT = "ceql"
_MATCH_RECOGNIZE = re.compile(r"\bMATCH_RECOGNIZE\b", re.IGNORECASE)
_SPASEQ = re.compile(r"\bDEFINE\s+GPM\b", re.IGNORECASE)
_RSEPQL = re.compile(r"\bEVENT\s+ON\b", re.IGNORECASE)


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


def detect(text: str) -> str:
    """The language of a query text: MATCH_RECOGNIZE when it uses the keyword, SPAseq
    when it defines a GPM, RSEP-QL when it has an ``EVENT ON`` window (CEQL has none
    of them), else the default."""
    if _SPASEQ.search(text):
        return "spaseq"
    if _RSEPQL.search(text):
        return "rsepql"
    return "match_recognize" if _MATCH_RECOGNIZE.search(text) else DEFAULT


def writer(language: str, text: str) -> Writer | None:
    """The output stage of ``language`` for the query ``text`` (None: the complex
    events as they are, ``cerfleet.output``)."""
    target = WRITERS.get(language.lower())
    if target is None:
        return None
    module, _, name = target.partition(":")
    build: Callable[[str], Writer] = getattr(importlib.import_module(module), name)
    return build(text)


class RowWriter(Protocol):
    """A ``WRITERS`` entry seen one complex event at a time, as the fleet and backfills
    use it: the output rows of each complex event, in order, and the state carried from
    one to the next (MATCH_RECOGNIZE's MATCH_NUMBER per partition), which ``export`` and
    ``restore`` move through a checkpoint as JSON."""

    def rows(self, ce: ComplexEvent) -> list[dict[str, Any]]: ...

    def export(self) -> Any: ...

    def restore(self, state: Any) -> None: ...


def row_writer(language: str, text: str) -> RowWriter | None:
    """``writer`` as a ``RowWriter`` (None: the language outputs complex events)."""
    return cast("RowWriter | None", writer(language, text))


class Selection(Protocol):
    """A query evaluated by its language's own selection over the events the plan of
    ``form`` (every match) decodes: ``evaluator`` and ``restore`` make its evaluators."""

    form: pattern.Pattern

    def evaluator(self, query: QueryPlan) -> SelectingEvaluator: ...

    def restore(self, query: QueryPlan, data: bytes) -> SelectingEvaluator: ...


def selection(language: str, text: str) -> Selection | None:
    """The selection of the query ``text`` (None: the automaton selects its matches);
    raises ``CEQLError`` (line, column) on bad text."""
    target = SELECTIONS.get(language.lower())
    if target is None:
        return None
    module, _, name = target.partition(":")
    build: Callable[[str], Selection | None] = getattr(importlib.import_module(module), name)
    return build(text)


def parse(text: str, language: str = DEFAULT) -> pattern.Pattern:
    """``text`` in the pattern form, through the front-end of ``language``."""
    return frontend(language)(text)
