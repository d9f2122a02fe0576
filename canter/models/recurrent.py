"""A recurrent actor-critic: observation encoder, one LSTM layer each for actor and critic (sb3-contrib's
``RecurrentPPO`` default) or one shared by both (CleanRL's ``ppo_atari_lstm`` layout), and their heads
(:mod:`canter.algorithms.recurrent_ppo`)."""
from __future__ import annotations

import gymnasium as gym
import torch
from torch import nn

from canter.envs.masks import apply_mask, mask_width, split_mask
from canter.errors import CanterError
from canter.models.mlp import MLP, policy_head
from canter.registry import register

#: the LSTM's memory: hidden and cell states, each ``[1, B, hidden]`` (``[1, B, 2 * hidden]`` with a
#: critic LSTM of its own: the actor's units, then the critic's)
State = tuple[torch.Tensor, torch.Tensor]


@register("model", "lstm_actor_critic")
class LSTMActorCritic(nn.Module):
    """``encoder -> LSTM -> actor head / critic head``. The actor head gives logits (Discrete, masked
    under action masks) or the Gaussian mean (Box, with a free ``log_std``); the critic head V.
    With ``critic_lstm`` (the default) the critic head reads an LSTM of its own (on the same encoder), so
    the value loss does not shape the actor's memory; without it both heads read one LSTM.

    :meth:`step` advances every env's memory by one observation; :meth:`sequence` runs a rollout
    ``[T, B]`` from its initial memory, zeroing it where an episode starts, so training sees the
    policy exactly as acting did.
    """

    action_masks = True
    recurrent = True

    def __init__(
        self, observation_space: gym.Space, action_space: gym.Space, lstm_hidden: int = 128,
        net_arch: list[int] = (), activation: str = "tanh", ortho_init: bool = True, log_std_init: float = 0.0,
        encoder: str = "auto", critic_lstm: bool = True, critic_net_arch: list[int] | None = None,
    ) -> None:
        super().__init__()
        from canter.models.cnn import make_encoder

        self.mask_width = mask_width(observation_space)
        self.encoder = make_encoder(observation_space, encoder, ortho_init)
        if getattr(self.encoder, "per_network", False):
            raise CanterError("a recurrent actor-critic takes one input for actor and critic (not the split encoder)")
        n_out = policy_head(self, action_space, log_std_init)
        self.hidden = lstm_hidden
        self.lstm = nn.LSTM(self.encoder.out_dim, lstm_hidden)
        self.critic_lstm = nn.LSTM(self.encoder.out_dim, lstm_hidden) if critic_lstm else None
        lstms = [self.lstm] if self.critic_lstm is None else [self.lstm, self.critic_lstm]
        if ortho_init:  # CleanRL's initialisation: orthogonal weights, zero biases
            for name, p in (item for lstm in lstms for item in lstm.named_parameters()):
                nn.init.zeros_(p) if "bias" in name else nn.init.orthogonal_(p, 1.0)
        arch = list(net_arch)
        self.actor = MLP([lstm_hidden, *arch, n_out], activation, ortho_init, out_gain=0.01)
        critic_arch = arch if critic_net_arch is None else list(critic_net_arch)  # the critic head's own widths
        self.critic = MLP([lstm_hidden, *critic_arch, 1], activation, ortho_init, out_gain=1.0)
        self.n_out = n_out

    def initial_state(self, batch: int) -> State:
        """Zero memory for ``batch`` envs."""
        zeros = torch.zeros(1, batch, self.hidden * (1 if self.critic_lstm is None else 2),
                            device=self.lstm.weight_hh_l0.device)
        return zeros, zeros.clone()

    def check_run(self, state: State) -> None:
        """Refuse in one line a subclass whose :meth:`_run` does not take the memory ``state`` (from
        :meth:`initial_state`) and give it back with outputs as wide (a user's GRU written for one memory
        for actor and critic, trained with ``critic_lstm``, whose memory is twice as wide, failed in its first
        step with torch's traceback)."""
        width = state[0].shape[-1]
        x = torch.zeros(1, state[0].shape[1], self.encoder.out_dim, device=state[0].device)
        try:
            with torch.no_grad():
                y, new = self._run(x, state)
            ok = y.shape[-1] == width and [tuple(n.shape) for n in new] == [tuple(s.shape) for s in state]
            problem = "" if ok else f"it gave outputs {tuple(y.shape)} and a memory {[tuple(n.shape) for n in new]}"
        except (RuntimeError, ValueError, TypeError) as exc:
            problem = f"it failed ({type(exc).__name__}: {(str(exc).splitlines() or [''])[0]})"
        if problem:
            layout = "the actor's LSTM units, then the critic's" if self.critic_lstm is not None else "one LSTM's units"
            raise CanterError(f"model {type(self).__name__}: _run(x, state) must take the memory initial_state gives "
                              f"({width} units: {layout}) and return it, with outputs as wide; {problem}"
                              + ("; a _run with one memory for actor and critic needs hparams.critic_lstm=false"
                                 if self.critic_lstm is not None else ""))

    def _heads(self, y: torch.Tensor, allowed: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Policy outputs and values from the LSTM outputs ``y`` (with a critic LSTM: the actor's
        units, then the critic's, on the last axis)."""
        actor_in, critic_in = (y, y) if self.critic_lstm is None else y.split(self.hidden, dim=-1)
        return self._policy(actor_in, allowed), self.critic(critic_in).squeeze(-1)

    def _policy(self, actor_in: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
        """The actor head's output from the actor's LSTM outputs (masked under action masks)."""
        out = self.actor(actor_in)
        return out if allowed is None else apply_mask(out, allowed)

    def _encode(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One observation per env ``[B, ...]`` encoded as the LSTM's input ``[1, B, in]``, and the allowed
        actions (None without action masks)."""
        allowed = None
        if self.mask_width:
            obs, allowed = split_mask(obs, self.mask_width, self.nvec)
        return self.encoder(obs).unsqueeze(0), allowed

    def _halves(self, state: State) -> tuple[State, State]:
        """A critic LSTM's memory split into the actor's ``(h, c)`` and the critic's ``(h, c)`` halves."""
        return tuple(part.split(self.hidden, dim=-1) for part in state)  # type: ignore[return-value]

    def _run(self, x: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """The LSTM(s) over inputs ``x`` ``[T, B, in]`` from ``state``: outputs and the new memory."""
        if self.critic_lstm is None:
            return self.lstm(x, state)
        (ha, hc), (ca, cc) = self._halves(state)
        ya, (ha, ca) = self.lstm(x, (ha.contiguous(), ca.contiguous()))
        yc, (hc, cc) = self.critic_lstm(x, (hc.contiguous(), cc.contiguous()))
        return torch.cat([ya, yc], -1), (torch.cat([ha, hc], -1), torch.cat([ca, cc], -1))

    def step(self, obs: torch.Tensor, state: State) -> tuple[torch.Tensor, torch.Tensor, State]:
        """One observation per env ``[B, ...]`` from memory ``state``: policy output ``[B, n]``,
        values ``[B]`` and the new memory."""
        x, allowed = self._encode(obs)
        y, new = self._run(x, state)
        out, value = self._heads(y[0], allowed)
        return out, value, new

    def policy_step(self, obs: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """:meth:`step` without values, for acting that needs none (``predict``, ``explore``): the policy
        output and the new memory, the same as :meth:`step`'s, except that the critic's head does not run,
        nor its LSTM (``critic_lstm``), whose half of the memory stays as it was: values must not be computed
        from a memory advanced here (the trainer advances the training memory with :meth:`step`). A
        subclass's own ``step``, ``_run`` or ``_heads`` runs whole."""
        if any(getattr(type(self), n) is not getattr(LSTMActorCritic, n) for n in ("step", "_run", "_heads")):
            out, _, new = self.step(obs, state)  # a subclass's own (a user's GRU): all of it
            return out, new
        x, allowed = self._encode(obs)
        if self.critic_lstm is None:
            y, new = self.lstm(x, state)
            return self._policy(y[0], allowed), new
        (ha, hc), (ca, cc) = self._halves(state)
        ya, (ha, ca) = self.lstm(x, (ha.contiguous(), ca.contiguous()))
        return self._policy(ya[0], allowed), (torch.cat([ha, hc], -1), torch.cat([ca, cc], -1))

    def sequence(self, obs: torch.Tensor, state: State, starts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A rollout ``obs [T, B, ...]`` from memory ``state``, the memory zeroed before each step where
        ``starts [T, B]`` is true: policy outputs ``[T, B, n]`` and values ``[T, B]``."""
        t_len, b = obs.shape[:2]
        allowed = None
        if self.mask_width:
            obs, allowed = split_mask(obs, self.mask_width, self.nvec)
        x = self.encoder(obs.reshape(t_len * b, *obs.shape[2:])).reshape(t_len, b, -1)
        keep = (~starts).to(x.dtype).view(t_len, 1, b, 1)
        h, c = state
        ys = []
        # runs of steps without an episode start go through the LSTM in one call (one scan for the cuts)
        edges = sorted({0, t_len, *starts.any(1).nonzero().flatten().tolist()})
        for t, end in zip(edges[:-1], edges[1:]):
            h, c = h * keep[t], c * keep[t]
            y, (h, c) = self._run(x[t:end], (h, c))
            ys.append(y)
        return self._heads(torch.cat(ys), allowed)
