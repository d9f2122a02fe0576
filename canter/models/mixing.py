"""QMIX's networks: one agent Q-network shared by every agent, and a monotonic mixing network.

Observations come from :class:`~canter.envs.multiagent_views.JointParallelEnv`: ``[B, k + 1, w]``,
agent ``i``'s observation in row ``i`` and the global state in row ``k`` (zero-padded), and each agent's action
mask in the last columns of its row (the env's, or an automatic "alive" mask where the env has none).
"""
from __future__ import annotations

import gymnasium as gym
import torch
from torch import nn
from torch.nn import functional as F

from canter.envs.masks import apply_mask_below, mask_width, split_mask
from canter.models.linear import Linear
from canter.models.mlp import MLP
from canter.registry import register


@register("model", "qmix")
class QMixModel(nn.Module):
    """Agent Q-values ``[B, k, n]`` from each agent's observation and one-hot id (parameters
    shared by every agent), and the mixing network that turns the chosen values ``[B, k]`` into
    ``Q_tot [B]``: weights from hypernetworks on the state, made non-negative by ``abs``, so
    ``Q_tot`` rises with every agent's value (Rashid et al. 2018, QMIX). Under action masks the
    agent network sees its row without the mask, and masked actions' Q-values lie below the
    agent's lowest allowed one (:func:`~canter.envs.masks.apply_mask_below`; PyMARL's available
    actions), so neither acting nor the target's greedy next action picks one."""

    #: handles observations with an action mask (:mod:`canter.envs.masks`)
    action_masks = True

    def __init__(self, observation_space: gym.spaces.Box, action_space: gym.spaces.MultiDiscrete,
                 net_arch: list[int], activation: str = "relu", embed_dim: int = 32, hypernet_dim: int = 64) -> None:
        super().__init__()
        rows, width = observation_space.shape
        self.mask_width = mask_width(observation_space)
        self.k, self.n_actions, self.embed = rows - 1, int(action_space.nvec[0]), embed_dim
        self.agent = MLP([width - self.mask_width + self.k, *net_arch, self.n_actions], activation)
        self.hyper_w1 = nn.Sequential(Linear(width, hypernet_dim), nn.ReLU(), Linear(hypernet_dim, self.k * embed_dim))
        self.hyper_b1 = Linear(width, embed_dim)
        self.hyper_w2 = nn.Sequential(Linear(width, hypernet_dim), nn.ReLU(), Linear(hypernet_dim, embed_dim))
        self.hyper_b2 = nn.Sequential(Linear(width, embed_dim), nn.ReLU(), Linear(embed_dim, 1))
        self.register_buffer("ids", torch.eye(self.k), persistent=False)

    def agent_q(self, obs: torch.Tensor) -> torch.Tensor:
        """Every agent's Q-values ``[B, k, n]`` (masked actions': below the agent's lowest value,
        :func:`~canter.envs.masks.apply_mask_below`)."""
        agents = obs[:, :self.k].float()
        allowed = None
        if self.mask_width:
            agents, allowed = split_mask(agents, self.mask_width)
        ids = self.ids.expand(len(obs), -1, -1)
        q = self.agent(torch.cat([agents, ids], dim=-1))
        return q if allowed is None else apply_mask_below(q, allowed)

    def mix(self, chosen: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
        """``Q_tot [B]`` from the agents' chosen values ``[B, k]`` and the state in ``obs``."""
        state = obs[:, self.k].float()
        w1 = self.hyper_w1(state).abs().view(-1, self.k, self.embed)
        hidden = F.elu(torch.bmm(chosen.unsqueeze(1), w1).squeeze(1) + self.hyper_b1(state))
        w2 = self.hyper_w2(state).abs()
        return (hidden * w2).sum(-1) + self.hyper_b2(state).squeeze(-1)
