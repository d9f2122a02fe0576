"""Stable-Baselines3 as a reference, continued: canter's DDPG update, and on-policy rollout collection
from a real env, end to end.

* DDPG (``canter.algorithms.ddpg``: TD3's update with one critic, no target policy smoothing, an
  actor and target update every step) against SB3's ``DDPG.train()`` (TD3 with ``policy_delay=1``,
  ``target_noise_clip=0``, one critic): both libraries' defaults (checked), identical actor, critic
  and (perturbed) target networks, identical minibatches, STEPS gradient steps; per-step critic and
  actor losses and every parameter afterwards, targets included. The helpers are
  ``test_reference_sb3_offpolicy``'s (same tolerances).
* On-policy collection: canter's ``OnPolicyTrainer`` (built by ``canter.make_trainer``, driven by
  its own generator) and SB3's ``collect_rollouts`` each collect from CartPole-v1 with a 20-step
  ``TimeLimit`` on 3 envs seeded the same way (sub-env ``i`` reset with ``seed + i``), with
  identical actor-critic weights and actions forced to the same function of the observation; then
  every real transition's observation, action, log-probability, value, reward, advantage and return
  is compared. The layouts differ: canter keeps a reset-only row (``valid`` False) after each
  episode end and bootstraps a truncated step from the value stored on that row, SB3 resets inside
  ``step`` and adds ``gamma * V(terminal_obs)`` to the truncated step's reward.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

sb3 = pytest.importorskip("stable_baselines3")
pytestmark = pytest.mark.usefixtures("restore_global_rngs")  # SB3's seed= reseeds them process-wide

from stable_baselines3.common.buffers import RolloutBuffer as SB3RolloutBuffer  # noqa: E402
from stable_baselines3.common.logger import Logger  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402
from test_reference_sb3_offpolicy import (  # noqa: E402
    STEPS,
    _assert_params_close,
    _assert_shared_defaults,
    _box_batches,
    _copy_actor_critic,
    _feed,
    _logged,
    _params,
    _record_calls,
    _sb3,
)
from test_reference_sb3_onpolicy import _copy_weights  # noqa: E402

import canter  # noqa: E402
from canter.algorithms.base import ActOutput  # noqa: E402
from canter.algorithms.ddpg import DDPG, DDPGConfig  # noqa: E402


# -- DDPG ---------------------------------------------------------------------------------------
def _ddpg_pair() -> tuple[DDPG, sb3.DDPG]:
    """canter's and SB3's DDPG on Pendulum-v1 with their defaults, identical networks (targets
    perturbed away from the online networks, in both)."""
    env = gym.make("Pendulum-v1")
    torch.manual_seed(0)
    ours = DDPG(env.observation_space, env.action_space, DDPGConfig(), seed=0)
    theirs = _sb3(sb3.DDPG, "Pendulum-v1")
    c = ours.config
    _assert_shared_defaults(c, theirs)
    # DDPG = TD3 without its tricks: one critic, an actor and target update on every critic step and
    # no target policy smoothing (SB3: noise std 0.1 clipped to [0, 0]; canter: std 0, no draw)
    assert (c.policy_delay, c.n_critics, theirs.policy_delay, theirs.policy.critic.n_critics) == (1, 1, 1, 1)
    assert c.target_policy_noise == 0.0 and theirs.target_noise_clip == 0.0
    assert c.net_arch == [400, 300]
    _copy_actor_critic(ours, theirs)  # also checks: ReLU MLPs of net_arch, the same Adam settings
    return ours, theirs


def test_ddpg_gradient_steps_match_sb3(monkeypatch):
    """STEPS DDPG steps, each: the critic's MSE step against ``r + gamma (1 - terminated)
    Q'(s', mu'(s'))``, the actor's step on ``-Q(s, mu(s))`` through the updated critic, and the
    Polyak updates of both targets. SB3's ``train`` is called once per minibatch, so that every
    step's actor and critic loss can be compared (it logs their means)."""
    ours, theirs = _ddpg_pair()
    c = ours.config
    batches = _box_batches(gym.make("Pendulum-v1").observation_space, 1, STEPS, c.batch_size, seed=7)
    modules = ("actor", "actor_target", "critic", "critic_target")
    before = {name: _params(getattr(ours, name)) for name in modules}

    stats = [ours.learn(b) for b in batches]
    sb3_critic, sb3_actor = [], []
    with monkeypatch.context() as m:
        mse = _record_calls(m, "mse_loss")  # SB3's critic loss: one mse_loss per critic and step
        for b in batches:
            _feed(theirs, [b])
            theirs.train(gradient_steps=1, batch_size=c.batch_size)
            sb3_critic.append(_logged(theirs, "critic_loss"))
            sb3_actor.append(_logged(theirs, "actor_loss"))
    assert mse == pytest.approx(sb3_critic, rel=1e-6)
    assert theirs._n_updates == ours.updates == STEPS

    assert all("actor_loss" in s for s in stats)  # policy_delay 1: an actor step every step
    np.testing.assert_allclose([s["critic_loss"] for s in stats], sb3_critic, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose([s["actor_loss"] for s in stats], sb3_actor, rtol=1e-5, atol=1e-6)
    min_change = 0.5 * STEPS * c.lr
    for name in modules:
        _assert_params_close(getattr(ours, name), getattr(theirs, name), name, before[name],
                             min_change if name in ("actor", "critic") else 0.0)


# -- on-policy collection from a real env -----------------------------------------------------------
COLLECT_SEED, N_ENVS, N_STEPS, ROLLOUTS, MAX_EPISODE_STEPS = 3, 3, 20, 3, 20
GAMMA, LAM = 0.98, 0.9


def _forced_actions(obs: torch.Tensor) -> torch.Tensor:
    """The action both libraries take: a fixed pseudo-random function of the observation (a bit of
    a mix of its float32 mantissas). Episodes then last about as long as with uniform random actions,
    some terminated, some truncated at MAX_EPISODE_STEPS; the function is the same in both libraries
    because their observations are, bit for bit."""
    bits = obs.contiguous().view(torch.int32).to(torch.int64)
    return ((bits * torch.tensor([1, 3, 5, 7])).sum(-1) >> 4) & 1


def _canter_rollouts(monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict], object]:
    """ROLLOUTS rollouts collected by canter's on-policy trainer, run by its own generator on its
    own vector env. ``learn`` records the batch and what the buffer held instead of learning, so that
    the policy stays the one SB3 gets; the actions are forced (see ``_forced_actions``), the
    log-probabilities and values are the policy's. Sync vectorisation, like SB3's ``DummyVecEnv``,
    resets sub-env ``i`` with ``seed + i``; a native vectorised env (which ``auto`` picks from 4
    CartPole copies on) seeds one generator for all its sub-envs, so its episodes are not SB3's."""
    trainer = canter.make_trainer(
        "ppo", "CartPole-v1", seed=COLLECT_SEED, n_envs=N_ENVS, vectorization="sync",
        env_kwargs={"max_episode_steps": MAX_EPISODE_STEPS}, max_steps=ROLLOUTS * N_STEPS * N_ENVS,
        eval_every=0, eval_episodes=1, n_steps=N_STEPS, batch_size=N_STEPS * N_ENVS, gamma=GAMMA, gae_lambda=LAM,
        normalize_obs=False, normalize_reward=False,
    )
    assert all(e.spec.max_episode_steps == MAX_EPISODE_STEPS for e in trainer.env.env.envs)
    algo, agent = trainer.algorithm, trainer.agent
    sample = algo.act

    def act(obs, deterministic=False):  # noqa: ANN001, ANN202
        out = sample(obs, deterministic)
        actions = _forced_actions(obs)
        logp = torch.log_softmax(algo.model.action(obs), -1).gather(-1, actions[:, None]).squeeze(-1)
        return ActOutput(actions, logp, out.values)

    rollouts: list[dict] = []

    def learn(batch):  # noqa: ANN001, ANN202
        buf = trainer.buffer
        rollouts.append(dict(
            batch=type(batch)(*(x.clone() for x in batch)),  # without reset rows, views of the buffer
            valid=buf.valid.copy(), rewards=buf.rewards.copy(), terminated=buf.terminated.copy(),
            dones=buf.dones.copy(), values=buf.values.numpy().copy(), last_values=agent.value(trainer.obs).numpy(),
        ))
        return {}

    monkeypatch.setattr(algo, "act", act)
    monkeypatch.setattr(algo, "act_numpy", lambda obs, deterministic=False: None)  # the Agent then calls act
    monkeypatch.setattr(agent, "learn", learn)
    records = list(trainer())
    trainer.close()
    assert len(rollouts) == ROLLOUTS and records[-1].stop_reason == "max_steps"
    return rollouts, algo


