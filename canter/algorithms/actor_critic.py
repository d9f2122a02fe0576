"""Shared pieces of the policy-gradient algorithms that use the ``mlp_actor_critic`` model.

A2C, REINFORCE, TRPO and NPG all sample from the same two policies (categorical over logits,
diagonal Gaussian with a free ``log_std``), so acting, log-probabilities, entropies and KL
divergences live here once. PPO, A2C, REINFORCE, TRPO, NPG, IMPALA and APPO build on this base.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from canter.algorithms.base import (
    ActOutput, Algorithm, check_net_archs, critic_arch_hp, critic_arch_kwargs, encoder_kwargs, make_adam,
    overridden_outside_canter, sample_actor_critic,
)
from canter.algorithms.policy_terms import CategoricalTerms, GaussianTerms, MultiCategoricalTerms, categorical_log_prob
from canter.optim import make_rmsprop
from canter.config import hp
from canter.envs.spaces import action_nvec
from canter.errors import CanterError
from canter.models import distributions as D
from canter.models.mlp import ActorCritic


@dataclass
class PolicyNetConfig:
    """Network and normalisation hyperparameters shared by the actor-critic algorithms."""

    normalize_obs: bool = hp(False, "normalise observations with running mean/std")
    normalize_reward: bool = hp(False, "scale rewards by the running std of the discounted return")
    net_arch: list[int] = hp([64, 64], "hidden layer sizes of the actor, and of the critic unless critic_net_arch", low=1)
    critic_net_arch: list[int] | None = critic_arch_hp("vf")
    activation: str = hp("tanh", "hidden activation", choices=("tanh", "relu", "elu", "gelu", "silu"))
    ortho_init: bool = hp(True, "orthogonal initialisation (gain sqrt 2, 0.01 policy head, 1 value head)")
    log_std_init: float = hp(0.0, "initial log std of the Gaussian policy (Box actions)", low=-20, high=20)

    #: the critic's key in Stable-Baselines3's net_arch mapping, dict(pi=[...], vf=[...])
    sb3_critic_key = "vf"

    def validate(self) -> None:
        """Cross-field checks."""
        check_net_archs(self)
        if getattr(self, "shared_trunk", False) and self.critic_net_arch not in (None, self.net_arch):
            raise CanterError(f"shared_trunk shares net_arch's hidden layers between actor and critic, so "
                              f"critic_net_arch must be null, not {self.critic_net_arch}; set "
                              f"hparams.shared_trunk=false to give the critic layers of its own")


def make_optimizer(params: list[nn.Parameter], name: str, lr: float, eps: float, alpha: float = 0.99) -> torch.optim.Optimizer:
    """``"adam"`` or ``"rmsprop"`` (PyTorch's update, smoothing ``alpha``, as in SB3's A2C), both on flat buffers."""
    if name == "adam":
        return make_adam(params, lr, eps)
    return make_rmsprop(params, lr, alpha, eps)


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    """Set the learning rate of every parameter group."""
    for group in optimizer.param_groups:
        group["lr"] = lr


def explained_variance(returns: torch.Tensor, values: torch.Tensor) -> float:
    """``1 - Var(returns - values) / Var(returns)`` (0 when the returns do not vary)."""
    var = returns.var() if returns.numel() > 1 else torch.tensor(0.0)
    return float(1 - (returns - values).var() / var) if var > 0 else 0.0


def kl_categorical(logp_old: torch.Tensor, logp_new: torch.Tensor) -> torch.Tensor:
    """KL(old || new) per row from normalised log-probabilities ``[B, n]``."""
    return (logp_old.exp() * (logp_old - logp_new)).sum(-1)


def kl_gaussian(
    mean_old: torch.Tensor, log_std_old: torch.Tensor, mean_new: torch.Tensor, log_std_new: torch.Tensor
) -> torch.Tensor:
    """KL(old || new) per row for diagonal Gaussians, summed over action dimensions."""
    var_old, var_new = (2 * log_std_old).exp(), (2 * log_std_new).exp()
    return (log_std_new - log_std_old + (var_old + (mean_old - mean_new).pow(2)) / (2 * var_new) - 0.5).sum(-1)


class ActorCriticAlgorithm(Algorithm):
    """Base for on-policy algorithms on an ``ActorCritic`` model: acting, log-probs, entropy, KL."""

    family = "on_policy"
    default_model = "mlp_actor_critic"
    default_n_envs = 8

    action_masks = True  # the ActorCritic model masks the logits: every loss and sample follows
    #: MultiDiscrete and MultiBinary actions: one categorical per entry (SB3's MultiCategorical; a
    #: MultiBinary entry is a two-way categorical where SB3 has a Bernoulli: the same distributions)
    action_spaces: ClassVar[tuple[type, ...]] = (gym.spaces.Discrete, gym.spaces.Box, gym.spaces.MultiDiscrete,
                                                 gym.spaces.MultiBinary)
    model_methods = ("action", "value", "action_value")

    #: True when the algorithm optimises actor and critic parameters apart (TRPO/NPG): the built-in
    #: model then keeps two separate networks instead of stacking their weights
    separate_networks: ClassVar[bool] = False

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: Any, **kw: Any) -> None:
        super().__init__(observation_space, action_space, config, **kw)
        self.model = self.make_model(**self.model_kwargs(config))
        self.continuous = isinstance(action_space, gym.spaces.Box)
        if self.continuous and not isinstance(getattr(self.model, "log_std", None), torch.Tensor):
            model = type(self.model)  # a user's model: it was an AttributeError traceback inside the first rollout
            raise CanterError(f"{type(self).__name__} needs a model with a 'log_std' parameter for Box actions (the "
                              f"Gaussian policy's log standard deviations, one per action dimension: "
                              f"nn.Parameter(torch.zeros(n))); model {model.__module__}:{model.__qualname__} has none")
        #: the categories of each entry of MultiDiscrete / MultiBinary actions (None for other spaces)
        self.nvec = action_nvec(action_space)

    def model_kwargs(self, c: Any) -> dict[str, Any]:
        """What the model is built with, from the config ``c``."""
        extra = {"stacked": False} if self.separate_networks and self.model_cls is ActorCritic else {}
        return dict(net_arch=c.net_arch, activation=c.activation, ortho_init=c.ortho_init,
                    log_std_init=c.log_std_init, shared_trunk=getattr(c, "shared_trunk", False), **extra,
                    **encoder_kwargs(c), **critic_arch_kwargs(c))

    # -- distributions -------------------------------------------------------------------------
    def log_prob_entropy(self, out: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities of ``actions`` and entropies under the policy whose head output is ``out``."""
        if self.continuous:
            log_std = self.model.log_std
            return D.gaussian_log_prob(out, log_std, actions), D.gaussian_entropy(log_std, out.shape[0])
        if self.nvec is not None:
            return D.multi_categorical_log_prob_entropy(out, actions, self.nvec)
        logp, logp_all = D.categorical_log_prob(out, actions)
        return logp, D.categorical_entropy(logp_all)

    @property
    def uses_manual_backward(self) -> bool:
        """Whether the update takes the hand-derived gradients (PPO's, A2C's): ``manual_backward`` on, a
        model that supports them, the CPU (they run partly in NumPy), and canter's own :meth:`log_prob_entropy` (they reproduce it; a user's
        subclass overriding it gets autograd on its own, as does one overriding the autograd loss ``_grads_autograd``,
        to add a term, which the hand-derived path would never call)."""
        return bool(getattr(self.config, "manual_backward", False) and getattr(self.model, "manual_backward", False)
                    and self.device.type == "cpu" and not any(overridden_outside_canter(self, m) for m in (
                        "log_prob_entropy", "_grads_autograd")))

    def policy_terms(self, out: np.ndarray, actions: np.ndarray) -> CategoricalTerms | GaussianTerms:
        """For the hand-derived updates: log-probs and entropies of ``actions`` under the policy
        whose head output (NumPy) is ``out``, and through ``out_grad`` the gradient with respect
        to ``out`` (Box actions: also ``log_std.grad``)."""
        if self.continuous:
            return GaussianTerms(out, self.model.log_std, actions)
        if self.nvec is not None:
            return MultiCategoricalTerms(out, actions, self.nvec)
        return CategoricalTerms(out, actions)

    def snapshot(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The current policy on ``obs``, detached: head output and (Box) ``log_std``."""
        with torch.no_grad():
            out = self.model.action(obs)
            return out, self.model.log_std.detach().clone() if self.continuous else None

    def kl(self, old: tuple[torch.Tensor, torch.Tensor | None], out_new: torch.Tensor) -> torch.Tensor:
        """Per-row KL(old || current) from a :meth:`snapshot` and the current head output ``out_new``."""
        out_old, log_std_old = old
        if self.continuous:
            return kl_gaussian(out_old, log_std_old, out_new, self.model.log_std)
        if self.nvec is not None:  # independent entries: the KLs add up
            return sum(kl_categorical(torch.log_softmax(out_old[:, s], -1), torch.log_softmax(out_new[:, s], -1))
                       for s in D.segments(self.nvec))
        return kl_categorical(torch.log_softmax(out_old, -1), torch.log_softmax(out_new, -1))

    # -- acting --------------------------------------------------------------------------------
    def act(self, obs: torch.Tensor, deterministic: bool = False) -> ActOutput:
        """Sample (or take the mode of) the policy; also returns log-probs and values."""
        return sample_actor_critic(self, obs, deterministic)

    def act_numpy(self, obs: np.ndarray, deterministic: bool = False) -> ActOutput | None:
        """:meth:`act` on a NumPy batch through the model's NumPy forward pass (None where it has
        none): the same random draws from the same generator, the same formulas."""
        if self.device.type != "cpu" or self.nvec is not None:  # factored actions act through torch
            return None
        action_value = getattr(self.model, "action_value_numpy", None)
        res = None if action_value is None else action_value(obs)
        if res is None:
            return None
        out, value = res
        if deterministic:
            return ActOutput(out if self.continuous else out.argmax(-1))
        if self.continuous:
            noise = torch.randn(out.shape, generator=self.generator, dtype=torch.float32).numpy()
            actions = out + np.exp(self.model.log_std.detach().numpy()) * noise
        else:  # Gumbel-max, as distributions.categorical_sample draws it
            e = torch.empty(out.shape, dtype=torch.float32).exponential_(generator=self.generator).numpy()
            actions = np.argmax(out - np.log(e), axis=-1)
        # the hand-derived updates' NumPy formulas
        logp = self.policy_terms(out, actions).logp if self.continuous else categorical_log_prob(out, actions)
        return ActOutput(actions, logp, value)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """V(obs) for bootstrapping."""
        return self.model.value(obs)

    def value_numpy(self, obs: np.ndarray) -> np.ndarray | None:
        """:meth:`value` through the model's NumPy forward pass (the one :meth:`act_numpy` takes, so a
        rollout's last value comes from the same arithmetic as its stored ones; 8 CartPole rows:
        ~20 µs against ~200 for torch's pass under ``inference_mode`` in the training loop); None
        where there is none or a subclass computes its value otherwise."""
        if self.device.type != "cpu" or not _overrides_follow(type(self), "value_numpy", "value"):
            return None
        action_value = getattr(self.model, "action_value_numpy", None)
        res = None if action_value is None else action_value(obs)
        return None if res is None else res[1]

    def modules(self) -> dict[str, nn.Module]:  # noqa: D102
        return {"model": self.model}


def _overrides_follow(cls: type, fast: str, plain: str) -> bool:
    """Whether ``cls``'s method ``fast`` comes from the class that defines its ``plain`` or a
    subclass of it: False where a subclass redefined ``plain`` alone (its fast path would skip that)."""
    def owner(name: str) -> type:
        return next(k for k in cls.__mro__ if name in k.__dict__)

    return issubclass(owner(fast), owner(plain))


def linear_decay(value: float, schedule: str, step: int, total_steps: int) -> float:
    """``value`` for ``schedule="constant"``; ``value * (1 - step / total_steps)`` for ``"linear"``."""
    if schedule != "linear":
        return value
    return value * (1.0 - min(1.0, step / max(1, total_steps)))


def flat(tensors: list[torch.Tensor] | tuple[torch.Tensor, ...]) -> torch.Tensor:
    """Concatenate tensors into one flat vector."""
    return torch.cat([t.reshape(-1) for t in tensors])


def assign_flat(params: list[torch.Tensor], vector: torch.Tensor) -> None:
    """Copy consecutive slices of ``vector`` into ``params`` (in place, no autograd)."""
    i = 0
    with torch.no_grad():
        for p in params:
            n = p.numel()
            p.copy_(vector[i:i + n].view_as(p))
            i += n

