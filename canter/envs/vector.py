"""A thin adapter over a Gymnasium vector env with ``NEXT_STEP`` autoreset.

With ``NEXT_STEP`` autoreset, the observation returned on the step that ends an episode is the
real final observation, and the *next* call to ``step`` resets that sub-env (its action is
ignored, its reward is 0). So every transition ``(obs[t], act[t], rew[t], obs[t+1])`` is real
except the ones that only performed a reset: :attr:`Step.valid` marks them False, and trainers
drop them. Terminated and truncated stay separate. This one convention works for native
vectorised envs (which only support ``NEXT_STEP``), sync and async vectorisation alike, and the
per-env observation stream it produces (final frame included) is what frame-sharing replay
memories need.
"""
from __future__ import annotations

import linecache
import re
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from canter.errors import CanterError, raised_by_the_call

#: the info key under which a vector env reports its active mask (see :meth:`VecEnv.record`)
ACTIVE = "canter_active"
#: the info key under which an env whose episodes are parts of a game (Atari training envs: one life
#: each) reports a whole game's raw score on the step that ends the game (NaN or absent on other steps)
GAME_RETURN = "canter_game_return"
#: the info key under which a vector env reports which rows of a step's observations are real ones (a
#: multi-agent env's rows of agents that had left before the step repeat their final observation: False)
OBSERVED = "canter_observed"


class Step(NamedTuple):
    """Result of one vector step. All arrays have leading dimension ``num_envs``."""

    obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    valid: np.ndarray


def _observation_error(exc: ValueError | TypeError, space: gym.Space) -> Exception:
    """A one-line error for an observation that does not fit the env's own observation space (NumPy's
    "Output array has wrong dimensionality" when the vector env stacks it; "Cannot cast array data from
    dtype('float64') to dtype('int64')" for a float where a Discrete space holds integers, a TypeError traceback of
    sync vectorization); any other error as it is."""
    text = str(exc)
    # (the vector env stacking its copies' observations: one None or of another shape among arrays is the last);
    # NumPy's same error raised by the env's own code is the env's bug: its traceback shows where
    if not text.startswith(("Output array", "could not broadcast", "all input arrays must have the same shape",
                            "Cannot cast array data from")) or (
            not raised_by_the_call(exc, past_numpy=True)):
        return exc
    from canter.envs.spaces import describe_space

    return CanterError(f"the env returned an observation that does not fit its observation space "
                       f"{describe_space(space)}: {text.splitlines()[0]}")


#: what step() returns besides the observation, as gymnasium's API has them
STEP_VALUES = "gymnasium's API: step() returns one number as the reward and a bool each as terminated and truncated"


def _scalar_error(exc: ValueError) -> CanterError | None:
    """A one-line error where gymnasium's sync vector env could not store a sub-env's reward (or flag) in its
    array: one returned as an array (NumPy 2: "setting an array element with a sequence"); else None. Which value
    is read from the line that raised (``self._rewards[i]`` of the tuple the sub-env's step is unpacked into)."""
    tb = exc.__traceback__
    if tb is None or "setting an array element with a sequence" not in str(exc):
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    line = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
    for attr, what in (("_rewards", "reward"), ("_terminations", "terminated"), ("_truncations", "truncated")):
        if f".{attr}[" in line:  # gymnasium's ``self._rewards[i]``, :func:`_step_one`'s ``env._rewards[0]``
            return CanterError(f"the env's step() returned a {what} that is a sequence (an array or list), not one "
                               f"value; {STEP_VALUES}")
    return None


#: gymnasium's passive env checker on an info that is not a dict (the first step of an env made by gymnasium.make)
_CHECKER_INFO = re.compile(r"The `info` returned by `step\(\)` must be a python dictionary, actual type: <class '([^']+)'>")


def step_result(result: Any) -> str:
    """What a ``step()`` that did not return 5 values returned, for the error: ``4 values, not 5``, ``NoneType, not
    (obs, reward, terminated, truncated, info)``."""
    if isinstance(result, tuple):
        return f"{len(result)} values, not 5"
    return f"{type(result).__name__}, not (obs, reward, terminated, truncated, info)"


#: gymnasium's passive env checker, and the vector env's unpacking, on a step() that returned no tuple
_NO_TUPLE = re.compile(r"Expects step result to be a tuple, actual type: <class '([^']+)'>"
                       r"|cannot unpack non-iterable (\w+) object")


