"""The off-policy trainer: Box action shapes, replay normalisation, schedules, acting, target updates, and
what it hands the replay buffer."""
import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from support import TINY


@pytest.mark.parametrize("algo", ["sac", "td3", "ddpg"])
def test_box_actions_of_several_dimensions_are_stored_flat_and_reach_the_env_in_its_shape(algo):
    from canter.registry import register
    from support import Box22Actions

    register("env", f"Box22Actions-{algo}-offpolicy-test")(lambda render_mode=None, **kw: Box22Actions())
    trainer = canter.make_trainer(algo, f"Box22Actions-{algo}-offpolicy-test", n_envs=2, max_steps=160,
                                  learning_starts=100, batch_size=16, net_arch=[32, 32], eval_every=0, eval_episodes=1)
    records = list(trainer())  # warm-up and policy actions: the env asserts their shape on every step
    assert trainer.buffer.actions.shape[-1] == 4
    assert all(np.isfinite(v) for r in records for v in r.losses.values()) and trainer.algorithm.updates > 0
    assert trainer.agent.predict(np.zeros((3, 3), np.float32)).shape == (3, 2, 2)
    trainer.close()


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_scalar_box_actions_reach_the_env_as_scalars(algo):
    """A Box action space of shape (): actions reached the env (warm-up, policy, predict) as arrays of
    shape (1,), which the space does not contain."""
    from canter.registry import register
    from support import ScalarAction

    register("env", f"ScalarAction-{algo}-offpolicy-test")(lambda render_mode=None, **kw: ScalarAction())
    trainer = canter.make_trainer(algo, f"ScalarAction-{algo}-offpolicy-test", n_envs=2, max_steps=80,
                                  learning_starts=40, batch_size=16, net_arch=[16], eval_every=0, eval_episodes=1)
    list(trainer())  # the env asserts the shape of every action
    assert trainer.algorithm.updates > 0 and trainer.buffer.actions.shape[-1] == 1
    assert trainer.agent.predict(np.zeros((3, 3), np.float32)).shape == (3,)
    assert trainer.agent.action_space.contains(trainer.agent.predict(np.zeros(3, np.float32)))
    trainer.close()


@pytest.mark.parametrize("algo", ["sac", "dqn"])
def test_replay_keeps_raw_data_and_normalises_batches_with_the_statistics_of_their_draw(algo):
    """As SB3 with VecNormalize: the buffer holds the env's rewards and observations; a sampled batch
    is normalised with the current statistics, which have seen every observation, the random
    warm-up's included (the first update saw statistics of zero observations, and rewards stored
    at collection time kept the scale of that moment)."""
    env = "Pendulum-v1" if algo == "sac" else "CartPole-v1"
    trainer = canter.make_trainer(algo, env, seed=0, max_steps=600, learning_starts=500, batch_size=32,
                                  net_arch=[16], normalize_obs=True, normalize_reward=True, eval_every=10_000)
    agent, raw, seen, ends = trainer.agent, [], [], []
    count_step, prepare = trainer.count_step, agent.prepare_replay_batch
    trainer.count_step = lambda step: (raw.append(step.reward.copy()), ends.append(int((step.terminated | step.truncated
                                                                                         ).sum())), count_step(step))[2]
    agent.prepare_replay_batch = lambda batch, *rest: (seen.append(agent.obs_rms.count), prepare(batch, *rest))[1]
    for _ in trainer():
        pass
    # the warm-up's observations are in the statistics of the first update (but the final ones of its episodes,
    # which SB3's VecNormalize does not count either)
    assert seen and seen[0] >= 500 - sum(ends[:500])
    np.testing.assert_array_equal(trainer.buffer.rewards[:trainer.step, 0], np.concatenate(raw))  # the env's rewards
    batch = trainer.buffer.sample(64)  # the buffer scales each raw reward it samples, the agent leaves them
    scale = 1.0 / np.sqrt(agent.ret_rms.var + 1e-8)
    assert scale != pytest.approx(1.0, abs=0.05)
    raw_rewards = torch.from_numpy(trainer.buffer.rewards.reshape(-1)[batch.indices.numpy()])
    torch.testing.assert_close(batch.rewards, raw_rewards * float(scale))
    torch.testing.assert_close(agent.prepare_replay_batch(batch, False).rewards, batch.rewards)


# -- schedules, acting and what the off-policy trainer hands the replay buffer -----------------------
def _algo(name: str, obs_dim: int, action_space: gym.Space, **hp):
    from canter.config import build
    from canter.registry import lookup

    cls = lookup("algorithm", name)
    torch.manual_seed(0)
    return cls(gym.spaces.Box(-10, 10, (obs_dim,), np.float32), action_space, build(cls.Config, dict(net_arch=[16], **hp)),
               seed=0)


def test_dqn_epsilon_decays_linearly_over_the_exploration_fraction_then_stays_at_the_final_value():
    algo = _algo("dqn", 3, gym.spaces.Discrete(2), exploration_initial_eps=1.0, exploration_final_eps=0.1,
                 exploration_fraction=0.5)
    for step, eps in [(0, 1.0), (250, 0.55), (400, 0.28), (500, 0.1), (900, 0.1), (1000, 0.1)]:
        algo.set_progress(step, 1000)
        assert algo.epsilon == pytest.approx(eps), step
    # and in a run: the trainer advances it with the env steps, to the final value by the end
    trainer = canter.make_trainer("dqn", "CartPole-v1", seed=0, max_steps=400, exploration_fraction=0.5,
                                  exploration_final_eps=0.05, **TINY)
    for _ in trainer():
        pass
    trainer.close()
    assert trainer.algorithm.epsilon == pytest.approx(0.05)


