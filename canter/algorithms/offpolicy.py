"""What every off-policy algorithm shares: the replay/update-ratio config fields and target helpers.

``OffPolicyTrainer`` reads ``buffer_size``, ``learning_starts``, ``batch_size``,
``train_freq``, ``gradient_steps``, ``n_step``, ``prioritized`` and ``per_*`` from the
algorithm's config, so each algorithm's config subclasses :class:`OffPolicyConfig` (overriding
defaults where its reference implementation differs).
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from canter.algorithms.base import check_net_archs, make_adam
from canter.config import MAX_GRADIENT_STEPS, hp
from canter.config_values import TRAIN_FREQ_UNITS
from canter.data.her import STRATEGIES
from canter.errors import CanterError

ACTIVATION_CHOICES = ("tanh", "relu", "elu", "gelu", "silu")


def train_freq_unit_hp() -> Any:
    """The ``train_freq_unit`` field: what ``train_freq`` counts (docs/training-control.md, "Training frequency")."""
    return hp("step", "what train_freq counts: env steps, or episodes finished (both summed over the env copies, "
                      "checked after each vector step; a phase also ends at max_steps); Stable-Baselines3's "
                      "train_freq: [N, episode] sets both", choices=TRAIN_FREQ_UNITS)


def gradient_steps_hp(default: int, choices: list[int]) -> Any:
    """The ``gradient_steps`` field: updates per training phase, or -1 for one per env step the phase collected."""
    return hp(default, "gradient steps per training phase (-1: one per env step the phase collected, of all env "
                       "copies, as Stable-Baselines3's -1)", high=MAX_GRADIENT_STEPS, search={"choices": choices})


def phase_gradient_steps(config: Any, env_steps: int) -> int:
    """The gradient steps of a training phase that collected ``env_steps`` env steps: ``gradient_steps``, or
    ``env_steps`` for -1."""
    return env_steps if config.gradient_steps == -1 else config.gradient_steps


@dataclass
class OffPolicyConfig:
    """Replay buffer, update-to-data ratio and network fields shared by off-policy algorithms."""

    lr: float = hp(3e-4, "Adam learning rate", low=0, low_open=True, search={"low": 1e-5, "high": 3e-3, "log": True})
    buffer_size: int = hp(1_000_000, "replay buffer capacity: rows of env steps (each episode end also takes a reset-only row, so short episodes keep fewer transitions)", low=1)
    learning_starts: int = hp(100, "env steps of uniform random actions before learning starts", low=0)
    batch_size: int = hp(256, "minibatch size", low=1, search={"choices": [64, 128, 256, 512]})
    gamma: float = hp(0.99, "discount factor", low=0, high=1, search={"choices": [0.9, 0.95, 0.98, 0.99, 0.995]})
    tau: float = hp(0.005, "target-network Polyak rate (1: hard copy)", low=0, high=1, low_open=True,
                    search={"choices": [0.001, 0.005, 0.01, 0.02, 0.05]})
    train_freq: int = hp(1, "env steps (or episodes: train_freq_unit) collected between training phases", low=1,
                         search={"choices": [1, 4, 8, 16, 64]})
    train_freq_unit: str = train_freq_unit_hp()
    gradient_steps: int = gradient_steps_hp(1, [1, 4, 8, 16, 64])
    n_step: int = hp(1, "n-step returns: rewards summed before bootstrapping", low=1, search={"choices": [1, 3, 5]})
    prioritized: bool = hp(False, "prioritized experience replay (proportional, sum tree)")
    per_alpha: float = hp(0.6, "prioritized replay: priority exponent alpha", low=0, high=1)
    per_beta0: float = hp(0.4, "prioritized replay: initial importance-weight exponent (annealed to 1)", low=0, high=1)
    per_eps: float = hp(1e-6, "prioritized replay: added to the absolute TD error", low=0, low_open=True)
    her_goals: int = hp(0, "hindsight experience replay: relabelled goals per real transition (0: off; needs a goal "
                           "env: Dict observations with achieved_goal, desired_goal and compute_reward; not with n_step > 1 or "
                           "prioritized)", low=0)
    her_strategy: str = hp("future", "hindsight experience replay: where relabelled goals come from (the same "
                           "episode's later steps, its last step, or any of its steps)", choices=STRATEGIES)
    net_arch: list[int] = hp([256, 256], "hidden layer sizes", low=1)
    activation: str = hp("relu", "hidden activation", choices=ACTIVATION_CHOICES)
    normalize_obs: bool = hp(False, "normalise observations with running mean/std")
    normalize_reward: bool = hp(False, "scale rewards by the running std of the discounted return")
    matmul_precision: str = hp(
        "highest", "torch float32 matmul precision during updates: highest is plain float32; medium lets oneDNN "
        "use bfloat16 instructions for float32 matmuls where the CPU has them (faster, less precise)",
        choices=("highest", "high", "medium"),
    )

    def validate(self) -> None:
        """Cross-field checks shared by every off-policy algorithm."""
        if self.buffer_size < self.batch_size:
            raise CanterError(
                f"'hparams.buffer_size' ({self.buffer_size}) is smaller than 'hparams.batch_size' ({self.batch_size}); "
                f"use buffer_size >= {self.batch_size}"
            )
        check_net_archs(self)
        if self.gradient_steps < 1 and self.gradient_steps != -1:  # (the field's range: validate() names -1)
            raise CanterError(f"'hparams.gradient_steps' must be >= 1, or -1 (one per env step the phase collected), "
                              f"got {self.gradient_steps}")
        if self.her_goals:
            for name, value, plain in (("n_step", self.n_step, 1), ("prioritized", self.prioritized, False)):
                if value != plain:
                    raise CanterError(f"'hparams.her_goals' relabels one-step transitions of uniform replay with the "
                                      f"env's own rewards: set {name}={str(plain).lower()} (it is {value})")


class SoftUpdate:
    """Moves a target network towards its online twin: ``target <- target + tau * (online - target)``
    for every parameter (a copy when ``tau`` is 1). Floating-point buffers (a user model's batch-norm
    running statistics) are copied whatever ``tau``, as Stable-Baselines3 does. The lists are collected once."""

    def __init__(self, target: nn.Module, online: nn.Module) -> None:
        self.target, self.online = list(target.parameters()), list(online.parameters())
        pairs = [(t, o) for t, o in zip(target.buffers(), online.buffers()) if t.is_floating_point()]
        self.target_buffers, self.online_buffers = [t for t, _ in pairs], [o for _, o in pairs]

    def __call__(self, tau: float) -> None:  # noqa: D102
        with torch.no_grad():
            if tau >= 1.0:
                torch._foreach_copy_(self.target, self.online)
            else:
                torch._foreach_lerp_(self.target, self.online, tau)
            if self.target_buffers:
                torch._foreach_copy_(self.target_buffers, self.online_buffers)


@contextmanager
def frozen(params: list[nn.Parameter]) -> Iterator[None]:
    """Run a forward pass without building gradients for ``params`` (e.g. a critic's).

    Used for the actor loss: the critic passes gradients back to the actions but its own
    weights get none (and their weight-gradient matmuls are skipped). Parameters that were
    already frozen (a user's pretrained encoder) stay frozen afterwards.
    """
    trained = [p for p in params if p.requires_grad]
    for p in trained:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in trained:
            p.requires_grad_(True)


def mean_over_critics(td: torch.Tensor) -> torch.Tensor:
    """New priorities from per-critic TD errors ``[E, B]``: the mean absolute error ``[B]``."""
    return td.detach().abs().mean(0)


def parse_ent_coef(value: str, key: str = "hparams.ent_coef") -> tuple[bool, float]:
    """``'auto'`` -> (learned, 1.0); ``'auto_0.1'`` -> (learned, 0.1); ``'0.2'`` -> (fixed, 0.2); ``'0'`` -> (fixed, 0.0)."""
    text = str(value).strip().lower()
    learned = text.startswith("auto")
    number = text[5:] if text.startswith("auto_") else ("1.0" if text == "auto" else text)
    try:
        init = float(number)
    except ValueError:
        init = -1.0
    if not (init > 0 or (init == 0 and not learned)) or not math.isfinite(init):
        raise CanterError(f"'{key}' must be 'auto', 'auto_<positive initial value>' or a number >= 0 (0: no entropy "
                          f"bonus, as Stable-Baselines3's ent_coef=0.0), got {value!r}")
    return learned, init


class EntropyCoef:
    """SAC's entropy coefficient ``alpha = exp(log_alpha)``: fixed, or learned with its own Adam.

    The learned version minimises ``log_alpha * (entropy - target_entropy)``: alpha grows while
    the policy's entropy is below the target and shrinks while it is above.
    """

    def __init__(self, spec: str, lr: float, target_entropy: float, device: torch.device) -> None:
        learned, init = parse_ent_coef(spec)
        #: the run asked for the default start (``'auto'``: learned from 1), which a source's learned value replaces
        self.default_start = learned and str(spec).strip().lower() == "auto"
        self.log_alpha = torch.tensor(math.log(init) if init > 0 else -math.inf, device=device, requires_grad=learned)
        self.optimizer = make_adam([self.log_alpha], lr) if learned else None
        self.target_entropy = target_entropy

    @property
    def value(self) -> torch.Tensor:
        """Current alpha (no gradient)."""
        return self.log_alpha.detach().exp()

    def with_optimizers(self, **optimizers: Any) -> dict[str, Any]:
        """``optimizers`` plus this coefficient's own (when it is learned), for saving."""
        return {**optimizers, "ent_coef": self.optimizer} if self.optimizer is not None else dict(optimizers)

    def update(self, entropy: torch.Tensor) -> dict[str, float]:
        """One Adam step on ``log_alpha * mean(entropy - target)`` (no-op when fixed).

        The loss is linear in ``log_alpha``, so its gradient is ``mean(entropy - target)``; it
        is set directly instead of running autograd for one scalar.
        """
        if self.optimizer is None:
            return {}
        gap = (entropy.detach() - self.target_entropy).mean()
        self.log_alpha.grad = gap.reshape(self.log_alpha.shape)
        loss = self.log_alpha.item() * gap.item()
        self.optimizer.step()
        return {"ent_coef_loss": loss}

    def state(self) -> torch.Tensor:
        """``log_alpha`` to save."""
        return self.log_alpha.detach().clone()

    def load(self, log_alpha: torch.Tensor | None) -> None:
        """Restore :meth:`state`."""
        if log_alpha is not None:
            with torch.no_grad():
                self.log_alpha.copy_(torch.as_tensor(log_alpha))

    def take_over(self, log_alpha: torch.Tensor | None) -> None:
        """A new run starting from a saved agent (``init_from``, a weights-only load): a coefficient learned from
        the default start (``'auto'``) starts from the source's ``log_alpha`` instead, as Stable-Baselines3's
        ``SAC.load`` restores ``log_ent_coef`` (from 1 the entropy bonus swamped a trained policy's Q values for
        thousands of steps). A fixed coefficient, an explicit ``'auto_<init>'`` or a source's infinite one
        (``ent_coef: 0``) leaves this run's own."""
        if self.default_start and log_alpha is not None and bool(torch.isfinite(torch.as_tensor(log_alpha)).all()):
            self.load(log_alpha)
