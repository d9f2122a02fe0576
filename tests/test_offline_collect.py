"""Offline datasets: collecting transitions (canter collect, collect()), random actions, and converting actions
between the env and the dataset (split from test_offline_datasets.py, which keeps refusing bad data, loading
datasets and reading their statistics)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from canter.agents.agent import Agent
from canter.api import make_agent
from canter.config import resolve_config
from canter.data.dataset import collect
from support import assert_one_line_error, run_cli, snapshot


def test_collect_stores_every_transition_once_in_order_with_real_final_observations():
    data = collect("CartPole-v1", 3000, None, seed=7, env_kwargs={"max_episode_steps": 20})
    assert len(data) == 3000 and data.obs.shape == (3000, 4) and data.actions.dtype == np.int64
    assert set(np.unique(data.actions)) <= {0, 1} and np.all(data.rewards == 1.0)
    ends = data.terminated | data.truncated
    # inside an episode the next observation is the next row's observation; after an end it is not
    # (the row after an end is the first observation of a new episode)
    inside = np.flatnonzero(~ends[:-1])
    np.testing.assert_array_equal(data.next_obs[inside], data.obs[inside + 1])
    after_end = np.flatnonzero(ends[:-1])
    assert len(after_end) > 50 and not np.any(np.all(data.next_obs[after_end] == data.obs[after_end + 1], axis=1))
    assert (data.truncated & ~data.terminated).any() and (data.terminated & ~data.truncated).any()
    lengths = np.diff(np.concatenate([[-1], np.flatnonzero(ends)]))
    assert lengths.max() == 20 and np.all(lengths[data.truncated[ends]] == 20)  # truncation at the time limit
    np.testing.assert_array_equal(data.episode_returns(), lengths.astype(float))
    assert data.info["episodes"] == len(lengths) and data.info["policy"] == "random"
    again = collect("CartPole-v1", 3000, None, seed=7, env_kwargs={"max_episode_steps": 20})
    np.testing.assert_array_equal(again.obs, data.obs)  # seeded


def test_random_collection_draws_apart_from_the_env():
    """Uniform random actions must not share the env's seeded stream: on match_agents (the reward is 1
    when the action is the argmax of the observation, drawn from the env's generator) a generator
    seeded like the env's picked the target every time and earned the maximum, 8 per episode."""
    for seed in (0, 1, 7):
        data = collect("pettingzoo:tests.match_agents", 400, None, seed=seed)
        assert 1.5 < data.info["mean_return"] < 4.0, (seed, data.info)  # random play: 8/3


def test_random_actions_of_an_integer_box_reach_its_upper_bound():
    """A Box of integers: uniform floats truncated to the dtype drew 0..9 from Box(0, 10), never 10
    (canter collect's random actions); gymnasium's Box.sample draws low..high, both included."""
    from canter.envs.random_actions import random_env_actions

    space = gym.spaces.Box(np.array([0, -3]), np.array([10, -1]), dtype=np.int64)
    a = random_env_actions(space, 2000, np.random.default_rng(0))
    assert a.dtype == np.int64 and all(space.contains(x) for x in a)
    assert sorted(set(a[:, 0])) == list(range(11)) and sorted(set(a[:, 1])) == [-3, -2, -1]


def test_random_actions_of_an_unbounded_box_are_finite_and_keep_the_finite_bounds(tmp_path):
    """Box actions with infinite bounds (PPO's Gaussian policies need none): a random collection, or
    --epsilon, raised numpy's OverflowError ('Range exceeds valid bounds') with a traceback. Unbounded
    dimensions now draw as gymnasium's Box.sample (normal, or exponential away from one bound)."""
    from canter.envs.random_actions import random_env_actions
    from canter.registry import register
    from support import Box22Actions

    low = np.array([[0.0, -np.inf], [-np.inf, -1.0]], np.float32)
    high = np.array([[1.0, np.inf], [3.0, np.inf]], np.float32)
    space = gym.spaces.Box(low, high, dtype=np.float32)
    a = random_env_actions(space, 500, np.random.default_rng(0))
    assert a.shape == (500, 2, 2) and a.dtype == np.float32 and np.isfinite(a).all()
    assert all(space.contains(x) for x in a)
    assert a[:, 0, 1].min() < -1 and a[:, 0, 1].max() > 1 and a[:, 1, 1].min() > -1.0 and a[:, 1, 0].max() <= 3.0
    bounded = gym.spaces.Box(-1, 2, (3,), np.float32)  # finite bounds: the same uniform draws as before
    np.testing.assert_array_equal(random_env_actions(bounded, 4, np.random.default_rng(1)),
                                  np.random.default_rng(1).uniform(bounded.low, bounded.high, (4, 3)).astype(np.float32))

    class Unbounded(Box22Actions):
        action_space = space

    register("env", "UnboundedActions-collect-test")(lambda render_mode=None, **kw: Unbounded())
    data = collect("UnboundedActions-collect-test", 50, None, seed=0)
    assert data.actions.shape == (50, 2, 2) and np.isfinite(data.actions).all()