def _sb3_rollout(monkeypatch: pytest.MonkeyPatch, algo, n_steps: int):  # noqa: ANN001
    """One SB3 rollout of ``n_steps`` steps per env from ``collect_rollouts``, with canter's weights and
    the same forced actions; SB3's own seeding (``DummyVecEnv.seed``: sub-env ``i`` gets ``seed + i``
    at the first reset)."""
    env = DummyVecEnv([lambda: gym.make("CartPole-v1", max_episode_steps=MAX_EPISODE_STEPS)] * N_ENVS)
    model = sb3.PPO("MlpPolicy", env, n_steps=n_steps, batch_size=n_steps * N_ENVS, gamma=GAMMA, gae_lambda=LAM,
                    seed=COLLECT_SEED, device="cpu")
    model.set_logger(Logger(None, []))
    _copy_weights(algo, model)
    policy = model.policy

    def forward(obs, deterministic=False):  # noqa: ANN001, ANN202
        actions = _forced_actions(obs)
        values, logp, _ = policy.evaluate_actions(obs, actions)
        return actions, values, logp

    monkeypatch.setattr(policy, "forward", forward)
    _, callback = model._setup_learn(n_steps * N_ENVS)
    assert model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=n_steps)
    return model


def _sb3_gae_slice(buf, rows: slice, env: int, last_value: float, last_done: bool):  # noqa: ANN001
    """SB3's advantages and returns of SB3's rows ``rows`` of ``env`` as one rollout on its own: the
    rollout cut where canter's was (bootstrapping from ``last_value`` unless ``last_done``)."""
    n = rows.stop - rows.start
    part = SB3RolloutBuffer(n, buf.observation_space, buf.action_space, device="cpu", gamma=GAMMA, gae_lambda=LAM,
                            n_envs=1)
    part.rewards[:, 0] = buf.rewards[rows, env]
    part.values[:, 0] = buf.values[rows, env]
    part.episode_starts[:, 0] = buf.episode_starts[rows, env]
    part.compute_returns_and_advantage(torch.tensor([last_value]), np.array([last_done]))
    return part.advantages[:, 0], part.returns[:, 0]


