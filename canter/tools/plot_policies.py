"""``canter plot`` of runs of several policies (``policies: type | agent``): one curve per policy.

Such a run's ``history.parquet`` holds every agent's episodes with its ``policy``; its ``rolling_return`` column is
the mean over every policy's last episodes together. A policy's curve is the rolling mean of its own episodes'
returns over the run's ``reward_window`` (as its member trainer keeps it, and ``canter report``'s "Policies" section
shows it), one point per step. A group of such runs (seeds of one config) becomes one group per policy,
``"LABEL / POLICY"``, each drawn as a mean with a band like any group; a run of one policy stays as it is.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from canter.errors import CanterError, unknown
from canter.tools.report_policies import rolling_mean
from canter.tools.rundata import RunData


def run_policies(run: RunData) -> list[str]:
    """The policies of ``run`` in the order their episodes first appear in its history; ``[]`` for a run of one
    policy (no ``policy`` column) or one without a finished episode."""
    if run.history_policies is None:
        return []
    return list(dict.fromkeys(run.history_policies.tolist()))


def policy_run(run: RunData, policy: str) -> RunData:
    """``run`` as seen by one of its policies: the history rows of that policy's episodes, whose ``rolling_return``
    is the mean of its own last ``reward_window`` returns; no evaluations (they average every policy's agents)."""
    assert run.history_policies is not None
    mine = run.history_policies == policy
    history = {name: np.asarray(column)[mine] for name, column in run.history.items()}
    window = max(1, int(run.config.get("reward_window") or 100))
    if "episode_return" in history:
        history["rolling_return"] = rolling_mean(history["episode_return"], window)
    return dataclasses.replace(run, history=history, evaluations={}, history_policies=None)


def check_policies(runs: Sequence[RunData], policies: Sequence[str]) -> list[str]:
    """``policies`` without repeats, each one a policy of one of ``runs``; a CanterError naming the closest valid
    policy for one that is not, or saying so when none of the runs has several policies."""
    known = list(dict.fromkeys(p for run in runs for p in run_policies(run)))
    if policies and not known:
        raise CanterError(f"--policy selects among the policies of a run of several policies (policies: type | "
                          f"agent); none of the runs has such episodes, e.g. '{runs[0].dir}'")
    for name in policies:
        if name not in known:
            raise unknown("policy", name, known, see=None)
    return list(dict.fromkeys(policies))


def split_policies(groups: dict[str, list[RunData]], policies: Sequence[str] = ()) -> dict[str, list[RunData]]:
    """``groups`` (label -> runs) with each run of several policies replaced by one run per policy
    (:func:`policy_run`), grouped as ``"LABEL / POLICY"`` after the label's runs of one policy; ``policies``: only
    these (all when empty). Groups without such a run are unchanged."""
    out: dict[str, list[RunData]] = {}
    for label, runs in groups.items():
        single = [r for r in runs if not run_policies(r)]
        if single:
            out[label] = single
        for run in runs:
            for policy in run_policies(run):
                if not policies or policy in policies:
                    out.setdefault(f"{label} / {policy}", []).append(policy_run(run, policy))
    return out
