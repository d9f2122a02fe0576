"""Helpers of a trainer's update step: a minibatch that does not fit in memory, and the mean of several
updates' statistics."""
from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from canter.errors import CanterError


@contextmanager
def minibatches_fit(batch_size: int) -> Iterator[None]:
    """Turn a failed allocation inside the block (NumPy's MemoryError, torch's "can't allocate memory"
    RuntimeError, whose traceback is many C++ frames) into a one-line :class:`CanterError` naming
    ``hparams.batch_size``, the size that makes a minibatch's gradient step that large; other errors
    pass unchanged."""
    try:
        yield
    except (MemoryError, RuntimeError) as exc:
        too_big = re.search(r"can't allocate memory: you tried to allocate (\d+) bytes", str(exc))
        if not (isinstance(exc, MemoryError) or too_big):
            raise
        size = f" (one of its tensors needs {int(too_big.group(1)) / 2**30:,.1f} GiB)" if too_big else ""
        raise CanterError(f"a gradient step on a minibatch of hparams.batch_size {batch_size:,} transitions does "
                          f"not fit in memory{size}; lower hparams.batch_size") from None


def mean_stats(all_stats: list[dict[str, float]]) -> dict[str, float]:
    """Per-key means of several updates' statistics (a key counts only the updates that report it)."""
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for stats in all_stats:
        for k, v in stats.items():
            totals[k] = totals.get(k, 0.0) + v
            counts[k] = counts.get(k, 0) + 1
    return {k: v / counts[k] for k, v in totals.items()}
