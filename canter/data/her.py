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
holds, per relabelled transition, the entries of that transition's own step info that the functions
read (:attr:`GoalLayout.info_keys <canter.envs.goals.GoalLayout>`, found by :func:`check_goal_functions`;
numeric values only, stored as ``[T, n_envs, ...]`` arrays with a flag per row telling whether the step
reported the key, so a key a step left out is left out of its dict too). An episode still running counts
up to its newest transition. Each row records its episode's first and last rows (``ep_start``, ``ep_end``; -1 while
the episode runs), saved with the buffer, so a resumed run relabels as an uninterrupted one.
"""
from __future__ import annotations

from typing import Any, Iterator

import gymnasium as gym
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
        #: the info keys the env's goal functions read, and per key its values and whether each row's step
        #: reported it (``[T, n_envs, ...]`` / ``[T, n_envs]``; allocated when the key is first reported)
        self.info_keys: tuple[str, ...] = tuple(getattr(layout, "info_keys", ()))
        self.infos: dict[str, np.ndarray] = {}
        self.info_set: dict[str, np.ndarray] = {}
        self._step_info: dict[str, Any] | None = None  # the vector info of the step add() is storing

    def add(self, *args: Any, info: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """:meth:`ReplayBuffer.add`, plus the step's vector ``info`` (gymnasium's: a key's values per sub-env
        and its ``_key`` mask), of which the :attr:`info_keys` entries are kept with the transitions. An entry
        that cannot be kept is refused before anything of the step is written."""
        self._step_info = self._kept_infos(info) if self.info_keys else None
        try:
            super().add(*args, **kwargs)
        finally:
            self._step_info = None

    def nbytes(self) -> int:  # noqa: D102
        return super().nbytes() + sum(a.nbytes for d in (self.infos, self.info_set) for a in d.values())

    def _kept_infos(self, info: dict[str, Any] | None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The :attr:`info_keys` entries of a vector step's ``info``: per reported key, its values and the
        sub-envs that reported it (their storage allocated or widened to hold them)."""
        kept = {}
        for key in self.info_keys:
            values = None if info is None else info.get(key)
            if values is None:
                continue
            values = np.asarray(values)
            if values.dtype.kind not in "biuf" or values.shape[:1] != (self.n_envs,):
                raise CanterError(f"her_goals: the env's info['{key}'], which its goal functions read, came as "
                                  f"{_kind(values)} of shape {values.shape} from {self.n_envs} envs; the replay "
                                  f"buffer keeps numeric values only, one per env")
            reported = info.get("_" + key)
            mask = np.ones(self.n_envs, bool) if reported is None else np.asarray(reported, dtype=bool)
            self._info_array(key, values)
            kept[key] = values, mask
        return kept

    def _store_infos(self, row: int) -> None:
        """Keep the step's entries (:meth:`_kept_infos`) in ``row``; the keys it did not report are marked so."""
        for key, reported in self.info_set.items():
            values, mask = self._step_info.get(key, (None, None)) if self._step_info else (None, None)
            reported[row] = False if mask is None else mask
            if values is not None:
                self.infos[key][row][mask] = values[mask]

    def _info_array(self, key: str, values: np.ndarray) -> np.ndarray:
        """The storage of info ``key``, allocated (or widened to a dtype that holds ``values``) as needed."""
        stored = self.infos.get(key)
        if stored is None:
            self.info_set[key] = np.zeros((self.length, self.n_envs), dtype=bool)
            stored = self.infos[key] = np.zeros((self.length,) + values.shape, dtype=values.dtype)
        elif stored.shape[2:] != values.shape[1:]:
            raise CanterError(f"her_goals: the env's info['{key}'] changed shape from {stored.shape[2:]} to "
                              f"{values.shape[1:]} between steps; the replay buffer keeps one shape per key")
        elif np.result_type(stored, values) != stored.dtype:
            stored = self.infos[key] = stored.astype(np.result_type(stored, values))
        return stored

    def _infos(self, row: np.ndarray, env: np.ndarray) -> list[dict[str, Any]]:
        """The stored info entries of the transitions at ``row``, ``env``: one dict per transition."""
        infos: list[dict[str, Any]] = [{} for _ in range(len(row))]
        for key, values in self.infos.items():
            picked, reported = values[row, env], self.info_set[key][row, env]
            for i in np.flatnonzero(reported):
                infos[i][key] = picked[i]
        return infos

    # -- episode bookkeeping ------------------------------------------------------------------
    def _written(self, row: int) -> None:
        if self.info_keys:
            self._store_infos(row)
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
        infos = self._infos(row, env) if self.infos else None  # each transition's own step info
        rewards = _per_transition(self.layout.compute_reward, reached, goals, np.float32, infos)
        batch.rewards.numpy()[pick] = rewards if self.reward_transform is None else self.reward_transform(rewards)
        if self.layout.compute_terminated is not None:
            try:
                terminated = _per_transition(self.layout.compute_terminated, reached, goals, bool, infos)
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
        state.update(her_open=self._open.tolist(), her_last=self._last.tolist(), her_len=self._len.tolist(),
                     her_info_keys=list(self.infos))
        rows = len(state["obs"])
        for i, key in enumerate(self.infos):  # top-level arrays: names are the env's, kept in the JSON part
            state[f"her_info_{i}"], state[f"her_info_set_{i}"] = self.infos[key][:rows], self.info_set[key][:rows]
        return state

    def _check_own_state(self, state: dict[str, Any]) -> None:
        """The running episodes and the info arrays are there and fit (checked before the arrays are replaced: a
        file without them was a KeyError after the buffer's contents were)."""
        super()._check_own_state(state)
        for key in ("her_open", "her_last", *(("her_len",) if "her_len" in state else ())):
            if np.asarray(state[key]).shape != self._open.shape:
                raise ValueError(f"{key} has shape {np.asarray(state[key]).shape}, not one entry per env "
                                 f"({self.n_envs})")
        keys = state.get("her_info_keys", [])
        if not isinstance(keys, list):
            raise ValueError(f"her_info_keys is {type(keys).__name__}, not a list")
        rows = (len(state["obs"]), self.n_envs)
        for i in range(len(keys)):  # a KeyError where one is missing; a broadcast error after the arrays where unfit
            values, reported = np.shape(state[f"her_info_{i}"]), np.shape(state[f"her_info_set_{i}"])
            if values[:2] != rows or reported != rows:
                raise ValueError(f"her_info_{i} and her_info_set_{i} have shapes {values} and {reported}, not one "
                                 f"entry per saved row and env {rows}")

    def load_state_dict(self, state: dict[str, Any]) -> None:  # noqa: D102
        super().load_state_dict(state)
        rows = len(state["obs"])  # the rows never written hold no episode, as in a new buffer
        self.ep_start[rows:] = self.ep_end[rows:] = -1
        self.infos, self.info_set = {}, {}
        for i, key in enumerate(state.get("her_info_keys", [])):
            values, reported = np.asarray(state[f"her_info_{i}"]), np.asarray(state[f"her_info_set_{i}"], dtype=bool)
            self._info_array(key, values[0])[:rows] = values
            self.info_set[key][:rows] = reported
        self._open[:] = np.asarray(state["her_open"], dtype=np.int64)
        self._last[:] = np.asarray(state["her_last"], dtype=np.int64)
        if "her_len" in state:
            self._len[:] = np.asarray(state["her_len"], dtype=np.int64)
        else:  # saved before the count was kept: the rows from each running episode's first to its last
            self._len[:] = np.where(self._open >= 0, (self._last - self._open) % self.length + 1, 0)


