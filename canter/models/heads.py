"""The policy head of canter's actor-critic models (:class:`canter.models.mlp.ActorCritic`, the recurrent one):
its width for the action space, the distribution it parameterises and, for Box actions, the free ``log_std``."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from canter.envs.masks import check_mask_length
from canter.errors import CanterError


def policy_head(model: nn.Module, action_space: gym.Space, log_std_init: float) -> int:
    """The policy head's width for ``action_space`` (logits, or the Gaussian mean); sets
    ``model.continuous``, ``model.nvec`` (MultiDiscrete / MultiBinary: the categories of each entry,
    whose logits the head concatenates; else None) and, for Box actions, the free ``model.log_std``."""
    from canter.envs.spaces import action_nvec

    model.nvec = action_nvec(action_space)  # factored discrete actions: one categorical per entry
    if getattr(model, "mask_width", 0):  # masked logits: one mask entry per logit
        check_mask_length(model.mask_width, action_space, "the observations' action mask")
    if model.nvec is not None:
        model.continuous = False
        return int(model.nvec.sum())
    if isinstance(action_space, gym.spaces.Discrete):
        model.continuous = False
        return int(action_space.n)
    if isinstance(action_space, gym.spaces.Box):
        n_out = int(np.prod(action_space.shape))
        model.continuous = True
        model.log_std = nn.Parameter(torch.full((n_out,), float(log_std_init)))
        return n_out
    raise CanterError(f"{type(model).__name__} does not support action space {type(action_space).__name__}")
