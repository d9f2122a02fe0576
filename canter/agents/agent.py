"""The generic Agent: numpy <-> torch, observation/reward normalisation, action-space handling."""
from __future__ import annotations

import functools
import threading
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from canter.agents.observation_input import ObservationInput
from canter.algorithms.base import ActOutput, Algorithm, overridden_outside_canter
from canter.data.batch import ReplayBatch, numpy_as_tensors, to_device
from canter.envs.masks import mask_width
from canter.errors import CanterError, bool_argument, keywords_checked
from canter.registry import register
from canter.utils import RunningMeanStd, set_torch_threads


#: scaled rewards are clipped to +-this (Stable-Baselines3 VecNormalize's default clip_reward)
CLIP_REWARD = 10.0
#: algorithm attributes holding the training envs' exploration noise, which :meth:`Agent.explore` leaves
#: as they were: TD3/DDPG's Ornstein-Uhlenbeck state, SAC's gSDE matrices and acting-call count
_TRAINING_NOISE = ("ou_state", "sde_weights", "act_calls")
#: held by :meth:`Agent.explore` (and the recurrent agent's) while the algorithm draws from a caller's ``generator``
#: and its training noise is set aside: explore calls from several threads (``canter.evaluate(...,
#: deterministic=False)`` in each) left the agent drawing from one caller's generator for good
EXPLORE_LOCK = threading.RLock()


@functools.lru_cache(maxsize=None)
def _numpy_shortcut(cls: type, shortcut: str, methods: tuple[str, ...]) -> bool:
    """Whether an algorithm of class ``cls`` may answer through its NumPy ``shortcut`` (``act_numpy``),
    which reproduces canter's ``methods``: not when a user's subclass overrides one of those (its own
    exploration or policy) without overriding the shortcut too (``value_numpy`` checks ``value`` itself)."""
    return overridden_outside_canter(cls, shortcut) or not any(overridden_outside_canter(cls, m) for m in methods)


def _training_layout(algorithm: Algorithm) -> Any:
    """The ``training_layout`` of the algorithm's image encoder, when every network it trains is
    one of canter's models on one of canter's image encoders; else None (a user's own model or
    encoder gets its batches as they are, since it may not accept channels-last strides)."""
    from canter.models.cnn import ImageEncoder

    modules = list(algorithm.modules().values())
    encoders = [getattr(m, "encoder", None) for m in modules]
    if not modules or not all(type(m).__module__.startswith("canter.") and isinstance(e, ImageEncoder)
                              and type(e).__module__.startswith("canter.") for m, e in zip(modules, encoders)):
        return None
    return encoders[0].training_layout


def check_generator(generator: Any) -> None:
    """A one-line :class:`CanterError` unless ``generator`` (of :meth:`Agent.explore`) is None or a
    ``torch.Generator``: a NumPy Generator, a seed or a string was torch's TypeError traceback inside the algorithm's
    draw, and ``0`` (falsy) drew from the agent's own stream silently."""
    if generator is not None and not isinstance(generator, torch.Generator):
        raise CanterError(f"generator must be a torch.Generator, such as torch.Generator().manual_seed(0) "
                          f"(None: the agent's own stream), got {generator!r:.60}")


def _integer_bounds(space: gym.spaces.Box) -> tuple[np.ndarray, np.ndarray]:
    """A Box of integers' bounds as float64, for scaling its actions: ``high - low`` in the space's own dtype wraps
    where it exceeds it (an int8 ``Box(-100, 100)``: -56). A 64-bit bound that float64 rounds past the dtype is the
    nearest float inside it (``2**63`` is no int64)."""
    info = np.iinfo(space.dtype)
    low, high = space.low.astype(np.float64), space.high.astype(np.float64)
    if float(info.max) != info.max:  # (Python compares them exactly)
        high = np.minimum(high, np.nextafter(float(info.max), -np.inf))
    if float(info.min) != info.min:
        low = np.maximum(low, np.nextafter(float(info.min), np.inf))
    return low, high


