"""Algorithm options and environment plumbing that the learning tests do not cover."""
import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.registry import register


@pytest.mark.parametrize("opts", [
    dict(double_q=True), dict(dueling=True), dict(tau=0.5, target_update_interval=8), dict(huber=False),
    dict(normalize_obs=True, normalize_reward=True),
])
def test_dqn_options_train_with_finite_losses(opts):
    trainer = canter.make_trainer("dqn", "CartPole-v1", max_steps=400, learning_starts=100, train_freq=4,
                                  gradient_steps=1, net_arch=[16], eval_every=0, eval_episodes=1, **opts)
    records = list(trainer())
    losses = [r.losses["loss"] for r in records if r.losses]
    assert losses and np.isfinite(losses).all()


@pytest.mark.parametrize("algo, opts", [("qrdqn", {}), ("rainbow", {}), ("iqn", {}), ("c51", {}),
                                        ("dqn", dict(n_quantiles=5))])
def test_huber_false_is_refused_where_the_loss_does_not_read_it(algo, opts):
    """The quantile Huber and C51's cross-entropy losses never read ``huber``: huber=false once trained
    exactly the same weights as huber=true, silently."""
    from canter.errors import CanterError

    with pytest.raises(CanterError, match="'hparams.huber' false"):
        canter.make_trainer(algo, "CartPole-v1", huber=False, **opts)


def test_polyak_target_moves_part_way():
    trainer = canter.make_trainer("dqn", "CartPole-v1", tau=0.25, net_arch=[8])
    algo = trainer.algorithm
    with torch.no_grad():
        for p in algo.q.parameters():
            p.add_(1.0)
    before = [p.clone() for p in algo.q_target.parameters()]
    algo.sync_target()
    for b, t, o in zip(before, algo.q_target.parameters(), algo.q.parameters()):
        torch.testing.assert_close(t, b + 0.25 * (o - b))


@pytest.mark.parametrize("opts", [
    dict(clip_range_vf=0.2, target_kl=0.01, shared_trunk=True), dict(normalize_obs=True, normalize_reward=True),
])
def test_ppo_options_run(opts):
    trainer = canter.make_trainer("ppo", "Pendulum-v1", max_steps=512, n_envs=2, n_steps=64, batch_size=32,
                                  n_epochs=2, eval_every=0, eval_episodes=1, **opts)
    records = list(trainer())
    assert np.isfinite(records[-1].losses["value_loss"])


def test_async_vectorization_runs():
    trainer = canter.make_trainer("ppo", "CartPole-v1", vectorization="async", max_steps=256, n_envs=2, n_steps=64,
                                  eval_every=0, eval_episodes=1)
    assert isinstance(trainer.env.env.unwrapped, gym.vector.AsyncVectorEnv)  # (canter's subclass, workers.py)
    assert list(trainer())[-1].step == 256
    trainer.close()


class Corridor(gym.Env):
    """Walk right to the goal in 4 steps; a tiny deterministic env for the env registry test."""

    observation_space = gym.spaces.Discrete(5)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, render_mode=None):
        self.pos = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = 0
        return self.pos, {}

    def step(self, action):
        self.pos = max(0, self.pos + (1 if action == 1 else -1))
        done = self.pos == 4
        return self.pos, 1.0 if done else -0.1, done, False, {}


register("env", "Corridor-v0")(lambda render_mode=None, **kw: gym.wrappers.TimeLimit(Corridor(), 20))


def test_registered_env_and_discrete_observations_learn():
    trainer = canter.make_trainer("ppo", "Corridor-v0", max_steps=4096, n_envs=4, n_steps=64, batch_size=64,
                                  lr=3e-3, target_reward=0.69, eval_every=1024, eval_episodes=4, seed=0)
    for _ in trainer():
        pass
    assert trainer.best_eval_return == pytest.approx(0.7)  # shortest path: three -0.1 steps, then +1