class _ReadKeys(dict):
    """A step's info that records the keys a goal function reads (all of them where it reads the whole dict)."""

    def __init__(self, data: dict[str, Any], read: set[str]) -> None:
        super().__init__(data)
        self.read = read

    def __getitem__(self, key: Any) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:  # noqa: D102
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key: Any) -> bool:
        self.read.add(key)
        return super().__contains__(key)

    def _all(self) -> None:
        self.read.update(super().keys())

    def __iter__(self) -> Iterator[Any]:
        self._all()
        return super().__iter__()

    def keys(self) -> Any:  # noqa: D102
        self._all()
        return super().keys()

    def values(self) -> Any:  # noqa: D102
        self._all()
        return super().values()

    def items(self) -> Any:  # noqa: D102
        self._all()
        return super().items()


def step_info(env: gym.Env, env_id: str | None = None) -> dict[str, Any]:
    """The info of one step of ``env`` (reset with seed 0, then a random action, among the allowed ones where
    its observations carry an action mask, as the off-policy warm-up draws them): an example of what the goal
    functions are given (the step's own, without the reset's entries, as each relabelled transition's). A step that raises is the env's own error, which the run's first steps would meet
    too: a one-line CanterError naming the env (``env_id``) and the error, before the run starts."""
    from canter.envs.random_actions import random_env_actions

    obs, _ = env.reset(seed=0)  # (reset's info is no transition's: relabelling never gives its entries)
    action = random_env_actions(env.action_space, 1, np.random.default_rng(0), np.asarray(obs)[None],
                                env.observation_space)[0]
    try:
        return dict(env.step(action)[4])
    except Exception as exc:  # the env's own code: any error it raises
        name = env_id or (env.spec.id if env.spec is not None else type(env.unwrapped).__name__)
        lines = str(exc).strip().splitlines()
        raise CanterError(f"her_goals: a step of '{name}' raised {type(exc).__name__}{': ' + lines[0] if lines else ''} "
                          f"(after reset(seed=0), with a random action: the step canter takes before the run to "
                          f"see which info entries compute_reward reads)") from None


