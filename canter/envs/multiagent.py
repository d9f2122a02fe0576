"""PettingZoo parallel envs as one vector env: every agent of every copy is a sub-env (shared policy).

``--env pettingzoo:MODULE`` names a module with PettingZoo's ``parallel_env(**kwargs)`` factory
(``pettingzoo:pettingzoo.butterfly.pistonball_v6``, ``pettingzoo:mpe2.simple_spread_v3``, or a
module of your own). With ``n_envs`` copies of an env of ``k`` agents the algorithm sees
``n_envs * k`` sub-envs, copy-major, so one policy acts for every agent (parameter sharing, as
SuperSuit's ``pettingzoo_env_to_vec_env`` does for Stable-Baselines3); every algorithm and
trainer works unchanged, and each agent's episode return is an episode return (training
statistics and evaluation average over agents). Requirements, checked with a clear error: all
agents share one observation and one action space, and they stay for the whole episode (all of
a copy's agents end on the same step). Autoreset is gymnasium's ``NEXT_STEP``: the step after a
copy's episode ends resets it, with reward 0 and its agents' ``valid`` flags False.
With ``policies: type`` (one policy per agent type, the name before a trailing ``_N``) or
``policies: agent`` (one per agent), :class:`MultiPolicyVecEnv` steps the same copies and hands
each policy the rows of its own agents (agents of different policies may have different
spaces; see :mod:`canter.trainers.multi_policy`).

Checked by hand with mpe2 1.1.1's ``simple_spread_v3`` (3 agents, 18 observations, Discrete(5)):
PPO with 4 copies (12 sub-envs), n_steps 128, batch 256, 4 epochs, lr 3e-4, ent_coef 0.01 went
from a uniform random policy's -26.2 per agent and episode (120 episodes) to -19.8 (30 evaluation
episodes) in 300k agent-steps, 74 s on this 2-core host. (mpe2 depends on pygame-ce, which
replaces pygame, the ``video`` extra's dependency; it ran installed with ``--no-deps``.)
"""
from __future__ import annotations

import importlib
import re
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from canter.envs.vector import Step, VecEnv
from canter.errors import CanterError, require

PREFIX = "pettingzoo:"


def is_multiagent(env_id: str) -> bool:
    """Whether ``env_id`` names a PettingZoo parallel env (``pettingzoo:MODULE``)."""
    return env_id.startswith(PREFIX)


def parallel_factory(env_id: str) -> Any:
    """The ``parallel_env`` factory of ``pettingzoo:MODULE`` (a clear error when it is missing)."""
    require("pettingzoo", "multiagent", "PettingZoo environments")
    module_name = env_id[len(PREFIX):]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CanterError(f"cannot import module '{module_name}' for env '{env_id}': {exc}") from None
    factory = getattr(module, "parallel_env", None)
    if not callable(factory):
        raise CanterError(f"module '{module_name}' has no parallel_env() factory (PettingZoo's parallel API), needed "
                          f"for env '{env_id}'")
    return factory


def agent_type(agent: str) -> str:
    """An agent's type: its name without a trailing ``_N`` (``adversary_0`` -> ``adversary``)."""
    return re.sub(r"_\d+$", "", agent)


def group_agents(agents: list[str], policies: str) -> dict[str, list[str]]:
    """Policy name -> its agents (in the env's order), for a ``policies`` mode; sorted by name."""
    if policies in ("shared", "joint"):
        return {"shared": list(agents)}
    groups: dict[str, list[str]] = {}
    for agent in agents:
        groups.setdefault(agent_type(agent) if policies == "type" else agent, []).append(agent)
    for name in groups:
        if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
            raise CanterError(f"agent name '{name}' cannot name a policy (letters, digits, '_' and '-' only)")
    return dict(sorted(groups.items()))