class _ScalarObs(gym.Env):
    """A Box observation of shape () (one number, not a vector); action 1 pays 1."""

    observation_space = gym.spaces.Box(-1, 1, (), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.float32(0.1), {}

    def step(self, action):
        self.t += 1
        return np.float32(0.1 * action), float(action), False, self.t >= 10, {}


@pytest.mark.parametrize("algo", ["ppo", "dqn", "sac_discrete"])
def test_box_observations_of_shape_empty_are_one_feature(algo):
    import canter
    from canter.registry import register

    register("env", f"ScalarObs-{algo}-test")(lambda render_mode=None, **kw: _ScalarObs())
    extra = dict(n_steps=16) if algo == "ppo" else dict(learning_starts=50, batch_size=16)
    trainer = canter.make_trainer(algo, f"ScalarObs-{algo}-test", n_envs=2, max_steps=200, eval_every=0,
                                  eval_episodes=1, **extra)
    list(trainer())
    assert trainer.agent.predict(np.zeros(3, np.float32)).shape == (3,)
    trainer.close()


def test_evaluation_of_an_env_without_a_time_limit_ends():
    """CliffWalking-v1 is registered without a time limit: a greedy policy that walks into a wall never
    ends its episode, and a run's evaluation (canter train dqn --env CliffWalking-v1) never returned.
    Evaluation and play envs cut such episodes at EVAL_EPISODE_CAP steps; training envs keep the env's own."""
    from canter.envs.make import EVAL_EPISODE_CAP, make_env, make_vec_env
    from canter.trainers.evaluation import evaluate

    class Wall:  # always "up" from the start square: stays there, -1 per step
        def predict(self, obs):
            return np.zeros(len(obs), dtype=np.int64)

    env = make_vec_env("CliffWalking-v1", 2)
    result = evaluate(Wall(), env, 2, seed=0)
    env.close()
    assert result.returns == [-float(EVAL_EPISODE_CAP)] * 2 and list(result.lengths) == [EVAL_EPISODE_CAP] * 2
    assert make_env("CliffWalking-v1").spec.max_episode_steps == EVAL_EPISODE_CAP
    train = make_vec_env("CliffWalking-v1", 1, training=True)
    assert train.env.envs[0].spec.max_episode_steps is None
    train.close()
    cartpole = make_vec_env("CartPole-v1", 1)  # an env's own limit stays
    assert cartpole.env.envs[0].spec.max_episode_steps == 500
    cartpole.close()


def test_evaluation_of_an_env_whose_time_limit_env_kwargs_removed_ends(monkeypatch):
    """``env_kwargs: {max_episode_steps: -1}`` (gymnasium's: no time limit) removed the eval cap with the
    env's own limit: a CartPole policy that balances never ended its evaluation episode, and the run hung."""
    from canter.envs import make
    from canter.trainers.evaluation import evaluate

    monkeypatch.setattr(make, "EVAL_EPISODE_CAP", 200)

    class Balance:  # push towards the side the pole falls to: CartPole stays up for thousands of steps
        def predict(self, obs):
            return (obs[..., 2] + 0.5 * obs[..., 3] > 0).astype(np.int64)

    for vectorization in ("sync", "async"):
        env = make.make_vec_env("CartPole-v1", 1, vectorization, env_kwargs={"max_episode_steps": -1})
        result = evaluate(Balance(), env, 1, seed=0)
        env.close()
        assert result.lengths == [200]
    assert make.make_env("CartPole-v1", max_episode_steps=-1).spec.max_episode_steps == 200
    train = make.make_vec_env("CartPole-v1", 1, "sync", env_kwargs={"max_episode_steps": -1}, training=True)
    assert train.env.envs[0].spec.max_episode_steps is None  # training keeps what env_kwargs asked for
    train.close()


def test_evaluation_of_a_canter_registered_env_without_a_time_limit_ends(monkeypatch):
    """A factory registered with ``register("env", ...)`` got no eval cap (only Gymnasium ids did): an env
    without a time limit never ended the evaluation episode of a policy that avoids its terminal action."""
    import gymnasium as gym

    from canter.envs import make
    from canter.registry import register

    class Forever(gym.Env):  # ends only on action 1
        observation_space, action_space = gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            return np.zeros(2, np.float32), {}

        def step(self, action):
            return np.zeros(2, np.float32), 1.0, bool(action == 1), False, {}

    monkeypatch.setattr(make, "EVAL_EPISODE_CAP", 50)
    register("env", "Forever-options-test")(lambda render_mode=None, **kw: Forever())
    for vectorization in ("sync", "async"):
        env = make.make_vec_env("Forever-options-test", 1, vectorization)
        env.reset(seed=0)
        lengths = []
        for _ in range(60):
            env.step(np.zeros(1, np.int64))
            lengths += env.finished_lengths.tolist()
        env.close()
        assert lengths == [50]  # (evaluate() never returned)
    single = make.make_env("Forever-options-test")  # play, --record-every
    single.reset(seed=0)
    assert [single.step(0)[3] for _ in range(50)] == [False] * 49 + [True]
    train = make.make_vec_env("Forever-options-test", 1, "sync", training=True)
    assert isinstance(train.env.envs[0], Forever)  # training envs are the factory's own
    train.close()
    capped = make.make_vec_env("CartPoleNoVel-v1", 1, "sync")  # a factory env with its own limit keeps it
    assert capped.env.envs[0].spec.max_episode_steps == 500  # (50 with a TimeLimit of the cap around it)
    capped.close()
