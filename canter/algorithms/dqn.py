"""Deep Q-Network and its extensions: target network (hard or Polyak), epsilon-greedy schedule,
Huber loss, and as options Double DQN, dueling heads, n-step returns, prioritized replay and a
QR-DQN distributional head; with all of them on it is a Rainbow-style agent (``rainbow``).

Target updates and epsilon are counted in environment steps, as in Stable-Baselines3, so
rl-zoo3 hyperparameters carry over unchanged. n-step returns and prioritized sampling live in
the replay buffer; here they show up as ``batch.discounts`` (``gamma ** k``) and
``batch.weights`` (importance weights), and ``last_priorities`` feeds priorities back.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch.nn import functional as F

from canter.algorithms.base import (
    ActOutput, Algorithm, clip_grad_norm_, encoder_hp, encoder_kwargs, minibatches,
    overridden_outside_canter,
)
from canter.algorithms.epsilon_greedy import EpsilonGreedyConfig, EpsilonGreedyTargets  # noqa: F401 (re-exported)
from canter.algorithms.offpolicy import gradient_steps_hp
from canter.config import hp
from canter.data.batch import ReplayBatch, distinct_draws
from canter.envs.masks import apply_mask_below, mask_width, split_mask
from canter.errors import CanterError
from canter.models.distributional import quantile_huber_loss
from canter.models.mlp import canter_class
from canter.models.mlp_passes import MLPPasses, q_network_passes
from canter.models.noisy import noiseless, noisy_layers, reset_noise
from canter.registry import register


def _action_indices(actions: torch.Tensor) -> np.ndarray:
    """Discrete actions ``[B]`` or ``[B, 1]`` (any dtype) as a flat int64 array for NumPy indexing."""
    return actions.reshape(-1).numpy().astype(np.int64, copy=False)


@dataclass
class DQNConfig(EpsilonGreedyConfig):
    """DQN hyperparameters (Stable-Baselines3's defaults; every extension off)."""

    lr: float = hp(1e-4, "Adam learning rate", low=0, low_open=True, search={"low": 1e-5, "high": 1e-2, "log": True})
    batch_size: int = hp(32, "minibatch size", low=1, search={"choices": [32, 64, 128, 256]})
    train_freq: int = hp(4, "env steps (or episodes: train_freq_unit) between training phases", low=1,
                         search={"choices": [1, 4, 16, 64, 256]})
    gradient_steps: int = gradient_steps_hp(1, [1, 4, 16, 64, 128])
    net_arch: list[int] = hp([64, 64], "hidden layer sizes", low=1)
    dueling: bool = hp(False, "dueling value/advantage heads")
    n_quantiles: int = hp(0, "QR-DQN distributional head with this many quantiles (0: plain Q values)", low=0)
    manual_backward: bool = hp(
        True, "hand-derived gradients for a plain relu/tanh MLP Q-network (same math as autograd, faster); "
        "false: autograd"
    )
    encoder: str = encoder_hp()
    noisy: bool = hp(False, "NoisyNet: noisy linear layers after the encoder explore in place of epsilon-greedy "
                            "(epsilon stays 0; evaluation uses the mean weights)")

    def validate(self) -> None:
        """Cross-field checks: the off-policy ones, and ``huber`` false only where the loss reads it."""
        super().validate()
        if not self.huber and self.n_quantiles:  # the quantile Huber loss has no squared-error form here
            raise CanterError(f"'hparams.huber' false (a squared TD error) applies to plain Q values; with "
                              f"'hparams.n_quantiles' {self.n_quantiles} the loss is the quantile Huber loss: leave "
                              f"huber true")


@register("algorithm", "dqn")
class DQN(EpsilonGreedyTargets, Algorithm):
    """DQN with optional Double, dueling, n-step, prioritized replay and quantile (QR-DQN) extensions."""

    name = "dqn"
    family = "off_policy"
    Config = DQNConfig
    default_model = "mlp_q"
    default_n_envs = 1
    action_spaces = (gym.spaces.Discrete,)
    action_masks = True  # the Q models mask their values; exploration draws allowed actions
    model_methods = ("value",)
    builtin_models = ("mlp_qr",)  # with n_quantiles (QR-DQN); without, trained on its quantiles' mean

    def required_model_methods(self) -> tuple[str, ...]:
        """``value(obs)``, and ``quantiles(obs)`` with a quantile head (``n_quantiles``)."""
        return self.model_methods + (("quantiles",) if self.config.n_quantiles else ())

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: DQNConfig, **kw: Any) -> None:
        if config.n_quantiles and kw.get("model") is None and self.default_model == DQN.default_model:
            kw["model"] = "mlp_qr"  # QR-DQN (a subclass with a model of its own, such as IQN's, keeps it)
        super().__init__(observation_space, action_space, config, **kw)
        c = config
        extra = {"n_quantiles": c.n_quantiles} if c.n_quantiles else {}
        #: NoisyNet exploration (configs without the field, such as CQL's, have none)
        self.noisy = bool(getattr(c, "noisy", False))
        if self.noisy:
            extra["noisy"] = True
        self.q = self.make_model(net_arch=c.net_arch, activation=c.activation, dueling=c.dueling, **extra,
                                 **encoder_kwargs(c))
        self.n_actions = int(action_space.n)
        self.mask_width = mask_width(observation_space)
        self.init_value_learning(self.q)
        if self.noisy:
            if not noisy_layers(self.q):
                raise CanterError(f"noisy=true needs a model with noisy layers; {type(self.q).__name__} built none")
            self.epsilon = 0.0
            self.new_noise()
        self._manual: bool | None = None
        self._rows_cache = np.arange(0)  # see _rows
        self._d_all: np.ndarray | None = None  # d(loss)/d(Q values) of the hand-derived step, reused

    def act(self, obs: torch.Tensor, deterministic: bool = False) -> ActOutput:
        """Greedy actions, or epsilon-greedy when exploring (no forward pass when every env explores).
        With NoisyNet the exploring actions are greedy under the current noise, the deterministic
        ones under the mean weights."""
        allowed = self._allowed(obs.cpu().numpy()) if self.mask_width and not deterministic else None
        with noiseless(self.q) if deterministic and self.noisy else contextlib.nullcontext():
            actions = self._epsilon_greedy(lambda: self.q.value(obs).argmax(-1).cpu().numpy(), len(obs),
                                           deterministic, allowed)
        return ActOutput(torch.from_numpy(actions))

    def new_noise(self) -> None:
        """NoisyNet: fresh noise for the online and the target network (from the run's generator)."""
        reset_noise(self.q, self.generator)
        reset_noise(self.q_target, self.generator)

    def set_progress(self, step: int, total_steps: int) -> None:
        """The epsilon schedule (0 throughout with NoisyNet) and target-network updates."""
        super().set_progress(step, total_steps)
        if self.noisy:
            self.epsilon = 0.0

    def _allowed(self, obs: np.ndarray) -> np.ndarray:
        """The allowed actions ``[B, n_actions]`` of masked observations."""
        return split_mask(obs, self.mask_width)[1]

    def act_numpy(self, obs: np.ndarray, deterministic: bool = False) -> ActOutput | None:
        """:meth:`act` on a NumPy batch with the Q-network's NumPy forward pass (None where it has none)."""
        if self.device.type != "cpu" or not getattr(self.q, "numpy_acting", False):
            return None  # decided before any random draw: the Agent then calls act, which draws them
        allowed = self._allowed(obs) if self.mask_width and not deterministic else None
        return ActOutput(self._epsilon_greedy(lambda: self.q.value_numpy(obs).argmax(-1), len(obs), deterministic, allowed))

    def _next_action(self, batch: ReplayBatch, next_q: torch.Tensor) -> torch.Tensor:
        """Greedy next actions ``[B, 1]``: by the target net, or the online net with Double DQN."""
        online = self.q.value(batch.next_obs) if self.config.double_q else next_q
        return online.argmax(1, keepdim=True)

    def target_values(self, next_obs: torch.Tensor) -> torch.Tensor:
        """The target network on ``next_obs``: Q values ``[B, A]`` (quantiles ``[B, A, N]`` for QR-DQN)."""
        with torch.no_grad():
            return self.q_target.quantiles(next_obs) if self.config.n_quantiles else self.q_target.value(next_obs)

    def td_target(self, batch: ReplayBatch, next_target: torch.Tensor | None = None) -> torch.Tensor:
        """Bootstrapped targets: ``[B]`` (``[B, N]`` quantiles for QR-DQN).

        ``next_target`` is :meth:`target_values` of ``batch.next_obs`` when already computed.
        """
        with torch.no_grad():
            nxt = self.target_values(batch.next_obs) if next_target is None else next_target
            not_done = batch.discounts * (1.0 - batch.terminated)
            if self.config.n_quantiles:
                means = nxt.mean(-1)
                if self.mask_width:  # the quantiles are not masked; the greedy next action must be allowed
                    means = apply_mask_below(means, split_mask(batch.next_obs, self.mask_width)[1])
                best = self._next_action(batch, means)
                next_z = nxt.gather(1, best.unsqueeze(-1).expand(-1, 1, nxt.shape[2])).squeeze(1)
                return batch.rewards.unsqueeze(1) + not_done.unsqueeze(1) * next_z
            next_v = nxt.gather(1, self._next_action(batch, nxt)).squeeze(1)
            return batch.rewards + not_done * next_v

    def td_loss(self, batch: ReplayBatch, next_target: torch.Tensor | None = None,
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-sample loss ``[B]``, its new priorities ``[B]`` and the chosen Q values ``[B]`` (autograd)."""
        c = self.config
        actions = batch.actions.long().view(-1, 1)
        target = self.td_target(batch, next_target)
        if c.n_quantiles:
            current = self.q.quantiles(batch.obs)
            current = current.gather(1, actions.unsqueeze(-1).expand(-1, 1, current.shape[2])).squeeze(1)
            per_sample = quantile_huber_loss(current, target)
            return per_sample, per_sample.detach(), current.detach().mean(1)
        q = self.q.value(batch.obs).gather(1, actions).squeeze(1)
        per_sample = F.smooth_l1_loss(q, target, reduction="none") if c.huber else (q - target).pow(2)
        return per_sample, (q - target).detach().abs(), q.detach()

    @property
    def uses_manual_backward(self) -> bool:
        """Whether :meth:`learn` takes the hand-derived gradient path (decided once, at the first update):
        a plain relu/tanh MLP Q-network on the CPU, without a quantile head, and a ``td_loss`` that is
        canter's (a user's subclass overriding it gets autograd on its own loss)."""
        if self._manual is None:
            c = self.config
            self._manual = bool(c.manual_backward and not c.n_quantiles and self.device.type == "cpu"
                                and getattr(self.q, "manual_backward", False)
                                and not overridden_outside_canter(self, "td_loss"))
        return self._manual

    @property
    def numpy_products(self) -> bool:
        """The hand-derived path multiplies through NumPy (:mod:`canter.models.linear`)."""
        return self.uses_manual_backward

    def learn(self, batch: ReplayBatch, next_target: torch.Tensor | None = None) -> dict[str, float]:
        """One gradient step on the (importance-weighted) TD loss of ``batch``.

        ``next_target``: :meth:`target_values` of ``batch.next_obs``, when the caller computed it
        for several minibatches at once (:meth:`learn_phase`).
        """
        if self.uses_manual_backward:
            with torch.no_grad():  # once here rather than in each step below
                target = self.td_target(batch, next_target).numpy()
                weights = batch.weights.numpy()
                diff, q = self._manual_step(batch.obs, _action_indices(batch.actions), target, weights)
                return {"loss": float(self._weighted_loss(diff, weights)), "q_mean": float(q.mean())}
        if self.noisy:  # each gradient step its own noise (the target's too: no precomputed values)
            self.new_noise()
            next_target = None
        per_sample, priorities, q = self.td_loss(batch, next_target)
        loss = (batch.weights * per_sample).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.last_priorities = priorities
        clip_grad_norm_(self.optimizer, self.params, self.config.max_grad_norm)
        self.optimizer.step()
        self.updates += 1
        loss_value, q_mean = torch.stack([loss.detach(), q.mean()]).tolist()  # one sync for both
        return {"loss": loss_value, "q_mean": q_mean}

    def _weighted_loss(self, diff: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
        """The TD loss from ``diff = q - target`` (any shape): Huber or squared error, weighted mean
        over the last dimension (``weights`` None: all ones)."""
        if self.config.huber:
            absd = np.abs(diff)
            per_sample = np.where(absd < 1.0, 0.5 * diff * diff, absd - 0.5)
        else:
            per_sample = diff * diff
        return (per_sample if weights is None else weights * per_sample).mean(-1)

    def _manual_step(self, obs: torch.Tensor | np.ndarray, actions: np.ndarray, target: np.ndarray,
                     weights: np.ndarray | None, passes: MLPPasses | None = None) -> tuple[np.ndarray, np.ndarray]:
        """One update with the autograd path's gradients derived by hand (no graph is recorded), in
        NumPy: Huber: d/dq = clamp(q - y, -1, 1); squared error: 2 (q - y); both times weight / B,
        put in the column of the taken action. ``actions`` (integers), ``target`` and ``weights``
        (None: all ones) are ``[B]`` arrays. Sets ``last_priorities``; returns ``q - target`` and
        the chosen Q values. ``passes``: the Q-network's passes bound for the phase (:meth:`learn_phase`),
        ``obs`` then the network's NumPy input."""
        # done with q_all and cache before the next step
        q_all, cache = self.q.forward_cached(obs, reuse=True) if passes is None else passes.forward(obs)
        n = len(actions)
        rows = self._rows(n)
        q = q_all[rows, actions]
        diff = q - target
        # Huber's derivative clip(diff, -1, 1) through the ufuncs (np.clip's wrapper costs ~5 µs per call)
        d_q = np.minimum(np.maximum(diff, -1.0), 1.0) if self.config.huber else 2.0 * diff
        if weights is not None:
            np.multiply(d_q, weights, out=d_q)
        d_all = self._d_all
        if d_all is None or d_all.shape != q_all.shape:
            d_all = self._d_all = np.zeros_like(q_all)
        else:
            d_all.fill(0.0)
        d_all[rows, actions] = d_q * (1.0 / n)
        if passes is None:
            self.q.backward_cached(cache, d_all)
        else:
            passes.backward(d_all)
        self.last_priorities = torch.from_numpy(np.abs(diff))
        clip_grad_norm_(self.optimizer, self.params, self.config.max_grad_norm)
        self.optimizer.step()
        self.updates += 1
        return diff, q

    def _rows(self, n: int) -> np.ndarray:
        """``arange(n)``, kept: every gradient step indexes its rows with it."""
        rows = self._rows_cache
        if len(rows) != n:
            rows = self._rows_cache = np.arange(n)
        return rows

    #: the target network only changes between phases (``set_progress``), so its values for every
    #: minibatch of a phase can be computed in one batched forward pass before the gradient steps
    phase_batching = True

    def _phase_target_values(self, batch: ReplayBatch) -> torch.Tensor:
        """:meth:`target_values` of ``batch.next_obs``, computed once per distinct transition where the
        phase drew some more than once (:func:`distinct_draws`) and canter's model (row by row, no
        batch statistics) computes them: the same values, gathered. A buffer whose draws of one index
        differ (relabelled goals) is found by comparing the rows, and gets every row computed."""
        nxt, idx = batch.next_obs, batch.indices
        draws = (distinct_draws(idx.numpy()) if idx is not None and len(idx) == len(nxt) and idx.device.type == "cpu"
                 and canter_class(self.q_target) else None)
        if draws is None:
            return self.target_values(nxt)
        first, inverse = (torch.from_numpy(a).to(nxt.device) for a in draws)
        distinct = nxt[first]
        if not torch.equal(distinct[inverse], nxt):
            return self.target_values(nxt)
        return self.target_values(distinct)[inverse]

    def learn_phase(self, batch: ReplayBatch, steps: int) -> list[dict[str, float]]:
        """``steps`` gradient steps on ``batch`` cut into ``steps`` equal minibatches, in order.

        Same updates as ``steps`` calls of :meth:`learn`; the target network's values for all of
        them come from one forward pass (a large matmul runs far faster than many small ones).
        On the hand-derived gradient path, everything that does not depend on the online network
        is also computed once for the phase: the TD targets (without Double DQN), the action
        indices, and the loss statistics afterwards from the stored ``q - target`` rows.
        A user's subclass overriding :meth:`learn` gets one call of it per minibatch (``learn(minibatch)``).
        """
        if overridden_outside_canter(self, "learn"):  # the shortcuts below would bypass the override
            return Algorithm.learn_phase(self, batch, steps)
        if self.noisy:  # the target's noise changes every step: its values are not batched
            return [self.learn(mb) for mb, _ in minibatches(batch, steps)]
        next_target = self._phase_target_values(batch)
        if not self.uses_manual_backward:
            return [self.learn(mb, next_target[part]) for mb, part in minibatches(batch, steps)]
        with torch.no_grad():
            n = len(batch.obs) // steps
            # Double DQN's targets, and a user's td_target (which may read the online network), per step
            per_step = self.config.double_q or overridden_outside_canter(self, "td_target")
            targets = None if per_step else self.td_target(batch, next_target).numpy()
            actions = _action_indices(batch.actions)
            weights = None if bool((batch.weights == 1.0).all()) else batch.weights.numpy()
            diffs, qs = [], []
            # canter's QNetwork: its MLP's passes bound once and its input features for the whole phase
            passes, features = q_network_passes(self.q, batch.obs, n) or (None, batch.obs)
            for i in range(steps):
                part = slice(i * n, (i + 1) * n)
                if targets is None:  # Double DQN: the online network (changing every step) picks the action
                    target = self.td_target(ReplayBatch(*(t[part] for t in batch)), next_target[part]).numpy()
                else:
                    target = targets[part]
                diff, q = self._manual_step(features[part], actions[part], target,
                                            None if weights is None else weights[part], passes)
                diffs.append(diff)
                qs.append(q)
            losses = self._weighted_loss(np.stack(diffs), None if weights is None else weights.reshape(steps, n))
            q_means = np.stack(qs).mean(1)
        return [{"loss": loss, "q_mean": q} for loss, q in zip(losses.tolist(), q_means.tolist())]



