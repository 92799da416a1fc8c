"""Numpy columns of a batch of events, for ``QueryEvaluator.process_columns``.

``columns_of(events, query.attributes)`` builds one array per attribute the
query reads. Exactness comes first: evaluated from these columns, a batch gives
exactly the complex events its events give one at a time (pass the events as
``process_columns(..., events=events)`` so complex events hold them, unchanged).
Speed comes second: the common shapes become arrays the vector passes read
(``cerfleet.cea.vector_predicates``); anything else becomes an object array of the
events' own values, which the evaluator reads through the original events.

Per attribute, from the Python values (missing and None alike are *missing*;
only exact ``bool``, ``int``, ``float`` and ``str`` count, subclasses do not):

* all missing: float64, all NaN (numbers that are all missing: every predicate
  on them is false, as on absent attributes);
* all ``bool``, none missing: bool. A bool array cannot mark a missing value and
  booleans are not numbers, so booleans with missing values are objects;
* all ``int`` within ±2**53: int64 when none is missing, else float64 with NaN
  for the missing ones (exact: such integers are exact floats, and NaN is how
  number columns spell missing);
* ``int`` and ``float`` mixed: float64 with NaN for missing, if every int is
  within ±2**53 (beyond, a float would round it while Python compares exactly);
* floats that are NaN or infinite make the column objects: NaN in a number
  column reads as *missing*, while a NaN value is present (``x != 1`` holds for
  it); an infinite timestamp is no clock for time windows but a float clock
  would be infinite;
* all ``str``, none missing: a ``U`` array, unless a string holds NUL (numpy
  drops trailing NULs) or padding every string to the longest would take much
  more memory than the strings themselves. A ``U`` array cannot mark a missing
  value: an empty-string sentinel would make ``name != 'x'`` true where a
  missing name makes it false, so strings with missing values are objects;
* anything else (mixed kinds, other types, big ints): an object array holding
  the values themselves (None where missing).

The type column follows the same rules: ``BatchLetters.letters`` compares it
with ``==`` per type name, which a ``U`` array, an all-NaN one (no type) and an
object array all answer exactly. Clock columns too: numbers are read as they
are, ISO-8601 strings are parsed per row (``cerfleet.events.timestamps``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["column", "columns_of"]

_EXACT = 2**53  # integers up to this magnitude are exact as float64
# A U array pads every string to the longest: above this many padding characters
# per stored character (plus a fixed allowance), the strings stay objects.
_PADDING = 4
_PADDING_ALLOWANCE = 1 << 16

_NONE = type(None)


def columns_of(
    events: Sequence[Mapping[str, Any]], attributes: Iterable[str]
) -> dict[str, np.ndarray]:
    """One numpy array per attribute, ``len(events)`` long (see the module docstring)."""
    return {name: column([e.get(name) for e in events]) for name in sorted(set(attributes))}


def column(
    values: Sequence[Any],
    kinds: set[type] | None = None,
    int_bounds: tuple[int, int] | None = None,
) -> np.ndarray:
    """The array standing for one attribute's values (None: missing).

    ``kinds`` (the set of the values' types) and ``int_bounds`` (the least and greatest
    int among them) may be given by a caller that computed them already."""
    kinds = set(map(type, values)) if kinds is None else set(kinds)
    missing = _NONE in kinds
    kinds.discard(_NONE)
    if not kinds:
        return np.full(len(values), np.nan)
    if kinds == {bool}:
        return _objects(values) if missing else np.array(values, dtype=bool)
    if kinds == {int}:
        if int_bounds is None:
            present = [v for v in values if v is not None] if missing else values
            int_bounds = (min(present), max(present))
        if int_bounds[0] >= -_EXACT and int_bounds[1] <= _EXACT:
            return np.array(values, dtype=np.float64 if missing else np.int64)
        return _objects(values)
    if kinds <= {int, float}:
        return _floats(values, missing)
    if kinds == {str} and not missing:
        return _strings(values)
    return _objects(values)


def _floats(values: Sequence[Any], missing: bool) -> np.ndarray:
    """Floats, possibly with ints, as float64 (None: NaN), or objects if not exact."""
    try:
        col = np.array(values, dtype=np.float64)
    except OverflowError:  # an int beyond the float range
        return _objects(values)
    nan = np.isnan(col)
    if np.isinf(col).any() or int(nan.sum()) != (values.count(None) if missing else 0):
        return _objects(values)  # infinite or NaN values
    # An int beyond 2**53 may have been rounded to exactly 2**53: look at the originals.
    for i in np.flatnonzero(np.abs(col) >= _EXACT).tolist():
        value = values[i]
        if type(value) is int and abs(value) > _EXACT:
            return _objects(values)
    return col


def _strings(values: Sequence[str]) -> np.ndarray:
    joined = "".join(values)
    if "\0" in joined:
        return _objects(values)
    width = max(map(len, values))
    if width * len(values) > _PADDING * len(joined) + _PADDING_ALLOWANCE:
        return _objects(values)
    return np.array(values, dtype=f"<U{max(width, 1)}")


def _objects(values: Sequence[Any]) -> np.ndarray:
    # fromiter stores each value as it is: lists and tuples are not unpacked.
    return np.fromiter(values, dtype=object, count=len(values))