def test_dqn_hard_target_update_happens_every_target_update_interval_env_steps():
    algo = _algo("dqn", 3, gym.spaces.Discrete(2), target_update_interval=100, tau=1.0)
    online, target = list(algo.q.parameters()), list(algo.q_target.parameters())
    with torch.no_grad():
        for p in online:
            p.add_(1.0)
    for step in (0, 1, 99):
        algo.set_progress(step, 1000)
        assert not any(torch.equal(a, b) for a, b in zip(online, target)), step  # not synced yet
    algo.set_progress(100, 1000)
    assert all(torch.equal(a, b) for a, b in zip(online, target)) and algo.target_syncs == 1


def test_sac_deterministic_action_is_tanh_of_the_mean_and_td3_noise_stays_in_bounds():
    sac = _algo("sac", 3, gym.spaces.Box(-1, 1, (2,), np.float32))
    obs = torch.randn(64, 3, generator=torch.Generator().manual_seed(0)) * 5
    with torch.no_grad():
        mean = sac.actor(obs)[0]
        first = sac.act(obs, deterministic=True).actions
        torch.testing.assert_close(first, torch.tanh(mean))
        torch.testing.assert_close(sac.act(obs, deterministic=True).actions, first)  # no sampling
        assert not torch.allclose(sac.act(obs).actions, first)  # exploring does sample
    td3 = _algo("td3", 3, gym.spaces.Box(-1, 1, (2,), np.float32), noise_std=5.0)
    with torch.no_grad():
        noisy = td3.act(obs).actions
    assert noisy.abs().max() <= 1.0 and (noisy.abs() == 1.0).any()  # large noise, clipped to the action scale


def test_off_policy_trainer_stores_truncations_as_not_terminated_and_explores_randomly_before_learning_starts():
    trainer = canter.make_trainer("dqn", "CartPole-v1", seed=0, max_steps=300, env_kwargs={"max_episode_steps": 5},
                                  **{**TINY, "learning_starts": 200})
    calls = []
    act = trainer.algorithm.act
    trainer.algorithm.act = lambda obs, deterministic=False: (calls.append(trainer.step), act(obs, deterministic))[1]
    act_numpy = trainer.algorithm.act_numpy
    trainer.algorithm.act_numpy = lambda obs, deterministic=False: (calls.append(trainer.step),
                                                                    act_numpy(obs, deterministic))[1]
    for _ in trainer():
        pass
    trainer.close()
    buf = trainer.buffer
    assert buf.done.sum() >= 50 and not buf.terminated.any()  # every 5-step episode was cut by the time limit
    assert calls and min(calls) >= 200  # the policy is first asked at learning_starts


def test_off_policy_trainer_feeds_new_priorities_back_to_a_prioritized_buffer():
    trainer = canter.make_trainer("dqn", "CartPole-v1", seed=0, max_steps=200, prioritized=True, **TINY)
    for _ in trainer():
        pass
    trainer.close()
    buf = trainer.buffer
    leaves = buf.sums.leaves[buf.chronological_indices()]
    assert len(leaves) > 100
    # without feedback every transition keeps the priority it entered with (1, the largest seen)
    assert len(np.unique(leaves)) > 10  # sampled transitions got their own |TD error| priorities


def test_adam_eps_reaches_the_q_networks_optimizer():
    """DQN's family had no Adam epsilon (always 1e-8): Rainbow's Atari preset could not set the paper's 1.5e-4."""
    trainer = canter.make_trainer("dqn", "CartPole-v1", seed=0, adam_eps=1e-3)
    assert trainer.agent.algorithm.optimizer.param_groups[0]["eps"] == 1e-3
    trainer.close()
    trainer = canter.make_trainer("rainbow", "ALE/Pong-v5", seed=0, buffer_size=1000)
    assert trainer.agent.algorithm.optimizer.param_groups[0]["eps"] == 1.5e-4  # the preset: Hessel et al.'s
    trainer.close()


@pytest.mark.parametrize("algo,env", [("dqn", "CartPole-v1"), ("sac", "Pendulum-v1")])
def test_first_training_phase_is_the_first_to_end_past_learning_starts(algo, env):
    """As Stable-Baselines3 (``num_timesteps > learning_starts``): with learning_starts 8 and train_freq 4
    the phases ending at steps 12, 16, 20 train; the one ending at step 8 does not (it trained before:
    one gradient step more than SB3, and more with larger gradient_steps)."""
    trainer = canter.make_trainer(algo, env, seed=0, max_steps=20,
                                  **{**TINY, "learning_starts": 8, "train_freq": 4, "gradient_steps": 2})
    trained = [(r.step, trainer.algorithm.updates) for r in trainer()]
    trainer.close()
    assert trained == [(4, 0), (8, 0), (12, 2), (16, 4), (20, 6)]


def test_target_updates_copy_batch_norm_statistics():
    """SoftUpdate moved parameters only: a user model's batch-norm running statistics stayed at their
    initial values in the target network (SB3 copies them at every target update)."""
    from canter.algorithms.offpolicy import SoftUpdate

    online, target = torch.nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    online.train()
    online(torch.randn(16, 3) * 5 + 2)  # the online net's statistics move
    weight = target.weight.clone()
    SoftUpdate(target, online)(0.005)
    assert torch.equal(target.running_mean, online.running_mean) and torch.equal(target.running_var, online.running_var)
    assert torch.allclose(target.weight, weight)  # parameters still move by tau only (both are 1 here)