def _not_implemented(env_id: str) -> CanterError:
    return CanterError(f"her_goals needs the env's compute_reward, which '{env_id}' does not implement "
                       f"(NotImplementedError)")


def check_goal_env(layout: GoalLayout, env: gym.Env, env_id: str) -> None:
    """:func:`check_goal_functions` with the info of a step of ``env`` (:func:`step_info`); where that step
    raises because ``compute_reward``, which the step calls, is not implemented, the error says so."""
    try:
        info = step_info(env, env_id)
    except CanterError as exc:
        goals = np.stack([layout.goal_example] * 2)
        try:
            _per_transition(layout.compute_reward, goals, goals, np.float32)
        except NotImplementedError:
            raise _not_implemented(env_id) from None
        except Exception:  # noqa: BLE001 - any other failure: the step's error says what went wrong
            pass
        raise exc from None
    check_goal_functions(layout, env_id, info)


def check_goal_functions(layout: GoalLayout, env_id: str, info: dict[str, Any] | None = None) -> None:
    """Call the env's ``compute_reward`` (and ``compute_terminated``) once as relabelling calls them, on a
    batch of two goals with ``info`` (a real step's, :func:`step_info`), and set ``layout.info_keys`` to the
    info keys they read, which the replay buffer then keeps per transition. One that cannot run so, or
    reads an info value that is not numeric, stops the run in one line before it starts rather than at
    its first update."""
    goals = np.stack([layout.goal_example] * 2)
    read: set[str] = set()
    info = {} if info is None else info
    for name, dtype in (("compute_reward", np.float32), ("compute_terminated", bool)):
        fn = getattr(layout, name)
        if fn is None:
            continue
        try:
            _per_transition(fn, goals, goals, dtype, [_ReadKeys(info, read) for _ in goals])
        except NotImplementedError:
            if name == "compute_reward":
                raise _not_implemented(env_id) from None
        except Exception as exc:  # the env's own code: any error it raises
            raise CanterError(f"her_goals: {name}(achieved_goal, desired_goal, info) of '{env_id}' fails on a batch "
                              f"of goals with a step's infos, as hindsight replay calls it: "
                              f"{type(exc).__name__}: {exc}") from None
    for key in sorted(k for k in read if k in info):
        value = np.asarray(info[key])
        if value.dtype.kind not in "biuf":
            raise CanterError(f"her_goals: the goal functions of '{env_id}' read info['{key}'], which is "
                              f"{_kind(value)}; the replay buffer keeps numeric info values only (it is saved "
                              f"as safetensors): report it as a number or an array of numbers")
    layout.info_keys = tuple(sorted(k for k in read if isinstance(k, str)))


def _kind(value: np.ndarray) -> str:
    """What a non-numeric info value is, for an error: ``a str``, ``a dict``, ``an object array``."""
    if value.dtype == object and value.ndim == 0:
        name = type(value.item()).__name__
        return f"an {name}" if name[0] in "aeiou" else f"a {name}"
    return "a str" if value.dtype.kind in "US" else f"an array of {value.dtype}"


def _per_transition(fn: Any, achieved: np.ndarray, desired: np.ndarray, dtype: type,
                    infos: list[dict[str, Any]] | None = None) -> np.ndarray:
    """``fn(achieved, desired, infos)`` for a batch of goals, one value per row (``infos``: each
    transition's info entries; empty dicts where None). gymnasium-robotics asks ``compute_reward`` to take
    batches, but some envs' ``compute_terminated`` handle one step only and return a single value for
    the whole batch: then each row is asked on its own, with its own info."""
    n = len(achieved)
    infos = [{} for _ in range(n)] if infos is None else infos
    out = np.asarray(fn(achieved, desired, infos))
    if out.shape != (n,):
        out = np.array([np.asarray(fn(achieved[i], desired[i], infos[i])).item() for i in range(n)])
    return out.astype(dtype)
