"""The on-policy trainer's edge cases (uint8 and normalised observations, reset-only rollouts, Box action
shapes, reward scaling, budget warnings) and PPO's schedules and KL early stop."""

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.config import build
from canter.errors import CanterError


# -- trainer edge cases ----------------------------------------------------------------------------
class _Uint8Obs(gym.Env):
    """Small non-image uint8 observations (values 100..199), truncated after 10 steps."""

    observation_space = gym.spaces.Box(0, 255, (4,), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.integers(100, 200, 4).astype(np.uint8), {}

    def step(self, action):
        self.t += 1
        return self.np_random.integers(100, 200, 4).astype(np.uint8), 1.0, False, self.t >= 10, {}


def test_normalized_uint8_observations_are_trained_on_as_acted_on():
    from canter.registry import register

    register("env", "Uint8Obs-test")(lambda render_mode=None, **kw: _Uint8Obs())
    trainer = canter.make_trainer("ppo", "Uint8Obs-test", n_envs=2, n_steps=8, normalize_obs=True, eval_every=0,
                                  eval_episodes=1, max_steps=64)
    trainer.setup()
    trainer.obs = trainer.env.reset(seed=0)
    algorithm, acted, seen = trainer.algorithm, [], {}
    act, act_numpy = algorithm.act, algorithm.act_numpy  # the torch path and the NumPy shortcut
    algorithm.act = lambda obs, deterministic=False: acted.append(obs.clone()) or act(obs, deterministic)
    algorithm.act_numpy = lambda obs, deterministic=False: (acted.append(torch.tensor(obs))
                                                            or act_numpy(obs, deterministic))
    algorithm.learn = lambda batch: seen.setdefault("batch", batch) and {}
    trainer.iteration()
    trainer.close()
    acted = torch.cat(acted)  # the normalised observations the policy saw (every row valid: no episode ended)
    assert acted.dtype == torch.float32 and acted.abs().max() <= 10
    torch.testing.assert_close(seen["batch"].obs, acted)


def test_rollouts_of_reset_rows_only_skip_the_update():
    # n_envs=1, n_steps=1: the rollout after an episode's last step holds only the autoreset row
    for algo, kw in (("ppo", dict(batch_size=1, n_epochs=1)), ("a2c", {}), ("trpo", dict(batch_size=1))):
        trainer = canter.make_trainer(algo, "CartPole-v1", n_envs=1, n_steps=1, max_steps=100, eval_every=0,
                                      eval_episodes=1, **kw)
        records = list(trainer())
        assert trainer.step == 100 and trainer.episode_count > 0
        assert 0 < trainer.algorithm.updates < 100
        assert all(np.isfinite(v) for r in records for v in r.losses.values())


def test_box_actions_with_several_dimensions_fit_the_rollout_buffer():
    obs_space = gym.spaces.Box(-1, 1, (3,), np.float32)
    trainer = canter.make_trainer("ppo", "Pendulum-v1", n_envs=2, n_steps=4, eval_every=0, eval_episodes=1)
    trainer.agent.action_space = gym.spaces.Box(-1, 1, (2, 2), np.float32)  # what the buffer is sized from
    trainer.setup()
    algorithm = canter.algorithms.ppo.PPO(obs_space, trainer.agent.action_space, trainer.algorithm.config, seed=0)
    obs = torch.zeros(2, 3)
    with torch.no_grad():
        out = algorithm.act(obs)  # the policy's actions are flat: [n_envs, 4]
    trainer.buffer.add(obs, out.actions, out.log_probs, out.values, np.zeros(2, np.float32), np.zeros(2, bool),
                       np.zeros(2, bool), np.ones(2, bool))
    torch.testing.assert_close(trainer.buffer.actions[0], out.actions)
    trainer.close()


@pytest.mark.parametrize("algo", ["ppo", "a2c", "trpo"])
def test_box_actions_of_several_dimensions_reach_the_env_in_its_shape(algo):
    from canter.registry import register
    from support import Box22Actions

    register("env", f"Box22Actions-{algo}-test")(lambda render_mode=None, **kw: Box22Actions())
    trainer = canter.make_trainer(algo, f"Box22Actions-{algo}-test", n_envs=2, n_steps=16, max_steps=320, eval_every=0,
                                  eval_episodes=1)
    list(trainer())  # the env asserts the action shape on every step
    assert trainer.agent.predict(np.zeros((3, 3), np.float32)).shape == (3, 2, 2)
    trainer.close()


def test_scalar_box_actions_reach_the_env_as_scalars():
    """A Box action space of shape (): actions reached the env as arrays of shape (1,), outside the space."""
    from canter.registry import register
    from support import ScalarAction

    register("env", "ScalarAction-ppo-test")(lambda render_mode=None, **kw: ScalarAction())
    trainer = canter.make_trainer("ppo", "ScalarAction-ppo-test", n_envs=2, n_steps=16, max_steps=64, eval_every=0,
                                  eval_episodes=1)
    list(trainer())  # the env asserts the shape of every action
    assert trainer.agent.predict(np.zeros((3, 3), np.float32)).shape == (3,)
    assert trainer.agent.action_space.contains(trainer.agent.predict(np.zeros(3, np.float32)))
    trainer.close()


def test_observation_normalisation_refuses_discrete_observations():
    with pytest.raises(CanterError, match="normalize_obs needs Box observations, not Discrete"):
        canter.make_trainer("ppo", "FrozenLake-v1", normalize_obs=True)


def test_reward_scaling_statistics_skip_the_reset_only_steps():
    # canter's NEXT_STEP stream has one reset-only step (reward 0, valid False) after each episode's
    # end; the return statistics must equal those of the same episodes without it (SB3's VecNormalize)
    from canter.agents.agent import RunningMeanStd

    trainer = canter.make_trainer("ppo", "CartPole-v1", n_envs=1, normalize_reward=True, eval_episodes=1)
    agent = trainer.agent
    trainer.close()
    rng = np.random.default_rng(0)
    reference, returns = RunningMeanStd(()), np.zeros(1)
    for episode in range(5):
        rewards = rng.normal(size=int(rng.integers(2, 6)))
        for t, r in enumerate(rewards):
            done = np.array([t == len(rewards) - 1])
            agent.scale_reward(np.array([r], np.float32), done, np.array([True]))
            returns = returns * agent.gamma + np.float32(r)
            reference.update(returns)
            returns[done] = 0.0
        agent.scale_reward(np.zeros(1, np.float32), np.array([False]), np.array([False]))  # the reset-only step
    assert agent.ret_rms.count == pytest.approx(reference.count)
    np.testing.assert_allclose([agent.ret_rms.mean, agent.ret_rms.var], [reference.mean, reference.var], rtol=1e-6)


def test_scaled_rewards_match_sb3_vecnormalize_including_its_clip():
    """The same rewards through canter's reward scaling and SB3's VecNormalize (gamma 0.99, clip_reward 10):
    the first steps' return variance is tiny, and unclipped scaled rewards were in the hundreds (SB3: 10)."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    trainer = canter.make_trainer("ppo", "CartPole-v1", n_envs=2, normalize_reward=True, eval_episodes=1,
                                  gamma=0.99)
    agent = trainer.agent
    trainer.close()
    venv = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2), norm_obs=False, gamma=0.99)
    rng = np.random.default_rng(1)
    for t in range(40):
        rewards = rng.normal(-30.0, 3.0, size=2).astype(np.float32)
        dones = np.array([t % 13 == 12, t % 17 == 16])
        venv.returns = venv.returns * venv.gamma + rewards  # VecNormalize.step_wait's statistics, then scaling
        venv.ret_rms.update(venv.returns)
        expected = venv.normalize_reward(rewards)
        venv.returns[dones] = 0.0
        got = agent.scale_reward(rewards, dones, np.array([True, True]))
        np.testing.assert_allclose(got, expected, rtol=1e-5, err_msg=f"step {t}")
    venv.close()


def test_a_budget_below_one_rollout_is_warned_about():
    from canter.errors import CanterWarning

    with pytest.warns(CanterWarning, match=r"max_steps \(100\) is less than one rollout \(n_steps 64 x 2 envs = 128"):
        trainer = canter.make_trainer("ppo", "CartPole-v1", n_envs=2, n_steps=64, max_steps=100, eval_episodes=1)
    list(trainer())
    assert trainer.step == 128
    trainer.close()


def test_a_minibatch_larger_than_the_rollout_is_warned_about():
    """batch_size 4096 with a 128-step rollout trained on whole-rollout minibatches without a word
    (Stable-Baselines3 warns); a batch_size that fits gives no such warning."""
    import warnings

    from canter.errors import CanterWarning

    for algo in ("ppo", "trpo"):
        with pytest.warns(CanterWarning, match=r"batch_size \(4,096\) is larger than one rollout \(128 transitions"):
            canter.make_trainer(algo, "CartPole-v1", n_envs=2, n_steps=64, batch_size=4096, eval_episodes=1).close()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*batch_size", category=CanterWarning)
        canter.make_trainer("ppo", "CartPole-v1", n_envs=2, n_steps=64, batch_size=128, eval_episodes=1).close()


def test_ppo_target_kl_stop_logs_the_minibatch_that_stopped_the_epochs():
    target = 1e-12
    # constant lr: the CartPole preset's linear schedule reaches 0 in the last rollout, whose policy
    # then never changes (its KL is 0, its epochs rightly never stop)
    trainer = canter.make_trainer("ppo", "CartPole-v1", n_envs=2, n_steps=64, batch_size=32, n_epochs=4, lr=0.5,
                                  lr_schedule="constant", target_kl=target, max_steps=256, eval_every=0,
                                  eval_episodes=1)
    records = list(trainer())
    trainer.close()
    assert trainer.algorithm.updates < 2 * 4 * 4  # the epochs stopped early in both rollouts
    for r in records:  # as SB3 logs it: the stopping minibatch's KL is in the mean
        assert r.losses["approx_kl"] > 1.5 * target


# -- PPO's schedules and its KL early stop ---------------------------------------------------------
def _ppo(**hp):
    from canter.algorithms.ppo import PPO

    torch.manual_seed(0)
    return PPO(gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(2), build(PPO.Config, dict(net_arch=[8], **hp)),
               seed=0)


def test_ppo_linear_schedules_anneal_lr_and_clip_range_to_zero_and_constant_ones_do_not():
    algo = _ppo(lr=1e-3, clip_range=0.2, lr_schedule="linear", clip_schedule="linear")
    for step, frac in [(0, 1.0), (250, 0.75), (1000, 0.0)]:
        algo.set_progress(step, 1000)
        assert algo.clip == pytest.approx(0.2 * frac) and algo.lr == pytest.approx(1e-3 * frac), step
        assert all(g["lr"] == pytest.approx(1e-3 * frac) for g in algo.optimizer.param_groups)
    constant = _ppo(lr=1e-3, clip_range=0.2)
    constant.set_progress(750, 1000)
    assert constant.clip == 0.2 and constant.lr == 1e-3


@pytest.mark.parametrize("kl, steps", [(0.0149, True), (0.0151, False)])
def test_ppo_epochs_stop_when_the_approximate_kl_exceeds_one_and_a_half_times_target_kl(kl, steps):
    algo = _ppo(target_kl=0.01)
    sum(p.sum() for p in algo.model.parameters()).backward()
    before = [p.detach().clone() for p in algo.model.parameters()]
    stats: list = []
    assert algo._step(np.array([0.0, 0.0, 0.0, kl, 0.0], np.float32), stats) is steps
    assert len(stats) == 1 and algo.updates == int(steps)  # the stopping minibatch is logged, not applied
    changed = any(not torch.equal(a, b) for a, b in zip(before, algo.model.parameters()))
    assert changed is steps


def test_running_statistics_do_not_depend_on_the_batchs_memory_layout():
    """A native vector env's observations are column-major (``[n_envs, dim]`` with strides ``(4, 4 * n_envs)``);
    a resumed run's first batch is the checkpoint's row-major copy. NumPy sums a column-major axis pairwise and a
    row-major one row by row, so the statistics (and every later update) differed by an ulp after a resume."""
    from canter.agents.agent import RunningMeanStd

    batch = np.asfortranarray(np.random.default_rng(3).normal(size=(16, 4)).astype(np.float32))
    column_major, row_major = RunningMeanStd((4,)), RunningMeanStd((4,))
    for rms in (column_major, row_major):
        rms.update(np.zeros((3, 4), np.float32))  # a mean to move away from
    column_major.update(batch)
    row_major.update(np.ascontiguousarray(batch))
    assert np.array_equal(column_major.mean, row_major.mean) and np.array_equal(column_major.var, row_major.var)


def test_ppo_with_observation_normalisation_on_eight_native_envs_resumes_exactly(tmp_path):
    """An interrupted PPO run with normalised observations on 8 native CartPole envs, resumed, ends with
    the uninterrupted run's weights and statistics (the first batch after the resume used to move the
    observation mean by an ulp)."""
    from canter.checkpoint import flatten_state

    common = dict(n_envs=8, n_steps=16, n_epochs=1, batch_size=64, normalize_obs=True, eval_every=10_000,
                  eval_episodes=1, quiet=True, tensorboard=False)
    whole = canter.train("ppo", "CartPole-v1", max_steps=512, run_dir=tmp_path / "whole", **common)

    def interrupt(trainer, losses):  # as Ctrl-C would: the run saves its resume state and stops
        if trainer.step >= 256 and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    canter.train("ppo", "CartPole-v1", max_steps=512, run_dir=tmp_path / "part", hooks={"after_update": interrupt},
                 **common)
    resumed = canter.resume(tmp_path / "part")
    a, b = flatten_state(whole.state_dict())[1], flatten_state(resumed.state_dict())[1]
    assert [k for k in a if not torch.equal(a[k], b[k])] == []
