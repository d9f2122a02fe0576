"""PPO's rollout-buffer memory error on a run with Ray explorers (``--explorers N``): its rollout is every explorer's
envs, which 5842e7a6 counted against one explorer's copies (``2 agent rows (1 env copy x 2 agents)`` for CartPole on
2 explorers of one env each), where the budget warning of the same run says ``2 envs``."""
from __future__ import annotations

import os
import warnings

import pytest

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # read by Ray at import: every listener on loopback
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
pytest.importorskip("ray")

import canter  # noqa: E402


@pytest.mark.slow  # ~20 s: two Ray explorers start (and the session's cluster)
def test_a_single_agent_runs_rollout_memory_error_on_explorers_counts_envs(cluster):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_steps below one rollout: warned about, as the budget test checks
        trainer = canter.make_trainer("ppo", "CartPole-v1", ray_address=cluster, explorers=2, n_envs=1,
                                      n_steps=10**18, max_steps=100, eval_episodes=0)
    try:
        with pytest.raises(canter.errors.CanterError, match=r"the rollout buffer does not fit in memory \(hparams."
                           r"n_steps 1,000,000,000,000,000,000 x 2 envs = 2,000,000,000,000,000,000 steps"):
            trainer.setup()
    finally:
        trainer.close()
