"""A user's module of components registered by name, as docs/architecture.md section 4 shows (for
tests/test_user_extensions.py): an actor-critic model and a PPO variant with an extra loss term."""
from dataclasses import dataclass

import canter
from canter.algorithms.ppo import PPO, PPOConfig
from canter.config import hp
from canter.models import ActorCritic


@canter.register("model", "user_ext_ac")
class UserExtAC(ActorCritic):
    """canter's actor-critic, narrower by default."""

    def __init__(self, observation_space, action_space, **kw):
        kw.setdefault("net_arch", [16])
        super().__init__(observation_space, action_space, **kw)


@dataclass
class L2PPOConfig(PPOConfig):
    """PPO's hyperparameters and the weight of an L2 penalty on the policy outputs."""

    l2_coef: float = hp(0.001, "L2 penalty on the policy outputs", low=0)
    manual_backward: bool = hp(False, "autograd only (the extra term has no hand-derived gradient)")


@canter.register("algorithm", "user_ext_ppo_l2")
class L2PPO(PPO):
    """PPO with an L2 penalty on the policy outputs added to its loss."""

    name = "user_ext_ppo_l2"
    Config = L2PPOConfig

    def _grads_autograd(self, mb, outputs=None):
        row = super()._grads_autograd(mb, outputs)
        out, _ = self.model.action_value(mb.obs)
        (self.config.l2_coef * out.pow(2).mean()).backward()  # adds to the gradients PPO's loss left
        return row


@canter.register("algorithm", "user_ext_ppo_counted")
class CountedPPO(PPO):
    """PPO whose loss (``_grads_autograd``) is overridden, with PPO's defaults (manual_backward on): it counts calls."""

    name = "user_ext_ppo_counted"
    calls = 0

    def _grads_autograd(self, mb, outputs=None):
        type(self).calls += 1
        return super()._grads_autograd(mb, outputs)
