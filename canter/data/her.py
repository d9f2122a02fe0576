"""Hindsight experience replay (Andrychowicz et al. 2017): replay with goals the agent did reach.

:class:`HerReplayBuffer` is a :class:`~canter.data.ReplayBuffer` of a goal env's flattened
observations (:class:`~canter.envs.goals.GoalLayout`). It stores real transitions only, as
Stable-Baselines3's ``HerReplayBuffer`` does, and relabels when sampling: with ``her_goals = k``
relabelled goals per real transition, a sampled transition is relabelled with probability
``k / (k + 1)``. Its desired goal (in the observation and the next observation) is replaced by
the goal achieved after a transition ``t'`` of the same episode, chosen by the strategy:

- ``future``: ``t'`` uniform over the transition itself and the episode's later ones;
- ``final``: the episode's last transition;
- ``episode``: uniform over the whole episode.

The reward is the env's ``compute_reward(next achieved goal, new goal, info)``; ``terminated`` the
env's ``compute_terminated`` when it has one (gymnasium-robotics' ``GoalEnv`` API), else the
stored flag (as Stable-Baselines3 keeps it; also where ``compute_terminated`` raises
``NotImplementedError``, as ``GoalEnv``'s own does in a subclass that writes ``compute_reward``
only). Both are asked for the whole batch at once, and row by
row where a function answers a batch with one value (a per-step ``compute_terminated``); ``info``
is an empty dict (the buffer keeps no infos). An episode still running counts up to its newest
transition. Each row records its episode's first and last rows (``ep_start``, ``ep_end``; -1 while
the episode runs), saved with the buffer, so a resumed run relabels as an uninterrupted one.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from canter.data.batch import ReplayBatch
from canter.data.replay import ReplayBuffer
from canter.envs.goals import GoalLayout
from canter.errors import CanterError

STRATEGIES = ("future", "final", "episode")


class HerReplayBuffer(ReplayBuffer):
    """Uniform one-step replay of a goal env that relabels sampled transitions (module docstring)."""

    ARRAYS = ReplayBuffer.ARRAYS + ("ep_start", "ep_end")

    def __init__(self, *args: Any, layout: GoalLayout, her_goals: int = 4, strategy: str = "future",
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.n_step != 1:
            raise ValueError("hindsight replay takes one-step transitions")
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown hindsight strategy '{strategy}'; choices: {', '.join(STRATEGIES)}")
        self.layout, self.strategy = layout, strategy
        self.relabel_fraction = her_goals / (her_goals + 1.0)
        shape = (self.length, self.n_envs)
        self.ep_start = np.full(shape, -1, dtype=np.int64)
        self.ep_end = np.full(shape, -1, dtype=np.int64)
        self._open = np.full(self.n_envs, -1, dtype=np.int64)  # first row of each env's running episode
        self._last = np.full(self.n_envs, -1, dtype=np.int64)  # the row each env wrote last
        self._len = np.zeros(self.n_envs, dtype=np.int64)  # rows of each env's running episode so far

    # -- episode bookkeeping ------------------------------------------------------------------
    def _written(self, row: int) -> None:
        valid, done = self.valid[row], self.done[row]
        prev = (row - 1) % self.length
        for e in range(self.n_envs):
            if self._open[e] >= 0 and (not valid[e] or self._last[e] != prev):
                self._close(e, self._last[e])  # a boundary came before the episode's end
            self.ep_end[row, e] = -1
            if valid[e]:
                if self._open[e] < 0:
                    self._open[e], self._len[e] = row, 0
                self._len[e] += 1
                self.ep_start[row, e] = self._open[e]
                self._last[e] = row
                if done[e]:
                    self._close(e, row)
            else:
                self.ep_start[row, e] = -1

    def _close(self, env: int, last: int) -> None:
        """Mark env ``env``'s running episode as ending at row ``last``."""
        # the episode's rows the ring still holds (counted, not measured from its first row: an
        # episode longer than the ring has written over its own start)
        span = min(int(self._len[env]), self.length - 1)
        rows = (last - np.arange(span)) % self.length
        self.ep_end[rows, env] = last
        self._open[env] = -1

    # -- sampling -----------------------------------------------------------------------------
    def transitions(self, idx: np.ndarray, weights: np.ndarray | None = None) -> ReplayBatch:
        """The transitions at flat indices ``idx``, a ``relabel_fraction`` of them with hindsight goals."""
        batch = super().transitions(idx, weights)
        pick = np.flatnonzero(self.rng.random(len(idx)) < self.relabel_fraction)
        if len(pick) == 0:
            return batch
        n, length = self.n_envs, self.length
        row, env = np.divmod(idx[pick], n)
        end = self.ep_end[row, env]
        running = end < 0  # the episode is still being collected: it reaches the newest row so far
        end[running] = self._last[env[running]]
        if self.strategy == "final":
            source = end
        else:
            first = row if self.strategy == "future" else self._live_start(row, self.ep_start[row, env])
            span = (end - first) % length + 1
            source = (first + (self.rng.random(len(pick)) * span).astype(np.int64)) % length
        achieved = self._gather_obs(((source + 1) % length) * n + env)  # the goal reached after transition t'
        goals = self.layout.goals(achieved, "achieved_goal")
        obs, next_obs = batch.obs.numpy(), batch.next_obs.numpy()  # fresh gathers: safe to write
        sub_obs, sub_next = obs[pick], next_obs[pick]
        self.layout.set_desired(sub_obs, goals)
        self.layout.set_desired(sub_next, goals)
        obs[pick], next_obs[pick] = sub_obs, sub_next
        reached = self.layout.goals(sub_next, "achieved_goal")
        rewards = _per_transition(self.layout.compute_reward, reached, goals, np.float32)
        batch.rewards.numpy()[pick] = rewards if self.reward_transform is None else self.reward_transform(rewards)
        if self.layout.compute_terminated is not None:
            try:
                terminated = _per_transition(self.layout.compute_terminated, reached, goals, bool)
            except NotImplementedError:  # declared, not written (gymnasium-robotics' GoalEnv's own): the stored flags
                self.layout.compute_terminated = None
            else:
                batch.terminated.numpy()[pick] = terminated
        return batch

    def _live_start(self, row: np.ndarray, start: np.ndarray) -> np.ndarray:
        """Episode starts ``start`` of the transitions at ``row``, moved to the oldest row still held
        where the ring has overwritten an episode's first rows."""
        if not self.full:
            return start
        oldest = (self.pos + 1) % self.length  # the oldest row follows the head
        newer = (start - oldest) % self.length > (row - oldest) % self.length
        return np.where(newer, oldest, start)

    # -- state --------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:  # noqa: D102
        state = super().state_dict()
        state.update(her_open=self._open.tolist(), her_last=self._last.tolist(), her_len=self._len.tolist())
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:  # noqa: D102
        super().load_state_dict(state)
        rows = len(state["obs"])  # the rows never written hold no episode, as in a new buffer
        self.ep_start[rows:] = self.ep_end[rows:] = -1
        self._open[:] = np.asarray(state["her_open"], dtype=np.int64)
        self._last[:] = np.asarray(state["her_last"], dtype=np.int64)
        if "her_len" in state:
            self._len[:] = np.asarray(state["her_len"], dtype=np.int64)
        else:  # saved before the count was kept: the rows from each running episode's first to its last
            self._len[:] = np.where(self._open >= 0, (self._last - self._open) % self.length + 1, 0)