def test_a_multi_agent_collection_is_stored_agent_by_agent_in_whole_episodes():
    """Each agent's episodes are contiguous (each row's next_obs is the next row's obs inside an
    episode), so episode returns are one agent's: at most 8 on match_agents, whose agents leave on a
    miss (random play earns ~0.5)."""
    for kwargs in ({}, {"miss_leaves": True, "n_agents": 3}):
        data = collect("pettingzoo:tests.match_agents", 300, None, seed=2, env_kwargs=kwargs)
        assert len(data) == 300
        ends = np.flatnonzero(data.terminated | data.truncated)
        inside = np.setdiff1d(np.arange(ends[-1]), ends)
        np.testing.assert_array_equal(data.next_obs[inside], data.obs[inside + 1])
        returns = data.episode_returns()
        assert returns.max() <= 8 and len(returns) == len(ends)
        expected = 0.5 if kwargs else 8 / 3
        assert abs(returns.mean() - expected) < 0.4, (kwargs, returns.mean())


def test_collect_keeps_transitions_in_arrays_and_refuses_what_cannot_fit_at_once(tmp_path, capsys):
    """collect kept one small array per step and column (~1.2 KB of Python objects per CartPole transition of 46
    bytes: 200k transitions grew the process by 290 MB) and concatenated them at the end (an image dataset held
    twice); --transitions beyond memory ran until the machine ran out. Found by the offline bug hunt: rows now go
    into preallocated arrays (measured ~70 bytes a transition here with tracemalloc), and a size that cannot be
    allocated is one line at once."""
    import tracemalloc

    collect("CartPole-v1", 10, None, seed=0)
    peaks = []
    for n in (100, 500):
        tracemalloc.start()
        collect("CartPole-v1", n, None, seed=0)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert (peaks[1] - peaks[0]) / 400 < 300, peaks
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, "collect", "--env", "CartPole-v1", "--transitions", str(10**14), "--out",
                           str(tmp_path / "big"))
    assert_one_line_error(code, err, "collecting CartPole-v1: 100,000,000,000,000 rows of 54 bytes",
                          "do not fit in memory", "collect fewer")
    assert snapshot(tmp_path) == before


def test_from_env_actions_inverts_to_env_actions():
    run, cfg = resolve_config("td3bc", "Pendulum-v1")
    box = gym.spaces.Box(np.array([-2.0, 0.0], dtype=np.float32), np.array([2.0, 5.0], dtype=np.float32))
    agent = make_agent(run, cfg, gym.spaces.Box(-1, 1, (3,), np.float32), box)
    squashed = np.array([[-1.0, 1.0], [0.5, -0.25]], dtype=np.float32)
    env_actions = agent.to_env_actions(squashed)
    np.testing.assert_allclose(env_actions, [[-2.0, 5.0], [1.0, 1.875]])
    np.testing.assert_allclose(agent.from_env_actions(env_actions), squashed, atol=1e-6)
    run, cfg = resolve_config("bc", "CartPole-v1")
    discrete = Agent(make_agent(run, cfg, gym.spaces.Box(-1, 1, (4,), np.float32),
                                gym.spaces.Discrete(3, start=-1)).algorithm)
    np.testing.assert_array_equal(discrete.from_env_actions(np.array([-1, 0, 1])), [0, 1, 2])
    np.testing.assert_array_equal(discrete.to_env_actions(np.array([0, 1, 2])), [-1, 0, 1])


