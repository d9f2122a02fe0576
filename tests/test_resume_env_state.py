"""Env state across a resume: the env snapshot round trip, and fresh episodes when an env cannot be saved."""
from __future__ import annotations

import enum
import json

import gymnasium as gym
import numpy as np
import pytest

import canter
from canter.checkpoint import load_checkpoint, read_metadata


def test_env_that_cannot_be_saved_resumes_with_fresh_episodes(tmp_path, monkeypatch):
    """An env holding an opaque object: the resumed run is valid (and says it is not exact)."""
    from support import register_unsaveable, stop_at_300

    env = register_unsaveable("CartPole-v1", "LockedCartPole-test")
    run_dir = tmp_path / "run"
    kw = dict(n_envs=2, n_steps=32, batch_size=64, n_epochs=1, max_steps=640, eval_every=0, eval_episodes=1,
              tensorboard=False)
    canter.train("ppo", env, run_dir=run_dir, hooks={"after_update": stop_at_300}, **kw)
    meta = read_metadata(run_dir / "checkpoints" / "last")
    assert meta["env_state_saved"] is False and meta["stop_reason"] == "interrupted"
    canter.resume(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["resume_exact"] is False and summary["steps"] == 640 and summary["stop_reason"] == "max_steps"


def test_fresh_episodes_after_a_resume_start_with_zero_discounted_returns(tmp_path):
    """normalize_reward keeps a running discounted return per env; a resume that resets the envs (fresh
    episodes) must zero it, as an episode end does, not carry the dropped episodes' returns into the new."""
    from support import state_after_inexact_resume

    def running_at_the_stop(run_dir):
        state, _ = load_checkpoint(run_dir / "checkpoints" / "last")
        assert np.abs(state["agent"]["returns"]).sum() > 0

    exact, returns = state_after_inexact_resume(
        "ppo", "CartPole-v1", "LockedCartPoleReturns-test", lambda t: t.agent._returns.copy(), tmp_path / "run",
        between=running_at_the_stop, n_envs=2, n_steps=32, batch_size=32, n_epochs=1, max_steps=640, eval_every=0,
        eval_episodes=1, tensorboard=False, seed=0, normalize_reward=True)
    assert exact is False and (returns == 0).all()


# -- env state capture -------------------------------------------------------------------------------


class _Phase(enum.Enum):
    A = 0
    B = 1


class _PhaseEnv(gym.Env):
    """A game whose state is an Enum member: action 1 toggles the phase; reward 1 in phase B."""

    observation_space = gym.spaces.Box(0, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):  # noqa: D102
        super().reset(seed=seed)
        self.phase, self.t = _Phase.A, 0
        return np.zeros(1, np.float32), {}

    def step(self, action):  # noqa: D102
        if action == 1:
            self.phase = _Phase.B if self.phase is _Phase.A else _Phase.A
        self.t += 1
        return np.full(1, self.phase.value, np.float32), float(self.phase is _Phase.B), False, self.t >= 40, {}


canter.register("env", "CanterTestPhase-v0")(lambda render_mode=None, **kw: _PhaseEnv())


class _DriftEnv(gym.Env):
    """A drift whose position is a 0-d array updated in place (its observation stacks it with the time)."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):  # noqa: D102
        super().reset(seed=seed)
        self.x, self.t = np.zeros(()), 0
        return np.array([self.x, self.t], np.float32), {}

    def step(self, action):  # noqa: D102
        self.x += (action - 0.5) * 0.1 + 0.05 * self.np_random.standard_normal()
        self.t += 1
        return np.array([self.x, self.t], np.float32), float(-abs(self.x)), False, self.t >= 40, {}


canter.register("env", "CanterTestDrift-v0")(lambda render_mode=None, **kw: _DriftEnv())


class _CalendarEnv(gym.Env):
    """Days of a calendar (datetime64) walked with weights kept in big-endian order (as read from a file);
    ``wide=True`` adds a long-double array, which no checkpoint tensor holds."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, wide=False):
        self.start = np.datetime64("2020-01-01")
        self.days = np.arange("2020-01-01", "2020-03-01", dtype="datetime64[D]")
        self.wide = np.zeros(2, np.longdouble) if wide else None

    def reset(self, seed=None, options=None):  # noqa: D102
        super().reset(seed=seed)
        self.today, self.weights = self.days[int(self.np_random.integers(10))], np.ones(2, ">f8")
        return self._obs(), {}

    def _obs(self):
        return np.array([(self.today - self.start) / np.timedelta64(1, "D"), self.weights[0]], np.float32)

    def step(self, action):  # noqa: D102
        self.today += np.timedelta64(int(action) + 1, "D")
        self.weights[0] *= 1 + 0.1 * self.np_random.standard_normal()
        return self._obs(), float(action), False, self.today >= self.days[-1], {}


canter.register("env", "CanterTestCalendar-v0")(lambda render_mode=None, wide=False, **kw: _CalendarEnv(wide))


@pytest.mark.parametrize("env_id, mode", [("CartPole-v1", "native"), ("CartPole-v1", "sync"), ("Pendulum-v1", "sync"),
                                          ("FrozenLake-v1", "sync"), ("CanterTestPhase-v0", "sync"),
                                          ("CanterTestDrift-v0", "sync"), ("CanterTestCalendar-v0", "sync")])
def test_env_state_round_trip_continues_identically(env_id, mode):
    from safetensors.torch import load, save

    from canter.checkpoint import flatten_state, unflatten_state
    from canter.envs import make_vec_env
    from canter.envs.state import capture_env, restore_env

    env = make_vec_env(env_id, 3, mode)
    env.reset(seed=5)
    env.single_action_space.seed(0)
    actions = [np.stack([env.single_action_space.sample() for _ in range(3)]) for _ in range(300)]
    for a in actions[:150]:
        env.step(a)
    state, problems = capture_env(env)
    assert problems == []
    skeleton, tensors = flatten_state(state)
    state = unflatten_state(json.loads(json.dumps(skeleton)), load(save(tensors)))
    expected = [env.step(a) for a in actions[150:]]
    fresh = make_vec_env(env_id, 3, mode)
    fresh.reset(seed=123)
    restore_env(fresh, state)
    got = [fresh.step(a) for a in actions[150:]]
    for e, g in zip(expected, got):
        for x, y in zip(e, g):
            np.testing.assert_array_equal(x, y)
    env.close()
    fresh.close()



def _lowest_legal(obs: np.ndarray) -> np.ndarray:
    """Each tic-tac-toe row's lowest legal square (its mask is the packed observation's last 9 columns; a finished
    game's final observation has none: its next step only resets it)."""
    return np.array([int(np.flatnonzero(np.append(row[-9:], 1))[0]) % 9 for row in obs])


def test_a_turn_based_games_info_of_strings_is_saved():
    """A turn-based game reports its new game's seat and opponent at reset: the vector env keeps them as object
    arrays of strings, which the capture once called unsaveable ('VecEnv.info (dict)'), so a turn-based run whose
    checkpoint fell on a step that reset a game resumed with fresh episodes, not exactly."""
    pytest.importorskip("pettingzoo")
    from safetensors.torch import load, save

    from canter.checkpoint import flatten_state, unflatten_state
    from canter.envs import make_vec_env
    from canter.envs.state import capture_env, restore_env

    game = "pettingzoo:pettingzoo.classic.tictactoe_v3"
    env, fresh = make_vec_env(game, 2, "sync"), make_vec_env(game, 2, "sync")
    obs = env.reset(seed=5)  # VecEnv.reset: the observations only
    fresh.reset(seed=9)
    obs = env.step(_lowest_legal(obs))[0]
    while "seat" not in env.info:  # until a game was reset on this step
        obs = env.step(_lowest_legal(obs))[0]
    state, problems = capture_env(env)
    assert problems == [] and env.info["seat"].dtype == object
    skeleton, tensors = flatten_state(state)
    restore_env(fresh, unflatten_state(json.loads(json.dumps(skeleton)), load(save(tensors))))
    np.testing.assert_array_equal(fresh.info["seat"], env.info["seat"])
    other = obs
    for _ in range(20):
        a, b = env.step(_lowest_legal(obs)), fresh.step(_lowest_legal(other))
        for x, y in zip(a[:4], b[:4]):
            np.testing.assert_array_equal(x, y)
        obs, other = a[0], b[0]
    env.close()
    fresh.close()


def test_a_0d_array_keeps_its_shape_through_a_checkpoint(tmp_path):
    """np.ascontiguousarray makes a 0-d array 1-d: saved so, an env's 0-d array attribute came back of shape (1,)
    and the resumed run's first step raised (stacking it into the observation), and the return statistics' 0-d
    mean and variance needed reshaping when loaded."""
    from canter.checkpoint import load_checkpoint, save_checkpoint

    save_checkpoint(tmp_path / "c", {"x": np.array(2.5), "v": np.arange(3.0), "s": np.array(7, np.int64)}, {})
    state, _ = load_checkpoint(tmp_path / "c")
    assert state["x"].shape == () and state["x"] == 2.5 and state["s"].shape == () and state["s"] == 7
    assert state["v"].shape == (3,)


def test_an_env_state_saved_1d_by_an_older_canter_restores_its_0d_array():
    from canter.envs import make_vec_env
    from canter.envs.state import capture_env, restore_env

    env = make_vec_env("CanterTestDrift-v0", 1, "sync")
    env.reset(seed=0)
    state, _ = capture_env(env)
    inner = state["env"]["__env__"]["envs"]["__envs__"][0]
    while "x" not in inner:  # down the wrappers to the env itself
        inner = inner["env"]["__env__"]
    inner["x"] = inner["x"].reshape(1)
    restore_env(env, state)
    assert env.env.envs[0].unwrapped.x.shape == ()
    env.close()


def test_an_env_of_arrays_no_checkpoint_holds_trains_and_resumes_with_fresh_episodes(tmp_path):
    """An env's long-double array was taken as plain data: the save of the run's first 'last' then raised torch's
    TypeError, and the run could not train at all. It is an opaque object now: the resume starts fresh episodes."""
    from support import stop_at_300

    run_dir = tmp_path / "run"
    kw = dict(n_envs=2, n_steps=32, batch_size=64, n_epochs=1, max_steps=512, eval_every=0, eval_episodes=1,
              tensorboard=False, env_kwargs={"wide": True})
    canter.train("ppo", "CanterTestCalendar-v0", run_dir=run_dir, hooks={"after_update": stop_at_300}, **kw)
    assert read_metadata(run_dir / "checkpoints" / "last")["env_state_saved"] is False
    canter.resume(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["resume_exact"] is False and summary["steps"] == 512
