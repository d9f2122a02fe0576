"""Actor-Critic with Experience Replay (ACER; Wang et al. 2017), discrete actions.

One network with a policy head and a Q head (``mlp_actor_q``). Every iteration learns once from
the segment just collected (on-policy) and ``Poisson(replay_ratio)`` times from segments of a
small replay of recent ones (off-policy). Each update, on a segment of ``T`` steps:

- Retrace targets (:func:`retrace_targets`) with truncated weights ``min(1, rho)``,
  ``rho = pi(a|x) / mu(a|x)``, bootstrapping from ``V = sum_a pi(a|x) Q(x, a)`` of the current network;
- policy gradient with importance weights truncated at ``c``, ``min(c, rho) * grad log pi(a) * (Q_ret - V)``,
  plus the bias correction ``sum_a [1 - c / rho(a)]_+ pi(a) grad log pi(a) (Q(x, a) - V)``, plus an
  entropy bonus;
- the efficient trust region: with ``g`` that gradient w.r.t. the policy's probabilities ``phi`` and
  ``k`` the gradient of KL(pi_avg || pi) w.r.t. ``phi``, each row's ``g`` becomes
  ``g - max(0, (k.g - delta) / |k|^2) k`` before back-propagating into the network;
- Q regression ``1/2 (Q_ret - Q(x, a))^2``; one RMSprop step with gradient-norm clipping; then the
  average network moves towards the current one, ``theta_avg = alpha theta_avg + (1 - alpha) theta``.

Details follow OpenAI Baselines' ACER: probabilities as the policy statistics, ``log(p + 1e-6)``,
RMSprop(alpha 0.99, eps 1e-5), gradient clip 10, c = 10, delta = 1, alpha = 0.99. Truncated
episodes bootstrap from V(final observation); terminated ones do not.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import gymnasium as gym
import torch
from torch import nn

from canter.algorithms.actor_critic import linear_decay, make_optimizer, set_lr
from canter.algorithms.base import Algorithm, encoder_hp, encoder_kwargs
from canter.config import hp
from canter.data.segments import SegmentBatch
from canter.errors import CanterError
from canter.models import distributions as D
from canter.models.mlp import ACTIVATIONS, MLP
from canter.registry import register

EPS = 1e-6


class ACEROutput(NamedTuple):
    """``ActOutput`` plus the behaviour policy's probabilities of every action."""

    actions: torch.Tensor
    log_probs: torch.Tensor | None = None
    values: torch.Tensor | None = None
    probs: torch.Tensor | None = None


