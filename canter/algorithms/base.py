"""The Algorithm interface: models, target models, optimizers and the update math.

An Algorithm never sees an env, and its interface is torch tensors: the Agent feeds it tensors, the
Trainer feeds it batches. (Speed paths compute in NumPy inside: the hand-derived updates of DQN,
PPO and A2C, and :meth:`Algorithm.act_numpy`, the shortcut of DQN and the actor-critics for acting on
a few observations.)
It owns its optimizers and random generator and saves them in its state, so a checkpoint
restores the learner exactly (env and replay state are the Trainer's).
"""
from __future__ import annotations

import functools
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar, NamedTuple

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from canter.algorithms.model_hparams import (  # noqa: F401 (re-exported for algorithms)
    check_net_archs, critic_arch_hp, critic_arch_kwargs, encoder_hp, encoder_kwargs, widest_layer)
from canter.algorithms.seeding import SeededBuild, seed_init
from canter.algorithms.threads import TWO_THREADS_FROM_CPUS, threads_for, use_threads  # noqa: F401 (re-exported)
from canter.errors import CanterError
from canter.optim import clip_grad_norm_, make_adam  # noqa: F401  (re-exported for algorithms)
from canter.registry import lookup, registered_name


class ActOutput(NamedTuple):
    """What an algorithm returns for a batch of observations: tensors from :meth:`Algorithm.act`,
    NumPy arrays from :meth:`Algorithm.act_numpy`."""

    actions: torch.Tensor | np.ndarray
    log_probs: torch.Tensor | np.ndarray | None = None
    values: torch.Tensor | np.ndarray | None = None


def linear(start: float, end: float, fraction: float, progress: float) -> float:
    """Linear schedule from ``start`` to ``end`` over the first ``fraction`` of training."""
    if fraction <= 0:
        return end
    return start + (end - start) * min(1.0, progress / fraction)


def sample_actor_critic(algorithm: Any, obs: torch.Tensor, deterministic: bool = False) -> ActOutput:
    """``act`` of every actor-critic (PPO, A2C, IMPALA, ...): the policy's mode, or a sample with
    its log-probability and the critic's value, from ``algorithm.model`` (an ``ActorCritic``)."""
    model = algorithm.model
    if deterministic:
        return policy_sample(algorithm, model.action(obs), None, True)
    out, value = model.action_value(obs)
    return policy_sample(algorithm, out, value)


