"""canter's recurrent PPO rollouts against sb3-contrib's ``RecurrentPPO.collect_rollouts`` (test_reference_sb3_recurrent
compares the update on a rollout built by hand; this compares collecting one).

The same LSTM actor-critic weights, the same deterministic env (``Ticker`` of test_reference_recurrent_rollout: env 0
terminates after 3 steps, env 1 is truncated by its time limit after 4; the reward does not depend on the sampled
action, so both libraries see the same observations and rewards). canter's NEXT_STEP stream has reset-only rows;
sb3-contrib's SAME_STEP stream has none and bootstraps a truncation by adding ``gamma V(terminal observation)``, with
the critic's memory after the step, to its reward. Compared per env, transition by transition: the values acting
stored (the memory zeroed at episode starts and carried across canter's rollouts), the episode starts, and the
advantages and returns of every transition whose episode ends inside its canter rollout (GAE is cut there in both).
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter

pytest.importorskip("sb3_contrib")
pytestmark = [pytest.mark.slow,  # about 6 s alone (a trainer and an SB3 model)
              pytest.mark.usefixtures("restore_global_rngs")]  # SB3's seed= reseeds them process-wide

from sb3_contrib import RecurrentPPO as SB3RecurrentPPO  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402
from test_reference_recurrent_rollout import TIME_LIMIT, Ticker  # noqa: E402

T, N, HIDDEN, GAMMA, LAM = 6, 2, 5, 0.9, 0.8


def _linear(mlp: torch.nn.Module) -> torch.nn.Linear:
    (layer,) = [m for m in mlp.modules() if isinstance(m, torch.nn.Linear)]
    return layer


def test_collected_rollouts_match_sb3_contrib():
    trainer = canter.make_trainer("recurrent_ppo", "HrecherTicker-v0", seed=0, max_steps=2 * T * N, eval_every=0,
                                  n_envs=N, n_steps=T, batch_size=T, n_epochs=1, lstm_hidden=HIDDEN, critic_lstm=True,
                                  gamma=GAMMA, gae_lambda=LAM, normalize_reward=False, normalize_obs=False,
                                  env_kwargs={"action_reward": 0.0})
    algo = trainer.agent.algorithm
    m = algo.model
    sb3 = SB3RecurrentPPO("MlpLstmPolicy", DummyVecEnv([lambda: gym.wrappers.TimeLimit(Ticker(0.0), TIME_LIMIT)] * N),
                          n_steps=2 * T, batch_size=2 * T, n_epochs=1, gamma=GAMMA, gae_lambda=LAM, seed=0, device="cpu",
                          policy_kwargs=dict(lstm_hidden_size=HIDDEN, net_arch=[], enable_critic_lstm=True,
                                             shared_lstm=False))
    p = sb3.policy
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for ours, theirs in ((m.lstm, p.lstm_actor), (m.critic_lstm, p.lstm_critic),
                             (_linear(m.actor), p.action_net), (_linear(m.critic), p.value_net)):
            for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
                a.copy_(0.4 * torch.randn(a.shape, generator=g))
                b.copy_(a)
    batches = []
    learn = algo.learn

    def keeping(batch):
        batches.append(batch)
        return learn(batch)

    algo.learn = keeping
    algo.optimizer.step = lambda *a, **k: None  # the weights stay: the second rollout acts as the first did
    for _ in trainer():
        pass
    trainer.close()
    theirs = {}

    def train():  # sb3-contrib's rollout, taken before its update
        buf = sb3.rollout_buffer
        theirs.update(values=buf.values.copy(), advantages=buf.advantages.copy(), returns=buf.returns.copy(),
                      starts=buf.episode_starts.copy(), obs=buf.observations.copy())

    sb3.train = train
    sb3.learn(total_timesteps=2 * T * N)
    assert len(batches) == 2 and theirs

    obs = torch.cat([b.obs for b in batches]).numpy()
    valid = torch.cat([b.valid for b in batches]).numpy()
    values = torch.cat([b.values for b in batches]).numpy()
    advantages = torch.cat([b.advantages for b in batches]).numpy()
    returns = torch.cat([b.returns for b in batches]).numpy()
    starts = torch.cat([b.starts for b in batches]).numpy()
    compared = 0
    for e in range(N):
        which = int(obs[0, e, 2])
        col = int(np.flatnonzero(theirs["obs"][0, :, 2] == which)[0])  # SB3's env of the same kind
        rows = np.flatnonzero(valid[:, e])
        n = len(rows)
        np.testing.assert_array_equal(obs[rows, e], theirs["obs"][:n, col])  # the same transitions, in order
        np.testing.assert_array_equal(starts[rows, e], theirs["starts"][:n, col].astype(bool))
        np.testing.assert_allclose(values[rows, e], theirs["values"][:n, col], rtol=0, atol=1e-6)
        # advantages where canter's rollout holds the rest of the episode (its GAE is cut at the rollout's end)
        for i, r in enumerate(rows):
            rollout_end = (r // T + 1) * T
            ended = [t for t in rows[i:] if t + 1 < min(rollout_end + 1, len(valid))
                     and (not valid[t + 1, e] or starts[t + 1, e])]
            if ended:
                assert advantages[r, e] == pytest.approx(theirs["advantages"][i, col], abs=1e-5)
                assert returns[r, e] == pytest.approx(theirs["returns"][i, col], abs=1e-5)
                compared += 1
    assert compared >= 10