@register("model", "mlp_actor_q")
class ActorQ(nn.Module):
    """Policy logits and Q-values for every action, from a shared MLP trunk (or two MLPs) on an observation
    encoder (:func:`canter.models.cnn.make_encoder`: the Nature CNN for images, shared by both heads).

    ``action(obs)`` -> logits ``[B, n]``, ``q_values(obs)`` -> Q ``[B, n]``, ``action_q(obs)``
    both in one pass, ``value(obs)`` -> ``V = sum_a pi(a) Q(a)`` ``[B]``.
    """

    def __init__(
        self, observation_space: gym.Space, action_space: gym.Space, net_arch: list[int] = (64, 64),
        activation: str = "tanh", ortho_init: bool = True, shared_trunk: bool = True, encoder: str = "auto",
    ) -> None:
        super().__init__()
        if not isinstance(action_space, gym.spaces.Discrete):
            raise CanterError(f"ActorQ needs a Discrete action space, got {type(action_space).__name__}")
        from canter.models.cnn import make_encoder

        self.encoder = make_encoder(observation_space, encoder, ortho_init)
        n_in, n_act, arch = self.encoder.out_dim, int(action_space.n), list(net_arch)
        self.shared = shared_trunk
        if shared_trunk:
            self.trunk = MLP([n_in] + arch, activation, ortho_init, out_gain=math.sqrt(2))
            self.trunk.append(ACTIVATIONS[activation]())
            self.pi_head = MLP([arch[-1], n_act], activation, ortho_init, out_gain=0.01)
            self.q_head = MLP([arch[-1], n_act], activation, ortho_init, out_gain=1.0)
        else:
            self.actor = MLP([n_in] + arch + [n_act], activation, ortho_init, out_gain=0.01)
            self.q = MLP([n_in] + arch + [n_act], activation, ortho_init, out_gain=1.0)

    def action(self, obs: torch.Tensor) -> torch.Tensor:
        """Policy logits ``[B, n]``."""
        x = self.encoder(obs)
        return self.pi_head(self.trunk(x)) if self.shared else self.actor(x)

    def q_values(self, obs: torch.Tensor) -> torch.Tensor:
        """Q(obs, a) for every action ``[B, n]``."""
        x = self.encoder(obs)
        return self.q_head(self.trunk(x)) if self.shared else self.q(x)

    def action_q(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits and Q-values in one pass."""
        x = self.encoder(obs)
        if self.shared:
            h = self.trunk(x)
            return self.pi_head(h), self.q_head(h)
        return self.actor(x), self.q(x)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """``V(obs) = sum_a pi(a|obs) Q(obs, a)``, shape ``[B]``."""
        logits, q = self.action_q(obs)
        return (torch.softmax(logits, -1) * q).sum(-1)


def retrace_targets(
    rewards: torch.Tensor, q_taken: torch.Tensor, values: torch.Tensor, rho_bar: torch.Tensor,
    terminated: torch.Tensor, dones: torch.Tensor, gamma: float,
) -> torch.Tensor:
    """Retrace targets ``Q_ret`` for a ``[T, N]`` segment (Munos et al. 2016, as used by ACER).

    ``values`` is ``[T + 1, N]``: V of every stored observation and of the one after the last
    step. Backwards from ``Q_ret_T = V_T``::

        Q_ret_t = r_t + gamma * (1 - terminated_t) * V_{t+1}
                      + gamma * (1 - done_t) * rho_bar_{t+1} * (Q_ret_{t+1} - Q(x_{t+1}, a_{t+1}))

    so a truncated step bootstraps from V(final observation) (stored in the next row under
    NEXT_STEP autoreset) without the correction, a terminated one from nothing, and the
    correction never crosses an episode boundary.
    """
    T = rewards.shape[0]
    out = torch.empty_like(rewards)
    correction = torch.zeros_like(values[T])
    for t in range(T - 1, -1, -1):
        q_ret = rewards[t] + gamma * ((1 - terminated[t]) * values[t + 1] + (1 - dones[t]) * correction)
        out[t] = q_ret
        correction = rho_bar[t] * (q_ret - q_taken[t])
    return out


def trust_region_projection(g: torch.Tensor, k: torch.Tensor, delta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """ACER's efficient trust region, per row: the closest ``z`` to ``g`` with ``k . z <= delta``.

    ``z = g - max(0, (k . g - delta) / |k|^2) k``; returns ``(z, the scale of k removed)``.
    """
    adj = torch.relu(((k * g).sum(-1) - delta) / ((k * k).sum(-1) + EPS))
    return g - adj[:, None] * k, adj


@dataclass
class ACERConfig:
    """ACER hyperparameters."""

    lr: float = hp(7e-4, "learning rate", low=0, low_open=True, search={"low": 1e-5, "high": 3e-3, "log": True})
    lr_schedule: str = hp("linear", "learning-rate schedule: constant or linear (to 0)", choices=("constant", "linear"))
    optimizer: str = hp("rmsprop", "optimizer: rmsprop (as in the paper) or adam", choices=("rmsprop", "adam"))
    optimizer_eps: float = hp(1e-5, "epsilon of RMSprop / Adam", low=0, low_open=True)
    rms_alpha: float = hp(0.99, "RMSprop smoothing constant", low=0, high=1)
    n_steps: int = hp(20, "steps per env per segment", low=1, search={"choices": [5, 10, 20, 50]})
    gamma: float = hp(0.99, "discount factor", low=0, high=1, search={"choices": [0.95, 0.98, 0.99, 0.995]})
    q_coef: float = hp(0.5, "Q-loss coefficient", low=0)
    ent_coef: float = hp(0.01, "entropy bonus coefficient", low=0, search={"low": 1e-5, "high": 0.1, "log": True})
    max_grad_norm: float = hp(10.0, "global gradient-norm clip", low=0, low_open=True)
    correction_c: float = hp(10.0, "importance-weight truncation c", low=0, low_open=True)
    trust_region: bool = hp(True, "use the efficient trust-region update against the average policy")
    delta: float = hp(1.0, "trust-region bound on the linearised KL(pi_avg || pi) change", low=0, low_open=True)
    avg_decay: float = hp(0.99, "average-network decay alpha", low=0, high=1)
    replay_ratio: float = hp(4.0, "mean of the Poisson number of replayed segments per on-policy update", low=0)
    buffer_size: int = hp(50_000, "replay size in env transitions (rounded down to whole segments; at least one "
                         "segment, n_steps x n_envs, where replay_ratio > 0)", low=1)
    replay_start: int = hp(1000, "env transitions stored before replay starts", low=0)
    net_arch: list[int] = hp([64, 64], "hidden layer sizes", low=1)
    activation: str = hp("tanh", "hidden activation", choices=("tanh", "relu", "elu", "gelu", "silu"))
    ortho_init: bool = hp(True, "orthogonal initialisation (gain sqrt 2, 0.01 policy head, 1 Q head)")
    shared_trunk: bool = hp(True, "one trunk for the policy and Q heads (as in the paper)")
    encoder: str = encoder_hp()

    def validate(self) -> None:
        """Cross-field checks."""
        if not self.net_arch:
            raise CanterError("'hparams.net_arch' needs at least one hidden layer")


@register("algorithm", "acer")
class ACER(Algorithm):
    """ACER: Retrace, truncated importance sampling with bias correction, efficient trust region."""

    name = "acer"
    family = "on_policy_replay"
    Config = ACERConfig
    default_model = "mlp_actor_q"
    model_methods = ("action", "value", "action_q")  # logits; values; logits and Q-values of every action
    default_n_envs = 4
    action_spaces = (gym.spaces.Discrete,)

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: ACERConfig, **kw: Any) -> None:
        super().__init__(observation_space, action_space, config, **kw)
        c = config
        self.model = self.make_model(net_arch=c.net_arch, activation=c.activation, ortho_init=c.ortho_init,
                                     shared_trunk=c.shared_trunk, **encoder_kwargs(c))
        self.avg_model = copy.deepcopy(self.model).requires_grad_(False)
        self.params = list(self.model.parameters())
        self.optimizer = make_optimizer(self.params, c.optimizer, c.lr, c.optimizer_eps, c.rms_alpha)
        self.lr = c.lr

    # -- acting --------------------------------------------------------------------------------
    def act(self, obs: torch.Tensor, deterministic: bool = False) -> ACEROutput:
        """Sample from (or take the mode of) the policy; also returns every action's probability."""
        logits = self.model.action(obs)
        if deterministic:
            return ACEROutput(logits.argmax(-1))
        actions = D.categorical_sample(logits, self.generator)
        logp, logp_all = D.categorical_log_prob(logits, actions)
        return ACEROutput(actions, logp, None, logp_all.exp())

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """V(obs) = sum_a pi(a|obs) Q(obs, a)."""
        return self.model.value(obs)

    # -- learning ------------------------------------------------------------------------------
    def set_progress(self, step: int, total_steps: int) -> None:
        """Learning-rate schedule."""
        self.lr = linear_decay(self.config.lr, self.config.lr_schedule, step, total_steps)
        set_lr(self.optimizer, self.lr)

    def learn(self, batch: SegmentBatch) -> dict[str, float]:
        """One ACER update on a segment (fresh or replayed); none on a segment of reset-only rows."""
        c = self.config
        if not batch.valid.any():  # every row only reset an env (a tiny segment): nothing to learn from
            return {}
        T, N = batch.actions.shape
        obs = batch.obs.reshape((-1,) + batch.obs.shape[2:])
        logits, q_all = self.model.action_q(obs)
        probs_all = torch.softmax(logits, -1)
        v_all = (probs_all * q_all).sum(-1).detach()
        n = T * N
        f, q = probs_all[:n], q_all[:n]
        a = batch.actions.reshape(-1, 1)
        mu = batch.behaviour_probs.reshape(n, -1)
        mask = batch.valid.reshape(-1).float()
        count = mask.sum().clamp(min=1.0)
        q_taken = q.gather(1, a).squeeze(1)
        with torch.no_grad():
            rho_all = f / mu.clamp(min=EPS)
            rho = rho_all.gather(1, a).squeeze(1)
            q_i = q_taken.detach()
            q_ret = retrace_targets(batch.rewards, q_i.view(T, N), v_all.view(T + 1, N), rho.clamp(max=1.0).view(T, N),
                                    batch.terminated, batch.dones, c.gamma).reshape(-1)
            v = v_all[:n]
            avg_probs = torch.softmax(self.avg_model.action(obs[:n]), -1)

        # policy objective as a function of the probabilities phi = f (a leaf, for the trust region)
        phi = f.detach().requires_grad_(True)
        log_phi = torch.log(phi + EPS)
        gain = log_phi.gather(1, a).squeeze(1) * (rho.clamp(max=c.correction_c) * (q_ret - v))
        weights_bc = (torch.relu(1.0 - c.correction_c / (rho_all + EPS)) * phi * (q - v[:, None])).detach()
        gain_bc = (log_phi * weights_bc).sum(-1)
        entropy = -(phi * log_phi).sum(-1)
        objective = (gain + gain_bc + c.ent_coef * entropy) * mask  # per row, to be maximised
        (g,) = torch.autograd.grad(objective.sum(), phi)
        if c.trust_region:
            g, adj = trust_region_projection(g, -avg_probs / (phi.detach() + EPS), c.delta)  # k = dKL(avg||pi)/dphi
        else:
            adj = torch.zeros(n, device=g.device)
        q_loss = 0.5 * ((q_ret - q_taken).pow(2) * mask).sum() / count
        loss = -(f * g.detach()).sum() / count + c.q_coef * q_loss
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(self.params, c.max_grad_norm, foreach=True)
        self.optimizer.step()
        self._update_average()
        self.updates += 1
        with torch.no_grad():
            kl_avg = (avg_probs * (torch.log(avg_probs + EPS) - torch.log(f + EPS))).sum(-1)
            stats = torch.stack([
                -((gain + gain_bc) * mask).sum() / count, q_loss.detach(), (entropy * mask).sum() / count,
                (rho * mask).sum() / count, (kl_avg * mask).sum() / count, ((adj > 0).float() * mask).sum() / count,
                grad_norm,
            ]).tolist()
        names = ("policy_loss", "critic_loss", "entropy", "rho_mean", "kl_to_average", "trust_region_active", "grad_norm")
        out = dict(zip(names, stats))
        out["learning_rate"] = self.lr
        return out

    def _update_average(self) -> None:
        alpha = self.config.avg_decay
        with torch.no_grad():
            for p_avg, p in zip(self.avg_model.parameters(), self.params):
                p_avg.mul_(alpha).add_(p.detach(), alpha=1.0 - alpha)

    # -- state ---------------------------------------------------------------------------------
    def modules(self) -> dict[str, nn.Module]:  # noqa: D102
        return {"model": self.model, "avg_model": self.avg_model}

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:  # noqa: D102
        return {"optimizer": self.optimizer}