def policy_sample(algorithm: Any, out: torch.Tensor, value: torch.Tensor | None,
                  deterministic: bool = False) -> ActOutput:
    """The policy's mode, or a sample with its log-probability and ``value``, from the policy head's
    output ``out`` (logits, per-entry logits of MultiDiscrete / MultiBinary actions, or the Gaussian
    mean with ``algorithm.model.log_std``), drawn from ``algorithm.generator``."""
    from canter.models import distributions as D

    nvec = getattr(algorithm, "nvec", None)  # MultiDiscrete / MultiBinary: one categorical per entry
    if deterministic:
        if nvec is not None:
            return ActOutput(D.multi_categorical_mode(out, nvec))
        return ActOutput(out if algorithm.continuous else out.argmax(-1))
    if nvec is not None:
        actions = D.multi_categorical_sample(out, nvec, algorithm.generator)
        logp, _ = D.multi_categorical_log_prob_entropy(out, actions, nvec)
    elif algorithm.continuous:
        actions = D.gaussian_sample(out, algorithm.model.log_std, algorithm.generator)
        logp = D.gaussian_log_prob(out, algorithm.model.log_std, actions)
    else:
        actions = D.categorical_sample(out, algorithm.generator)
        logp = torch.log_softmax(out, -1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    return ActOutput(actions, logp, value)


def minibatches(batch: Any, steps: int) -> Iterator[tuple[Any, slice]]:
    """``batch`` (a NamedTuple of tensors) cut into ``steps`` equal consecutive minibatches, each
    with the slice of rows it holds."""
    n = len(batch[0]) // steps
    for i in range(steps):
        part = slice(i * n, (i + 1) * n)
        yield type(batch)(*(t[part] for t in batch)), part


def overridden_outside_canter(obj: Any, name: str) -> bool:
    """True when the method ``name`` of ``obj`` (an instance or a class) comes from a class outside
    canter (a user's subclass overriding it): canter's fast paths reproduce canter's own methods and
    must not bypass it. Answered once per class and name (the acting paths ask at every call)."""
    return _overridden_outside_canter(obj if isinstance(obj, type) else type(obj), name)


@functools.lru_cache(maxsize=None)
def _overridden_outside_canter(cls: type, name: str) -> bool:
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass.__module__.split(".", 1)[0] != "canter"
    return False


class Algorithm(ABC, metaclass=SeededBuild):
    """Base class: subclasses set the class attributes and implement ``act`` and ``learn``.

    ``seed`` seeds the algorithm's generator and its initial weights (:mod:`canter.algorithms.seeding`: the
    caller's global random states are given back); None: the weights come from torch's global stream as it is,
    and the generator is seeded with 0."""

    #: registered name, e.g. ``"ppo"``
    name: ClassVar[str] = ""
    #: ``"on_policy"`` or ``"off_policy"``: which Trainer runs it
    family: ClassVar[str] = ""
    #: the hyperparameter dataclass
    Config: ClassVar[type]
    #: registered model used when the run config names none
    default_model: ClassVar[str] = ""
    #: vector envs used when the run config names none
    default_n_envs: ClassVar[int] = 1
    #: action space types the algorithm supports
    action_spaces: ClassVar[tuple[type, ...]] = (gym.spaces.Discrete, gym.spaces.Box)
    #: True when Box actions come out in [-1, 1] and the Agent rescales them to the bounds
    squashed_actions: ClassVar[bool] = False
    #: what a divergence stop suggests lowering (TRPO/NPG: the policy's step is target_kl, not lr)
    divergence_hint: ClassVar[str] = "a lower learning rate"
    #: True for algorithms that train only on multi-agent envs (``pettingzoo:``): QMIX, MAPPO
    multiagent_only: ClassVar[bool] = False
    #: True when the algorithm acts and learns under invalid-action masks (:mod:`canter.envs.masks`)
    #: through a model that applies them (its class sets ``action_masks = True``)
    action_masks: ClassVar[bool] = False
    #: the methods the algorithm calls on its model: a user's model (``model: module:Class``) without one
    #: of them is refused when it is built, rather than failing inside training
    model_methods: ClassVar[tuple[str, ...]] = ()
    #: canter's registered models, besides :attr:`default_model`, that the algorithm can train (canter's
    #: models share method names across algorithms with other meanings, so they are named here
    #: rather than checked by their methods); a user's model is checked by :attr:`model_methods`
    builtin_models: ClassVar[tuple[str, ...]] = ()
    #: with ``normalize_obs``: None divides by ``sqrt(var + 1e-8)`` and clips to ``[-10, 10]``
    #: (Stable-Baselines3's ``VecNormalize``; offline, over the dataset's observations and next
    #: observations); a number ``eps`` divides by ``std + eps`` without clipping, with the offline
    #: statistics over the dataset's observations only (TD3+BC, Fujimoto & Gu 2021: 1e-3)
    obs_std_eps: ClassVar[float | None] = None

    @property
    def numpy_products(self) -> bool:
        """True when the updates' large products run through NumPy (the run's threads then go to
        OpenBLAS, :func:`use_threads`); False here: torch's kernels."""
        return False

    def __init__(
        self, observation_space: gym.Space, action_space: gym.Space, config: Any,
        model: str | None = None, seed: int | None = None, device: str = "cpu",
    ) -> None:
        self.check_spaces(observation_space, action_space)
        seed_init(seed)
        self.observation_space, self.action_space = observation_space, action_space
        self.config = config
        self.device = torch.device(device)
        if self.device.type == "cuda" and self.device.index is None:  # 'cuda': the current one, named exactly
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.generator = torch.Generator().manual_seed(0 if seed is None else seed)
        #: the model class :meth:`make_model` builds (None: the config names none and the class has no
        #: ``default_model``, as an algorithm that builds its own networks)
        self.model_cls = lookup("model", model or self.default_model) if model or self.default_model else None
        if self.model_cls is not None:
            self._check_builtin_model(model or self.default_model)
        self.updates = 0

    @classmethod
    def usable_builtin_models(cls) -> tuple[str, ...]:
        """The names of canter's own models the algorithm trains: its default and :attr:`builtin_models`."""
        return tuple(dict.fromkeys((cls.default_model, *cls.builtin_models)))

    def _check_builtin_model(self, name: str) -> None:
        """Refuse one of canter's own models made for other algorithms (mlp_sac for td3), which would
        fail only inside training, with the algorithms it is made for."""
        if self.model_cls.__module__.split(".")[0] != "canter" or ":" in name:
            return
        usable = self.usable_builtin_models()
        if any(lookup("model", n) is self.model_cls for n in usable if n):
            return
        from canter.registry import _REGISTRY

        found = registered_name("model", name)
        users = sorted(a for a, cls in _REGISTRY["algorithm"].items()
                       if any(lookup("model", n) is self.model_cls for n in cls.usable_builtin_models() if n))
        made_for = f" (it is made for {', '.join(users)})" if users else ""
        raise CanterError(f"model '{found}' cannot be trained by {self.name}{made_for}; {self.name}'s "
                          f"model{'s' if len(usable) > 1 else ''}: {', '.join(usable)}")

    @classmethod
    def _algorithms_for(cls, action_space: gym.Space) -> str:
        """The hint of a wrong action space (:func:`canter.algorithm_hints.wrong_space_hint`)."""
        from canter.algorithm_hints import wrong_space_hint

        return wrong_space_hint(cls, action_space)

    @classmethod
    def check_spaces(cls, observation_space: gym.Space, action_space: gym.Space) -> None:
        """Raise a CanterError if the algorithm cannot act in ``action_space``."""
        if not isinstance(action_space, cls.action_spaces):
            kinds = " or ".join(t.__name__ for t in cls.action_spaces)
            from canter.envs.spaces import describe_space

            raise CanterError(
                f"{cls.name.upper()} needs a {kinds} action space, but the env's action space is "
                f"{describe_space(action_space)}{cls._algorithms_for(action_space)}"
            )
        bounds = (action_space.low, action_space.high) if isinstance(action_space, gym.spaces.Box) else ()
        if cls.squashed_actions and not all(np.isfinite(b).all() for b in bounds):
            from canter.envs.spaces import describe_space

            other = ("" if getattr(cls, "family", "") == "offline"
                     else " or use ppo / a2c / trpo, whose Gaussian actions need none")
            raise CanterError(
                f"{cls.name.upper()} scales its actions into the env's bounds, but the action space "
                f"{describe_space(action_space)} is unbounded; give it finite bounds (a gymnasium.ActionWrapper "
                f"whose action_space is a bounded Box; gymnasium's RescaleAction refuses infinite bounds){other}"
            )
        from canter.envs.masks import mask_width

        if mask_width(observation_space) and not cls.action_masks:
            from canter.algorithm_hints import mask_hint

            hint = mask_hint(cls, action_space)
            raise CanterError(f"the env's observations carry an action mask, which {cls.name} does not apply{hint}")

    def make_model(self, **kwargs: Any) -> nn.Module:
        """Build the configured model class with the spaces and ``kwargs``."""
        from canter.envs.masks import mask_width

        if self.model_cls is None:
            raise CanterError(f"{type(self).__name__} builds a model, but names none: set default_model on the "
                              f"class, or model: NAME (or module:Class) in the run config")
        if mask_width(self.observation_space) and not getattr(self.model_cls, "action_masks", False):
            raise CanterError(f"model {self.model_cls.__name__} does not apply action masks (the env's observations "
                              f"carry one); set 'action_masks = True' on a model class that does")
        if self.model_cls.__module__.split(".")[0] == "canter":  # a user's constructor is not run twice
            from canter.model_size import check_model_fits

            check_model_fits(lambda: self.model_cls(self.observation_space, self.action_space, **kwargs), self.device,
                             f"model {self.model_cls.__name__} for {self.name}",
                             ", ".join(f"{k}={v}" for k, v in kwargs.items()))
        try:
            model = self.model_cls(self.observation_space, self.action_space, **kwargs)
        except TypeError as exc:  # e.g. a model made for another algorithm (lstm_actor_critic for ppo)
            if self.model_cls.__module__.split(".")[0] != "canter" and "keyword argument" in str(exc):
                # a user's model: the default model's name did not say what to change (take the keywords)
                cls = self.model_cls
                raise CanterError(f"cannot build model {cls.__module__}:{cls.__qualname__} for {self.name}: {exc}; "
                                  f"it is built as Model(observation_space, action_space, **kwargs) with "
                                  f"{', '.join(kwargs)}: take them (or **kwargs)") from None
            raise CanterError(f"cannot build model {self.model_cls.__name__} for {self.name}: {exc}; {self.name}'s "
                              f"default model is '{self.default_model}'") from None
        except Exception as exc:
            too_big = re.search(r"can't allocate memory: you tried to allocate (\d+) bytes", str(exc))
            # torch's size calculation overflows past 64-bit byte counts (n_quantiles 1e18 was its traceback)
            overflow = isinstance(exc, RuntimeError) and "size calculation overflowed" in str(exc)
            if isinstance(exc, MemoryError) or (isinstance(exc, RuntimeError) and too_big) or overflow:
                size = (f"needs {int(too_big.group(1)) / 2**30:,.1f} GiB" if too_big else
                        "needs more bytes than 64 bits count" if overflow else "needs")
                raise CanterError(f"cannot build model {self.model_cls.__name__} for {self.name}: one of its tensors "
                                  f"{size}, more memory than there is; check the "
                                  f"sizes in its hyperparameters ({', '.join(f'{k}={v}' for k, v in kwargs.items())})"
                                  ) from None
            if self.model_cls.__module__.split(".")[0] == "canter" or isinstance(exc, CanterError):
                raise  # canter's own model: a bug, whose traceback is wanted; a CanterError (the user's model called
                # canter, make_encoder with a bad encoder name) is one line already
            from canter.errors import raised_in

            raise CanterError(f"cannot build model {self.model_cls.__module__}:{self.model_cls.__qualname__}: "
                              f"{raised_in(exc)}") from None
        if not isinstance(model, nn.Module):  # a registered class or factory of the user's (an AttributeError traceback)
            raise CanterError(f"model {getattr(self.model_cls, '__qualname__', self.model_cls)} for {self.name} made a "
                              f"{type(model).__name__!r} object, not a torch.nn.Module (a model subclasses it)")
        missing = [m for m in self.required_model_methods() if not callable(getattr(model, m, None))]
        if missing and type(model).__module__.split(".")[0] != "canter":
            needed = ", ".join(self.required_model_methods())
            raise CanterError(f"{type(self).__name__} needs a model with the methods {needed}; model "
                              f"{type(model).__module__}:{type(model).__qualname__} has no {', '.join(missing)}")
        user_module = not all(type(m).__module__.split(".")[0] in ("canter", "torch") for m in model.modules())
        cudnn_rnn = self.device.type == "cuda" and any(isinstance(m, nn.RNNBase) for m in model.modules())
        if user_module or cudnn_rnn:
            # A user's module may leave parameters out of a loss: torch's optimizers skip those (no
            # gradient), canter's flat ones would still move them by momentum. On a GPU, cuDNN keeps
            # a recurrent layer's weights in one buffer of its own layout (``flatten_parameters``,
            # run by ``.to``); a flat optimizer's views would make it copy them every forward pass.
            # Both get torch's optimizer.
            for p in model.parameters():
                p._canter_exact_optimizer = True
        return model.to(self.device)

    def required_model_methods(self) -> tuple[str, ...]:
        """The methods a model of this algorithm (with its config) must have: :attr:`model_methods`."""
        return self.model_methods

    @abstractmethod
    def act(self, obs: torch.Tensor, deterministic: bool = False) -> ActOutput:
        """Actions for a batch of (preprocessed) observations."""

    def predict(self, obs: torch.Tensor) -> torch.Tensor:
        """Deterministic actions (for evaluation)."""
        return self.act(obs, deterministic=True).actions

    def act_numpy(self, obs: np.ndarray, deterministic: bool = False) -> ActOutput | None:
        """What :meth:`act` would return for a NumPy batch, as NumPy arrays, computed with NumPy's
        kernels (torch's per-op cost dominates at a few observations, and so does wrapping arrays in
        tensors: on rl-zoo3's CartPole PPO, returning arrays rather than tensors sharing them sped
        whole training iterations up ~4.5%); None where the algorithm has no such path (the default)."""
        return None

    def value_numpy(self, obs: np.ndarray) -> np.ndarray | None:
        """The critic's V(obs) ``[B]`` for a NumPy batch with NumPy's kernels (on-policy bootstrapping);
        None where the algorithm has no such path (the default)."""
        return None

    @abstractmethod
    def learn(self, batch: Any) -> dict[str, float]:
        """One update from ``batch``; returns named scalar statistics."""

    #: statistics that not every update reports (TD3's ``actor_loss``, every ``policy_delay`` updates): an iteration
    #: whose updates report none logs the last value reported (:meth:`carry_stats`)
    sparse_stats: ClassVar[tuple[str, ...]] = ()

    def carry_stats(self, stats: dict[str, float]) -> dict[str, float]:
        """An iteration's mean ``stats`` with each of :attr:`sparse_stats` that its updates did not report set to the
        last value reported (none before the first), as Stable-Baselines3's logger keeps a key's last record until
        its next and Tianshou's TD3 reports its last actor loss: a record at ``log_every`` otherwise had the value
        or not as its iteration's updates fell on the delay."""
        carried = self.__dict__.setdefault("_carried_stats", {})
        for key in self.sparse_stats:
            if key in stats:
                carried[key] = stats[key]
            elif key in carried and stats:  # (an iteration without updates, before learning_starts: no statistics)
                stats[key] = carried[key]
        return stats

    #: True when the off-policy trainer may hand :meth:`learn_phase` all of a training phase's
    #: minibatches in one batch (uniform replay only; see DQN, which batches its target pass)
    phase_batching: ClassVar[bool] = False

    def learn_phase(self, batch: Any, steps: int) -> list[dict[str, float]]:
        """``steps`` updates on ``batch`` cut into ``steps`` equal minibatches, in order."""
        return [self.learn(mb) for mb, _ in minibatches(batch, steps)]

    def sync_target(self) -> None:
        """Copy online weights into target networks (no-op for algorithms without targets)."""

    def set_progress(self, step: int, total_steps: int) -> None:
        """Advance schedules (learning rate, clip range, epsilon, target syncs) to env step ``step``."""

    @abstractmethod
    def modules(self) -> dict[str, nn.Module]:
        """Named networks (models and target models) to save."""

    @abstractmethod
    def optimizers(self) -> dict[str, Any]:
        """Named optimizers to save (``torch.optim`` optimizers or :class:`canter.optim.FlatAdam`)."""

    def extra_state(self) -> dict[str, Any]:
        """Other state (counters, schedule values) to save; JSON-safe or tensors."""
        return {}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`extra_state` returned."""

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue: networks, optimizers, RNG, counters (and, for an algorithm with
        :attr:`sparse_stats`, the values :meth:`carry_stats` carries, so a resumed run logs them as the
        uninterrupted one does)."""
        state = {
            "modules": {k: m.state_dict() for k, m in self.modules().items()},
            "optimizers": {k: o.state_dict() for k, o in self.optimizers().items()},
            "generator": self.generator.get_state(),
            "updates": self.updates,
            "extra": self.extra_state(),
        }
        if self.sparse_stats:
            state["carried_stats"] = dict(self.__dict__.get("_carried_stats", {}))
        return state

    def load_state_dict(self, state: dict[str, Any], weights_only: bool = False) -> None:
        """Restore :meth:`state_dict` (``weights_only`` skips optimizers, RNG and counters)."""
        for k, m in self.modules().items():
            saved, own = state["modules"][k], m.state_dict()
            for name, t in saved.items():  # torch would convert another dtype silently (int8 weights as floats)
                if name in own and isinstance(t, torch.Tensor) and t.dtype != own[name].dtype:
                    raise ValueError(f"{k}.{name} is {t.dtype}, the model's is {own[name].dtype}")
            m.load_state_dict(saved)
        if weights_only:
            return
        for k, o in self.optimizers().items():
            o.load_state_dict(state["optimizers"][k])
        self.generator.set_state(state["generator"])
        self.updates = int(state["updates"])
        self.load_extra_state(state.get("extra", {}))
        if self.sparse_stats:  # (a checkpoint from before they were saved: none carried, as at the run's start)
            self.__dict__["_carried_stats"] = {k: float(v) for k, v in (state.get("carried_stats") or {}).items()}

    def hidden_width(self) -> int:
        """Largest layer width (used to choose torch's thread count)."""
        from canter.models.noisy import NoisyLinear

        widths = [m.out_features for mod in self.modules().values() for m in mod.modules()
                  if isinstance(m, (nn.Linear, NoisyLinear))]
        return max(widths, default=0)
