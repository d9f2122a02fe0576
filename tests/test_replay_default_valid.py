"""ReplayBuffer.add without ``valid``: the NEXT_STEP stream's reset-only steps are found by the buffer."""
import numpy as np

from canter.data import PrioritizedReplayBuffer, ReplayBuffer
from canter.data.framestack import FrameStackReplay


def _next_step_stream(buf, episodes: int = 3, length: int = 2) -> None:
    """Episodes of ``length`` steps, observation ``10 * episode + k``, each followed by its reset-only step;
    ``add`` is called as a Tianshou user would, without ``valid``."""
    obs, ep = np.zeros((1, 1), np.float32), 0
    for _ in range(episodes * (length + 1)):
        k = int(obs[0, 0]) % 10
        if k == length:  # the step after the episode's last one only resets the env
            ep += 1
            nxt, term = np.full((1, 1), 10.0 * ep, np.float32), np.array([False])
        else:
            nxt, term = obs + 1, np.array([k == length - 1])
        buf.add(obs, np.zeros(1), np.full(1, float(k != length), np.float32), nxt, term)  # gymnasium's reset: 0
        obs = nxt


def test_reset_only_steps_are_not_transitions_without_valid():
    for cls in (ReplayBuffer, PrioritizedReplayBuffer):
        buf = cls(100, (1,), (), seed=0, n_step=3, gamma=0.5)
        _next_step_stream(buf)
        assert len(buf) == 6  # 3 episodes of 2 transitions; the 3 reset-only steps were 3 more
        b = buf.transitions(np.flatnonzero(buf.valid.reshape(-1)))
        np.testing.assert_array_equal(b.obs[:, 0], [0, 1, 10, 11, 20, 21])
        np.testing.assert_array_equal(b.next_obs[:, 0], [2, 2, 12, 12, 22, 22])  # no window crosses an episode
        np.testing.assert_array_equal(b.terminated, [1, 1, 1, 1, 1, 1])
        np.testing.assert_allclose(b.rewards, [1.5, 1, 1.5, 1, 1.5, 1])
        assert set(buf.sample(500).obs[:, 0].tolist()) == {0, 1, 10, 11, 20, 21}


def test_a_reset_between_calls_keeps_the_first_step_of_the_next_episode():
    # SAME_STEP-style use: next_obs is the final observation and the next call starts from the reset one;
    # the buffer inserts a boundary row and the new episode's first step stays a transition
    buf = ReplayBuffer(100, (1,), (), seed=0)
    buf.add(np.zeros((1, 1), np.float32), np.zeros(1), np.ones(1, np.float32), np.ones((1, 1), np.float32),
            np.array([True]))
    buf.add(np.full((1, 1), 5, np.float32), np.zeros(1), np.ones(1, np.float32), np.full((1, 1), 6, np.float32),
            np.array([False]))
    assert len(buf) == 2
    b = buf.transitions(np.flatnonzero(buf.valid.reshape(-1)))
    np.testing.assert_array_equal(b.obs[:, 0], [0, 5])
    np.testing.assert_array_equal(b.next_obs[:, 0], [1, 6])


def test_frame_stack_buffer_finds_reset_only_steps_of_each_env():
    # two envs, env 1's episodes end on other steps than env 0's; stacks of 2 frames padded with the first frame
    buf = FrameStackReplay(40, (2, 1), (), obs_dtype=np.uint8, n_envs=2)
    obs = np.array([[[1], [1]], [[7], [7]]], np.uint8)  # [2 envs, 2 frames, 1]
    ends = {0: {1, 4}, 1: {2}}
    reset_next = np.zeros(2, bool)
    for t in range(6):
        nxt = obs.copy()
        term = np.array([t in ends[0], t in ends[1]])
        for e in range(2):
            new = 50 + 10 * e + t
            nxt[e] = [[new], [new]] if reset_next[e] else [obs[e, 1], [new]]
        buf.add(obs, np.zeros(2), (~reset_next).astype(np.float32), nxt, term)  # a reset-only step's reward: 0
        reset_next, obs = term, nxt
    np.testing.assert_array_equal(buf.valid[:6], [[1, 1], [1, 1], [0, 1], [1, 0], [1, 1], [0, 1]])


def test_a_same_step_loops_first_step_of_an_episode_stays_a_transition():
    # SAME_STEP: the step after an episode's last one is the new episode's first, a real transition; where the
    # buffer cannot see the reset (next_obs passed without the final observation, or constant observations) it
    # took that step for a NEXT_STEP reset-only one, which gymnasium gives reward 0 and no end (reward 1 here)
    for constant in (False, True):
        buf = ReplayBuffer(100, (1,), (), seed=0)
        obs = np.zeros((1, 1), np.float32)
        for t in range(6):  # episodes of 2 steps
            term = np.array([t % 2 == 1])
            nxt = np.zeros((1, 1), np.float32) if constant else (obs + 1) * ~term
            buf.add(obs, np.zeros(1), np.ones(1, np.float32), nxt.copy() if constant else nxt, term)
            obs = nxt
        assert len(buf) == 6 and buf.valid[:6, 0].all(), buf.valid[:6, 0]