def _info_error(exc: BaseException) -> CanterError | None:
    """A one-line error where a sub-env's ``step()`` returned no tuple, or an info that is not a dict: gymnasium's
    passive env checker's AssertionError, the vector env's TypeError unpacking it, or the AttributeError of its
    ``_add_info`` reading the info's items (later steps, a canter-registered factory's env); else None."""
    no_tuple = _NO_TUPLE.search(str(exc)) if isinstance(exc, (AssertionError, TypeError)) else None
    if no_tuple is not None and (isinstance(exc, AssertionError) or raised_by_the_call(exc)):
        return CanterError(f"the env's step() returned {no_tuple.group(1) or no_tuple.group(2)}, not (obs, reward, "
                           f"terminated, truncated, info): {GYM_API}")
    found = _CHECKER_INFO.search(str(exc)) if isinstance(exc, AssertionError) else None
    if found is None and isinstance(exc, AttributeError) and "has no attribute 'items'" in str(exc):
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None and tb.tb_frame.f_code.co_name == "_add_info":
            found = re.match(r"'(\w+)' object", str(exc))
    if found is None:
        return None
    return CanterError(f"the env's step() returned a {found.group(1)} as its info, where info must be a dict; "
                       f"{GYM_API}")


def _step_values_error(n: int, **values: Any) -> CanterError | None:
    """The error for a reward, terminated or truncated array (of all sub-envs) whose shape is not ``(n,)``: a sub-env
    returned an array where one value belongs (AsyncVectorEnv stacks them without a word); None if all fit."""
    what, shape = next(((k, np.shape(v)) for k, v in values.items() if np.shape(v) != (n,)), (None, None))
    if what is None:
        return None
    per_env = f"of shape {shape[1:]}" if len(shape) > 1 and shape[0] == n else f"stacked to shape {shape}"
    return CanterError(f"the env's step() returned a {what} {per_env} where one value belongs; {STEP_VALUES}")


#: what gymnasium's API returns, which envs written for the old gym API (before 0.26) do not
GYM_API = ("gymnasium's API: reset() returns (obs, info) and step() returns (obs, reward, terminated, truncated, "
           "info); an env written for the old gym API returns obs alone and (obs, reward, done, info)")


def reset_result(result: Any) -> str:
    """What a ``reset()`` that did not return ``(obs, info)`` returned, for the error: ``ndarray``, ``a tuple of 3``,
    ``(obs, NoneType)`` (an info that is not a dict)."""
    if isinstance(result, tuple) and len(result) == 2:
        return f"(obs, {type(result[1]).__name__}) where info must be a dict"
    return f"a tuple of {len(result)}" if isinstance(result, tuple) else type(result).__name__


def _old_api_reset(env: Any, seed: int | None) -> CanterError | None:
    """After a vector reset failed: the error for a sub-env whose ``reset`` returns anything but ``(obs, info)``
    (an old gym env's obs alone was unpacked into two numbers: "'numpy.float32' object has no attribute
    'items'") or takes no ``seed`` keyword, or None. Only in-process copies (sync) are asked."""
    envs = getattr(env, "envs", None)
    if not envs:
        return None
    try:
        result = envs[0].reset(seed=seed)
    except TypeError as exc:  # reset(self) of gym before 0.22: the seed (or options) keyword refused by the call
        own = f"{type(getattr(envs[0], 'unwrapped', envs[0])).__qualname__}.reset() got an unexpected keyword argument"
        if own not in str(exc):
            return None
        return CanterError(f"the env's reset() takes no {str(exc).rsplit(' ', 1)[-1]} ({exc}): gymnasium's API is "
                           f"reset(self, seed=None, options=None), calling super().reset(seed=seed) first")
    except Exception:  # noqa: BLE001 - the vector env's own error is the one to report
        return None
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
        return None
    what = reset_result(result)
    return CanterError(f"the env's reset() returned {what}, not (obs, info): {GYM_API}")


def _steps_one(env: Any) -> bool:
    """Whether :func:`_step_one` may stand in for ``env.step``: gymnasium's own sync vector env (1.x) of one
    copy in ``NEXT_STEP`` autoreset, with array observations and actions (Box, Discrete and the like)."""
    base = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
    return (type(env) is gym.vector.SyncVectorEnv and env.num_envs == 1 and gym.__version__.startswith("1.")
            and getattr(env, "autoreset_mode", None) == gym.vector.AutoresetMode.NEXT_STEP
            and type(env.single_observation_space) in base and type(env.single_action_space) in base
            and all(hasattr(env, a) for a in ("_env_obs", "_observations", "_rewards", "_terminations",
                                               "_truncations", "_autoreset_envs", "_add_info", "copy")))


