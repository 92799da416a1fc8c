"""Letters → partition groups: a batch's rows split by ``PARTITION BY`` key, vectorised."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any, TypeAlias, overload

from cerfleet.cea.vector_predicates import Columns

if TYPE_CHECKING:
    import numpy as np
else:
    from cerfleet.lazy_numpy import np


Group: TypeAlias = "tuple[tuple[Any, ...], np.ndarray]"  # a key and its rows


class Groups(Sequence[Group]):
    """A batch's partition groups, each ``(key, row indexes)`` made when read: with one
    key per row (a many-key ``PARTITION BY``), holding them all at once cost a tuple, a
    key tuple and an index array per row of the batch, the largest passing peak of a
    batch."""

    __slots__ = ("_bounds", "_groups", "_keys", "_radices", "_sorted_rows", "_values")

    def __init__(
        self,
        keys: np.ndarray,
        first: np.ndarray,
        sorted_rows: np.ndarray,
        bounds: np.ndarray,
        values: list[list[Any]],
    ) -> None:
        self._keys = keys.tolist()
        self._groups = np.argsort(first, kind="stable").tolist()  # by first appearance
        self._sorted_rows = sorted_rows
        self._bounds = bounds.tolist()
        self._values = values[::-1]
        self._radices = [len(v) for v in self._values]

    def __len__(self) -> int:
        return len(self._groups)

    @overload
    def __getitem__(self, i: int) -> Group: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Group]: ...

    def __getitem__(self, i: int | slice) -> Group | Sequence[Group]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        g = self._groups[i]
        c = self._keys[g]
        key: list[Any] = []
        for radix, uniques in zip(self._radices, self._values, strict=True):
            c, k = divmod(c, radix)
            key.append(uniques[k])
        key.reverse()
        return tuple(key), self._sorted_rows[self._bounds[g] : self._bounds[g + 1]]

    def __iter__(self) -> Iterator[Group]:
        return map(self.__getitem__, range(len(self._groups)))


# The column kinds (numpy's ``dtype.kind``) ``partition_groups`` groups by: numbers and
# strings; a key column of any other kind sends the batch row by row.
GROUPED_KINDS = "iufU"


def partition_groups(attrs: tuple[str, ...], cols: Columns, n: int) -> Sequence[Group] | None:
    """The batch's rows grouped by PARTITION BY key, in order of first appearance, each
    with its row indexes in order; rows with a missing (NaN) key attribute are in no
    group. ``[((), all rows)]`` without PARTITION BY; None when a key column is neither
    numbers nor strings (the caller then goes row by row)."""
    if not attrs:
        return [((), np.arange(n))]
    valid = np.ones(n, dtype=bool)
    code = np.zeros(n, dtype=np.int64)
    values: list[list[Any]] = []
    for attr in attrs:
        col = cols.get(attr)
        if col is None:
            return []
        if col.dtype.kind not in GROUPED_KINDS:
            return None
        if col.dtype.kind == "f":
            valid &= ~np.isnan(col)
        uniques, inverse = np.unique(col, return_inverse=True)
        code = code * len(uniques) + inverse.reshape(-1)
        values.append(uniques.tolist())
    rows = np.flatnonzero(valid)
    if not len(rows):
        return []
    keys, first, group = np.unique(code[rows], return_index=True, return_inverse=True)
    order = np.argsort(group.reshape(-1), kind="stable")
    bounds = np.searchsorted(group.reshape(-1)[order], np.arange(len(keys) + 1))
    # Each group's rows are a slice of the rows sorted by group (a view, not a copy).
    return Groups(keys, first, rows[order], bounds, values)


def column_length(cols: Mapping[str, np.ndarray]) -> int:
    lengths = {len(c) for c in cols.values()}
    if len(lengths) > 1:
        raise ValueError(f"columns of different lengths: {sorted(lengths)}")
    return lengths.pop() if lengths else 0


_INT64 = (-(2**63), 2**63 - 1)


def checked_labels(positions: np.ndarray | Sequence[int], n: int, next_free: int) -> list[int]:
    """``checked_positions`` as a list, for a batch taken row by row: a list of Python
    ints is checked without numpy, whose set-up costs more than checking a few rows."""
    if (
        type(positions) is not list
        or len(positions) != n
        or not n
        or set(map(type, positions)) != {int}
        or not _INT64[0] <= min(positions) <= max(positions) <= _INT64[1]
    ):
        return checked_positions(positions, n, next_free).tolist()
    if positions[0] < next_free:
        raise ValueError(f"position {positions[0]} is below the next free position {next_free}")
    if any(b <= a for a, b in pairwise(positions)):
        raise ValueError("positions must be strictly increasing")
    return positions


def checked_positions(positions: np.ndarray | Sequence[int], n: int, next_free: int) -> np.ndarray:
    """Labels a caller gave a batch's rows, as an integer array, checked: ``n`` of them,
    strictly increasing, none below ``next_free``."""
    labels = np.asarray(positions)
    if labels.ndim != 1 or len(labels) != n:
        raise ValueError(f"{len(labels)} positions for {n} events")
    if not n:
        return labels.astype(np.int64)
    if labels.dtype.kind not in "iu":
        raise TypeError(f"positions must be integers, got {labels.dtype}")
    if labels[0] < next_free:
        first = int(labels[0])
        raise ValueError(f"position {first} is below the next free position {next_free}")
    if not np.all(labels[1:] > labels[:-1]):
        raise ValueError("positions must be strictly increasing")
    return labels
