"""Time limits end to end, for one algorithm of each of four families (on-policy, segment replay, off-policy,
async): a truncated episode bootstraps, a terminated one does not, checked against the values a hand computation
gives on a tiny env whose value is known.

:class:`~support.FixedLengthEnv`: one observation (zeros), reward 1 a step, episodes of 5 steps. With gamma 0.5 a
truncated episode's states are worth ``1 / (1 - 0.5) = 2`` (the time limit is not part of the task, so every
state bootstraps to the same value); a terminated one's state at step ``t`` is worth ``2 - 0.5 ** (4 - t)``, whose
mean over the 5 states (what a critic that cannot tell them apart learns) is 1.6125."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import canter
from canter.registry import register
from support import FixedLengthEnv


class _Terminates(FixedLengthEnv):
    truncates = False


register("env", "FixedLength-truncated-test")(lambda: FixedLengthEnv())
register("env", "FixedLength-terminated-test")(lambda: _Terminates())

TRUNCATED, TERMINATED = 2.0, float(np.mean([2 - 0.5 ** (4 - t) for t in range(5)]))  # 1.6125

#: per family: an algorithm, its small budget, and how to read the learned value of the observation
FAMILIES = {
    "on_policy": ("ppo", dict(max_steps=4000, n_steps=64)),
    "on_policy_replay": ("acer", dict(max_steps=3000)),
    "off_policy": ("dqn", dict(max_steps=3000, learning_starts=200, target_update_interval=100, lr=1e-3)),
    "async": ("impala", dict(max_steps=40000)),
}


def _value(agent) -> float:
    """The learned value of the env's one observation: V for actor-critics, the mean Q over actions for DQN."""
    obs = np.zeros((1, 2), np.float32)
    q = getattr(agent.algorithm, "q", None)
    if q is not None:
        with torch.no_grad():
            return float(q.value(torch.as_tensor(obs)).mean())
    return float(agent.value(obs)[0])


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("ending, expected", [("truncated", TRUNCATED), ("terminated", TERMINATED)])
def test_a_truncated_episode_bootstraps_and_a_terminated_one_does_not(family, ending, expected):
    algo, budget = FAMILIES[family]
    agent = canter.train(algo, f"FixedLength-{ending}-test", run_dir=None, seed=0, gamma=0.5, eval_every=0,
                         **budget)
    assert abs(_value(agent) - expected) < 0.15, (family, ending, _value(agent), expected)
