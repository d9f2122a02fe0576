"""Views of a :class:`~canter.envs.multiagent.ParallelVectorEnv` for the trainers.

- :class:`MultiPolicyVecEnv` (``policies: type | agent``): observations and actions are dicts
  policy -> rows of its agents, and each policy's rows are a :class:`~canter.envs.VecEnv` view
  with its own episode statistics (:mod:`canter.trainers.multi_policy` runs one member trainer
  per view).
- :class:`JointParallelEnv` (``policies: joint``, QMIX): each env copy is one sub-env acting for
  all its agents.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from canter.envs.masks import MaskedBox, mask_width
from canter.envs.multiagent import ParallelVectorEnv
from canter.envs.spaces import describe_space
from canter.envs.vector import Step, VecEnv, warn_close_error
from canter.errors import CanterError


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
        #: each agent's env copy (index as in ``finished_envs``)
        self.copy_index = env.copy_index
        self.finished_returns = np.zeros(0)
        self.finished_lengths = np.zeros(0, dtype=np.int64)
        self.finished_envs = np.zeros(0, dtype=np.int64)
        #: each row's policy and agent (index as in ``finished_envs``), recorded in ``history.parquet``
        self.row_labels = {
            "policy": np.concatenate([np.full(rows, p) for p, rows in zip(self.policies, env.group_rows)]),
            "agent": np.concatenate(env.row_agents)}

    @property
    def env_id(self) -> str | None:
        """The env id, which errors and warnings name (:func:`~canter.envs.make.make_vec_env` sets it; None: not
        named); each policy's view names it too."""
        return self.views[0].env_id if self.views else None

    @env_id.setter
    def env_id(self, env_id: str | None) -> None:
        for view in self.views:
            view.env_id = env_id

    def _check_observations(self, obs: list[np.ndarray]) -> None:
        """Refuse a Discrete observation outside its policy's space (as :meth:`VecEnv.step` does for one policy):
        one-hot encoding it was torch's "Class values must be smaller than num_classes" traceback."""
        for view, rows in zip(self.views, obs):
            if view._obs_range is not None:
                view._check_observations(rows)

    def reset(self, seed: int | None = None) -> dict[str, np.ndarray]:
        """Reset every copy (copy ``i`` with ``seed + i``)."""
        obs = self.env.reset_groups(seed)
        self._check_observations(obs)
        for i, (view, observed) in enumerate(zip(self.views, self.env.observed_rows())):
            view.begin(None if seed is None else seed + i)
            view.observed = None if observed.all() else observed  # agents that join later: placeholder rows
        return dict(zip(self.policies, obs))

    def step(self, actions: dict[str, np.ndarray]) -> MultiStep:
        """Step every copy with each policy's actions."""
        results = self.env.step_groups([actions[p] for p in self.policies])  # (obs, r, term, trunc, active, seen)
        self._check_observations([result[0] for result in results])
        steps = {p: view.record(*result[:5], observed=result[5])
                 for p, view, result in zip(self.policies, self.views, results)}
        views = self.views
        self.finished_envs = np.concatenate([v.finished_envs + o for v, o in zip(views, self._offsets)])
        self.finished_returns = np.concatenate([v.finished_returns for v in views])
        self.finished_lengths = np.concatenate([v.finished_lengths for v in views])
        return MultiStep({p: s.obs for p, s in steps.items()}, steps)

    def close(self) -> None:
        """Close every copy; a copy whose ``close()`` raises is a warning naming the env (as :meth:`VecEnv.close`)."""
        try:
            self.env.close()
        except Exception as exc:  # noqa: BLE001 - the env's own error, whatever it is
            warn_close_error(self.env_id, exc)


