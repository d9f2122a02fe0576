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
Separate policies per agent are not built.

Checked by hand with mpe2 1.1.1's ``simple_spread_v3`` (3 agents, 18 observations, Discrete(5)):
PPO with 4 copies (12 sub-envs), n_steps 128, batch 256, 4 epochs, lr 3e-4, ent_coef 0.01 went
from a uniform random policy's -26.2 per agent and episode (120 episodes) to -19.8 (30 evaluation
episodes) in 300k agent-steps, 74 s on this 2-core host. (mpe2 depends on pygame-ce, which
replaces pygame, the ``video`` extra's dependency; it ran installed with ``--no-deps``.)
"""
from __future__ import annotations

import importlib
from typing import Any

import gymnasium as gym
import numpy as np

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


class ParallelVectorEnv(gym.vector.VectorEnv):
    """``copies`` PettingZoo parallel envs, each agent a sub-env; see the module docstring."""

    def __init__(self, env_id: str, copies: int, env_kwargs: dict[str, Any] | None = None) -> None:
        factory = parallel_factory(env_id)
        try:
            self.envs = [factory(**(env_kwargs or {})) for _ in range(copies)]
        except TypeError as exc:
            raise CanterError(f"bad env_kwargs for '{env_id}': {exc}") from None
        first = self.envs[0]
        self.agents = list(first.possible_agents)
        obs_spaces = {a: first.observation_space(a) for a in self.agents}
        act_spaces = {a: first.action_space(a) for a in self.agents}
        for kind, spaces in (("observation", obs_spaces), ("action", act_spaces)):
            if any(s != spaces[self.agents[0]] for s in spaces.values()):
                raise CanterError(f"the agents of '{env_id}' have different {kind} spaces; canter's shared policy "
                                  f"needs one (pad them, e.g. with SuperSuit's pad_observations_v0 / pad_action_space_v0)")
        self.n_agents = len(self.agents)
        self.num_envs = copies * self.n_agents
        self.single_observation_space = obs_spaces[self.agents[0]]
        self.single_action_space = act_spaces[self.agents[0]]
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}
        self.env_id = env_id
        self._ended = np.zeros(copies, dtype=bool)
        self._obs = np.zeros((self.num_envs, *self.single_observation_space.shape), self.single_observation_space.dtype)

    def _put(self, copy: int, observations: dict[str, Any]) -> None:
        """Write one copy's observations (agent order) into the batch."""
        for j, agent in enumerate(self.agents):
            self._obs[copy * self.n_agents + j] = observations[agent]

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None,
              ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every copy (copy ``i`` with ``seed + i``)."""
        for i, env in enumerate(self.envs):
            observations, _ = env.reset(seed=None if seed is None else int(seed) + i, options=options)
            self._check_agents(env, "after reset")
            self._put(i, observations)
        self._ended[:] = False
        return self._obs.copy(), {}

    def _check_agents(self, env: Any, when: str) -> None:
        if sorted(env.agents) != sorted(self.agents):
            raise CanterError(f"'{self.env_id}' has agents {sorted(env.agents)} {when}, not all of "
                              f"{sorted(self.agents)}: canter needs every agent for the whole episode")

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every copy with its agents' rows of ``actions``; a copy that ended last step is reset."""
        actions = np.asarray(actions).reshape(len(self.envs), self.n_agents, *self.single_action_space.shape)
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=bool)
        truncated = np.zeros(self.num_envs, dtype=bool)
        for i, env in enumerate(self.envs):
            rows = slice(i * self.n_agents, (i + 1) * self.n_agents)
            if self._ended[i]:
                observations, _ = env.reset()
                self._check_agents(env, "after reset")
                self._ended[i] = False
                self._put(i, observations)
                continue
            observations, rew, term, trunc, _ = env.step(
                {agent: actions[i, j] for j, agent in enumerate(self.agents)})
            self._put(i, observations)
            rewards[rows] = [rew[a] for a in self.agents]
            terminated[rows] = [term[a] for a in self.agents]
            truncated[rows] = [trunc[a] for a in self.agents]
            done = terminated[rows] | truncated[rows]
            if done.any() and not done.all():
                raise CanterError(f"in '{self.env_id}' some agents ended their episode before the others; canter "
                                  f"needs all of a copy's agents to end on the same step")
            self._ended[i] = bool(done.all())
            if not self._ended[i] and len(env.agents) != self.n_agents:  # agents only leave: a count suffices
                self._check_agents(env, "during an episode")
        return self._obs.copy(), rewards, terminated, truncated, {}

    def close_extras(self, **kwargs: Any) -> None:
        """Close every copy."""
        for env in self.envs:
            env.close()