class ParallelVectorEnv(gym.vector.VectorEnv):
    """``copies`` PettingZoo parallel envs stepped together, their agents grouped by policy.

    Group ``g``'s rows are its agents of every copy, copy-major. With one group (``policies:
    shared``) this is a gymnasium vector env whose sub-envs are all the agents; with several,
    :class:`MultiPolicyVecEnv` steps it through :meth:`step_groups`.
    """

    def __init__(self, env_id: str, copies: int, env_kwargs: dict[str, Any] | None = None,
                 policies: str = "shared") -> None:
        factory = parallel_factory(env_id)
        try:
            self.envs = [factory(**(env_kwargs or {})) for _ in range(copies)]
        except TypeError as exc:
            raise CanterError(f"bad env_kwargs for '{env_id}': {exc}") from None
        first = self.envs[0]
        self.agents = list(first.possible_agents)
        self.env_id = env_id
        groups = group_agents(self.agents, policies)
        self.policies = list(groups)
        self.group_agents = list(groups.values())
        self.observation_spaces = [self._group_space(first.observation_space, g, policies, "observation")
                                   for g in groups.items()]
        self.action_spaces = [self._group_space(first.action_space, g, policies, "action") for g in groups.items()]
        self.n_agents = len(self.agents)
        self.group_rows = [copies * len(members) for members in self.group_agents]
        self.num_envs = copies * self.n_agents
        if len(self.policies) == 1:
            self.single_observation_space, self.single_action_space = self.observation_spaces[0], self.action_spaces[0]
            self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
            self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}
        self._ended = np.zeros(copies, dtype=bool)
        self._obs = [np.zeros((rows, *space.shape), space.dtype)
                     for rows, space in zip(self.group_rows, self.observation_spaces)]

    def _group_space(self, space_of: Any, group: tuple[str, list[str]], policies: str, kind: str) -> gym.Space:
        """The one ``kind`` space of a group's agents (a clear error when they differ)."""
        name, members = group
        spaces = [space_of(a) for a in members]
        if all(s == spaces[0] for s in spaces):
            return spaces[0]
        pad = "pad them (SuperSuit's pad_observations_v0 / pad_action_space_v0)"
        if policies == "joint":
            raise CanterError(f"the agents of '{self.env_id}' have different {kind} spaces; joint control (qmix) "
                              f"needs one: {pad}")
        if policies == "shared":
            raise CanterError(f"the agents of '{self.env_id}' have different {kind} spaces; one shared policy needs "
                              f"one: pass --set policies=type (one policy per agent type) or {pad}")
        raise CanterError(f"the '{name}' agents of '{self.env_id}' ({', '.join(members)}) have different {kind} "
                          f"spaces; pass --set policies=agent (one policy per agent)")

    def _put(self, copy: int, observations: dict[str, Any]) -> None:
        """Write one copy's observations into each group's rows."""
        for obs, members in zip(self._obs, self.group_agents):
            k = len(members)
            for j, agent in enumerate(members):
                obs[copy * k + j] = observations[agent]

    def reset_groups(self, seed: int | None = None, options: dict[str, Any] | None = None) -> list[np.ndarray]:
        """Reset every copy (copy ``i`` with ``seed + i``); each group's observations."""
        for i, env in enumerate(self.envs):
            observations, _ = env.reset(seed=None if seed is None else int(seed) + i, options=options)
            self._check_agents(env, "after reset")
            self._put(i, observations)
        self._ended[:] = False
        return [obs.copy() for obs in self._obs]

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None,
              ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every copy (one group only; see :meth:`reset_groups`)."""
        self._one_group()
        return self.reset_groups(None if seed is None else int(seed), options)[0], {}

    def _one_group(self) -> None:
        if len(self.policies) != 1:
            raise TypeError("an env of several policies is stepped through MultiPolicyVecEnv")

    def _check_agents(self, env: Any, when: str) -> None:
        if sorted(env.agents) != sorted(self.agents):
            raise CanterError(f"'{self.env_id}' has agents {sorted(env.agents)} {when}, not all of "
                              f"{sorted(self.agents)}: canter needs every agent for the whole episode")

    def step_groups(self, actions: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Step every copy with each group's actions (rows as in the observations); a copy that
        ended last step is reset. Per group: ``(obs, rewards, terminated, truncated)``."""
        copies = len(self.envs)
        acts = [np.asarray(a).reshape(copies, len(members), *space.shape)
                for a, members, space in zip(actions, self.group_agents, self.action_spaces)]
        rewards = [np.zeros(rows, dtype=np.float64) for rows in self.group_rows]
        terminated = [np.zeros(rows, dtype=bool) for rows in self.group_rows]
        truncated = [np.zeros(rows, dtype=bool) for rows in self.group_rows]
        for i, env in enumerate(self.envs):
            if self._ended[i]:
                observations, _ = env.reset()
                self._check_agents(env, "after reset")
                self._ended[i] = False
                self._put(i, observations)
                continue
            observations, rew, term, trunc, _ = env.step(
                {agent: a[i, j] for a, members in zip(acts, self.group_agents) for j, agent in enumerate(members)})
            self._put(i, observations)
            ends = []
            for g, members in enumerate(self.group_agents):
                rows = slice(i * len(members), (i + 1) * len(members))
                rewards[g][rows] = [rew[a] for a in members]
                terminated[g][rows] = [term[a] for a in members]
                truncated[g][rows] = [trunc[a] for a in members]
                ends.append(terminated[g][rows] | truncated[g][rows])
            done = np.concatenate(ends)
            if done.any() and not done.all():
                raise CanterError(f"in '{self.env_id}' some agents ended their episode before the others; canter "
                                  f"needs all of a copy's agents to end on the same step")
            self._ended[i] = bool(done.all())
            if not self._ended[i] and len(env.agents) != self.n_agents:  # agents only leave: a count suffices
                self._check_agents(env, "during an episode")
        return [(obs.copy(), r, te, tr) for obs, r, te, tr in zip(self._obs, rewards, terminated, truncated)]

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every copy (one group only; see :meth:`step_groups`)."""
        self._one_group()
        return (*self.step_groups([actions])[0], {})

    def close_extras(self, **kwargs: Any) -> None:
        """Close every copy."""
        for env in self.envs:
            env.close()


class PolicyRows(gym.vector.VectorEnv):
    """One policy's rows of a :class:`ParallelVectorEnv`: its spaces; stepped by :class:`MultiPolicyVecEnv`."""

    def __init__(self, rows: int, observation_space: gym.Space, action_space: gym.Space) -> None:
        self.num_envs = rows
        self.single_observation_space, self.single_action_space = observation_space, action_space
        self.observation_space = gym.vector.utils.batch_space(observation_space, rows)
        self.action_space = gym.vector.utils.batch_space(action_space, rows)
        self.metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def reset(self, **kwargs: Any) -> Any:  # noqa: D102
        raise TypeError("one policy's rows are reset through MultiPolicyVecEnv")

    def step(self, actions: Any) -> Any:  # noqa: D102
        raise TypeError("one policy's rows are stepped through MultiPolicyVecEnv")


