"""Recurrent PPO: PPO with an LSTM between the observation encoder and the actor and critic heads,
for partially observable envs (sb3-contrib's ``RecurrentPPO``, CleanRL's ``ppo_atari_lstm``).

Acting carries each env's memory from step to step and zeroes it at an episode's first
observation (:class:`~canter.agents.recurrent.RecurrentAgent`); the trainer keeps the rollout
time-major with the memory at its start (:class:`~canter.data.batch.SequenceBatch`), and each
minibatch is a set of whole env sequences that the LSTM runs through again from that memory, so
the first epoch sees exactly the probabilities that acting had (truncated backpropagation
through time over one rollout of ``n_steps``). The loss is PPO's (autograd; the hand-derived
update is for feed-forward models).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch

from canter.algorithms.actor_critic import explained_variance
from canter.algorithms.base import ActOutput, policy_sample
from canter.algorithms.ppo import PPO, PPOConfig
from canter.config import MAX_PASSES, hp
from canter.data.batch import RolloutBatch, SequenceBatch
from canter.errors import CanterError
from canter.registry import register


@dataclass
class RecurrentPPOConfig(PPOConfig):
    """Recurrent PPO hyperparameters: PPO's, with a minibatch of whole env sequences."""

    #: checkpoints saved before ``critic_lstm`` existed (2026-11-25) shared one LSTM; its default was false until
    #: 2026-11-27 (:func:`canter.config.build_saved_hparams`)
    former_defaults = {"critic_lstm": False}  # not annotated: no dataclass field, no flag

    lstm_hidden: int = hp(128, "LSTM hidden units (one layer each for actor and critic; one shared with critic_lstm "
                               "false)", low=1, search={"choices": [32, 64, 128, 256]})
    critic_lstm: bool = hp(True, "give the critic an LSTM of its own (sb3-contrib's default), so the value loss "
                                 "does not shape the actor's memory; false: one LSTM for both (CleanRL's layout)")
    net_arch: list[int] = hp([], "hidden layers of the actor and critic heads after the LSTM (empty: linear heads)",
                             low=1)
    n_steps: int = hp(128, "steps per env per rollout (the length of the sequences the LSTM learns through)", low=1,
                      search={"choices": [32, 64, 128, 256, 512]})
    batch_size: int = hp(256, "transitions per minibatch, rounded to whole env sequences (at least one)", low=1,
                         search={"choices": [128, 256, 512, 1024]})
    n_epochs: int = hp(4, "passes over each rollout", low=1, high=MAX_PASSES, search={"low": 1, "high": 10})
    manual_backward: bool = hp(False, "not available for recurrent models (autograd)")
    normalize_value: bool = hp(False, "not available for recurrent_ppo (no value normalisation)")
    shared_trunk: bool = hp(False, "not available for recurrent_ppo: actor and critic share the observation "
                                   "encoder already (and the LSTM with critic_lstm false)")
    ortho_init: bool = hp(True, "orthogonal initialisation (the LSTM's weights gain 1, biases 0; heads gain sqrt 2, "
                                "0.01 policy output, 1 value output)")

    def validate(self) -> None:  # noqa: D102
        if self.manual_backward:
            raise CanterError("recurrent_ppo learns through autograd; set hparams.manual_backward=false")
        if self.normalize_value:
            raise CanterError("recurrent_ppo has no value normalisation; set hparams.normalize_value=false")
        if self.shared_trunk:
            raise CanterError("recurrent_ppo's actor and critic share the observation encoder already (and the LSTM "
                              "with critic_lstm false); set hparams.shared_trunk=false")


def _check_memory(model: torch.nn.Module) -> None:
    """Refuse a model whose memory is not what the agent, the trainer and their checkpoints carry: a pair
    ``(h, c)`` of tensors with the envs on their second axis (an LSTM's hidden and cell states)."""
    state = model.initial_state(2)
    if (isinstance(state, tuple) and len(state) == 2
            and all(isinstance(s, torch.Tensor) and s.dim() >= 2 and s.shape[1] == 2 for s in state)):
        from canter.models.recurrent import LSTMActorCritic

        if isinstance(model, LSTMActorCritic):  # a subclass's _run (a user's GRU) takes and gives that memory
            model.check_run(state)
        return
    got = (f"a {type(state).__name__} of {len(state)}" if isinstance(state, (tuple, list)) else
           f"a tensor of shape {tuple(state.shape)}" if isinstance(state, torch.Tensor) else type(state).__name__)
    raise CanterError(f"model {type(model).__name__}: initial_state(batch) must return the memory as a pair (h, c) "
                      f"of tensors [layers, batch, units] (a GRU pairs its h with a tensor it ignores); initial_state(2) "
                      f"gave {got}")


