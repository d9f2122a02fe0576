"""The warning for a budget below one on-policy rollout of a run with Ray explorers (SyncTrainer, PPO
``--explorers N``): its rollout is every explorer's envs, which the message counted as agents of one env copy
(``2 agent rows (1 env copy x 2 agents)`` for CartPole on 2 explorers of one env each)."""
from __future__ import annotations

import os
import warnings

import pytest

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # read by Ray at import: every listener on loopback
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
pytest.importorskip("ray")

import canter  # noqa: E402


@pytest.mark.slow  # ~20 s: two Ray explorers start (and the session's cluster)
def test_a_single_agent_run_on_explorers_counts_envs_not_agents(cluster):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = canter.make_trainer("ppo", "CartPole-v1", ray_address=cluster, explorers=2, n_envs=1, n_steps=64,
                                      batch_size=64, max_steps=100, eval_episodes=0)
    trainer.close()
    said = [str(w.message) for w in caught if "less than one rollout" in str(w.message)]
    assert said == ["max_steps (100) is less than one rollout (n_steps 64 x 2 envs = 128 steps; --set n_steps=50 "
                    "makes one fit): the run takes 128 steps"], said
