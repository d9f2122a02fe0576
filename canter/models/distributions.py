"""Distribution math as plain functions: no ``torch.distributions`` objects on the hot path."""
from __future__ import annotations

import math

import torch

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def categorical_sample(logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Sample actions from logits ``[B, n]``: Gumbel-max, ``argmax(logits - log E)`` with ``E ~ Exp(1)``."""
    e = torch.empty_like(logits).exponential_(generator=generator)
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
    return mean + log_std.exp() * torch.randn(mean.shape, generator=generator, dtype=mean.dtype)


def gaussian_log_prob(mean: torch.Tensor, log_std: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Log-density of ``actions`` under a diagonal Gaussian, summed over action dims."""
    z = (actions - mean) * torch.exp(-log_std)
    return (-0.5 * z.pow(2) - log_std - LOG_SQRT_2PI).sum(-1)


def gaussian_entropy(log_std: torch.Tensor, batch: int) -> torch.Tensor:
    """Entropy of a diagonal Gaussian (same for every row), shape ``[batch]``."""
    return (log_std + 0.5 + LOG_SQRT_2PI).sum().expand(batch)
