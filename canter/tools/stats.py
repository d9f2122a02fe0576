"""Aggregate statistics across seeds, as rliable computes them (Agarwal et al., 2021).

The interquartile mean (IQM) is the mean of the middle 50% of the scores (``scipy.stats.trim_mean``
with 25% cut from each end); its confidence interval is a percentile bootstrap that resamples runs
with replacement within each task (stratified bootstrap; one task = a plain bootstrap over seeds).
"""
from __future__ import annotations

import numpy as np


def iqm(scores: np.ndarray) -> float:
    """Interquartile mean of all ``scores``: drop ``int(0.25 * n)`` from each end, average the rest."""
    x = np.sort(np.asarray(scores, dtype=np.float64).ravel())
    if x.size == 0:
        return float("nan")
    cut = int(0.25 * x.size)
    return float(x[cut:x.size - cut].mean())


def _iqm_rows(samples: np.ndarray) -> np.ndarray:
    """IQM of each row of a 2-D array (rows = bootstrap replicates)."""
    x = np.sort(samples, axis=1)
    cut = int(0.25 * x.shape[1])
    return x[:, cut:x.shape[1] - cut].mean(axis=1)


def bootstrap_ci(scores: np.ndarray, reps: int = 10_000, size: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap CI of the IQM of ``scores`` shaped ``[runs]`` or ``[runs, tasks]``.

    Each replicate draws ``runs`` runs with replacement independently for every task (rliable's
    ``StratifiedBootstrap``) and takes the IQM over all drawn scores.
    """
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    runs, tasks = x.shape
    if runs == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, runs, size=(reps, runs, tasks))
    drawn = x[idx, np.arange(tasks)].reshape(reps, runs * tasks)
    stats = _iqm_rows(drawn)
    alpha = (1.0 - size) / 2.0
    lo, hi = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def summarize(scores: list[float] | np.ndarray, reps: int = 10_000, seed: int = 0) -> dict[str, float]:
    """Median, quartiles, IQM and its 95% bootstrap CI of one task's final returns across seeds."""
    x = np.asarray(scores, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        nan = float("nan")
        return {"median": nan, "q25": nan, "q75": nan, "iqr": nan, "iqm": nan, "iqm_low": nan, "iqm_high": nan}
    q25, median, q75 = np.quantile(x, [0.25, 0.5, 0.75])
    lo, hi = bootstrap_ci(x, reps=reps, seed=seed)
    return {"median": float(median), "q25": float(q25), "q75": float(q75), "iqr": float(q75 - q25),
            "iqm": iqm(x), "iqm_low": lo, "iqm_high": hi}