class MultiStep(NamedTuple):
    """A vector step of a multi-policy env: observations and each policy's :class:`Step`."""

    obs: dict[str, np.ndarray]
    steps: dict[str, Step]


class MultiPolicyVecEnv:
    """A multi-agent env whose agents act for several policies; observations and actions are
    dicts policy -> rows of its agents. ``views`` hold each policy's rows as a
    :class:`~canter.envs.VecEnv` (episode statistics per policy); the ``finished_*`` arrays
    cover every agent (index = position in ``policies`` order, then row)."""

    def __init__(self, env: ParallelVectorEnv) -> None:
        self.env = env
        self.policies = list(env.policies)
        self.views = [VecEnv(PolicyRows(rows, o, a))
                      for rows, o, a in zip(env.group_rows, env.observation_spaces, env.action_spaces)]
        self.num_envs = env.num_envs
        self.single_observation_space = gym.spaces.Dict(dict(zip(self.policies, env.observation_spaces)))
        self.single_action_space = gym.spaces.Dict(dict(zip(self.policies, env.action_spaces)))
        self._offsets = np.cumsum([0, *env.group_rows[:-1]])
        self.finished_returns = np.zeros(0)
        self.finished_lengths = np.zeros(0, dtype=np.int64)
        self.finished_envs = np.zeros(0, dtype=np.int64)

    def reset(self, seed: int | None = None) -> dict[str, np.ndarray]:
        """Reset every copy (copy ``i`` with ``seed + i``)."""
        obs = self.env.reset_groups(seed)
        for i, view in enumerate(self.views):
            view.begin(None if seed is None else seed + i)
        return dict(zip(self.policies, obs))

    def step(self, actions: dict[str, np.ndarray]) -> MultiStep:
        """Step every copy with each policy's actions."""
        results = self.env.step_groups([actions[p] for p in self.policies])
        steps = {p: view.record(*result) for p, view, result in zip(self.policies, self.views, results)}
        views = self.views
        self.finished_envs = np.concatenate([v.finished_envs + o for v, o in zip(views, self._offsets)])
        self.finished_returns = np.concatenate([v.finished_returns for v in views])
        self.finished_lengths = np.concatenate([v.finished_lengths for v in views])
        return MultiStep({p: s.obs for p, s in steps.items()}, steps)

    def close(self) -> None:
        """Close every copy."""
        self.env.close()


