"""MLP models. Models hold networks only: no optimizer, no env, no numpy."""
from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from canter.envs.masks import apply_mask, mask_width, split_mask
from canter.errors import CanterError
from canter.models.activations import tanh_
from canter.models.heads import policy_head  # noqa: F401  (re-exported)
from canter.models.linear import ChainNp, Linear, affine_np, matmul_np
from canter.models.stacked import StackedMLP
from canter.registry import register

ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "gelu": nn.GELU, "silu": nn.SiLU}


def canter_class(obj: Any) -> bool:
    """True for an instance of one of canter's own classes, not a user's subclass: the hand-derived
    gradients and NumPy passes reproduce canter's ``forward`` methods, not an override of them."""
    return type(obj).__module__.split(".", 1)[0] == "canter"


def obs_dim(space: gym.Space) -> int:
    """Flat input size of an observation space (one-hot size for Discrete)."""
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.Box):
        return int(np.prod(space.shape))
    raise CanterError(f"observation space {type(space).__name__} is not supported: canter's models take Box, Discrete, "
                      f"MultiDiscrete and MultiBinary observations, and Dict or Tuple spaces of them")


class ObsEncoder(nn.Module):
    """Turns raw observation tensors into flat float features (one-hot for Discrete)."""

    def __init__(self, space: gym.Space) -> None:
        super().__init__()
        self.discrete = isinstance(space, gym.spaces.Discrete)
        self.n = int(space.n) if self.discrete else 0
        self.start = int(space.start) if self.discrete else 0

    def numpy(self, obs: np.ndarray) -> np.ndarray:
        """:meth:`forward` on a NumPy batch, returning NumPy (no torch call for float32 vectors)."""
        if not self.discrete and obs.dtype == np.float32 and obs.ndim == 2:
            return obs
        return self.forward(torch.from_numpy(obs)).numpy()

    def forward(self, obs: torch.Tensor) -> torch.Tensor:  # noqa: D102
        if self.discrete:
            return nn.functional.one_hot((obs.long() - self.start).reshape(-1), self.n).float()
        x = obs if obs.dtype == torch.float32 else obs.float()
        return x if x.dim() == 2 else x.reshape(x.shape[0], -1)  # [B, ...] -> [B, features]; [B] -> [B, 1]


def _relu_(h: np.ndarray) -> np.ndarray:
    """In-place relu of a NumPy array: torch's kernel for large arrays (~2.5x faster than
    ``np.maximum`` at 64 x 256), NumPy's for small ones (cheaper call)."""
    if h.size >= 1024:
        torch.from_numpy(h).relu_()
    else:
        np.maximum(h, 0.0, out=h)
    return h


#: backward through a relu layer uses only the units active for some sample of the batch when at
#: most this fraction is (DQN's rl-zoo3 CartPole net: ~29% of the second 256-unit layer after a few
#: thousand steps; its two 64x256x256 backward products then took 95 instead of 201 µs here, and at
#: 72% active 212 against 234: the gathers cost more than they save from about 80%)
SPARSE_MAX_ACTIVE = 0.7
#: ...and only for layers with at least this many weights (smaller products cost less than the gathers)
SPARSE_MIN_WEIGHTS = 1 << 14


def _active_units(on: np.ndarray) -> np.ndarray | None:
    """Indices of the columns of the relu mask ``on`` ``[B, units]`` true in some row, or None when
    more than :data:`SPARSE_MAX_ACTIVE` of them are (then the dense products are cheaper)."""
    units = np.flatnonzero(np.logical_or.reduce(on, axis=0))
    return None if len(units) > SPARSE_MAX_ACTIVE * on.shape[1] else units


