"""Recurrent PPO at truncations: the value a truncated episode bootstraps from is V(final observation) computed
with that episode's memory, and the next episode starts from empty memory, checked against the model stepped
observation by observation (not against ``LSTMActorCritic.sequence``, which replays whatever episode starts the
trainer recorded, so a trainer that zeroed the memory at the wrong row would agree with it)."""
import numpy as np
import pytest
import torch

import canter

pytestmark = pytest.mark.filterwarnings("ignore:.*(less than one rollout|larger than one rollout).*")


def test_truncated_episodes_bootstrap_from_their_memory_and_the_next_starts_empty():
    trainer = canter.make_trainer("recurrent_ppo", "CartPole-v1", seed=0, max_steps=64, eval_every=0, n_envs=2,
                                  n_steps=32, batch_size=64, n_epochs=1, lstm_hidden=8,
                                  env_kwargs={"max_episode_steps": 5}, normalize_reward=False)
    algo = trainer.agent.algorithm
    seen = {}

    def checking(batch):
        seen["batch"] = batch
        seen["truncated"] = trainer.buffer.dones.copy(), trainer.buffer.terminated.copy()
        return {}

    algo.learn = checking
    for _ in trainer():
        break
    trainer.close()
    batch = seen["batch"]
    dones, terminated = seen["truncated"]
    assert ((dones == 1) & (terminated == 0)).sum() >= 6  # every 5 steps an episode is truncated, in both envs
    valid = batch.valid.numpy()
    model = algo.model
    with torch.no_grad():
        for env in range(2):
            state = model.initial_state(1)  # the run's first rollout: every env starts an episode
            for t in range(batch.obs.shape[0]):
                if t > 0 and not valid[t - 1, env]:  # the row after a reset-only row holds a new episode's first obs
                    state = model.initial_state(1)
                _, value, state = model.step(batch.obs[t, env:env + 1], state)
                # every row, the reset-only ones too: their value is V(final obs), what a truncation bootstraps from
                torch.testing.assert_close(value[0], batch.values[t, env], rtol=1e-5, atol=1e-6)
    truncated_rows = np.argwhere((dones == 1) & (terminated == 0))
    for t, env in truncated_rows[truncated_rows[:, 0] < batch.obs.shape[0] - 1]:
        assert not valid[t + 1, env]  # the next row is the reset-only row holding the final observation
        expected = batch.values[t, env] + batch.advantages[t, env]  # GAE's return: r + gamma V(final obs)
        reward = float(expected - algo.config.gamma * batch.values[t + 1, env])
        assert reward == pytest.approx(1.0, abs=1e-5)  # CartPole's reward: the bootstrap is V(final obs) exactly