@register("agent", "agent")
class Agent(ObservationInput):
    """Acts in numpy envs with a torch :class:`~canter.algorithms.Algorithm`.

    ``predict`` is deterministic (evaluation), ``sample`` explores (training) and updates the
    observation statistics, ``learn`` forwards a batch to the algorithm. Box actions are clipped
    to the space's bounds here, never inside the algorithm.
    """

    #: the run's compute threads (:func:`canter.api.make_agent` sets them): predict and explore act at the torch
    #: count they give (:attr:`acting_threads`), putting the caller's back after (None: at the caller's)
    torch_threads: int | None = None

    @property
    def acting_threads(self) -> int | None:
        """Torch's thread count for acting: the run's ``torch_threads`` as its trainer gives them to torch, that is
        1 where the algorithm multiplies through NumPy, whose BLAS then has the threads (the two pools never spin on
        the same cores, :func:`~canter.algorithms.base.use_threads`); None: the caller's count."""
        threads = self.torch_threads
        return 1 if threads is not None and threads > 1 and self.algorithm.numpy_products else threads

    def __init__(
        self, algorithm: Algorithm, normalize_obs: bool = False, normalize_reward: bool = False,
        gamma: float = 0.99, clip_obs: float = 10.0, n_envs: int = 1,
    ) -> None:
        self.algorithm = algorithm
        self.observation_space: gym.Space = algorithm.observation_space
        self.action_space: gym.Space = algorithm.action_space
        self.device = algorithm.device
        if normalize_obs and not isinstance(self.observation_space, gym.spaces.Box):
            raise CanterError(f"normalize_obs needs Box observations, not {type(self.observation_space).__name__} "
                              "(set hparams.normalize_obs=false)")
        from canter.models.cnn import is_image_space

        #: uint8 image observations are never normalised (the encoders scale their pixels), as images inside
        #: Dict observations are not: their running statistics made pixels floats, and TD3+BC's unclipped
        #: ``std + 1e-3`` turned a pixel constant in the dataset into ~1e5 where it changed
        self.images_raw = bool(normalize_obs) and is_image_space(self.observation_space)
        self.obs_rms = RunningMeanStd(self.observation_space.shape) if normalize_obs and not self.images_raw else None
        #: columns never normalised: an action mask packed at the end of each observation
        #: (canter.envs.masks) and the pixels of structured observations with images (canter.envs.packing)
        width = mask_width(self.observation_space)
        self._raw_columns = [slice(-width, None)] if width else [
            cols for cols, _ in getattr(self.observation_space, "image_slices", list)()]
        #: normalised observations are ``(obs - mean) / (std + obs_std_eps)``, unclipped, where the algorithm
        #: sets it (TD3+BC), else ``(obs - mean) / sqrt(var + 1e-8)`` clipped to ``clip_obs``
        self.obs_std_eps: float | None = getattr(algorithm, "obs_std_eps", None) if self.obs_rms else None
        self.ret_rms = RunningMeanStd(()) if normalize_reward else None
        self._training_layout: Any = False  # resolved at the first prepare_rollout_batch
        self.gamma, self.clip_obs = gamma, clip_obs
        self._returns = np.zeros(n_envs, dtype=np.float64)
        box = isinstance(self.action_space, gym.spaces.Box)
        self._low = self.action_space.low if box else None
        self._high = self.action_space.high if box else None
        if box and np.issubdtype(self.action_space.dtype, np.integer):  # in float64: an int8 Box(-100, 100)'s
            self._low, self._high = _integer_bounds(self.action_space)  # high - low wrapped (every action its low)
        #: squashed actions of a Box whose ``high - low`` overflows its dtype (float32's -3.4e38..3.4e38, gymnasium's
        #: finite stand-in for no bound) are scaled about the middle: ``low + (a + 1) / 2 * (high - low)`` was NaN or
        #: the top bound for every action there
        with np.errstate(over="ignore"):
            self._wide = box and not np.isfinite(self._high - self._low).all() and bool(
                np.isfinite(self._low).all() and np.isfinite(self._high).all())
        #: a Box of integers (gymnasium allows any numeric dtype) contains only whole numbers of its dtype
        self._box_integer = box and np.issubdtype(self.action_space.dtype, np.integer)
        start = np.asarray(0 if box else getattr(self.action_space, "start", 0))
        #: what the env's actions add to the algorithm's indices (MultiDiscrete: one per entry)
        self._start = start if start.ndim else int(start)
        self._offset = bool(start.any())
        #: MultiDiscrete / MultiBinary actions of several dimensions: the algorithm's are flat [B, k]
        multi = isinstance(self.action_space, (gym.spaces.MultiDiscrete, gym.spaces.MultiBinary))
        self._multi_shape = tuple(self.action_space.shape) if multi and len(self.action_space.shape) != 1 else None
        #: their dtype (the algorithm's indices are int64; a space of int32 or int8 contains only its own dtype)
        self._multi_dtype = self.action_space.dtype if multi else None

    # -- numpy <-> torch ------------------------------------------------------------------
    def normalize_obs(self, obs: np.ndarray, update: bool = False, observed: np.ndarray | None = None) -> np.ndarray:
        """Normalised observations (if configured; ``update`` folds them into the statistics first:
        only the rows ``observed`` marks, where given: see :attr:`VecEnv.observed <canter.envs.VecEnv.observed>`)."""
        if self.obs_rms is None:
            return obs
        if update:
            self.update_obs_stats(obs, observed)
        clip = self.clip_obs if self.obs_std_eps is None else np.inf
        out = np.clip((obs - self.obs_rms.mean) / self.obs_std(), -clip, clip)
        for cols in self._raw_columns:
            out[..., cols] = obs[..., cols]
        return out.astype(np.float32)

    def obs_std(self) -> np.ndarray:
        """What normalised observations are divided by: ``sqrt(var + 1e-8)``, or ``std + obs_std_eps``."""
        if self.obs_std_eps is None:
            return np.sqrt(self.obs_rms.var + 1e-8)
        return np.sqrt(self.obs_rms.var) + self.obs_std_eps

    def update_obs_stats(self, obs: np.ndarray, observed: np.ndarray | None = None) -> None:
        """Fold a batch of observations into the statistics (if configured): the rows ``observed``
        marks, where given (a multi-agent env's departed agents repeat their final observation)."""
        if self.obs_rms is None:
            return
        if observed is not None:
            obs = obs[observed]
        if len(obs):
            self.obs_rms.update(obs)

    def obs_to_tensor(self, obs: np.ndarray, update: bool = False) -> torch.Tensor:
        """Normalise (if configured) and convert a batch of observations to a tensor."""
        return self._tensor(np.ascontiguousarray(self.normalize_obs(obs, update)))

    def obs_to_host(self, obs: np.ndarray) -> torch.Tensor:
        """Normalised (if configured) observations as a CPU tensor, for the buffers in host memory
        (:meth:`learn` moves a batch to the device)."""
        return torch.from_numpy(np.ascontiguousarray(self.normalize_obs(obs)))

    def _tensor(self, x: np.ndarray) -> torch.Tensor:
        """An already normalised contiguous batch as a tensor on the algorithm's device."""
        t = torch.from_numpy(x)
        return t if self.device.type == "cpu" else t.to(self.device)

    def to_env_actions(self, actions: torch.Tensor | np.ndarray) -> np.ndarray:
        """Algorithm actions -> what ``env.step`` takes (Box actions clipped, in the space's dtype: the
        nearest whole number for a Box of integers; offset Discrete; MultiDiscrete / MultiBinary in the
        space's shape and dtype)."""
        a = actions if isinstance(actions, np.ndarray) else actions.cpu().numpy()
        if self._low is not None:
            if self._low.ndim != 1:  # the policy's actions are flat [B, prod(shape)]; a scalar space: [B, 1] -> [B]
                a = a.reshape((len(a),) + self._low.shape)
            if self.algorithm.squashed_actions and self._wide:
                half_low, half_high = 0.5 * self._low, 0.5 * self._high  # half the span and the middle never overflow
                a = (half_high + half_low) + np.clip(a, -1.0, 1.0) * (half_high - half_low)
            elif self.algorithm.squashed_actions:
                a = self._low + (np.clip(a, -1.0, 1.0) + 1.0) * 0.5 * (self._high - self._low)
            a = np.clip(a, self._low, self._high)
            if self._box_integer:  # float actions are not in a Box of integers (gymnasium's contains)
                a = np.rint(a)
            return a.astype(self.action_space.dtype, copy=False)
        if self._multi_shape is not None:
            a = a.reshape((len(a),) + self._multi_shape)
        if self._multi_dtype is not None:
            a = a.astype(self._multi_dtype, copy=False)
        return a + self._start if self._offset else a

    def from_env_actions(self, actions: np.ndarray) -> np.ndarray:
        """What ``env.step`` took -> algorithm actions (the inverse of :meth:`to_env_actions` inside
        the bounds): Discrete as int64 indices from 0, Box flat ``[B, prod(shape)]`` float32, in
        [-1, 1] for squashed algorithms."""
        a = np.asarray(actions)
        if self._low is None:
            return a.astype(np.int64) - self._start
        # a float64 Box's actions are scaled before they are made float32 (its bounds may be beyond float32's)
        a = a.reshape(len(a), -1).astype(np.float64 if self._low.dtype == np.float64 else np.float32)
        if self.algorithm.squashed_actions and self._wide:  # about the middle (to_env_actions), never overflowing
            half_low, half_high = 0.5 * self._low.reshape(-1), 0.5 * self._high.reshape(-1)
            fixed = half_high - half_low <= 0
            scaled = (a - (half_high + half_low)) / np.where(fixed, 1.0, half_high - half_low)
            return np.clip(np.where(fixed, 0.0, scaled), -1.0, 1.0).astype(np.float32)
        if self.algorithm.squashed_actions:
            low, span = self._low.reshape(-1), (self._high - self._low).reshape(-1)
            fixed = span <= 0  # a dimension with low == high: every action is that value; 0 in [-1, 1] (not 0/0)
            scaled = 2.0 * (a - low) / np.where(fixed, 1.0, span) - 1.0
            a = np.clip(np.where(fixed, 0.0, scaled), -1.0, 1.0)
        return a.astype(np.float32, copy=False)

    # -- acting ---------------------------------------------------------------------------
    @keywords_checked("agent.predict", positional="deterministic is a keyword: predict(obs, deterministic=False)")
    def predict(self, obs: Any, *, deterministic: bool = True) -> np.ndarray | np.generic:
        """Deterministic actions (no statistics are updated) for one observation, as ``env.step``
        takes it (a Discrete action is a NumPy integer), or for a batch ``[B, *shape]`` (an array of
        ``B`` actions). ``deterministic=False`` samples instead (:meth:`explore`), as
        Stable-Baselines3's keyword does; unlike SB3's, the actions alone are returned."""
        if not bool_argument("deterministic", deterministic):  # 'no' was truthy: deterministic
            return self.explore(obs)
        x, single = self.as_batch(obs)
        x = np.ascontiguousarray(self.normalize_obs(x))
        caller = set_torch_threads(self.acting_threads)  # the run's count, not the caller's (put back below)
        try:
            out = self._act_numpy(self.algorithm, x, True)  # the NumPy shortcut, where there is one
            if out is not None:
                actions = self.to_env_actions(out.actions)
            else:
                with torch.inference_mode():
                    actions = self.to_env_actions(self.algorithm.predict(self._tensor(x)))
        finally:
            if caller is not None:
                torch.set_num_threads(caller)
        return actions[0] if single else actions

    @staticmethod
    def _act_numpy(algorithm: Algorithm, x: np.ndarray, deterministic: bool) -> ActOutput | None:
        """``algorithm.act_numpy``, or None where a user's subclass overrides what it stands in for
        (``act``; for deterministic actions also ``predict``): that override must act."""
        methods = ("act", "predict") if deterministic else ("act",)
        if not _numpy_shortcut(type(algorithm), "act_numpy", methods):
            return None
        return algorithm.act_numpy(x, deterministic=deterministic)

    @keywords_checked("agent.explore")
    def explore(self, obs: Any, generator: torch.Generator | None = None) -> np.ndarray | np.generic:
        """Exploring actions (the policy's samples, DQN's epsilon-greedy moves) for one observation or a
        batch (as :meth:`predict`), updating no statistics and leaving the training envs' exploration
        noise (TD3/DDPG's Ornstein-Uhlenbeck state, SAC/TQC's gSDE matrices) as it was: e.g. an opponent's moves in self-play.
        TD3/DDPG with ``action_noise: ou`` give ``mu(s)`` without noise (as SB3's ``predict(deterministic=False)``):
        the process's state belongs to the training envs' episodes, and each call restarted from it (a constant
        offset).
        ``generator``: draw from it instead of the algorithm's own (whose stream then stays the learner's)."""
        check_generator(generator)
        obs, single = self.as_batch(obs)
        x = np.ascontiguousarray(self.normalize_obs(obs))
        algorithm = self.algorithm
        with EXPLORE_LOCK:  # another thread's call between the swap and the restore kept its generator for good
            own, algorithm.generator = algorithm.generator, generator or algorithm.generator
            # the training envs' exploration noise: TD3/DDPG's Ornstein-Uhlenbeck process, SAC's gSDE
            # matrices and their resampling count
            noise = {k: getattr(algorithm, k) for k in _TRAINING_NOISE if hasattr(algorithm, k)}
            caller = set_torch_threads(self.acting_threads)
            # TD3/DDPG's Ornstein-Uhlenbeck noise is a per-episode process that a call on its own cannot carry
            # on: mu(s), as Stable-Baselines3's predict(deterministic=False) acts
            plain = bool(getattr(algorithm, "explores_deterministically", False))
            try:
                out = self._act_numpy(algorithm, x, plain)
                if out is None:
                    with torch.inference_mode():
                        out = algorithm.act(self._tensor(x), deterministic=plain)
            finally:
                algorithm.generator = own
                for key, value in noise.items():
                    setattr(algorithm, key, value)
                if caller is not None:
                    torch.set_num_threads(caller)
        actions = self.to_env_actions(out.actions)
        return actions[0] if single else actions

    def sample(self, obs: np.ndarray, observed: np.ndarray | None = None,
               ) -> tuple[np.ndarray, np.ndarray, ActOutput]:
        """Exploring actions for training: ``(env_actions, obs, algorithm_output)``, where ``obs`` is
        the batch as the algorithm took it (normalised where configured), a NumPy array in host memory,
        and the output's fields are NumPy arrays where the algorithm's NumPy path acted
        (:meth:`Algorithm.act_numpy`), else CPU tensors (copied once from another device: the rollout
        and replay writes and the env all read them on the host). The observation statistics take in
        ``obs`` first (only the rows ``observed`` marks, where given)."""
        self.check_batch(obs)
        x = np.ascontiguousarray(self.normalize_obs(obs, update=True, observed=observed))
        out = self._act_numpy(self.algorithm, x, False)
        if out is not None:
            return self.to_env_actions(out.actions), x, out
        with torch.inference_mode():
            out = self.on_host(self.algorithm.act(self._tensor(x), deterministic=False))
        return self.to_env_actions(out.actions), x, out

    def check_batch(self, obs: Any) -> None:
        """A :class:`CanterError` for one observation given to :meth:`sample`, which takes the training envs' batch
        ``[B, *shape]`` (DQN took the 4 numbers of one CartPole observation as 4 observations and gave 4 actions)."""
        if np.ndim(obs) == len(self.observation_space.shape):
            raise CanterError(f"sample takes a batch of observations of shape (B, *{self.observation_space.shape}), "
                              f"as the training envs give them, got one of shape {np.shape(obs)}; for one "
                              f"observation use predict(obs, deterministic=False)")

    def on_host(self, out: ActOutput) -> ActOutput:
        """``out`` with its tensors in host memory: as it is on the CPU; from another device, each
        field copied once (the env's actions, the rollout's and replay's writes then read the copies)."""
        if self.device.type == "cpu":
            return out
        return out._make(v.cpu() if isinstance(v, torch.Tensor) else v for v in out)

    def value(self, obs: np.ndarray) -> torch.Tensor:
        """State values ``[B]`` from the algorithm's critic (on-policy algorithms) for a batch, as the trainers
        bootstrap a rollout; one observation (or a list, a tensor, raw Dict observations: :meth:`as_batch`) gives
        one value, a 0-d tensor. An algorithm without a state-value critic (DQN, SAC) is one line saying so."""
        if not callable(getattr(self.algorithm, "value", None)):  # was an AttributeError traceback
            raise CanterError(f"agent.value gives the state values of an actor-critic's critic; "
                              f"{type(self.algorithm).__name__} has none (its values are Q values of actions)")
        if not (isinstance(obs, np.ndarray) and obs.ndim == len(self.observation_space.shape) + 1):
            x, single = self.as_batch(obs)  # one observation was NumPy's matmul traceback
            return self.value(x)[0] if single else self.value(x)
        x = np.ascontiguousarray(self.normalize_obs(obs))
        v = self.algorithm.value_numpy(x)
        if v is not None:
            return torch.from_numpy(v)
        with torch.inference_mode():
            return self.algorithm.value(self._tensor(x))

    def bootstrap_value(self, obs: np.ndarray, observed: np.ndarray | None = None) -> torch.Tensor:
        """:meth:`value` of a rollout's last observations ``obs`` (the training envs' batch), normalised with the
        statistics that :meth:`sample` folds them into first (the rows ``observed`` marks, where given), as every
        other row of the rollout was and as Stable-Baselines3's ``VecNormalize`` returns them; the statistics are
        left as they were (the next rollout's first :meth:`sample` takes them in)."""
        rms = self.obs_rms
        if rms is None:
            return self.value(obs)
        kept = rms.mean, rms.var, rms.count  # update assigns new arrays: these stay as they are
        try:
            self.update_obs_stats(obs, observed)
            return self.value(obs)
        finally:
            rms.mean, rms.var, rms.count = kept

    def scale_reward(self, reward: np.ndarray, done: np.ndarray, valid: np.ndarray | None = None,
                     scale: bool = True) -> np.ndarray:
        """Fold a vector step's rewards into the running discounted-return statistics and divide them
        by the return's running std (if configured; ``scale=False``: the raw rewards, for a replay
        buffer, which scales them when sampled through :meth:`scaled`, its ``reward_transform``).

        ``valid`` (the vector step's mask) keeps the steps that only reset an env (reward 0) out of
        the return statistics, as Stable-Baselines3's ``VecNormalize``, which never sees them, does.
        """
        if self.ret_rms is None:
            return reward
        if self._returns.shape != reward.shape:  # one per sub-env (a multi-agent env has one per agent)
            self._returns = np.zeros(reward.shape, dtype=np.float64)
        self._returns = self._returns * self.gamma + reward
        real = self._returns if valid is None or valid.all() else self._returns[valid]
        if len(real):
            self.ret_rms.update(real)
        self._returns[done] = 0.0
        return self.scaled(reward).astype(np.float32) if scale else reward

    def scaled(self, reward: Any) -> Any:
        """``reward`` (an array or tensor) times :meth:`reward_scale`, clipped to ``[-clip_reward,
        clip_reward]`` (10, Stable-Baselines3 ``VecNormalize``'s ``clip_reward``: while the return's
        variance is still tiny, the first scaled rewards would otherwise be in the hundreds)."""
        out = reward * self.reward_scale()
        return out.clamp(-CLIP_REWARD, CLIP_REWARD) if isinstance(out, torch.Tensor) else np.clip(out, -CLIP_REWARD,
                                                                                                    CLIP_REWARD)

    def reset_returns(self) -> None:
        """Zero the running discounted returns of every env (its episodes were dropped: fresh ones start)."""
        self._returns = np.zeros_like(self._returns)

    def reward_scale(self) -> float:
        """What rewards are multiplied by: one over the running std of the discounted return (1 without
        ``normalize_reward``)."""
        return 1.0 if self.ret_rms is None else float(1.0 / np.sqrt(self.ret_rms.var + 1e-8))

    def prepare_replay_batch(self, batch: ReplayBatch, scale_rewards: bool = True) -> ReplayBatch:
        """Normalise a replay batch's raw observations and scale its raw rewards with the current
        statistics, as Stable-Baselines3 does with ``VecNormalize``. ``scale_rewards=False``: the
        rewards are scaled already (a buffer whose ``reward_transform`` is :meth:`scaled`, which scales
        and clips each step of an n-step sum on its own, as :func:`make_replay_buffer
        <canter.trainers.off_policy.make_replay_buffer>` sets it)."""
        if self.ret_rms is not None and scale_rewards:
            batch = batch._replace(rewards=self.scaled(batch.rewards))
        if self.obs_rms is None:
            return batch
        mean = torch.as_tensor(self.obs_rms.mean, dtype=torch.float32)
        std = torch.as_tensor(self.obs_std(), dtype=torch.float32)
        clip = self.clip_obs if self.obs_std_eps is None else np.inf

        def norm(x: torch.Tensor) -> torch.Tensor:
            out = ((x.float() - mean) / std).clamp(-clip, clip)
            for cols in self._raw_columns:
                out[..., cols] = x[..., cols]
            return out

        return batch._replace(obs=norm(batch.obs), next_obs=norm(batch.next_obs))

    def prepare_rollout_batch(self, batch: Any) -> Any:
        """An on-policy batch with its image observations in the layout the model trains on
        (:meth:`ImageEncoder.training_layout <canter.models.cnn.ImageEncoder.training_layout>`):
        done once per rollout when every image encoder of the algorithm is one of canter's (a
        custom encoder gets the batch as it is)."""
        if self._training_layout is False:
            self._training_layout = _training_layout(self.algorithm)
        return batch if self._training_layout is None else batch._replace(obs=self._training_layout(batch.obs))

    def learn(self, batch: Any = None, *, total_timesteps: Any = None) -> dict[str, float]:
        """One algorithm update (the batch's tensors moved to the algorithm's device first; its NumPy arrays taken as
        tensors, floating ones as float32, as the buffers store them: a ``ReplayBatch`` of NumPy arrays was an
        ``AttributeError: 'numpy.ndarray' object has no attribute 'float'`` inside the algorithm). A step count
        (Stable-Baselines3's ``model.learn(total_timesteps=N)``) is refused, naming what trains an agent here."""
        if total_timesteps is not None or batch is None or isinstance(batch, (int, float)):
            raise CanterError("agent.learn(batch) is one update from a batch of transitions; Stable-Baselines3's "
                              "model.learn(total_timesteps=N) is canter.train(ALGO, env=ID, max_steps=N) (init_from=PATH "
                              "to start from a saved agent's weights), or a canter.make_trainer loop")
        batch = numpy_as_tensors(batch)
        return self.algorithm.learn(batch if self.device.type == "cpu" else to_device(batch, self.device))

    def learn_phase(self, batch: Any, steps: int) -> list[dict[str, float]]:
        """``steps`` updates on ``batch`` cut into equal minibatches (algorithms with ``learn_phase``)."""
        batch = numpy_as_tensors(batch)
        return self.algorithm.learn_phase(batch if self.device.type == "cpu" else to_device(batch, self.device), steps)

    # -- state ----------------------------------------------------------------------------
    @keywords_checked("agent.save")
    def save(self, path: Any) -> Any:
        """Save the agent as ``path.safetensors`` + ``path.json``, which ``canter.load(path)`` reads, as
        Stable-Baselines3's ``model.save``; see :func:`canter.checkpoint.save_agent`. Returns the path (no suffix)."""
        from canter.checkpoint import save_agent

        return save_agent(self, path)

    def state_dict(self) -> dict[str, Any]:
        """Algorithm state plus normalisation statistics."""
        state = {
            "algorithm": self.algorithm.state_dict(),
            "obs_rms": self.obs_rms.state_dict() if self.obs_rms else None,
            "ret_rms": self.ret_rms.state_dict() if self.ret_rms else None,
            "returns": self._returns,
        }
        if self.obs_std_eps is not None:
            state["obs_std_eps"] = self.obs_std_eps
        return state

    def keep_pixel_statistics(self, saved: Any) -> None:
        """Give an agent whose uint8 images are never normalised (``images_raw``) an ``obs_rms`` for the statistics
        ``saved`` (a checkpoint's, or a learner's sent to its explorers): saved before 2026-11-27, its networks take
        normalised pixels. The caller loads them."""
        if self.images_raw and saved and self.obs_rms is None:
            self.obs_rms = RunningMeanStd(self.observation_space.shape)
            self.obs_std_eps = getattr(self.algorithm, "obs_std_eps", None)

    def load_state_dict(self, state: dict[str, Any], weights_only: bool = False) -> None:
        """Restore :meth:`state_dict`."""
        self.algorithm.load_state_dict(state["algorithm"], weights_only=weights_only)
        self.keep_pixel_statistics(state.get("obs_rms"))
        if self.obs_rms is not None and state.get("obs_rms"):
            self.obs_rms.load_state_dict(state["obs_rms"])
            if self.obs_std_eps is not None:  # None: a TD3+BC checkpoint of canter before 2026-11-26, which
                self.obs_std_eps = state.get("obs_std_eps")  # divided by sqrt(var + 1e-8) and clipped
        if weights_only:
            return
        if self.ret_rms is not None and state.get("ret_rms"):
            self.ret_rms.load_state_dict(state["ret_rms"])
        if state.get("returns") is not None:
            self._returns = np.asarray(state["returns"], dtype=np.float64).copy()