def test_box_actions_reach_the_env_in_the_spaces_dtype():
    """A Box of integers (or float64) takes actions of its own dtype: PPO's and SAC's float actions were
    passed on as float64 (3.7, 0.2), which such a space does not contain."""
    obs = gym.spaces.Box(-1, 1, (3,), np.float32)
    ints = gym.spaces.Box(0, 10, (2,), np.int64)
    for algo, actions, expected in [("ppo", [[3.7, 12.0], [-1.0, 0.2]], [[4, 10], [0, 0]]),
                                    ("sac", [[0.5, 1.0], [-1.0, -0.86]], [[8, 10], [0, 1]])]:
        run, cfg = resolve_config(algo, "Pendulum-v1")
        agent = make_agent(run, cfg, obs, ints)
        env_actions = agent.to_env_actions(np.array(actions, np.float32))
        np.testing.assert_array_equal(env_actions, expected)
        assert env_actions.dtype == np.int64 and all(ints.contains(a) for a in env_actions)
        assert ints.contains(agent.predict(np.zeros(3, np.float32)))
    run, cfg = resolve_config("ppo", "Pendulum-v1")
    doubles = gym.spaces.Box(-1, 1, (2,), np.float64)
    assert make_agent(run, cfg, obs, doubles).to_env_actions(np.zeros((1, 2), np.float32)).dtype == np.float64


def test_a_box_dimension_with_equal_bounds_converts_to_a_finite_action():
    """low == high in one dimension: (a - low) / (high - low) was 0 / 0, NaN actions for TD3+BC's batches."""
    run, cfg = resolve_config("td3bc", "Pendulum-v1")
    box = gym.spaces.Box(np.array([-2.0, 3.0], dtype=np.float32), np.array([2.0, 3.0], dtype=np.float32))
    agent = make_agent(run, cfg, gym.spaces.Box(-1, 1, (3,), np.float32), box)
    with np.errstate(all="raise"):  # no 0 / 0 either
        converted = agent.from_env_actions(np.array([[1.0, 3.0], [-2.0, 3.0]], dtype=np.float32))
    np.testing.assert_array_equal(converted, [[0.5, 0.0], [-1.0, 0.0]])
    np.testing.assert_allclose(agent.to_env_actions(converted), [[1.0, 3.0], [-2.0, 3.0]])


@pytest.mark.parametrize("kwargs", [{"transitions": 2.5}, {"transitions": True}, {"transitions": 10, "seed": -1},
                                    {"transitions": 10, "seed": 2**32}, {"transitions": 10, "epsilon": float("nan")}])
def test_collect_refuses_bad_settings_from_python_too(kwargs):
    """canter collect checked its flags, collect() only some of them: transitions=2.5 raised a TypeError while
    slicing the arrays, seed=-1 numpy's ValueError, seed=2**32 was taken though the flag refuses it. The flags
    and the arguments go through one check (canter.tools.checks.check_collect_settings)."""
    from canter.data.dataset import collect
    from canter.errors import CanterError

    with pytest.raises(CanterError, match=r"^--(transitions|seed|epsilon) must be"):
        collect("CartPole-v1", **kwargs)


def test_collect_makes_the_missing_directories_of_out(tmp_path, capsys, monkeypatch):
    """``canter collect --out data/cp`` refused a 'data' that did not exist ('does not exist'), while ``canter plot
    --out`` makes its missing directories; the offline docs' first example is ``--out data/cartpole``."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "collect", "--env", "CartPole-v1", "--out", "data/more/cp", "--transitions", "50")
    assert code == 0 and not err.strip(), err
    assert sorted(p.name for p in (tmp_path / "data" / "more").iterdir()) == ["cp.json", "cp.safetensors"]
    before = snapshot(tmp_path)  # an existing dataset there is still refused, and kept
    code, _, err = run_cli(capsys, "collect", "--env", "CartPole-v1", "--out", "data/more/cp", "--transitions", "50")
    assert_one_line_error(code, err, "already exists")
    assert snapshot(tmp_path) == before
