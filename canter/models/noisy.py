"""Noisy linear layers (NoisyNet, Fortunato et al. 2018) for exploration by parameter noise.

:class:`NoisyLinear` computes ``y = (mu_W + sigma_W * eps_W) x + mu_b + sigma_b * eps_b`` with
factorised Gaussian noise: ``eps_W = f(eps_out) f(eps_in)^T`` and ``eps_b = f(eps_out)``, where
``f(x) = sign(x) sqrt(|x|)`` and ``eps_in``, ``eps_out`` are standard normal. Initialisation as
the paper's factorised variant: ``mu ~ U(-1/sqrt(in), 1/sqrt(in))`` and ``sigma = sigma_0 /
sqrt(in)`` for weights and biases (``sigma_0 = 0.5``). The noise is drawn by
:func:`reset_noise` from a given torch generator (so seeded runs repeat) and kept in buffers (so
checkpoints hold it and a resumed run continues exactly); :func:`noiseless` switches it off for
the deterministic policy (evaluation uses the mean weights), in the calling thread only.
"""
from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

from canter.models.linear import differentiable_linear

#: per thread, how many :func:`noiseless` blocks hold each layer (by ``id``): a block switches the noise off for
#: its own thread only, so a ``predict`` in one thread neither turns another thread's exploring noise off nor,
#: leaving, puts back a setting that another thread's block saw
_NOISELESS = threading.local()


def _held() -> dict[int, int]:
    """This thread's count of :func:`noiseless` blocks per layer id."""
    held = getattr(_NOISELESS, "layers", None)
    if held is None:
        held = _NOISELESS.layers = {}
    return held


class NoisyLinear(nn.Module):
    """A fully connected layer with learned, factorised Gaussian parameter noise (module docstring)."""

    def __init__(self, in_features: int, out_features: int, sigma_0: float = 0.5) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features)
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        self.weight_sigma = nn.Parameter(torch.full((out_features, in_features), sigma_0 * bound))
        self.bias_mu = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.bias_sigma = nn.Parameter(torch.full((out_features,), sigma_0 * bound))
        self.register_buffer("eps_in", torch.zeros(in_features))
        self.register_buffer("eps_out", torch.zeros(out_features))
        self._noise_on = True

    @property
    def noise_on(self) -> bool:
        """False: the mean weights only (the deterministic policy), set for every thread, or inside a
        :func:`noiseless` block of the calling thread."""
        return self._noise_on and id(self) not in _held()

    @noise_on.setter
    def noise_on(self, value: bool) -> None:
        self._noise_on = bool(value)

    def reset_noise(self, generator: torch.Generator | None = None) -> None:
        """Draw new ``eps_in`` and ``eps_out``."""
        for eps in (self.eps_in, self.eps_out):
            x = torch.randn(eps.shape, generator=generator)  # a CPU generator: copy_ moves it to eps's device
            eps.copy_(x.sign() * x.abs().sqrt())

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        lead = x.shape[:-1]  # any leading dimensions, as nn.Linear
        x = x.reshape(-1, self.in_features)
        if not self.noise_on:
            out = differentiable_linear(x, self.weight_mu, self.bias_mu)
        else:
            weight = self.weight_mu + self.weight_sigma * torch.outer(self.eps_out, self.eps_in)
            out = differentiable_linear(x, weight, self.bias_mu + self.bias_sigma * self.eps_out)
        return out.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:  # noqa: D102
        return f"in_features={self.in_features}, out_features={self.out_features}"


def noisy_layers(module: nn.Module) -> list[NoisyLinear]:
    """The :class:`NoisyLinear` layers inside ``module``."""
    return [m for m in module.modules() if isinstance(m, NoisyLinear)]


def reset_noise(module: nn.Module, generator: torch.Generator | None = None) -> None:
    """New noise for every noisy layer of ``module``, drawn from ``generator``."""
    for layer in noisy_layers(module):
        layer.reset_noise(generator)


@contextmanager
def noiseless(module: nn.Module) -> Iterator[None]:
    """The mean weights only inside the block (the deterministic policy), for the calling thread: other
    threads' forward passes keep their noise meanwhile. Blocks nest."""
    keys = [id(layer) for layer in noisy_layers(module)]
    held = _held()
    for key in keys:
        held[key] = held.get(key, 0) + 1
    try:
        yield
    finally:
        for key in keys:
            if held[key] == 1:
                del held[key]
            else:
                held[key] -= 1
