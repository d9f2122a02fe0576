"""Distribution math as plain functions: no ``torch.distributions`` objects on the hot path."""
from __future__ import annotations

import math
from typing import Any

import torch

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def on_device(x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``x`` (drawn on the CPU) on ``like``'s device. The algorithms' generators are CPU generators, whose
    state a checkpoint restores on any device; draws for tensors on a GPU are made there and moved."""
    return x if x.device == like.device else x.to(like.device)


def randn(shape: Any, generator: torch.Generator | None, like: torch.Tensor) -> torch.Tensor:
    """Standard normal draws of ``shape`` from ``generator`` (a CPU one) in ``like``'s dtype, on its device."""
    return on_device(torch.randn(shape, generator=generator, dtype=like.dtype), like)


def exponential(like: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """``Exp(1)`` draws shaped as ``like`` from ``generator`` (a CPU one), on ``like``'s device."""
    return on_device(torch.empty_like(like, device="cpu").exponential_(generator=generator), like)


def categorical_sample(logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Sample actions from logits ``[B, n]``: Gumbel-max, ``argmax(logits - log E)`` with ``E ~ Exp(1)``."""
    e = exponential(logits, generator)
    return torch.argmax(logits - e.log_(), dim=-1)


def categorical_log_prob(logits: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probabilities of ``actions`` and the normalised log-probs of all actions."""
    logp_all = torch.log_softmax(logits, dim=-1)
    return logp_all.gather(-1, actions.long().view(-1, 1)).squeeze(-1), logp_all


def categorical_entropy(logp_all: torch.Tensor) -> torch.Tensor:
    """Entropy from normalised log-probs ``[B, n]``."""
    return -(logp_all.exp() * logp_all).sum(-1)


def gaussian_sample(mean: torch.Tensor, log_std: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Sample from a diagonal Gaussian."""
    return mean + log_std.exp() * randn(mean.shape, generator, mean)


def gaussian_log_prob(mean: torch.Tensor, log_std: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Log-density of ``actions`` under a diagonal Gaussian, summed over action dims."""
    z = (actions - mean) * torch.exp(-log_std)
    return (-0.5 * z.pow(2) - log_std - LOG_SQRT_2PI).sum(-1)


def gaussian_entropy(log_std: torch.Tensor, batch: int) -> torch.Tensor:
    """Entropy of a diagonal Gaussian (same for every row), shape ``[batch]``."""
    return (log_std + 0.5 + LOG_SQRT_2PI).sum().expand(batch)


# -- factored categorical (MultiDiscrete / MultiBinary actions): one categorical per entry ----------
def segments(nvec: Any) -> list[slice]:
    """The columns of each entry's logits in the concatenated logits ``[B, sum(nvec)]``."""
    ends = [0]
    for n in nvec:
        ends.append(ends[-1] + int(n))
    return [slice(a, b) for a, b in zip(ends[:-1], ends[1:])]


def multi_categorical_sample(logits: torch.Tensor, nvec: Any, generator: torch.Generator | None = None) -> torch.Tensor:
    """One action per entry ``[B, k]``: Gumbel-max within each entry's logits (one exponential draw for all)."""
    e = exponential(logits, generator)
    return multi_categorical_mode(logits - e.log_(), nvec)


def multi_categorical_mode(logits: torch.Tensor, nvec: Any) -> torch.Tensor:
    """The most likely action of each entry ``[B, k]``."""
    return torch.stack([logits[:, s].argmax(-1) for s in segments(nvec)], -1)


def multi_categorical_log_prob_entropy(logits: torch.Tensor, actions: torch.Tensor, nvec: Any,
                                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probabilities ``[B]`` of the actions ``[B, k]`` and the entropies ``[B]``: sums over the entries."""
    actions = actions.long()
    logp = ent = None
    for i, s in enumerate(segments(nvec)):
        lp, lp_all = categorical_log_prob(logits[:, s], actions[:, i])
        h = categorical_entropy(lp_all)
        logp, ent = (lp, h) if logp is None else (logp + lp, ent + h)
    return logp, ent
