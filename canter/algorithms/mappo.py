"""MAPPO: PPO for multi-agent envs with a centralised critic (Yu et al. 2022, "The Surprising
Effectiveness of PPO in Cooperative Multi-Agent Games").

Each agent's actor sees only its own observation, so the policy acts decentralised; the critic
sees the global state (PettingZoo's ``state()``, or every agent's observation concatenated) and
the agent's one-hot index (the paper's agent-specific state, without the local features). The
run sets ``central_state``, so the multi-agent env
(:class:`~canter.envs.multiagent.ParallelVectorEnv`) gives each agent an observation ``[2, w]``:
its own observation, then the critic's input, each zero-padded to ``w``. The ``split`` encoder
hands the first row to the actor and the second to the critic, and the stacked actor-critic
takes the two in one batched product per layer, so the hand-derived PPO update runs unchanged.
Value normalisation (the paper's ValueNorm, ``normalize_value``) is on by default. Everything
else is :class:`~canter.algorithms.ppo.PPO`: the loss, GAE, clipping, schedules.
Evaluation and deployment use the actor only (``predict`` reads the first row).

With ``policies: type | agent`` each policy has its own actor and critic, and every critic sees
the same global state.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import gymnasium as gym

from canter.algorithms.ppo import PPO, PPOConfig
from canter.config import hp
from canter.registry import register


@dataclass
class MAPPOConfig(PPOConfig):
    """MAPPO hyperparameters: PPO's, with the ``split`` encoder (actor and critic inputs of their own)
    and value normalisation on."""

    encoder: str = hp("split", "observation encoder: split (the actor reads the agent's observation, the critic "
                      "the global state and the agent's index)", choices=("split",))
    normalize_value: bool = hp(True, "value normalisation (the paper's ValueNorm): the critic learns the returns "
                               "standardised by their running mean and std; its values are scaled back for GAE")


@register("algorithm", "mappo")
class MAPPO(PPO):
    """PPO with a centralised critic for multi-agent envs (decentralised actors)."""

    name = "mappo"
    Config = MAPPOConfig
    #: the critic sees the global state: the run sets ``central_state`` (multi-agent envs only)
    central_critic: ClassVar[bool] = True
    multiagent_only = True
    #: each agent's Discrete or Box actions (factored actions are not wired through the multi-agent envs)
    action_spaces: ClassVar[tuple[type, ...]] = (gym.spaces.Discrete, gym.spaces.Box)