@register("algorithm", "recurrent_ppo")
class RecurrentPPO(PPO):
    """PPO with an LSTM actor-critic, trained on whole env sequences."""

    #: PPO's: Discrete, Box, and MultiDiscrete / MultiBinary (one categorical per entry)
    action_spaces: ClassVar[tuple[type, ...]] = (gym.spaces.Discrete, gym.spaces.Box, gym.spaces.MultiDiscrete,
                                                 gym.spaces.MultiBinary)

    name = "recurrent_ppo"
    family = "on_policy_recurrent"
    Config = RecurrentPPOConfig
    default_model = "lstm_actor_critic"
    agent_class = "recurrent_agent"
    model_methods = ("initial_state", "step", "sequence")

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: RecurrentPPOConfig,
                 **kw: Any) -> None:
        super().__init__(observation_space, action_space, config, **kw)
        if not getattr(self.model, "recurrent", False):
            raise CanterError(f"recurrent_ppo needs a recurrent model (with step, sequence and initial_state), "
                              f"not {type(self.model).__name__}")
        _check_memory(self.model)

    def model_kwargs(self, c: Any) -> dict[str, Any]:  # noqa: D102
        kw = super().model_kwargs(c)
        kw.pop("shared_trunk")
        return {**kw, "lstm_hidden": c.lstm_hidden, "critic_lstm": c.critic_lstm}

    # -- acting ------------------------------------------------------------------------------------
    def act_recurrent(self, obs: torch.Tensor, state: Any, deterministic: bool = False,
                      values: bool = True) -> tuple[ActOutput, Any]:
        """:meth:`act` from the memory ``state``; also returns the new memory. ``values`` False (acting
        that stores none: ``predict``, ``explore``): no values, and a model with ``policy_step`` skips its
        critic (the same actions; a critic LSTM's half of the memory is not advanced)."""
        policy_step = getattr(self.model, "policy_step", None)
        if not values and policy_step is not None:
            out, new = policy_step(obs, state)
            return policy_sample(self, out, None, deterministic), new
        out, value, new = self.model.step(obs, state)
        return policy_sample(self, out, value, deterministic), new

    def value_recurrent(self, obs: torch.Tensor, state: Any) -> torch.Tensor:
        """V(obs) from the memory ``state`` (the memory is not advanced)."""
        return self.model.step(obs, state)[1]

    def act(self, obs: torch.Tensor, deterministic: bool = False) -> ActOutput:
        """One step from an empty memory (the Agent carries memory across steps: use it for episodes)."""
        return self.act_recurrent(obs, self.model.initial_state(len(obs)), deterministic)[0]

    def act_numpy(self, obs: np.ndarray, deterministic: bool = False) -> None:  # noqa: D102
        return None

    def value(self, obs: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return self.value_recurrent(obs, self.model.initial_state(len(obs)))

    # -- learning ----------------------------------------------------------------------------------
    def learn(self, batch: SequenceBatch) -> dict[str, float]:
        """Epochs of clipped-surrogate updates, each minibatch a set of whole env sequences."""
        self.grad_norms = []
        with torch.enable_grad():
            stats = self._sequence_epochs(batch)
        names = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")
        out = dict(zip(names, np.mean(stats, 0).tolist())) if stats else {}
        out.update(self._grad_norm_stat())
        valid = batch.valid.reshape(-1)
        out["explained_variance"] = explained_variance(batch.returns.reshape(-1)[valid], batch.values.reshape(-1)[valid])
        out["learning_rate"] = self.lr
        out["clip_range"] = self.clip
        return out

    def _sequence_epochs(self, b: SequenceBatch) -> list[np.ndarray]:
        c = self.config
        t_len, n_envs = b.valid.shape
        per_mb = max(1, min(n_envs, c.batch_size // t_len))
        stats: list[np.ndarray] = []
        for _ in range(c.n_epochs):
            perm = torch.randperm(n_envs, generator=self.generator).to(b.obs.device)
            for start in range(0, n_envs, per_mb):
                envs = perm[start:start + per_mb]
                state = (b.state[0][:, envs], b.state[1][:, envs])
                out, values = self.model.sequence(b.obs[:, envs], state, b.starts[:, envs])
                valid = b.valid[:, envs].reshape(-1)
                if not bool(valid.any()):
                    continue

                def rows(x: torch.Tensor) -> torch.Tensor:
                    return x[:, envs].reshape(-1, *x.shape[2:])[valid]

                mb = RolloutBatch(b.obs[:0], rows(b.actions), rows(b.log_probs), rows(b.values),  # outputs given:
                                  rows(b.advantages), rows(b.returns))  # no observations needed
                outputs = (out.reshape(-1, out.shape[-1])[valid], values.reshape(-1)[valid])
                if not self._step(self._grads_autograd(self._normalized(mb), outputs), stats):
                    return stats
        return stats