class MLP(nn.Sequential):
    """Fully connected layers with an activation between them (none after the last)."""

    def __init__(
        self, sizes: list[int], activation: str = "tanh", ortho_init: bool = False, out_gain: float = 1.0,
        layer: Any = Linear,
    ) -> None:
        if activation not in ACTIVATIONS:
            raise CanterError(f"unknown activation '{activation}'; choices: {', '.join(ACTIVATIONS)}")
        layers: list[nn.Module] = []
        for i in range(len(sizes) - 1):
            lin = layer(sizes[i], sizes[i + 1])
            last = i == len(sizes) - 2
            if ortho_init:
                nn.init.orthogonal_(lin.weight, out_gain if last else math.sqrt(2))
                nn.init.zeros_(lin.bias)
            layers.append(lin)
            if not last:
                layers.append(ACTIVATIONS[activation]())
        super().__init__(*layers)
        self.activation = activation
        self._linears: tuple[nn.Linear, ...] = tuple(m for m in layers if isinstance(m, nn.Linear))

    # -- hand-derived gradients on NumPy arrays: the same math as autograd without its bookkeeping --
    # Per-call cost, not arithmetic, dominates at RL sizes: a NumPy call costs ~1 µs, a torch op
    # 2-5. The arrays share memory with the parameters and their ``.grad`` tensors, and large
    # products still run on torch's kernels (canter.models.linear.affine_np / matmul_np).
    @property
    def manual_backward(self) -> bool:
        """True when :meth:`backward_cached` knows the activation's derivative (relu, tanh)."""
        return self.activation in ("relu", "tanh") and all(isinstance(m, (nn.Linear, nn.ReLU, nn.Tanh)) for m in self)

    def _arrays(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each layer's weight ``[out, in]`` and bias as NumPy arrays sharing the parameters' memory;
        rebuilt when a parameter's storage moves (a flat optimizer taking it over, ``.to()``)."""
        params = self.__dict__.get("_np_params")
        if params is None:  # the Parameter objects stay the same when their storage moves
            params = self._np_params = tuple(t for lin in self._linears for t in (lin.weight, lin.bias))
        key = list(map(torch.Tensor.data_ptr, params))
        if key != self.__dict__.get("_np_key"):
            arrays = [p.detach().numpy() for p in params]
            self._np_arrays = list(zip(arrays[0::2], arrays[1::2]))
            self._np_chain = ChainNp(self._np_arrays, _relu_ if self.activation == "relu" else tanh_)
            self._np_key = key
        return self._np_arrays

    def _grad_arrays(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each layer's weight and bias ``.grad`` as NumPy arrays sharing their memory (gradients that
        are missing are allocated); rebuilt when a ``.grad`` tensor is replaced."""
        grads = [g for lin in self._linears for g in (lin.weight.grad, lin.bias.grad)]
        held = self.__dict__.get("_np_grad_tensors")
        if held is None or len(held) != len(grads) or any(a is not b for a, b in zip(held, grads)):
            for lin in self._linears:
                if lin.weight.grad is None:
                    lin.weight.grad = torch.empty_like(lin.weight)
                if lin.bias.grad is None:
                    lin.bias.grad = torch.empty_like(lin.bias)
            grads = [g for lin in self._linears for g in (lin.weight.grad, lin.bias.grad)]
            arrays = [g.numpy() for g in grads]
            self._np_grad_tensors, self._np_grads = grads, list(zip(arrays[0::2], arrays[1::2]))
        return self._np_grads

    def _ones(self, rows: int) -> np.ndarray:
        """A float32 row of ``rows`` ones (bias gradients as ``ones @ d``), kept."""
        ones = self.__dict__.get("_np_ones")
        if ones is None or ones.shape[1] != rows:
            ones = self._np_ones = np.ones((1, rows), dtype=np.float32)
        return ones

    def infer(self, x: np.ndarray) -> np.ndarray:
        """The forward pass on a NumPy batch ``[B, in]`` (CPU parameters, relu / tanh, see
        :attr:`manual_backward`): for acting and target values, where per-call overhead dominates."""
        self._arrays()
        return self._np_chain(x) if self._np_chain.on_numpy(len(x)) else self._forward_manual(x, None)

    def forward_cached(self, x: np.ndarray, reuse: bool = False) -> tuple[np.ndarray, list[np.ndarray]]:
        """Output ``[B, out]`` for a NumPy batch ``[B, in]``, and per layer its input and the
        activation's derivative (for relu its output, whose sign is the derivative).

        ``reuse``: the layers' outputs (the returned array and the cache) are written into arrays this
        network keeps per batch size, so they hold only until the next ``reuse`` call (a training step
        that is done with them by then, as DQN's; no allocation per call)."""
        cache: list[np.ndarray] = []
        return self._forward_manual(x, cache, self._workspace(len(x)) if reuse else None), cache

    def _workspace(self, rows: int) -> list[np.ndarray]:
        """One array ``[rows, width]`` per layer's output (the layer's dtype), kept for :meth:`forward_cached`'s
        ``reuse``."""
        spaces = self.__dict__.setdefault("_spaces", {})
        if rows not in spaces:
            spaces.clear()  # one batch size at a time (a replay's minibatches)
            spaces[rows] = [torch.empty(rows, lin.out_features, dtype=lin.weight.dtype).numpy()
                            for lin in self._linears]
        return spaces[rows]

    def _forward_manual(self, h: np.ndarray, cache: list[np.ndarray] | None,
                        outs: list[np.ndarray] | None = None) -> np.ndarray:
        """Layer by layer (into ``outs`` where given); appends what :meth:`backward_cached` needs to ``cache``."""
        layers = self._arrays()
        last = len(layers) - 1
        for i, (w, b) in enumerate(layers):
            if cache is not None:
                cache.append(h)
            h = affine_np(h, w, b, None if outs is None else outs[i])
            if i < last:
                if self.activation == "relu":
                    _relu_(h)
                    if cache is not None:
                        cache.append(h)
                else:
                    tanh_(h)
                    if cache is not None:
                        cache.append(1.0 - h * h)
        return h

    def backward_cached(self, cache: list[np.ndarray], d_out: np.ndarray) -> None:
        """Set every layer's ``.grad`` to d(loss)/d(param) given ``d_out`` = d(loss)/d(output) (NumPy).

        Gradients are written into the existing ``.grad`` tensors (a flat optimizer's views) when
        present, else allocated; nothing is accumulated, so no zeroing is needed.
        """
        layers = self._arrays()
        grads = self._grad_arrays()
        relu = self.activation == "relu"
        d = d_out
        ones = self._ones(len(d_out))
        units = None  # relu: the units of layer i active for some sample (None: take every column of d)
        for i in range(len(layers) - 1, -1, -1):
            w_grad, b_grad = grads[i]
            np.matmul(ones, d, out=b_grad[None])  # the bias gradient: d summed over the batch (np.sum: ~6 µs more)
            if units is None:
                matmul_np(d.T, cache[2 * i], out=w_grad)
            else:  # the other columns of d are zero, and so are their rows of the weight gradient
                d = np.take(d, units, axis=1)
                w_grad.fill(0.0)
                w_grad[units] = matmul_np(d.T, cache[2 * i])
            if i == 0:
                break
            w = layers[i][0]
            d = matmul_np(d, w if units is None else w[units])
            if relu:  # zero where the unit was off (np.copyto with where= is ~6x slower)
                on = cache[2 * i - 1] > 0.0
                np.multiply(d, on, out=d)
                units = _active_units(on) if i > 1 and layers[i - 1][0].size >= SPARSE_MIN_WEIGHTS else None
            else:
                np.multiply(d, cache[2 * i - 1], out=d)


@register("model", "mlp_actor_critic")
class ActorCritic(nn.Module):
    """Actor and critic MLPs (separate trunks by default, or a shared one) on an observation encoder
    (:func:`canter.models.cnn.make_encoder`, shared: flat for vectors, ``nature`` CNN for images).
    Separate trunks of the same widths are stacked (:class:`StackedMLP`); a ``critic_net_arch``
    other than ``net_arch`` makes them two MLPs, each with :class:`MLP`'s NumPy passes.

    ``action(obs)`` returns logits (Discrete) or the Gaussian mean (Box); ``log_std`` is a free
    parameter for Box actions. ``value(obs)`` returns V(obs) with shape ``[B]``. Observations that
    carry an action mask (:mod:`canter.envs.masks`) give masked logits: disallowed actions get
    :data:`~canter.envs.masks.MASKED`, so every distribution built on them excludes those actions.
    """

    #: handles observations with an action mask (:mod:`canter.envs.masks`)
    action_masks = True

    def __init__(
        self, observation_space: gym.Space, action_space: gym.Space, net_arch: list[int] = (64, 64),
        activation: str = "tanh", ortho_init: bool = True, log_std_init: float = 0.0, shared_trunk: bool = False,
        stacked: bool = True, encoder: str = "auto", critic_net_arch: list[int] | None = None,
    ) -> None:
        super().__init__()
        from canter.models.cnn import has_parameters, make_encoder

        self.encoder = make_encoder(observation_space, encoder, ortho_init)
        #: canter's own model and encoder (decided once): only they take the NumPy and hand-derived paths
        self._own_classes = canter_class(self) and canter_class(self.encoder)
        n_in = self.encoder.out_dim
        self._encoder_params = has_parameters(self.encoder)
        self.mask_width = mask_width(observation_space)
        #: the encoder gives actor and critic inputs of their own (``[2, B, f]``: a centralised critic)
        self.per_network = getattr(self.encoder, "per_network", False)
        if self.per_network and shared_trunk:
            raise CanterError("shared_trunk cannot be used when actor and critic take different inputs (a "
                              "centralised critic); set hparams.shared_trunk=false")
        n_out = policy_head(self, action_space, log_std_init)
        arch = list(net_arch)
        critic_arch = arch if critic_net_arch is None else list(critic_net_arch)
        if shared_trunk and critic_arch != arch:
            raise CanterError("a shared trunk has one net_arch for actor and critic; set critic_net_arch=null")
        self.shared, stacked = shared_trunk, stacked and critic_arch == arch  # other widths: two MLPs
        if shared_trunk:
            self.trunk = MLP([n_in] + arch, activation, ortho_init, out_gain=math.sqrt(2))
            self.trunk.append(ACTIVATIONS[activation]())
            self.pi_head = MLP([arch[-1], n_out], activation, ortho_init, out_gain=0.01)
            self.v_head = MLP([arch[-1], 1], activation, ortho_init, out_gain=1.0)
        elif stacked:  # actor and critic stacked: one batched matmul per layer for both
            self.body = StackedMLP(2, n_in, arch, [n_out, 1], activation, ortho_init, out_gains=[0.01, 1.0])
        else:  # two separate networks (algorithms that optimise actor and critic parameters apart)
            self.actor = MLP([n_in] + arch + [n_out], activation, ortho_init, out_gain=0.01)
            self.critic = MLP([n_in] + critic_arch + [1], activation, ortho_init, out_gain=1.0)
        self.stacked = stacked and not shared_trunk
        #: actor and critic are two MLPs because their widths differ: MLP's NumPy passes replace StackedMLP's
        self._apart = (not shared_trunk and critic_arch != arch and self.actor.manual_backward
                       and self.critic.manual_backward)
        self.n_out = n_out
        self._d_out: torch.Tensor | None = None  # gradient buffer for backward_cached

    def _split(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The observation part and the allowed actions (None without a mask; a centralised
        critic's ``[B, 2, w]`` observations carry the mask in the actor's row)."""
        if not self.mask_width:
            return obs, None
        x, allowed = split_mask(obs, self.mask_width, self.nvec)
        return x, (allowed[:, 0] if self.per_network else allowed)

    def action(self, obs: torch.Tensor) -> torch.Tensor:
        """Logits (Discrete) or Gaussian mean (Box), shape ``[B, n]``."""
        obs, allowed = self._split(obs)
        x = self.encoder.forward(obs)
        if self.shared:
            out = self.pi_head(self.trunk(x))
        else:
            out = self.body.forward_group(x, 0) if self.stacked else self.actor(x[0] if self.per_network else x)
        return out if allowed is None else apply_mask(out, allowed)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """State value, shape ``[B]``."""
        x = self.encoder.forward(self._split(obs)[0])
        if self.shared:
            return self.v_head(self.trunk(x)).squeeze(-1)
        if self.stacked:
            return self.body.forward_group(x, 1).squeeze(-1)
        return self.critic(x[1] if self.per_network else x).squeeze(-1)

    def action_value_numpy(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`action_value` of a NumPy batch by NumPy's kernels (for acting: torch's per-op cost
        dominates at a few observations), as NumPy arrays; None where this model has no such path
        (a shared trunk, separate networks of the same widths, an encoder with parameters, an activation other
        than tanh / relu, or stacked layers too large for NumPy's single-threaded products)."""
        if (not (self.stacked or self._apart) or self._encoder_params or not isinstance(self.encoder, ObsEncoder)
                or not self._own_classes):
            return None
        obs, allowed = self._split(obs)
        x = self.encoder.numpy(np.ascontiguousarray(obs) if allowed is not None else obs)
        if self._apart:  # two MLPs of their own widths
            action, value = self.actor.infer(x), self.critic.infer(x)[:, 0]
        else:
            out = self.body.infer_numpy(x)
            if out is None:
                return None
            action, value = out[0, :, : self.n_out], out[1, :, 0]
        return action if allowed is None else apply_mask(action, allowed), value

    def action_value(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Both heads in one call (one encoder pass, one trunk pass when shared)."""
        obs, allowed = self._split(obs)
        x = self.encoder.forward(obs)
        if self.shared:
            h = self.trunk(x)
            out, value = self.pi_head(h), self.v_head(h).squeeze(-1)
        elif not self.stacked:
            a, c = (x[0], x[1]) if self.per_network else (x, x)
            out, value = self.actor(a), self.critic(c).squeeze(-1)
        else:
            both = self.body.forward(x)
            out, value = both[0, :, : self.n_out], both[1, :, 0]
        return (out if allowed is None else apply_mask(out, allowed)), value

    # -- hand-derived gradients (see canter.models.stacked) ---------------------------------
    @property
    def manual_backward(self) -> bool:
        """True when :meth:`forward_cached` / :meth:`backward_cached` can replace autograd (canter's
        own model, not a user's subclass): stacked, or two MLPs of their own widths."""
        return ((self.body.manual_backward if self.stacked else self._apart) and not self._encoder_params
                and self._own_classes)

    def forward_cached(self, obs: torch.Tensor) -> tuple[np.ndarray, np.ndarray, list[torch.Tensor]]:
        """Policy output ``[B, n]`` and values ``[B]`` as NumPy arrays (the algorithms' loss terms
        run in NumPy, :mod:`canter.algorithms.policy_terms`), and the cache for
        :meth:`backward_cached` (no autograd)."""
        obs, allowed = self._split(obs)
        x = self.encoder.forward(obs)
        if self.stacked:
            out, cache = self.body.forward_cached(x)
            out_np = out.numpy()
            action, value = out_np[0, :, : self.n_out], out_np[1, :, 0]
        else:  # two MLPs of their own widths (MLP.forward_cached: NumPy, buffers kept until the next call)
            a, c = (x[0], x[1]) if self.per_network else (x, x)
            (action, cache_a), (value, cache_c) = (net.forward_cached(h.numpy(), reuse=True)
                                                   for net, h in ((self.actor, a), (self.critic, c)))
            cache, value = [cache_a, cache_c], value[:, 0]
        return (action if allowed is None else apply_mask(action, allowed.numpy())), value, cache

    def backward_cached(self, cache: list[torch.Tensor], d_action: np.ndarray, d_value: np.ndarray) -> None:
        """Set the networks' ``.grad`` from d(loss)/d(policy output) and d(loss)/d(value) (NumPy)."""
        if not self.stacked:  # two MLPs of their own widths
            self.actor.backward_cached(cache[0], np.asarray(d_action, np.float32))
            self.critic.backward_cached(cache[1], np.asarray(d_value, np.float32).reshape(-1, 1))
            return
        n, width = d_action.shape[0], max(self.body.outs)
        d_out = self._d_out
        if d_out is None or d_out.shape[1] != n:  # reused: padded columns stay zero
            d_out = self._d_out = torch.zeros(2, n, width)
        d_np = d_out.numpy()
        d_np[0, :, : self.n_out] = d_action
        d_np[1, :, 0] = d_value
        self.body.backward_cached(cache, d_out)
