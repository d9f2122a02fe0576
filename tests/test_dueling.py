"""Dueling networks (Wang et al. 2016): shared layers, then a value and an advantage stream, each
with its own last hidden layer, combined as ``V + A - mean_a A``."""
from __future__ import annotations

import gymnasium as gym
import pytest
import torch
from torch import nn

from canter.models.distributional import CategoricalQNetwork, ImplicitQuantileNetwork, QuantileQNetwork
from canter.models.q_network import QNetwork

OBS, ACT = gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(3)


def _linear_shapes(module: nn.Module) -> list[tuple[int, int]]:
    return [(m.in_features, m.out_features) for m in module.modules() if isinstance(m, nn.Linear)]


@pytest.mark.parametrize("cls, n_out", [(QNetwork, 1), (QuantileQNetwork, 5), (CategoricalQNetwork, 5),
                                        (ImplicitQuantileNetwork, 1)])
def test_each_stream_has_its_own_last_hidden_layer(cls, n_out):
    kw = {QNetwork: {}, QuantileQNetwork: dict(n_quantiles=5), CategoricalQNetwork: dict(n_atoms=5),
          ImplicitQuantileNetwork: dict(n_cosines=4)}[cls]
    net = cls(OBS, ACT, net_arch=[16, 8], dueling=True, **kw)
    adv = getattr(net, "adv_head", None) or net.head
    # shared: 4 -> 16; then per stream 16 -> 8 -> outputs (the paper's two 512-unit streams)
    assert _linear_shapes(net.v_head) == [(16, 8), (8, n_out)]
    assert _linear_shapes(adv) == [(16, 8), (8, 3 * n_out)]
    shared = _linear_shapes(net.trunk) + _linear_shapes(getattr(net, "psi", nn.Identity()))
    assert shared == [(4, 16)]


def test_dueling_q_values_combine_the_streams():
    torch.manual_seed(0)
    net = QNetwork(OBS, ACT, net_arch=[16, 8], dueling=True)
    obs = torch.randn(5, 4)
    h = net.trunk(net.encoder(obs))
    adv, v = net.adv_head(h), net.v_head(h)
    torch.testing.assert_close(net.value(obs), v + adv - adv.mean(1, keepdim=True))
    before = net.value(obs)
    with torch.no_grad():  # the value stream's own hidden layer moves every action's value alike
        net.v_head[0].weight.add_(torch.randn_like(net.v_head[0].weight))
    after = net.value(obs)
    assert not torch.allclose(before, after)
    torch.testing.assert_close(after - after[:, :1], before - before[:, :1])


def test_without_hidden_layers_the_streams_are_linear():
    net = QNetwork(OBS, ACT, net_arch=[], dueling=True)
    assert _linear_shapes(net.v_head) == [(4, 1)] and _linear_shapes(net.adv_head) == [(4, 3)]
    assert net.value(torch.randn(2, 4)).shape == (2, 3)
