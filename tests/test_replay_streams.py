"""What the off-policy trainer's replay holds, checked by hand against the env's own log: two env copies whose
episodes end at different steps (one terminated, one truncated), n-step windows cut inside them, the ring
wrapping, the training phases of ``train_freq_unit: episode`` with ``gradient_steps: -1``, and prioritized
n-step replay resumed from a checkpoint."""
import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.api import resume_trainer
from canter.registry import register
from support import stop_at_300

GAMMA, N_STEP = 0.5, 3
LENGTHS, TERMINATES = (3, 5), (True, False)  # copy 0: 3 steps, terminated; copy 1: 5 steps, truncated


class Tagged(gym.Env):
    """Observation ``(copy, episode, t)``; reward ``100 * copy + 10 * episode + t`` for the step reaching ``t``.
    The copy is the parity of the reset seed (the vector env of seed 0 seeds copy ``i`` with ``i``)."""

    observation_space = gym.spaces.Box(-1e4, 1e4, (3,), np.float32)

    def __init__(self, box: bool = False, render_mode=None):
        self.action_space = gym.spaces.Box(-1, 1, (1,), np.float32) if box else gym.spaces.Discrete(2)
        self.copy, self.episode, self.t, self.log = 0, -1, 0, []

    def _obs(self):
        return np.array([self.copy, self.episode, self.t], np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.copy, self.log = seed % 2, []  # (the evaluation env's seed: any copy)
        else:
            self.log.append(None)  # a vector step that only resets
        self.episode, self.t = self.episode + 1, 0
        return self._obs(), {}

    def step(self, action):
        self.log.append((self.episode, self.t))
        self.t += 1
        end = self.t >= LENGTHS[self.copy]
        reward = float(100 * self.copy + 10 * self.episode + self.t)
        return self._obs(), reward, end and TERMINATES[self.copy], end and not TERMINATES[self.copy], {}


register("env", "Tagged-replay-test")(Tagged)


def _trainer(algo: str, steps: int, **kw):
    trainer = canter.make_trainer(algo, "Tagged-replay-test", seed=0, max_steps=steps, n_envs=2, vectorization="sync",
                                  env_kwargs={"box": algo != "dqn"}, gamma=GAMMA, batch_size=4, net_arch=[8],
                                  eval_every=0, eval_episodes=1, **kw)
    return trainer


def _expected(obs, head):
    """The n-step transition from ``obs = (copy, episode, t)``: reward, discount, terminated, next observation."""
    c, ep, t = (int(x) for x in obs)
    newest = int(head[c][2]) - t if int(head[c][1]) == ep else N_STEP  # the window stops at the newest data
    k = min(N_STEP, LENGTHS[c] - t, newest)
    reward = sum(GAMMA ** j * (100 * c + 10 * ep + t + j + 1) for j in range(k))
    return reward, GAMMA ** k, float(TERMINATES[c] and t + k == LENGTHS[c]), [c, ep, t + k]


@pytest.mark.parametrize("algo, prioritized, steps", [("dqn", False, 40), ("dqn", True, 41), ("sac", True, 47),
                                                      ("td3", False, 43)])
def test_n_step_transitions_of_two_copies_match_the_envs_log_after_the_ring_wraps(algo, prioritized, steps):
    trainer = _trainer(algo, steps, n_step=N_STEP, buffer_size=16, learning_starts=8, prioritized=prioritized)
    list(trainer())
    buf = trainer.buffer
    assert buf.full  # 8 rows per copy, overwritten several times
    idx = buf.chronological_indices()
    batch = buf.transitions(idx)
    head = buf.obs[buf.pos]
    held = {0: [], 1: []}
    for i, obs in enumerate(batch.obs.numpy()):
        c = int(obs[0])
        assert idx[i] % 2 == c  # each copy's transitions in its own column
        held[c].append((int(obs[1]), int(obs[2])))
        reward, discount, terminated, next_obs = _expected(obs, head)
        assert batch.rewards[i].item() == pytest.approx(reward)
        assert batch.discounts[i].item() == pytest.approx(discount)
        assert batch.terminated[i].item() == terminated
        assert batch.next_obs[i].tolist() == next_obs
    for c, log in enumerate(trainer.env.env.get_attr("log")):  # the newest 8 vector steps, less the reset-only ones
        assert held[c] == [s for s in log[-(buf.length - 1):] if s is not None]
    trainer.close()


@pytest.mark.parametrize("algo", ["dqn", "sac", "td3"])
def test_episode_phases_of_two_copies_take_one_update_per_env_step(algo):
    # episodes end at vector steps 3, 7, 11, ... (copy 0) and 5, 11, 17, ... (copy 1); a phase ends once 2 have
    trainer = _trainer(algo, 40, buffer_size=64, learning_starts=0, train_freq=2, train_freq_unit="episode",
                       gradient_steps=-1)
    phases = []
    train = trainer.train

    def counted(gradient_steps):
        before = trainer.algorithm.updates
        out = train(gradient_steps)
        phases.append((trainer.step, gradient_steps, trainer.algorithm.updates - before))
        return out

    trainer.train = counted
    list(trainer())
    assert phases == [(10, 10, 10), (22, 12, 12), (34, 12, 12), (40, 6, 6)]  # the last phase cut by max_steps
    trainer.close()


@pytest.mark.slow
@pytest.mark.parametrize("algo, env, kw", [
    ("dqn", "CartPole-v1", dict(train_freq=4, gradient_steps=2)),
    ("sac", "Pendulum-v1", dict(train_freq=2, train_freq_unit="episode", gradient_steps=-1)),
])
def test_prioritized_n_step_replay_resumes_as_the_uninterrupted_run(tmp_path, algo, env, kw):
    common = dict(env=env, seed=3, max_steps=600, n_envs=2, prioritized=True, n_step=N_STEP, buffer_size=300,
                  learning_starts=50, batch_size=16, net_arch=[16], eval_every=0, quiet=True, checkpoint_every=300, **kw)
    whole = canter.make_trainer(algo, run_dir=tmp_path / "whole", **common)
    list(whole())
    whole.close()
    canter.train(algo, run_dir=tmp_path / "part", hooks={"after_update": stop_at_300}, **common)
    part = resume_trainer(tmp_path / "part")
    list(part())
    part.close()
    assert part.resume_exact is True and part.buffer.full  # the ring wrapped after the resume
    saved, resumed = whole.buffer.state_dict(), part.buffer.state_dict()
    for key, value in saved.items():  # the stored stream, its priorities, beta (1 at the end), the sampling generator
        assert np.array_equal(value, resumed[key]) if isinstance(value, np.ndarray) else value == resumed[key], key
    assert saved["beta"] == 1.0
    for name, module in whole.algorithm.modules().items():
        for a, b in zip(module.parameters(), part.algorithm.modules()[name].parameters()):
            assert torch.equal(a, b), name
