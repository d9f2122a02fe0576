"""MultiDiscrete and MultiBinary actions for the actor-critic algorithms (one categorical per entry,
as SB3's MultiCategorical; a MultiBinary entry is a two-way categorical)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.cli import main
from canter.models import distributions as D
from canter.registry import register


class PickEntries(gym.Env):
    """Observation: a one-hot target of 3 and one of 4; reward: 1 per entry of the action matching its
    target (MultiDiscrete([3, 4]), at most 2 a step, 20 steps). ``kind`` ``binary``: MultiBinary(3),
    reward 1 when entry 0 equals the first target's parity; ``grid``: MultiDiscrete([[2, 3], [2, 2]]),
    reward 1 when entry [0, 0] does. The env checks every action against its space."""

    observation_space = gym.spaces.Box(0, 1, (7,), np.float32)

    def __init__(self, kind: str = "pair") -> None:
        self.kind = kind
        self.action_space = {"pair": gym.spaces.MultiDiscrete([3, 4]), "binary": gym.spaces.MultiBinary(3),
                             "grid": gym.spaces.MultiDiscrete([[2, 3], [2, 2]]),
                             "pair32": gym.spaces.MultiDiscrete([3, 4], dtype=np.int32, start=[1, -2])}[kind]
        self.rng = np.random.default_rng(0)

    def _obs(self) -> np.ndarray:
        self.target = (int(self.rng.integers(0, 3)), int(self.rng.integers(0, 4)))
        obs = np.zeros(7, np.float32)
        obs[self.target[0]] = obs[3 + self.target[1]] = 1.0
        return obs

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        assert self.action_space.contains(action), (action, self.action_space)
        a = np.asarray(action).reshape(-1) - np.asarray(getattr(self.action_space, "start", 0)).reshape(-1)
        if self.kind in ("pair", "pair32"):
            reward = float(a[0] == self.target[0]) + float(a[1] == self.target[1])
        else:
            reward = float(a[0] == self.target[0] % 2)
        self.t += 1
        return self._obs(), reward, False, self.t >= 20, {}


for _kind in ("pair", "binary", "grid", "pair32"):
    register("env", f"PickEntries-{_kind}-test")(lambda _kind=_kind, **kw: PickEntries(_kind))


def test_ppo_learns_a_multidiscrete_task():
    """Two independent choices: the best return is 40 in 20 steps; a uniform policy gets ~11.7."""
    agent = canter.train("ppo", "PickEntries-pair-test", max_steps=24_576, n_envs=4, eval_every=0, eval_episodes=5, quiet=True, tensorboard=False, seed=0, run_dir=None)
    from canter.envs import make_vec_env
    from canter.trainers.evaluation import evaluate

    env = make_vec_env("PickEntries-pair-test", 5)
    result = evaluate(agent, env, 5, seed=1)
    env.close()
    assert result.mean_return >= 38.0, result


@pytest.mark.parametrize("algo", ["ppo", "a2c", "reinforce", "trpo", "npg", "impala", "appo", "recurrent_ppo"])
@pytest.mark.parametrize("kind", ["binary", "grid"])
def test_factored_actions_reach_the_env_in_its_space_and_survive_a_checkpoint(tmp_path, algo, kind):
    env = f"PickEntries-{kind}-test"
    agent = canter.train(algo, env, max_steps=512, n_envs=2, eval_every=0, eval_episodes=2, quiet=True,
                         tensorboard=False, seed=0, run_dir=tmp_path / "run")  # the env asserts each action
    obs = np.random.default_rng(0).random((6, 7)).astype(np.float32)
    actions = agent.predict(obs)
    space = PickEntries(kind).action_space
    assert actions.shape == (6,) + space.shape and all(space.contains(a) for a in actions)
    assert space.contains(agent.predict(obs[0]))
    np.testing.assert_array_equal(canter.load(tmp_path / "run").predict(obs), actions)


def test_play_and_eval_run_on_a_multibinary_run(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", "ppo", "--env", "PickEntries-binary-test", "--max-steps", "256", "--n-envs", "2",
                 "--set", "n_steps=64", "--quiet", "--run-dir", str(run)]) == 0
    assert main(["eval", str(run), "--episodes", "2"]) == 0
    assert main(["play", str(run), "--episodes", "1"]) == 0
    assert "episode 1: return" in capsys.readouterr().out


@pytest.mark.parametrize("algo", ["c51", "dqn", "sac"])
def test_algorithms_without_factored_actions_refuse_them_in_one_line(tmp_path, capsys, algo):
    """The line names every algorithm that acts in the space: it named the on-policy family alone (a2c, npg, ppo,
    reinforce, trpo), leaving out recurrent_ppo, impala and appo, which train on MultiDiscrete actions too."""
    assert main(["train", algo, "--env", "PickEntries-pair-test", "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(
        "algorithms for MultiDiscrete actions: a2c, appo, impala, npg, ppo, recurrent_ppo, reinforce, trpo"), err


def test_multi_categorical_log_prob_entropy_and_samples_match_torch_distributions():
    g = torch.Generator().manual_seed(0)
    nvec = [3, 2, 4]
    logits = torch.randn(5, 9, generator=g)
    actions = D.multi_categorical_sample(logits, nvec, g)
    logp, ent = D.multi_categorical_log_prob_entropy(logits, actions, nvec)
    dists = [torch.distributions.Categorical(logits=logits[:, s]) for s in D.segments(nvec)]
    torch.testing.assert_close(logp, sum(d.log_prob(actions[:, i]) for i, d in enumerate(dists)))
    torch.testing.assert_close(ent, sum(d.entropy() for d in dists))
    # the Gumbel-max draws follow each entry's softmax
    many = D.multi_categorical_sample(logits[:1].expand(20_000, 9), nvec, g)
    for i, s in enumerate(D.segments(nvec)):
        freq = torch.bincount(many[:, i], minlength=nvec[i]).float() / len(many)
        torch.testing.assert_close(freq, torch.softmax(logits[0, s], -1), atol=0.015, rtol=0)
    np.testing.assert_array_equal(D.multi_categorical_mode(logits, nvec)[:, 2], logits[:, 5:9].argmax(-1))


def test_multidiscrete_actions_reach_the_env_in_the_spaces_dtype(tmp_path):
    """A MultiDiscrete space of int32 contains only int32 arrays (gymnasium checks the dtype): the env got
    the algorithm's int64 indices, outside its own space (the env's assertion failed at the first step)."""
    agent = canter.train("ppo", "PickEntries-pair32-test", max_steps=128, n_envs=2, n_steps=32, eval_every=0,
                         eval_episodes=1, quiet=True, tensorboard=False, seed=0, run_dir=None)
    space = PickEntries("pair32").action_space
    obs = np.random.default_rng(0).random((4, 7)).astype(np.float32)
    for actions in (agent.predict(obs), agent.predict(obs, deterministic=False)):
        assert actions.dtype == np.int32 and all(space.contains(a) for a in actions), actions
    assert space.contains(agent.predict(obs[0]))


def test_collect_with_epsilon_draws_random_multibinary_and_multidiscrete_actions(tmp_path):
    """canter collect RUN --epsilon on a MultiBinary run stopped with 'cannot draw random actions for a
    MultiBinary action space'; random MultiDiscrete actions were int64 whatever the space's dtype."""
    from canter.data.dataset import collect

    for kind in ("binary", "pair32"):
        agent = canter.train("ppo", f"PickEntries-{kind}-test", max_steps=64, n_envs=2, n_steps=32, eval_every=0,
                             eval_episodes=1, quiet=True, tensorboard=False, seed=0, run_dir=None)
        space = PickEntries(kind).action_space  # the env asserts that each action is in it
        for policy in (agent, None):
            data = collect(f"PickEntries-{kind}-test", 60, policy, epsilon=0.5, seed=0)
            assert data.actions.shape == (60,) + space.shape and all(space.contains(a) for a in data.actions)


def test_a_space_mismatch_names_what_differs_between_multidiscrete_spaces(tmp_path, capsys):
    """canter eval --env on a MultiDiscrete env with other categories, start or dtype was refused with
    'trained on ... -> MultiDiscrete(shape=(2,)), env has ... -> MultiDiscrete(shape=(2,))': the same words twice."""
    from canter.envs.spaces import describe_space

    run = tmp_path / "run"
    assert main(["train", "ppo", "--env", "PickEntries-pair-test", "--max-steps", "64", "--n-envs", "2",
                 "--set", "n_steps=32", "--quiet", "--run-dir", str(run)]) == 0
    capsys.readouterr()
    assert main(["eval", str(run), "--env", "PickEntries-pair32-test", "--episodes", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "MultiDiscrete([3, 4])" in err[0] and "MultiDiscrete([3, 4], start=[1, -2], int32)" in err[0]
    assert describe_space(gym.spaces.MultiBinary((2, 3))) == "MultiBinary([2, 3])"
    assert describe_space(gym.spaces.Discrete(3, start=1)) == "Discrete(3, start=1)"
