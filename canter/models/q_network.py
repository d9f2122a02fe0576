"""The Q-value MLP of DQN and its kin (:class:`QNetwork`, registered as ``mlp_q``) and the dueling streams
(:func:`dueling_streams`) that it and the distributional networks share."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from canter.envs.masks import apply_mask_below, mask_width, split_mask
from canter.errors import CanterError
from canter.models.linear import Linear
from canter.models.mlp import ACTIVATIONS, MLP, canter_class
from canter.registry import register


def dueling_streams(widths: list[int], n_adv: int, n_value: int, activation: str, layer: Any = Linear,
                    ) -> tuple[nn.Module, nn.Module, nn.Module]:
    """Dueling architecture (Wang et al. 2016): ``(trunk, advantage stream, value stream)`` for
    hidden ``widths`` ``[n_in, h1, ..., hk]``. The trunk shares the layers up to ``h(k-1)`` (ending
    with the activation); each stream has its own last hidden layer of ``hk`` units and its own
    output layer (``n_adv`` and ``n_value`` outputs), as the paper's two 512-unit streams after the
    shared convolutions. Without hidden layers (``widths == [n_in]``) the streams are linear."""
    if len(widths) == 1:
        return nn.Identity(), layer(widths[0], n_adv), layer(widths[0], n_value)
    trunk: nn.Module = nn.Identity()
    if len(widths) > 2:
        trunk = MLP(widths[:-1], activation, layer=layer)
        trunk.append(ACTIVATIONS[activation]())
    ends = widths[-2:]
    return trunk, MLP(ends + [n_adv], activation, layer=layer), MLP(ends + [n_value], activation, layer=layer)


@register("model", "mlp_q")
class QNetwork(nn.Module):
    """Q-value MLP for Discrete actions; ``dueling`` splits it into value and advantage streams.

    With an action mask in the observations (:mod:`canter.envs.masks`), :meth:`value` gives
    disallowed actions a value below the row's lowest (:func:`~canter.envs.masks.apply_mask_below`),
    so greedy actions and bootstrapped maxima range over allowed actions; :meth:`forward_cached` (the update, which reads only the
    taken actions' values) returns them unmasked.
    """

    #: handles observations with an action mask (:mod:`canter.envs.masks`)
    action_masks = True

    def __init__(
        self, observation_space: gym.Space, action_space: gym.Space, net_arch: list[int] = (64, 64),
        activation: str = "relu", dueling: bool = False, encoder: str = "auto", noisy: bool = False,
    ) -> None:
        super().__init__()
        if not isinstance(action_space, gym.spaces.Discrete):
            raise CanterError(f"QNetwork needs a Discrete action space, got {type(action_space).__name__}")
        from canter.models.cnn import has_parameters, make_encoder
        from canter.models.noisy import NoisyLinear

        self.encoder = make_encoder(observation_space, encoder)
        self.mask_width = mask_width(observation_space)
        self._fixed_encoder = not has_parameters(self.encoder)  # flat or one-hot: nothing to train
        n_in, n_act, arch = self.encoder.out_dim, int(action_space.n), list(net_arch)
        self.dueling = dueling
        layer = NoisyLinear if noisy else Linear  # NoisyNet: every layer after the encoder
        if dueling:  # separate value and advantage streams from the last hidden layer on
            self.trunk, self.adv_head, self.v_head = dueling_streams([n_in] + arch, n_act, 1, activation, layer)
        else:
            self.q = MLP([n_in] + arch + [n_act], activation, layer=layer)
        # value() without module calls when no grad; value_numpy() through canter's own encoders only
        self._infer = not dueling and self.q.manual_backward and canter_class(self)
        self._numpy_acting = self._infer and self._fixed_encoder and canter_class(self.encoder)

    @property
    def manual_backward(self) -> bool:
        """True when :meth:`forward_cached` / :meth:`backward_cached` can replace autograd: a plain
        (not dueling) MLP with relu or tanh on a parameter-free (flat or one-hot) encoder, in
        canter's own class (a user's subclass may change the forward pass)."""
        return not self.dueling and self.q.manual_backward and self._fixed_encoder and canter_class(self)

    def forward_cached(self, obs: torch.Tensor, reuse: bool = False) -> tuple[np.ndarray, list[np.ndarray]]:
        """Q values ``[B, n_actions]`` (NumPy, no autograd) and the cache for :meth:`backward_cached`
        (``reuse``: as :meth:`MLP.forward_cached`)."""
        if self.mask_width:
            obs = obs[:, :-self.mask_width]
        # canter's encoders: their NumPy path (no torch call for float32 vectors); a user's: its forward
        x = self.encoder.numpy(obs.numpy()) if self._numpy_acting else self.encoder.forward(obs).numpy()
        return self.q.forward_cached(x, reuse)

    def backward_cached(self, cache: list[np.ndarray], d_q: np.ndarray) -> None:
        """Set the network's ``.grad`` from d(loss)/d(Q values) ``[B, n_actions]`` (NumPy)."""
        self.q.backward_cached(cache, d_q)

    @property
    def numpy_acting(self) -> bool:
        """True when :meth:`value_numpy` answers (it returns None otherwise)."""
        return self._numpy_acting

    def value_numpy(self, obs: np.ndarray) -> np.ndarray | None:
        """Q values ``[B, n_actions]`` of a NumPy batch by the NumPy forward pass; None where this
        network has none (dueling heads, other activations, an encoder with parameters)."""
        if not self._numpy_acting:
            return None
        if not self.mask_width:
            return self.q.infer(self.encoder.numpy(obs))
        obs, allowed = split_mask(obs, self.mask_width)
        return apply_mask_below(self.q.infer(self.encoder.numpy(np.ascontiguousarray(obs))), allowed)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """Q(obs, a) for every action, shape ``[B, n_actions]`` (masked, see the class docstring)."""
        obs, allowed = split_mask(obs, self.mask_width) if self.mask_width else (obs, None)
        x = self.encoder.forward(obs)
        if not self.dueling:
            if self._infer and x.device.type == "cpu" and not torch.is_grad_enabled():
                xn = x.numpy() if allowed is None else np.ascontiguousarray(x.numpy())
                q = torch.from_numpy(self.q.infer(xn))
            else:
                q = self.q(x)
        else:
            h = self.trunk(x)
            adv = self.adv_head(h)
            q = self.v_head(h) + adv - adv.mean(dim=1, keepdim=True)
        return q if allowed is None else apply_mask_below(q, allowed)
