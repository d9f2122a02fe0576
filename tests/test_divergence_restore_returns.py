"""divergence_guard: restore rewinds the agent (weights, optimizers, statistics) but not the envs: the running
discounted returns of the episodes under way (reward normalisation) follow the envs, not the agent."""
from __future__ import annotations

import numpy as np

import canter
from canter.trainers.guard import Divergence


def test_a_restore_keeps_the_running_returns_of_the_episodes_under_way():
    """The restore put back the returns of the episodes under way when the last good state was taken (zeros at the
    start), so the return statistics took the rest of those episodes as if they had begun at the restore."""
    trainer = canter.make_trainer("ppo", "CartPole-v1", divergence_guard="restore", normalize_reward=True, n_envs=2,
                                  n_steps=16, batch_size=32, n_epochs=1, max_steps=320, eval_every=0, eval_episodes=1)
    loop = trainer()
    for _ in range(2):
        next(loop)
    agent = trainer.agent
    returns = agent._returns.copy()
    assert (returns != 0).any()  # episodes under way (the state remembered at the start had zeros)
    trainer.guard.handle(Divergence("loss 'value_loss' (nan)", trainer.step))
    np.testing.assert_array_equal(agent._returns, returns)
    assert trainer.guard.restores == 1
    loop.close()
    trainer.close()
