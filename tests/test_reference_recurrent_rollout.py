"""Recurrent PPO's rollouts against a hand-written reference (an LSTM cell and GAE written out in torch and NumPy
here, not canter's ``LSTMActorCritic.step`` / ``sequence`` or ``compute_gae``).

A tiny deterministic env, two envs by six (or seven) steps a rollout, two rollouts: env 0 terminates after 3
steps, env 1 is truncated after 4 (its time limit), so their episodes end at different rows, in both rollouts. Checked:

- acting: the memory fed to the LSTM is zero at every episode's first observation, and the values and
  log-probabilities stored are the reference's (the memory carried step by step across both rollouts);
- the memory each rollout starts from (``SequenceBatch.state``) is the reference's after the previous rollout;
- GAE: advantages and returns, a truncation bootstrapping from V(final observation) computed with its episode's
  memory, a termination not, the last row from the next rollout's first value;
- training: the hidden states (both LSTMs' outputs) that the loss recomputes for each minibatch of env sequences,
  one env or both per minibatch, equal the ones acting had, and start from zero at every episode start.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter

N, HIDDEN, GAMMA, LAM = 2, 5, 0.9, 0.8
TERMINATE_AFTER, TIME_LIMIT = 3, 4  # env 0's episodes terminate after 3 steps; env 1's are truncated after 4


class Ticker(gym.Env):
    """Observation ``[step, a wave of the step and the episode's number, which env]``; reward ``1 + step +
    action_reward * action``; the env whose first reset had an even seed terminates after 3 steps, the other never
    terminates (its time limit truncates it). Deterministic: another library's loop sees the same observations."""

    observation_space = gym.spaces.Box(-10.0, 10.0, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, action_reward: float = 0.5) -> None:
        self.action_reward, self.episodes = action_reward, -1

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:  # noqa: D102
        super().reset(seed=seed)
        if seed is not None:
            self.which = seed % 2
        self.t, self.episodes = 0, self.episodes + 1
        return self._obs(), {}

    def _obs(self) -> np.ndarray:
        return np.array([self.t, np.sin(1.7 * self.t + 0.9 * self.episodes + self.which), self.which], np.float32)

    def step(self, action):  # noqa: D102
        reward = 1.0 + self.t + self.action_reward * int(action)
        self.t += 1
        return self._obs(), reward, self.which == 0 and self.t == TERMINATE_AFTER, False, {}


if "HrecherTicker-v0" not in gym.registry:
    gym.register("HrecherTicker-v0", entry_point=Ticker, max_episode_steps=TIME_LIMIT, disable_env_checker=True)


def _cell(lstm: torch.nn.LSTM, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One LSTM step written out (PyTorch's gate order i, f, g, o)."""
    gates = x @ lstm.weight_ih_l0.T + lstm.bias_ih_l0 + h @ lstm.weight_hh_l0.T + lstm.bias_hh_l0
    i, f, g, o = gates.chunk(4, -1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def _linear(mlp: torch.nn.Module) -> torch.nn.Linear:
    (layer,) = [m for m in mlp.modules() if isinstance(m, torch.nn.Linear)]
    return layer


def _reference(model, obs: np.ndarray, starts: np.ndarray):
    """Per row of ``obs [R, N, 3]`` (every row acted on), from zero memory and zeroed where ``starts``: the actor's
    and critic's hidden outputs, values and logits, and the memory (h, c) before each row (after zeroing)."""
    rows = len(obs)
    ha = torch.zeros(rows, N, HIDDEN)
    hc, va, lg, mem = torch.zeros_like(ha), torch.zeros(rows, N), torch.zeros(rows, N, 2), []
    with torch.no_grad():
        x = model.encoder(torch.as_tensor(obs.reshape(rows * N, -1))).reshape(rows, N, -1)
        state = [torch.zeros(N, HIDDEN) for _ in range(4)]  # actor h, c, critic h, c
        for t in range(rows):
            keep = torch.as_tensor(~starts[t], dtype=torch.float32)[:, None]
            state = [s * keep for s in state]
            mem.append((torch.cat([state[0], state[2]], -1), torch.cat([state[1], state[3]], -1)))
            state[0], state[1] = _cell(model.lstm, x[t], state[0], state[1])
            state[2], state[3] = _cell(model.critic_lstm, x[t], state[2], state[3])
            ha[t], hc[t] = state[0], state[2]
            actor, critic = _linear(model.actor), _linear(model.critic)
            lg[t] = ha[t] @ actor.weight.T + actor.bias
            va[t] = (hc[t] @ critic.weight.T + critic.bias)[:, 0]
    return ha, hc, va, lg, mem


def _gae(rewards, values, next_value, terminated, dones):
    """GAE for one env's rollout, written out row by row."""
    adv = np.zeros(len(rewards))
    following = 0.0
    for t in reversed(range(len(rewards))):
        v_next = values[t + 1] if t + 1 < len(rewards) else next_value
        delta = rewards[t] + (0.0 if terminated[t] else GAMMA * v_next) - values[t]
        following = adv[t] = delta + (0.0 if dones[t] else GAMMA * LAM * following)
    return adv


@pytest.mark.parametrize("envs_per_minibatch, n_steps", [(1, 6), (2, 6), (2, 7)])
def test_rollouts_training_and_gae_match_a_hand_written_reference(envs_per_minibatch, n_steps, monkeypatch):
    """``n_steps`` 7: env 0's second episode ends on a rollout's last row, its reset-only row is the next one's
    first (acted on with the carried memory, the episode after it from zero)."""
    T = n_steps  # noqa: N806
    trainer = canter.make_trainer("recurrent_ppo", "HrecherTicker-v0", seed=0, max_steps=2 * T * N, eval_every=0,
                                  n_envs=N, n_steps=T, batch_size=envs_per_minibatch * T, n_epochs=2,
                                  lstm_hidden=HIDDEN, critic_lstm=True, gamma=GAMMA, gae_lambda=LAM,
                                  normalize_reward=False, normalize_obs=False, ortho_init=False)
    algo = trainer.agent.algorithm
    model = algo.model
    with torch.no_grad():  # away from zero biases: every term of the cell matters
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    monkeypatch.setattr(algo.optimizer, "step", lambda *a, **k: None)  # the weights stay: every pass must agree
    acting, training, rollouts = [], [], []
    lstm_calls = []

    def record(module, args, output):
        lstm_calls.append((module is model.lstm, args[0].detach().clone(),
                           tuple(s.detach().clone() for s in args[1]), output[0].detach().clone()))

    hooks = [m.register_forward_hook(record) for m in (model.lstm, model.critic_lstm)]
    sequence = model.sequence

    def recording_sequence(obs, state, starts):
        lstm_calls.clear()
        out = sequence(obs, state, starts)
        ya = torch.cat([y for actor, _, _, y in lstm_calls if actor])
        yc = torch.cat([y for actor, _, _, y in lstm_calls if not actor])
        training.append((obs.clone(), state, starts.clone(), ya, yc))
        return out

    learn = algo.learn

    def checking(batch):
        rollouts.append((batch, trainer.obs.copy(), trainer.buffer.rewards.copy(), trainer.buffer.terminated.copy(),
                         trainer.buffer.dones.copy()))
        acting.append(list(lstm_calls))
        result = learn(batch)
        lstm_calls.clear()
        return result

    monkeypatch.setattr(model, "sequence", recording_sequence)
    algo.learn = checking
    lstm_calls.clear()
    for _ in trainer():
        pass
    trainer.close()
    for hook in hooks:
        hook.remove()
    assert len(rollouts) == 2

    obs = np.concatenate([b.obs.numpy() for b, *_ in rollouts])  # [2T, N, 3]
    valid = np.concatenate([b.valid.numpy() for b, *_ in rollouts])
    which = obs[0, :, 2].astype(int)  # which env terminates (0) and which is truncated (1)
    # the episode starts, from the env's own rules: the first row, and the row after each reset-only row
    starts = np.zeros_like(valid)
    starts[0] = True
    starts[1:] = ~valid[:-1]
    terminated = np.concatenate([r[3] for r in rollouts]).astype(bool)
    dones = np.concatenate([r[4] for r in rollouts]).astype(bool)
    for e in range(N):
        steps = obs[:, e, 0]
        ends = np.flatnonzero(dones[:, e])
        limit = TERMINATE_AFTER if which[e] == 0 else TIME_LIMIT
        assert (steps[ends] == limit - 1).all() and len(ends) >= 2  # episodes end at different rows in each env
        assert terminated[ends, e].all() == (which[e] == 0) and terminated[ends, e].any() == (which[e] == 0)
    assert sorted(which.tolist()) == [0, 1]
    if T == 7:  # an episode's end on the first rollout's last row: the second starts with its reset-only row
        e = int(np.flatnonzero(which == 0)[0])
        assert dones[T - 1, e] and not valid[T, e] and starts[T + 1, e]
    np.testing.assert_array_equal(np.concatenate([b.starts.numpy() for b, *_ in rollouts]), starts)

    ha, hc, values, logits, mem = _reference(model, np.concatenate([obs, rollouts[1][1][None]]),
                                             np.concatenate([starts, ~valid[-1:]]))
    # acting: the stored values and log-probabilities, and the memory each rollout started from
    acts = np.concatenate([b.actions.numpy() for b, *_ in rollouts])
    log_probs = torch.log_softmax(logits[:2 * T], -1).gather(-1, torch.as_tensor(acts).long()[..., None])[..., 0]
    torch.testing.assert_close(torch.cat([b.values for b, *_ in rollouts]), values[:2 * T], rtol=0, atol=1e-6)
    torch.testing.assert_close(torch.cat([b.log_probs for b, *_ in rollouts]), log_probs, rtol=0, atol=1e-6)
    for k, (b, *_) in enumerate(rollouts):
        for ours, ref in zip(b.state, mem[k * T]):
            torch.testing.assert_close(ours[0], ref, rtol=0, atol=1e-6)
    assert rollouts[1][0].state[0].abs().sum() > 0  # the second rollout starts from a carried memory
    # acting zeroed the memory before every episode's first observation: the LSTM calls of the first rollout's
    # sample() steps (the calls after its update are policy_step's or the bootstrap's; only sample runs both LSTMs)
    actor_inputs = [state for actor, _, state, _ in acting[0] if actor][:T]
    for t, (h, c) in enumerate(actor_inputs):
        for e in np.flatnonzero(starts[t]):
            assert h[0, e].abs().max() == 0 and c[0, e].abs().max() == 0

    # GAE against the reference values
    for k, (b, next_obs, rewards, term, done) in enumerate(rollouts):
        rows = slice(k * T, (k + 1) * T)
        for e in range(N):
            expected_rewards = 1.0 + obs[rows, e, 0] + 0.5 * acts[rows, e]
            assert np.allclose(rewards[valid[rows, e], e], expected_rewards[valid[rows, e]])
            adv = _gae(expected_rewards, values[rows, e].numpy(), float(values[(k + 1) * T, e]), term[:, e], done[:, e])
            keep = valid[rows, e]
            np.testing.assert_allclose(b.advantages[:, e].numpy()[keep], adv[keep], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(b.returns[:, e].numpy()[keep], (adv + values[rows, e].numpy())[keep],
                                       rtol=1e-5, atol=1e-5)

    # training: every minibatch's recomputed hidden states equal the reference's (acting's)
    per_rollout = 2 * (N // envs_per_minibatch)  # two epochs
    assert len(training) == 2 * per_rollout
    for i, (mb_obs, state, mb_starts, ya, yc) in enumerate(training):
        k = i // per_rollout
        rows = slice(k * T, (k + 1) * T)
        envs = [next(e for e in range(N) if torch.equal(mb_obs[:, j], rollouts[k][0].obs[:, e]))
                for j in range(mb_obs.shape[1])]
        assert len(envs) == envs_per_minibatch
        np.testing.assert_array_equal(mb_starts.numpy(), starts[rows][:, envs])
        torch.testing.assert_close(ya, ha[rows][:, envs], rtol=0, atol=1e-6)
        torch.testing.assert_close(yc, hc[rows][:, envs], rtol=0, atol=1e-6)