class JointParallelEnv(gym.vector.VectorEnv):
    """Each copy of a PettingZoo parallel env as one sub-env that acts for all its ``k`` agents
    (``policies: joint``, value decomposition such as QMIX).

    Observation ``[k + 1, w]`` float32: row ``i`` is agent ``i``'s observation, row ``k`` the
    env's global state (PettingZoo's ``state()``, where the env has a ``state_space``; otherwise
    every agent's observation concatenated), zero-padded to ``w``. The last columns of every agent's row are its
    action mask (a :class:`~canter.envs.masks.MaskedBox`): the one its observations carry
    (:mod:`canter.envs.masks`), or where the env has none an automatic "alive" mask (every action allowed while the
    agent is in the episode; since 2026-11-28). Action: ``MultiDiscrete``, one
    entry per agent. Reward: the team reward, the sum of the agents' rewards. An agent that left
    the episode early observes zeros from the step after the one it left in (as SMAC's dead units
    do; its final observation is shown on that step, so the team's bootstrapped value at a time
    limit sees every agent's final observation) and its actions are ignored; its mask
    allows action 0 alone from that step on (PyMARL's no-op for a dead unit: the action stored for it is the
    one the TD target's maximum takes), as does that of an agent not yet joined; at a truncated team end
    the agents the time limit cut keep theirs. A
    copy's episode ends when every agent has ended: truncated (the team's value is bootstrapped)
    if a time limit cut an agent's episode on that last step, even where another agent's episode
    terminated on it (as PyMARL, whose time-limit step is never terminal), else terminated (also where
    the env reports an agent both terminated and truncated: it terminated).
    """

    def __init__(self, env_id: str, copies: int, env_kwargs: dict[str, Any] | None = None,
                 max_steps: int | None = None) -> None:
        self.inner = ParallelVectorEnv(env_id, copies, env_kwargs, "joint", max_steps=max_steps)
        try:
            self.inner.refuse_images("joint control (qmix's agent network and mixer)", "train ppo or dqn (a CNN), "
                                     "with one shared policy or policies: type or agent")
        except CanterError:
            self.inner.close()
            raise
        obs_space, act_space = self.inner.single_observation_space, self.inner.single_action_space
        wrong = ([f"observe {describe_space(obs_space)}"] if not isinstance(obs_space, gym.spaces.Box) else []) + (
            [f"act in {describe_space(act_space)}"] if not isinstance(act_space, gym.spaces.Discrete) else [])
        if wrong:  # only what is wrong (a masked Box observation was named as wrong with the actions)
            self.inner.close()
            instead = "train dqn or ppo" if isinstance(act_space, gym.spaces.Discrete) else "train ppo"
            raise CanterError(f"joint control of '{env_id}' needs Box observations and Discrete actions; its agents "
                              f"{' and '.join(wrong)}; {instead} (independent policies) instead")
        self.k, self.copies = self.inner.n_agents, copies
        #: the env's action mask packed in each agent's observation (0: none)
        self.env_mask = mask_width(obs_space)
        #: each agent row's last columns are its action mask: the env's, or where the env has none an automatic
        #: "alive" mask (every action allowed to an agent in the episode, action 0 alone to one out of it)
        self.mask = self.env_mask or int(act_space.n)
        self.obs_size = int(np.prod(obs_space.shape)) - self.env_mask
        self.state_size = self.inner.state_size
        width = max(self.obs_size, self.state_size) + self.mask
        self.num_envs = copies
        low, high = np.full((self.k + 1, width), -np.inf), np.full((self.k + 1, width), np.inf)
        low[:, -self.mask:], high[:, -self.mask:] = 0.0, 1.0
        self.single_observation_space = MaskedBox(low, high, self.mask)
        self.single_action_space = gym.spaces.MultiDiscrete([int(act_space.n)] * self.k,
                                                            start=[int(act_space.start)] * self.k)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, copies)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, copies)
        self.metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def _joint(self, rows: np.ndarray, cut: np.ndarray | None = None) -> np.ndarray:
        """Agents' observation rows ``[copies * k, ...]`` -> joint observations ``[copies, k + 1, w]``; ``cut``
        ``[copies, k]``: the agents a time limit cut on the step that ended their team's (truncated) episode."""
        k, d, m = self.k, self.obs_size, self.mask
        out = np.zeros((self.copies, *self.single_observation_space.shape), np.float32)
        # an agent's row keeps its final observation on the step it leaves (a truncation's bootstrap sees
        # it), zeros after
        rows = rows.reshape(self.copies, k, d + self.env_mask) * self.inner.in_state[:, :, None]
        out[:, :k, :d] = rows[..., :d]
        out[:, :k, -m:] = rows[..., d:] if self.env_mask else 1.0  # no masks in the env: every action allowed
        # an agent out of the episode (left, or not yet joined) may take action 0 only (PyMARL's dead units:
        # the no-op alone available), so the action stored for it and the target's maximum over its actions
        # agree; a mask of zeros allowed everything, and its random stored actions met a max in the target (as
        # did every env without masks before the alive mask, 2026-11-28).
        # Agents a time limit cut at the team's end keep their mask: the truncation's bootstrap is their max
        idle = ~self.inner.alive if cut is None else ~self.inner.alive & ~cut
        out[:, :k, -m:][idle] = np.eye(m, dtype=np.float32)[0]
        out[:, k, :self.state_size] = self.inner.global_state()
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
        ended = self.inner.ended  # every agent of the copy has ended (False on the step that resets it)
        # a time limit on the last step leaves the team's episode truncated even where an agent's own
        # episode terminated on that step (PyMARL: an episode_limit step is never terminal); an agent the env
        # reports both terminated and truncated terminated (gymnasium: no bootstrap past a terminal state), so a
        # team whose every agent did is terminated
        cut = (trunc & ~term).reshape(shape)
        truncated = ended & cut.any(1)
        terminated = ended & ~truncated
        return self._joint(rows, cut & truncated[:, None]), reward.reshape(shape).sum(1), terminated, truncated, {}

    def close_extras(self, **kwargs: Any) -> None:
        """Close every copy."""
        self.inner.close()