@dataclass
class QRDQNConfig(DQNConfig):
    """QR-DQN: DQN with a quantile head (Dabney et al. 2018); DQN's defaults otherwise."""

    n_quantiles: int = hp(50, "quantiles of the distributional head (dqn or rainbow with 0: plain Q values)", low=1)


@register("algorithm", "qrdqn")
class QRDQN(DQN):
    """QR-DQN: DQN learning return quantiles with the quantile Huber loss."""

    name = "qrdqn"
    Config = QRDQNConfig


@dataclass
class RainbowConfig(DQNConfig):
    """Rainbow-style DQN: Double, dueling, 3-step returns, prioritized replay, a quantile head."""

    double_q: bool = hp(True, "Double DQN: online net picks the next action, target net values it")
    dueling: bool = hp(True, "dueling value/advantage heads")
    n_step: int = hp(3, "n-step returns: rewards summed before bootstrapping", low=1, search={"choices": [1, 3, 5]})
    prioritized: bool = hp(True, "prioritized experience replay (proportional, sum tree)")
    per_alpha: float = hp(0.5, "prioritized replay: priority exponent alpha", low=0, high=1)
    n_quantiles: int = hp(50, "QR-DQN distributional head with this many quantiles (0: plain Q values)", low=0)


@register("algorithm", "rainbow")
class Rainbow(DQN):
    """Rainbow-style DQN (quantile head in place of C51; epsilon-greedy unless noisy=true): the other extensions on."""

    name = "rainbow"
    Config = RainbowConfig