def _step_one(env: Any, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
    """``env.step(actions)`` of a one-copy ``SyncVectorEnv`` (:func:`_steps_one`): the same statements as
    gymnasium 1.x's for its ``NEXT_STEP`` mode, without the loop and the space dispatch of ``iterate`` and
    ``concatenate`` around its one copy (~8 of its ~14 µs per CartPole step)."""
    if env._autoreset_envs[0]:
        env._env_obs[0], info = env.envs[0].reset()
        env._rewards[0] = 0.0
        env._terminations[0] = False
        env._truncations[0] = False
    else:
        (
            env._env_obs[0],
            env._rewards[0],
            env._terminations[0],
            env._truncations[0],
            info,
        ) = env.envs[0].step(actions[0])
    infos = {} if type(info) is dict and not info else env._add_info({}, info, 0)
    obs = np.stack(env._env_obs, axis=0, out=env._observations)  # gymnasium's concatenate for these spaces
    env._autoreset_envs = np.logical_or(env._terminations, env._truncations)
    return (obs.copy() if env.copy else obs, env._rewards.copy(), env._terminations.copy(),
            env._truncations.copy(), infos)


class VecEnv:
    """Vector env adapter: NEXT_STEP autoreset, validity mask and per-episode statistics."""

    def __init__(self, env: gym.vector.VectorEnv, check_actions: bool = False, whole_games: bool = False) -> None:
        check_autoreset_mode(env)
        self.env = env
        #: the env id the copies were made from, which errors and warnings name (:func:`~canter.envs.make.make_vec_env`
        #: sets it; None: the env is not named)
        self.env_id: str | None = None
        #: ``whole_games``: the env's episodes are parts of games (Atari training envs end an episode at
        #: each lost life and clip rewards); the episode statistics (``finished_*``, so ``history.parquet``)
        #: are then whole games, with the raw score the env reports under :data:`GAME_RETURN` and the
        #: game's steps (as Stable-Baselines3's ``Monitor`` under its ``AtariWrapper``)
        self.whole_games = whole_games
        self.num_envs: int = env.num_envs
        self.single_observation_space = env.single_observation_space
        self.single_action_space = env.single_action_space
        space = env.single_action_space
        #: ``check_actions``: Discrete actions are checked against the space before each step, for envs
        #: that do not check them themselves (ale-py's native vector env waits forever for a step
        #: given an action outside the game's action set)
        discrete = check_actions and isinstance(space, gym.spaces.Discrete)
        self._action_range = (int(space.start), int(space.start) + int(space.n)) if discrete else None
        obs_space = env.single_observation_space
        #: a Discrete observation space's range: observations outside it are refused (one-hot encoding them was
        #: torch's "Class values must be smaller than num_classes" traceback)
        self._obs_range = ((int(obs_space.start), int(obs_space.start) + int(obs_space.n))
                           if isinstance(obs_space, gym.spaces.Discrete) else None)
        self._one = _steps_one(env)  # step through _step_one
        self._prev_done = np.zeros(self.num_envs, dtype=bool)
        self._ep_return = np.zeros(self.num_envs, dtype=np.float64)
        self._ep_length = np.zeros(self.num_envs, dtype=np.int64)
        #: returns and lengths of episodes that finished in the last ``step`` call
        self.finished_returns = np.zeros(0)
        self.finished_lengths = np.zeros(0, dtype=np.int64)
        self.finished_envs = np.zeros(0, dtype=np.int64)
        #: per finished episode, 1.0 / 0.0 where the env reported ``info["is_success"]`` at its end (goal
        #: envs do), else NaN
        self.finished_success = np.zeros(0)
        #: the rows of the last observations that are real ones, None where every row is (the trainers
        #: fold only these into the observation statistics): False for the rows of a multi-agent env's
        #: agents that had left their episode before the last step (padding that repeats a final observation),
        #: and for a finished episode's final observation (the next step only resets that sub-env), which
        #: Stable-Baselines3's VecNormalize never folds in either
        self.observed: np.ndarray | None = None

    @property
    def row_labels(self) -> dict[str, np.ndarray]:
        """Names for each row (index as in ``finished_envs``) that ``history.parquet`` records with
        its episodes: ``agent`` for a multi-agent env whose agents share one policy, else none."""
        agents = getattr(self.env, "row_agents", None)
        return {"agent": agents[0]} if agents is not None and len(agents) == 1 else {}

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Reset all sub-envs and return the observations. ``seed`` goes to the Gymnasium vector env:
        with sync or async vectorisation sub-env ``i`` is reset with ``seed + i``; a native vectorised
        env (e.g. ``CartPoleVectorEnv``) seeds one generator for all its sub-envs with ``seed``."""
        try:
            obs, info = self.env.reset(seed=seed)
        except (ValueError, AttributeError, TypeError, AssertionError) as exc:  # (gymnasium's passive env checker's)
            old_api = _old_api_reset(self.env, seed)
            if old_api is not None:
                raise self._named(old_api) from None
            error = _observation_error(exc, self.single_observation_space) if isinstance(
                exc, (ValueError, TypeError)) else exc
            if error is exc and not isinstance(exc, ValueError):  # (a ValueError: an OutsideSpace named, as it was)
                raise
            raise self._named(error) from None
        if self._obs_range is not None:
            self._check_observations(obs)
        self.begin(seed)
        observed = info.get(OBSERVED) if isinstance(info, dict) else None  # a multi-agent env's absent agents
        self.observed = None if observed is None or observed.all() else np.asarray(observed, dtype=bool)
        return obs

    def begin(self, seed: int | None = None) -> None:
        """Start fresh episode statistics (after the env was reset; :meth:`reset` calls it)."""
        self._prev_done[:] = False
        self.observed = None
        self._ep_return[:] = 0.0
        self._ep_length[:] = 0
        if seed is not None:
            self.env.action_space.seed(seed)

    def step(self, actions: np.ndarray) -> Step:
        """Step every sub-env; see the module docstring for the meaning of ``valid``."""
        if self._action_range is not None:
            self._check_actions(actions)
        try:
            if self._one and isinstance(actions, np.ndarray) and actions.shape[:1] == (1,):
                obs, reward, terminated, truncated, info = _step_one(self.env, actions)
            else:
                obs, reward, terminated, truncated, info = self.env.step(actions)
        except ValueError as exc:
            # unpacking an old gym env's (obs, reward, done, info), not an unpacking in the env's own step() code
            if "(expected 5, got 4)" in str(exc) and raised_by_the_call(exc):
                raise self._named(CanterError(f"the env's step() returned 4 values, not 5: {GYM_API}")) from None
            raise self._named(_scalar_error(exc) or _observation_error(exc, self.single_observation_space)) from None
        except (AssertionError, AttributeError, TypeError) as exc:  # an info that is not a dict, no tuple (sync)
            error = _info_error(exc)
            if error is None and isinstance(exc, TypeError):  # a float observation of a Discrete space
                error = _observation_error(exc, self.single_observation_space)
            if error is None or error is exc:
                raise
            raise self._named(error) from None
        if self._obs_range is not None:
            self._check_observations(obs)
        n = (self.num_envs,)  # a sub-env's array where one value belongs: stacked by AsyncVectorEnv without a word
        if getattr(reward, "shape", None) != n or getattr(terminated, "shape", None) != n or getattr(
                truncated, "shape", None) != n:
            error = _step_values_error(self.num_envs, reward=reward, terminated=terminated, truncated=truncated)
            if error is not None:
                raise self._named(error)
        self.info = info
        self._success = _success(info, self.num_envs) if info else None
        games = _game_returns(info, self.num_envs) if self.whole_games else None
        return self.record(obs, reward, terminated, truncated, info.get(ACTIVE) if info else None, games,
                           info.get(OBSERVED) if info else None)

    def record(self, obs: np.ndarray, reward: np.ndarray, terminated: np.ndarray, truncated: np.ndarray,
               active: np.ndarray | None = None, games: np.ndarray | None = None,
               observed: np.ndarray | None = None) -> Step:
        """Turn the env's step results into a :class:`Step` and update the episode statistics
        (:meth:`step` calls it; an env stepped elsewhere, such as one policy's agents of a
        multi-agent env, reports its results here). ``active`` (the ``canter_active`` entry of a
        step's info), where given, marks the rows that took part in the step: a multi-agent env's
        agents that left their episode early are not ``valid`` until their copy resets. ``games`` (envs
        with ``whole_games``): per sub-env the raw score of a game that ended on this step, NaN where none
        did; the statistics then record whole games instead of episodes. ``observed`` (the ``canter_observed``
        entry): the rows of ``obs`` that are real observations (:attr:`observed`; None: every row)."""
        self.observed = None if observed is None or observed.all() else np.asarray(observed, dtype=bool)
        valid = ~self._prev_done
        if active is not None:
            valid &= active
        raw = np.asarray(reward)  # the returns add the env's own rewards (float64 ones unrounded), as SB3's Monitor
        reward = np.asarray(raw, dtype=np.float32)
        terminated = np.asarray(terminated, dtype=bool)
        truncated = np.asarray(truncated, dtype=bool)
        done = terminated | truncated
        np.add(self._ep_return, raw, out=self._ep_return, where=valid)  # (np.where and += took ~3x as long)
        self._ep_length += valid
        ended, returns = done, self._ep_return
        if games is not None:  # a lost life ends an episode, not the game: the statistics are per game
            ended, returns = ~np.isnan(games), games
        if np.count_nonzero(ended):  # (ended.any() costs ~1 µs more: a step of one env takes ~10)
            idx = np.flatnonzero(ended)
            self.finished_envs = idx
            self.finished_returns = returns[idx].astype(np.float64)
            self.finished_lengths = self._ep_length[idx].copy()
            self.finished_success = np.full(len(idx), np.nan) if self._success is None else self._success[idx]
            self._ep_return[idx] = 0.0
            self._ep_length[idx] = 0
        elif self.finished_envs.size:
            self.finished_envs = self.finished_envs[:0]
            self.finished_returns = self.finished_returns[:0]
            self.finished_lengths = self.finished_lengths[:0]
            self.finished_success = self.finished_success[:0]
        if np.count_nonzero(done):  # a finished episode's final observation, acted on only by the reset-only step
            real = ~done if self.observed is None else self.observed & ~done  # after it: not in the statistics,
            self.observed = None if real.all() else real  # as SB3's VecNormalize never sees terminal observations
        self._prev_done = done
        self._success = None
        return Step(obs, reward, terminated, truncated, valid)

    _success: np.ndarray | None = None  # the last step's ``is_success`` per sub-env (NaN: not reported)
    #: the info dict of the last :meth:`step` as the vector env returned it (gymnasium's: each key's values per
    #: sub-env, with a ``_key`` mask of the sub-envs that reported it); hindsight replay keeps entries of it
    info: dict[str, Any] = {}

    def _check_actions(self, actions: np.ndarray) -> None:
        """Raise a :class:`CanterError` naming the first action outside the Discrete action space."""
        lo, hi = self._action_range
        a = np.asarray(actions)
        if a.size and (a.min() < lo or a.max() >= hi):
            bad = a[(a < lo) | (a >= hi)].flat[0]
            raise CanterError(f"action {bad} is outside the env's action space Discrete({hi - lo}"
                              f"{f', start={lo}' if lo else ''}): valid actions are {lo}..{hi - 1}")

    def _check_observations(self, obs: np.ndarray) -> None:
        """Raise a :class:`CanterError` naming the first observation outside the Discrete observation space."""
        lo, hi = self._obs_range
        a = np.asarray(obs)
        if a.size and (a.min() < lo or a.max() >= hi):
            bad = a[(a < lo) | (a >= hi)].flat[0]
            space = f"Discrete({hi - lo}{f', start={lo}' if lo else ''})"
            raise self._named(CanterError(f"the env returned observation {bad} outside its observation space {space}: "
                                          f"valid observations are {lo}..{hi - 1}"))

    def state(self) -> dict[str, Any]:
        """Counters needed to continue exactly (the env's own RNG state is saved separately)."""
        return {
            "prev_done": self._prev_done.tolist(),
            "ep_return": self._ep_return.tolist(),
            "ep_length": self._ep_length.tolist(),
        }

    def _named(self, error: Exception) -> Exception:
        """``error`` (a :class:`CanterError` of this adapter's) with the env id in front, where it is known."""
        if self.env_id is None or not isinstance(error, CanterError) or str(error).startswith("env '"):
            return error
        return type(error)(f"env '{self.env_id}': {error}")

    def close(self) -> None:
        """Close the underlying env. A copy whose ``close()`` raises is a warning naming the env, and the other copies
        are closed all the same: it was a traceback at the end of a finished run, which left the evaluation env open,
        and a sync vector env closed no copy after that one."""
        error: BaseException | None = None
        env = self.env
        if type(env) is gym.vector.SyncVectorEnv and not env.closed:  # each copy, not up to the first that raises
            error = close_each(env.envs)
            env.closed = True
        else:
            try:
                env.close()
            except Exception as exc:  # noqa: BLE001 - the env's own error, whatever it is
                error = exc
        if error is not None:
            warn_close_error(self.env_id, error)


def autoreset_mode(env: Any) -> Any:
    """A vector env's ``metadata["autoreset_mode"]`` as gymnasium's ``AutoresetMode`` (an env that wrote the value,
    ``"NextStep"``, which gymnasium warns of, means that mode), or as it is where it is no mode's; None where unsaid."""
    metadata = getattr(env, "metadata", None)
    mode = metadata.get("autoreset_mode") if isinstance(metadata, dict) else None
    try:
        return None if mode is None else gym.vector.AutoresetMode(mode)
    except ValueError:
        return mode


def check_autoreset_mode(env: Any) -> None:
    """A one-line :class:`CanterError` for a vector env whose :func:`autoreset_mode` is another than ``NEXT_STEP``
    (``SAME_STEP``, ``DISABLED``), which :class:`VecEnv` would misread without a word: in ``SAME_STEP`` the step after
    an episode's end is a real one, which it took for the reset-only step (each later episode lost its first step
    from its return and length, and its transition), and the observation of the end step is the next episode's first,
    not the final one a truncation bootstraps from. One that says no mode is taken as ``NEXT_STEP``, as gymnasium does."""
    mode = autoreset_mode(env)
    if mode is None or mode == gym.vector.AutoresetMode.NEXT_STEP:
        return
    raise CanterError(f"VecEnv takes a vector env in gymnasium's NEXT_STEP autoreset mode (docs/architecture.md "
                      f"section 3), got one in {getattr(mode, 'name', mode)} mode: make it with autoreset_mode="
                      f"gymnasium.vector.AutoresetMode.NEXT_STEP (gymnasium.make_vec(..., vector_kwargs="
                      f"{{'autoreset_mode': gymnasium.vector.AutoresetMode.NEXT_STEP}}))")


def close_each(envs: Any) -> BaseException | None:
    """Close every env of ``envs``, also those after one whose ``close()`` raises; the first error, or None."""
    error: BaseException | None = None
    for env in envs:
        try:
            env.close()
        except Exception as exc:  # noqa: BLE001 - the env's own error, whatever it is
            error = error or exc
    return error


#: the warnings :func:`warn_close_error` gave in this process
_CLOSE_WARNED: set[str] = set()


def warn_close_error(env_id: str | None, exc: BaseException | str, where: str = "") -> None:
    """Warn that an env's ``close()`` raised ``exc`` (ignored), once per process for the same env and error however
    many env copies and closes (training, evaluation, each recording) raise it; ``where`` follows the env's name.
    ``exc`` may be the error's line as :func:`~canter.errors.raised_in` gave it (where an async worker raised it)."""
    from canter.errors import CanterWarning, warn, raised_in

    name = f"env '{env_id}'" if env_id else "the env"
    message = f"{name}{where}: close() raised {exc if isinstance(exc, str) else raised_in(exc)}; ignored"
    if message not in _CLOSE_WARNED:
        _CLOSE_WARNED.add(message)
        warn(CanterWarning(message))


def _game_returns(info: dict[str, Any] | None, n: int) -> np.ndarray:
    """``info[GAME_RETURN]`` of a vector step per sub-env, NaN where no game ended (gymnasium's vector
    envs leave the key out, or mask it with ``_canter_game_return``, where their sub-envs did not set it)."""
    out = np.full(n, np.nan)
    value = info.get(GAME_RETURN) if info else None
    if value is not None:
        out[:] = np.asarray(value, dtype=np.float64).reshape(n)
        reported = info.get("_" + GAME_RETURN)
        if reported is not None:
            out[~np.asarray(reported, dtype=bool)] = np.nan
    return out


def _success(info: dict[str, Any], n: int) -> np.ndarray | None:
    """``info["is_success"]`` of a vector step as floats per sub-env (NaN where not reported), or None."""
    value = info.get("is_success")
    if value is None:
        return None
    out = np.where(np.asarray(value, dtype=bool), 1.0, 0.0).reshape(n)
    reported = info.get("_is_success")
    if reported is not None:
        out[~np.asarray(reported, dtype=bool)] = np.nan
    return out