class JointParallelEnv(gym.vector.VectorEnv):
    """Each copy of a PettingZoo parallel env as one sub-env that acts for all its ``k`` agents
    (``policies: joint``, value decomposition such as QMIX).

    Observation ``[k + 1, w]`` float32: row ``i`` is agent ``i``'s observation, row ``k`` the
    env's global state (PettingZoo's ``state()``, where the env has a ``state_space``; otherwise
    every agent's observation concatenated), zero-padded to ``w``. Action: ``MultiDiscrete``, one
    entry per agent. Reward: the team reward, the sum of the agents' rewards. A copy's episode is
    terminated when any agent's is (all end on the same step).
    """

    def __init__(self, env_id: str, copies: int, env_kwargs: dict[str, Any] | None = None) -> None:
        self.inner = ParallelVectorEnv(env_id, copies, env_kwargs, "joint")
        obs_space, act_space = self.inner.single_observation_space, self.inner.single_action_space
        if not isinstance(obs_space, gym.spaces.Box) or not isinstance(act_space, gym.spaces.Discrete):
            raise CanterError(f"joint control of '{env_id}' needs Box observations and Discrete actions, not "
                              f"{type(obs_space).__name__} and {type(act_space).__name__}")
        self.k, self.copies = self.inner.n_agents, copies
        self.obs_size = int(np.prod(obs_space.shape))
        first = self.inner.envs[0]
        self.has_state = getattr(first, "state_space", None) is not None
        self.state_size = int(np.prod(first.state_space.shape)) if self.has_state else self.k * self.obs_size
        width = max(self.obs_size, self.state_size)
        self.num_envs = copies
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (self.k + 1, width), np.float32)
        self.single_action_space = gym.spaces.MultiDiscrete([int(act_space.n)] * self.k,
                                                            start=[int(act_space.start)] * self.k)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, copies)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, copies)
        self.metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def _joint(self, rows: np.ndarray) -> np.ndarray:
        """Agents' observation rows ``[copies * k, ...]`` -> joint observations ``[copies, k + 1, w]``."""
        k, d = self.k, self.obs_size
        out = np.zeros((self.copies, *self.single_observation_space.shape), np.float32)
        flat = rows.reshape(self.copies, k, d)
        out[:, :k, :d] = flat
        if self.has_state:
            for i, env in enumerate(self.inner.envs):
                out[i, k, :self.state_size] = np.asarray(env.state(), dtype=np.float32).reshape(-1)
        else:
            out[:, k, :k * d] = flat.reshape(self.copies, k * d)
        return out

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None,
              ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every copy (copy ``i`` with ``seed + i``)."""
        rows, _ = self.inner.reset(seed=seed, options=options)
        return self._joint(rows), {}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every copy with its agents' actions ``[copies, k]``."""
        rows, reward, term, trunc, _ = self.inner.step(np.asarray(actions).reshape(-1))
        shape = (self.copies, self.k)
        terminated = term.reshape(shape).any(1)
        truncated = trunc.reshape(shape).any(1) & ~terminated
        return self._joint(rows), reward.reshape(shape).sum(1), terminated, truncated, {}

    def close_extras(self, **kwargs: Any) -> None:
        """Close every copy."""
        self.inner.close()
