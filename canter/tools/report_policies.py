"""The report's per-policy returns for a run of several policies (``policies: type | agent``): each policy's
training episodes in ``history.parquet`` (its ``policy`` column) and the last and best of their rolling mean over
``reward_window`` episodes, as each policy's member trainer keeps it, and that rolling mean's line on the learning
curve. A run of one policy has no such column and no section."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

#: the colours of the report's per-policy rolling means: matplotlib's ten without the red of the evaluations
#: (``#d62728``, its fourth: a fourth policy's line read as the evaluation mean) and the grey near the episodes' dots
POLICY_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")


def policy_rows(run: Any) -> list[dict[str, Any]]:
    """One row per policy of ``run`` (a :class:`~canter.tools.rundata.RunData`), in the order its episodes first
    appear: ``policy``, ``episodes``, ``last_rolling_return``, ``best_rolling_return``; ``[]`` where the history has
    no ``policy`` column (one policy) or no file."""
    import pyarrow.parquet as pq

    from canter.tools.rundata import read_policies

    path = run.dir / "history.parquet"
    policies = read_policies(path) if path.is_file() else None  # as canter plot and the learning curve name them
    if policies is None:
        return []
    returns = pq.read_table(path, columns=["episode_return"]).column(0).cast("float64").to_numpy(zero_copy_only=False)
    window = max(1, int(run.config.get("reward_window") or 100))
    rows = []
    for policy in dict.fromkeys(policies):
        rolling = rolling_mean(returns[policies == policy], window)
        rows.append({"policy": policy, "episodes": len(rolling), "last_rolling_return": float(rolling[-1]),
                     "best_rolling_return": float(np.nanmax(rolling)) if np.isfinite(rolling).any() else None})
    return rows


def rolling_mean(returns: np.ndarray, window: int) -> np.ndarray:
    """Each episode's mean of the last ``window`` returns up to it, as the member trainer's ``np.mean`` of its
    ``recent_returns`` is: a window holding a NaN or infinite return is averaged as it is (NaN, inf) and the next,
    once it has left, is finite again (a running sum kept it to the end)."""
    idx = np.arange(1, len(returns) + 1)
    start = idx - np.minimum(idx, window)
    odd = ~np.isfinite(returns)
    sums = np.cumsum(np.concatenate([[0.0], np.where(odd, 0.0, returns)]))
    odds = np.cumsum(np.concatenate([[0], odd]))
    rolling = (sums[idx] - sums[start]) / (idx - start)
    for i in np.flatnonzero(odds[idx] > odds[start]):  # the windows with a non-finite return, averaged as they are
        rolling[i] = np.mean(returns[start[i]:idx[i]])
    return rolling


def policy_section(run: Any, table: Any) -> str:
    """The report's "Policies" section (``table``: the report's table renderer), or ``""`` for a run of one policy
    (its report is unchanged)."""
    rows = policy_rows(run)
    if not rows:
        return ""
    window = int(run.config.get("reward_window") or 100)
    columns = [("policy", "policy"), ("episodes", "training episodes"),
               ("last_rolling_return", "last rolling return"), ("best_rolling_return", "best rolling return")]
    return (f"\n<h2>Policies</h2><p class=\"note\">Each policy's training episodes (every agent's of it) and their "
            f"rolling mean over {window} episodes.</p>{table(rows, columns)}")


def draw_policy_means(ax: Any, run: Any, drawn: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
                      ) -> bool:
    """Each policy's rolling mean, one line per policy, on the learning curve ``ax`` of ``run`` (a
    :class:`~canter.tools.rundata.RunData`), as ``canter plot`` draws it (``drawn``: the rows to draw of a curve);
    False, with nothing drawn, for a run of one policy (its one rolling mean is drawn as before)."""
    from canter.tools.plot import lone_markers, run_curve
    from canter.tools.plot_policies import policy_run, run_policies

    policies = run_policies(run)
    window = run.config.get("reward_window", 100)
    for i, policy in enumerate(policies):
        x, y = drawn(*run_curve(policy_run(run, policy)))
        ax.plot(x, y, linewidth=1.8, color=POLICY_COLORS[i % len(POLICY_COLORS)],
                label=f"{policy}: rolling mean ({window} episodes)", **lone_markers(y))
    return bool(policies)