def check_goal_functions(layout: GoalLayout, env_id: str) -> None:
    """Call the env's ``compute_reward`` (and ``compute_terminated``) once as relabelling calls them, on a
    batch of two goals with empty infos, so that one that cannot run so (it reads its step infos, which the
    buffer does not keep) stops the run in one line before it starts rather than at its first update."""
    goals = np.stack([layout.goal_example] * 2)
    for name, dtype in (("compute_reward", np.float32), ("compute_terminated", bool)):
        fn = getattr(layout, name)
        if fn is None:
            continue
        try:
            _per_transition(fn, goals, goals, dtype)
        except NotImplementedError:
            if name == "compute_reward":
                raise CanterError(f"her_goals needs the env's compute_reward, which '{env_id}' does not "
                                  f"implement (NotImplementedError)") from None
        except Exception as exc:  # the env's own code: any error it raises
            raise CanterError(f"her_goals: {name}(achieved_goal, desired_goal, info) of '{env_id}' fails on a batch "
                              f"of goals with empty infos, as hindsight replay calls it (the replay buffer keeps no "
                              f"step infos): {type(exc).__name__}: {exc}") from None


def _per_transition(fn: Any, achieved: np.ndarray, desired: np.ndarray, dtype: type) -> np.ndarray:
    """``fn(achieved, desired, infos)`` for a batch of goals, one value per row (``infos`` are empty
    dicts: the stored transitions keep no info). gymnasium-robotics asks ``compute_reward`` to take
    batches, but some envs' ``compute_terminated`` handle one step only and return a single value for
    the whole batch: then each row is asked on its own."""
    n = len(achieved)
    out = np.asarray(fn(achieved, desired, [{} for _ in range(n)]))
    if out.shape != (n,):
        out = np.array([np.asarray(fn(achieved[i], desired[i], {})).item() for i in range(n)])
    return out.astype(dtype)
