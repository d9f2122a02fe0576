"""Columns of rows written step by step into preallocated arrays (``canter collect``'s transitions).

A list of one small array per step and column, concatenated at the end, took ~1.4 KB of Python objects per
CartPole transition (46 bytes of data: 200k transitions grew the process by 290 MB) and held every image twice
at the end (the list and its concatenation). :class:`GrowingColumns` writes each step's rows into arrays of the
final dtypes, preallocated when the number of rows is known and doubled when it is not.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from canter.errors import CanterError


class GrowingColumns:
    """Arrays ``[capacity, *shape]`` per column, filled in order by :meth:`add`; :meth:`arrays` gives the rows
    written. ``columns`` maps each name to ``(row shape, dtype)``; ``capacity`` is the rows expected (more double
    it); ``what`` names the data in the one-line error of an allocation that does not fit in memory."""

    def __init__(self, columns: dict[str, tuple[tuple[int, ...], Any]], capacity: int, what: str) -> None:
        self.columns, self.what, self.rows = columns, what, 0
        self._arrays = self._allocate(max(1, int(capacity)))

    def _allocate(self, capacity: int) -> dict[str, np.ndarray]:
        try:
            return {k: np.empty((capacity, *shape), dtype) for k, (shape, dtype) in self.columns.items()}
        except (MemoryError, ValueError) as exc:  # NumPy's MemoryError, or 'array is too big' (a ValueError)
            row = sum(int(np.prod(shape)) * np.dtype(dtype).itemsize for shape, dtype in self.columns.values())
            raise CanterError(f"{self.what}: {capacity:,} rows of {row:,} bytes ({capacity * row / 2**30:.1f} GiB) do "
                              f"not fit in memory ({exc}); collect fewer") from None

    def add(self, **values: Any) -> None:
        """Append the same number of rows to every column (cast to the column's dtype)."""
        n = len(next(iter(values.values())))
        if self.rows + n > len(next(iter(self._arrays.values()))):
            grown = self._allocate(max(2 * len(next(iter(self._arrays.values()))), self.rows + n))
            for k, a in self._arrays.items():
                grown[k][:self.rows] = a[:self.rows]
            self._arrays = grown
        for k, v in values.items():
            self._arrays[k][self.rows:self.rows + n] = v
        self.rows += n

    def arrays(self) -> dict[str, np.ndarray]:
        """The rows written so far, per column (views, no copy)."""
        return {k: a[:self.rows] for k, a in self._arrays.items()}