def test_onpolicy_collection_matches_sb3(monkeypatch):
    """Both libraries collect from the same seeded envs with the same weights and actions; every real
    transition of canter's ROLLOUTS rollouts is found in SB3's one long rollout (per env, in order)
    and must carry the same observation, action, log-probability, value and reward (SB3's reward of a
    truncated step = canter's reward + gamma * the value canter stored on the reset row after it),
    and the same advantage and return:

    * against SB3's own ``collect_rollouts`` result, for the transitions whose episode ended within
      canter's rollout (their GAE does not reach a rollout's end in either library);
    * for every transition, against SB3's GAE (``compute_returns_and_advantage``) on SB3's rows cut
      where canter's rollout ended (SB3's rollout is longer: canter's ``n_steps`` counts its
      reset-only rows, SB3's only real steps), bootstrapping from SB3's value of the observation
      there unless SB3 marks the next row an episode start.
    """
    rollouts, algo = _canter_rollouts(monkeypatch)
    model = _sb3_rollout(monkeypatch, algo, ROLLOUTS * N_STEPS)
    buf = model.rollout_buffer
    L = buf.buffer_size

    seen = dict(truncated=0, terminated=0, trunc_on_last_row=0, term_on_last_row=0, leading_reset=0, cut=0)
    pos = np.zeros(N_ENVS, int)  # per env: SB3's row of canter's next real transition
    for r, ro in enumerate(rollouts):
        batch, valid = ro["batch"], ro["valid"]
        batch_row = np.cumsum(valid.reshape(-1)).reshape(valid.shape) - 1  # (t, env) -> row of canter's batch
        T = valid.shape[0]
        for i in range(N_ENVS):
            ts = np.flatnonzero(valid[:, i])
            rows = np.arange(pos[i], pos[i] + len(ts))
            assert rows[-1] + 1 < L  # SB3's rollout goes on past canter's
            idx = torch.from_numpy(batch_row[ts, i])
            np.testing.assert_array_equal(batch.obs[idx].numpy(), buf.observations[rows, i])
            np.testing.assert_array_equal(batch.actions[idx].numpy(), buf.actions[rows, i, 0])
            np.testing.assert_allclose(batch.log_probs[idx].numpy(), buf.log_probs[rows, i], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(batch.values[idx].numpy(), buf.values[rows, i], rtol=1e-5, atol=1e-6)

            # episode ends: canter's done flag <-> SB3's episode start on the next row
            dones, term = ro["dones"][ts, i], ro["terminated"][ts, i]
            np.testing.assert_array_equal(dones, buf.episode_starts[rows + 1, i])
            # rewards: SB3 adds gamma * V(terminal obs) to a truncated step's; canter's V(final obs) is
            # the value stored on the reset row after it (the last values when that is the last row)
            next_values = np.append(ro["values"][1:, i], ro["last_values"][i])[ts]
            bootstrap = (dones > 0) & (term == 0)
            expected = ro["rewards"][ts, i] + np.where(bootstrap, GAMMA * next_values, 0.0)
            np.testing.assert_allclose(expected, buf.rewards[rows, i], rtol=1e-5, atol=1e-6)
            assert (ro["rewards"][ts, i] == 1.0).all()

            # advantages and returns, against SB3's GAE on the same rows cut where canter's rollout ends
            end = rows[-1] + 1
            adv, ret = _sb3_gae_slice(buf, slice(rows[0], end), i, buf.values[end, i], bool(buf.episode_starts[end, i]))
            np.testing.assert_allclose(batch.advantages[idx].numpy(), adv, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(batch.returns[idx].numpy(), ret, rtol=1e-5, atol=1e-5)
            # ... and against SB3's own result where no rollout end is in reach of the recursion
            ended = np.flatnonzero(dones)
            complete = np.arange(ended[-1] + 1) if len(ended) else np.arange(0)
            np.testing.assert_allclose(batch.advantages[idx[complete]].numpy(), buf.advantages[rows[complete], i],
                                       rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(batch.returns[idx[complete]].numpy(), buf.returns[rows[complete], i],
                                       rtol=1e-5, atol=1e-5)

            seen["truncated"] += int(bootstrap.sum())
            seen["terminated"] += int(term.sum())
            seen["trunc_on_last_row"] += int(valid[T - 1, i] and bootstrap[-1])
            seen["term_on_last_row"] += int(valid[T - 1, i] and term[-1] > 0)
            seen["leading_reset"] += int(not valid[0, i])
            seen["cut"] += int(not dones[-1])
            pos[i] += len(ts)
    # the layouts this is about all occurred: truncations and terminations inside rollouts, a
    # truncation on a rollout's last row (canter bootstraps from its last values there), a rollout
    # starting with a reset-only row, episodes running across a rollout's end
    assert seen["truncated"] >= 3 and seen["terminated"] >= 3
    assert seen["trunc_on_last_row"] >= 1 and seen["leading_reset"] >= 1 and seen["cut"] >= 1


# -- off-policy phases with several envs --------------------------------------------------------
def test_offpolicy_train_freq_counts_transitions_not_vector_steps():
    """docs/algorithms/dqn.md: canter's ``train_freq`` counts transitions (``ceil(train_freq /
    n_envs)`` vector steps per phase), SB3's counts ``VecEnv.step`` calls. With N envs SB3's
    ``train_freq: F`` is canter's ``F * N``: the same gradient steps for the same env steps."""
    from stable_baselines3.common.env_util import make_vec_env

    n_envs, freq, total = 4, 4, 800
    theirs = sb3.DQN("MlpPolicy", make_vec_env("CartPole-v1", n_envs=n_envs, seed=0), train_freq=freq,
                     gradient_steps=1, learning_starts=0, seed=0, device="cpu")
    theirs.learn(total)
    counts = {}
    for ours_freq in (freq, freq * n_envs):
        trainer = canter.make_trainer("dqn", "CartPole-v1", seed=0, max_steps=total, n_envs=n_envs, train_freq=ours_freq,
                                      gradient_steps=1, learning_starts=0, eval_every=10**9)
        for _ in trainer():
            pass
        counts[ours_freq] = trainer.agent.algorithm.updates
        trainer.close()
    assert theirs.num_timesteps == total and theirs._n_updates == total // (freq * n_envs) == 50
    assert counts == {freq * n_envs: 50, freq: 200}
