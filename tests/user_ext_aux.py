"""A user's PPO variant with a network and an optimizer of its own beside PPO's model, which its modules() and
optimizers() do not return (for tests/test_user_extensions.py)."""
from dataclasses import dataclass

import torch

import canter
from canter.algorithms.ppo import PPO, PPOConfig
from canter.config import hp


@dataclass
class AuxPPOConfig(PPOConfig):
    """PPO's hyperparameters, autograd only."""

    manual_backward: bool = hp(False, "autograd only")


@canter.register("algorithm", "user_ext_aux_ppo")
class AuxPPO(PPO):
    """PPO with an auxiliary value head learnt by its own optimizer."""

    name = "user_ext_aux_ppo"
    Config = AuxPPOConfig

    def __init__(self, observation_space, action_space, config, **kw):
        super().__init__(observation_space, action_space, config, **kw)
        self.aux = torch.nn.Linear(observation_space.shape[0], 1)
        self.aux_opt = torch.optim.Adam(self.aux.parameters(), lr=1e-2)

    def learn(self, batch):
        out = super().learn(batch)
        loss = (self.aux(batch.obs).squeeze(-1) - batch.returns).pow(2).mean()
        self.aux_opt.zero_grad()
        loss.backward()
        self.aux_opt.step()
        out["aux_loss"] = loss.item()
        return out
