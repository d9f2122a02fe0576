"""Replay buffer: n-step targets by hand, truncation bootstrapping, boundaries, lean storage, save/load."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import canter
from canter.data import PrioritizedReplayBuffer, ReplayBuffer
from canter.errors import CanterError

G = 0.5


def feed(buf: ReplayBuffer, rewards, terminated=None, truncated=None, valid=None, start: float = 0.0) -> None:
    """Add ``len(rewards)`` steps of a 1-env stream whose observation is the step counter."""
    obs = np.full((1, 1), start, np.float32)
    for t, r in enumerate(rewards):
        flag = lambda xs: np.array([bool(xs[t])]) if xs is not None else np.array([False])  # noqa: E731
        buf.add(obs, np.array([t]), np.array([r], np.float32), obs + 1, flag(terminated),
                np.array([True]) if valid is None else np.array([valid[t]]), flag(truncated))
        obs = obs + 1


def batch_at(buf: ReplayBuffer, idx):
    return buf.transitions(np.asarray(idx))


def test_one_step_transitions_and_next_observation_from_the_next_row():
    buf = ReplayBuffer(10, (1,), (), gamma=G)
    feed(buf, [1.0, 2.0, 3.0])
    b = batch_at(buf, [0, 1, 2])
    np.testing.assert_array_equal(b.obs[:, 0], [0, 1, 2])
    np.testing.assert_array_equal(b.next_obs[:, 0], [1, 2, 3])  # the last one lives in the head row
    np.testing.assert_array_equal(b.rewards, [1, 2, 3])
    np.testing.assert_array_equal(b.discounts, [G, G, G])


def test_n_step_returns_by_hand_with_episode_ends_inside_the_window():
    # stream: r0 r1 r2(terminated) | reset row | r4 r5(truncated) | reset row | r7 r8
    rewards = [1.0, 2.0, 4.0, 0.0, 8.0, 16.0, 0.0, 32.0, 64.0]
    term = [0, 0, 1, 0, 0, 0, 0, 0, 0]
    trunc = [0, 0, 0, 0, 0, 1, 0, 0, 0]
    valid = [1, 1, 1, 0, 1, 1, 0, 1, 1]
    buf = ReplayBuffer(20, (1,), (), gamma=G, n_step=3)
    feed(buf, rewards, term, trunc, valid)
    b = batch_at(buf, [0, 1, 2, 4, 5, 7, 8])
    expected_rewards = [
        1 + G * 2 + G**2 * 4,  # full window, ends in the terminal step
        2 + G * 4,  # cut by termination
        4,
        8 + G * 16,  # cut by truncation
        16,
        32 + G * 64,  # cut by the newest data
        64,
    ]
    np.testing.assert_allclose(b.rewards, expected_rewards, rtol=1e-6)
    np.testing.assert_allclose(b.discounts, [G**3, G**2, G, G**2, G, G**2, G], rtol=1e-6)
    np.testing.assert_array_equal(b.terminated, [1, 1, 1, 0, 0, 0, 0])
    # next observation: after the terminal step / the truncated step's real final observation / the newest
    np.testing.assert_array_equal(b.next_obs[:, 0], [3, 3, 3, 6, 6, 9, 9])


def test_n_step_window_stops_at_reset_rows_even_without_truncated_flags():
    buf = ReplayBuffer(20, (1,), (), gamma=G, n_step=3)
    feed(buf, [1.0, 2.0, 0.0, 4.0], valid=[1, 1, 0, 1])  # step 1 ended by time limit, flag not given
    b = batch_at(buf, [0, 1])
    np.testing.assert_allclose(b.rewards, [1 + G * 2, 2])
    np.testing.assert_array_equal(b.next_obs[:, 0], [2, 2])
    np.testing.assert_array_equal(b.terminated, [0, 0])


def test_truncation_bootstraps_from_the_final_observation_and_termination_does_not():
    """A DQN target on a time-limit end must use Q(final obs); on a real end it must not."""
    trainer = canter.make_trainer("dqn", "CartPole-v1", net_arch=[8], learning_starts=10_000, seed=0)
    algo = trainer.algorithm
    buf = ReplayBuffer(10, (4,), (), act_dtype=np.int64, gamma=0.9)
    o0, o1, reset = np.ones((1, 4), np.float32), np.full((1, 4), 2.0, np.float32), np.zeros((1, 4), np.float32)
    buf.add(o0, np.array([0]), np.array([1.0], np.float32), o1, np.array([False]), np.array([True]), np.array([True]))
    buf.add(o1, np.array([0]), np.array([0.0], np.float32), reset, np.array([False]), np.array([False]), np.array([False]))
    batch = buf.transitions(np.array([0]))
    with torch.no_grad():
        bootstrap = 0.9 * algo.q_target.value(torch.from_numpy(o1)).max().item()
        q_sa = algo.q.value(torch.from_numpy(o0))[0, 0].item()
        per_sample, _, _ = algo.td_loss(batch)
    torch.testing.assert_close(batch.next_obs, torch.from_numpy(o1))  # the real final obs, not the reset one
    assert batch.terminated.item() == 0 and batch.discounts.item() == pytest.approx(0.9)
    td = q_sa - (1.0 + bootstrap)
    assert per_sample.item() == pytest.approx(0.5 * td**2 if abs(td) < 1 else abs(td) - 0.5, rel=1e-5)
    terminated = batch._replace(terminated=torch.ones(1))
    with torch.no_grad():
        per_sample_term, _, _ = algo.td_loss(terminated)
    td_term = q_sa - 1.0
    assert per_sample_term.item() == pytest.approx(0.5 * td_term**2 if abs(td_term) < 1 else abs(td_term) - 0.5, rel=1e-5)
    assert abs(bootstrap) > 1e-3  # the two cases really differ
    trainer.close()


def test_vector_envs_share_one_buffer_and_never_sample_reset_rows():
    buf = ReplayBuffer(8, (1,), (), n_envs=2, seed=0)
    obs = np.array([[0.0], [100.0]], np.float32)
    for t in range(6):
        valid = np.array([True, t != 2])  # env 1 had a reset-only step at t = 2
        buf.add(obs, np.array([t, t]), np.array([1.0, 2.0], np.float32), obs + 1, np.zeros(2, bool), valid)
        obs = obs + 1
    assert len(buf) == 4 * 2 - 1  # 4 rows kept per env (capacity 8 / 2 envs), one of them a reset row
    b = buf.sample(500)
    env = b.indices.numpy() % 2
    np.testing.assert_array_equal(b.rewards.numpy(), np.where(env == 0, 1.0, 2.0))
    np.testing.assert_array_equal(b.next_obs.numpy(), b.obs.numpy() + 1)
    assert not ((env == 1) & (b.obs[:, 0].numpy() == 102)).any()  # the reset-only row of env 1
    assert set(b.obs[:, 0].numpy().tolist()) == {2, 3, 4, 5, 103, 104, 105}


@settings(max_examples=40, deadline=None)
@given(capacity=st.integers(1, 12), n_envs=st.integers(1, 3), steps=st.integers(1, 30),
       seed=st.integers(0, 99), data=st.data())
def test_buffer_keeps_the_most_recent_valid_transitions(capacity, n_envs, steps, seed, data):
    buf = ReplayBuffer(capacity, (1,), (), n_envs=n_envs, seed=seed)
    rows = -(-capacity // n_envs)
    obs = np.zeros((n_envs, 1), np.float32)
    history = []
    for t in range(steps):
        valid = np.array(data.draw(st.lists(st.booleans(), min_size=n_envs, max_size=n_envs)))
        buf.add(obs, np.zeros(n_envs), np.zeros(n_envs, np.float32), obs + 1, np.zeros(n_envs, bool), valid)
        history.append(valid)
        obs = obs + 1
    kept = history[-rows:]
    assert len(buf) == sum(int(v.sum()) for v in kept)
    if len(buf):
        b = buf.sample(64)
        t = b.obs[:, 0].numpy()
        assert (t >= steps - rows).all()  # only the newest rows
        for step, env in zip(t.astype(int), b.indices.numpy() % n_envs):
            assert history[step][env]  # never a reset-only row
        np.testing.assert_array_equal(b.next_obs.numpy(), b.obs.numpy() + 1)


def test_a_broken_stream_gets_a_boundary_row_and_keeps_next_observations():
    buf = ReplayBuffer(10, (1,), (), gamma=G, n_step=2)
    a = np.zeros((1, 1), np.float32)
    buf.add(a, np.array([0]), np.array([1.0], np.float32), a + 1, np.array([False]))
    other = np.full((1, 1), 50.0, np.float32)  # not the previous next_obs: e.g. the env was reset outside
    buf.add(other, np.array([0]), np.array([2.0], np.float32), other + 1, np.array([False]))
    assert len(buf) == 2
    b = buf.sample(50)
    pairs = set(zip(b.obs[:, 0].tolist(), b.next_obs[:, 0].tolist(), b.rewards.tolist()))
    assert pairs == {(0.0, 1.0, 1.0), (50.0, 51.0, 2.0)}  # no window crosses the boundary


def test_image_observations_stay_uint8_and_each_frame_is_stored_once():
    shape = (4, 84, 84)
    buf = ReplayBuffer(1000, shape, (), obs_dtype=np.uint8, act_dtype=np.int64, n_envs=2)
    frame_bytes = int(np.prod(shape))
    assert buf.obs.dtype == np.uint8
    assert not hasattr(buf, "next_obs")
    assert buf.obs.nbytes == (1000 // 2 + 1) * 2 * frame_bytes  # capacity + one head row, no next_obs copy
    obs = np.random.default_rng(0).integers(0, 255, size=(2,) + shape, dtype=np.uint8)
    nxt = (obs + 1).astype(np.uint8)
    buf.add(obs, np.array([0, 1]), np.zeros(2, np.float32), nxt, np.zeros(2, bool))
    b = buf.sample(4)
    assert b.obs.dtype == torch.uint8 and b.next_obs.dtype == torch.uint8
    np.testing.assert_array_equal(b.next_obs.numpy(), nxt[b.indices.numpy() % 2])


@pytest.mark.parametrize("cls", [ReplayBuffer, PrioritizedReplayBuffer])
def test_save_load_round_trip_continues_identically(cls, tmp_path):
    a = cls(16, (2,), (1,), n_envs=2, n_step=3, seed=3)
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(2, 2)).astype(np.float32)
    for t in range(25):
        nxt = rng.normal(size=(2, 2)).astype(np.float32)
        a.add(obs, rng.normal(size=(2, 1)), rng.normal(size=2).astype(np.float32), nxt, rng.random(2) < 0.1,
              rng.random(2) < 0.9, rng.random(2) < 0.1)
        obs = nxt
    first = a.sample(8)
    if cls is PrioritizedReplayBuffer:
        a.update_priorities(first.indices, torch.arange(8.0))
    path = a.save(tmp_path / "buffer.npz")
    with np.load(path, allow_pickle=False) as data:  # plain arrays only
        assert "obs" in data.files and "next_obs" not in data.files
    b = cls(16, (2,), (1,), n_envs=2, n_step=3, seed=99)
    b.load(path)
    assert len(b) == len(a)
    for x, y in zip(a.sample(32), b.sample(32)):
        torch.testing.assert_close(x, y)
    step = (obs, np.zeros((2, 1)), np.ones(2, np.float32), obs + 1, np.zeros(2, bool))
    a.add(*step)
    b.add(*step)
    for x, y in zip(a.sample(32), b.sample(32)):
        torch.testing.assert_close(x, y)


def test_load_refuses_a_different_buffer(tmp_path):
    a = ReplayBuffer(16, (2,), ())
    path = a.save(tmp_path / "b.npz")
    with pytest.raises(CanterError, match="capacity"):
        ReplayBuffer(32, (2,), ()).load(path)
    with pytest.raises(CanterError, match="observations"):
        ReplayBuffer(16, (3,), ()).load(path)
    with pytest.raises(CanterError, match="not found"):
        a.load(tmp_path / "missing.npz")
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(CanterError, match="cannot read"):
        a.load(tmp_path / "bad.npz")


def test_sampling_an_empty_buffer_is_a_clear_error():
    with pytest.raises(CanterError, match="empty"):
        ReplayBuffer(4, (1,), ()).sample(2)


def test_done_flags_cut_the_window_even_when_the_next_row_is_valid():
    """Streams written without reset rows (not NEXT_STEP) still never cross an episode end."""
    buf = ReplayBuffer(10, (1,), (), gamma=G, n_step=3)
    feed(buf, [1.0, 2.0, 4.0, 8.0], terminated=[1, 0, 0, 0], truncated=[0, 1, 0, 0])
    b = batch_at(buf, [0, 1, 2])
    np.testing.assert_allclose(b.rewards, [1, 2, 4 + G * 8])
    np.testing.assert_array_equal(b.terminated, [1, 0, 0])
    np.testing.assert_allclose(b.discounts, [G, G, G**2])


def _stack_stream(buf, n_envs: int, stack: int, steps: int, seed: int = 0):
    """Feed ``buf`` a synthetic frame-stack stream (NEXT_STEP, copy padding); returns the log of
    ``(obs, next_obs)`` per step, indexed by the action (the step number)."""
    rng = np.random.default_rng(seed)
    frame = iter(range(1, 10**6))
    episodes = [[next(frame) % 251] * stack for _ in range(n_envs)]
    mk = lambda: np.stack([np.array(ep[-stack:], np.uint8).reshape(stack, 1) for ep in episodes])  # noqa: E731
    obs, prev_done, log = mk(), np.zeros(n_envs, bool), []
    for t in range(steps):
        term = np.zeros(n_envs, bool)
        for e in range(n_envs):
            f = next(frame) % 251
            episodes[e] = [f] * stack if prev_done[e] else episodes[e] + [f]
            term[e] = not prev_done[e] and rng.random() < 0.2
        nxt = mk()
        buf.add(obs, np.full(n_envs, t), np.zeros(n_envs, np.float32), nxt, term, ~prev_done, np.zeros(n_envs, bool))
        log.append((obs, nxt))
        obs, prev_done = nxt, term
    return log


def test_frame_stack_buffer_too_small_for_its_stack_is_a_clear_error():
    """Fewer rows per env than frames in a stack: the ring overwrites frames a stack still needs
    (it used to fail later, in add(), claiming the observations were not frame stacks)."""
    from canter.data.framestack import FrameStackReplay, PrioritizedFrameStackReplay

    for cls in (FrameStackReplay, PrioritizedFrameStackReplay):
        with pytest.raises(CanterError, match="at least 7 for 2 envs"):
            cls(6, (4, 1), (), obs_dtype=np.uint8, act_dtype=np.int64, n_envs=2)  # 3 rows per env: empties on wrap
        buf = cls(7, (4, 1), (), obs_dtype=np.uint8, act_dtype=np.int64, n_envs=2, seed=0)  # the smallest allowed
        log = _stack_stream(buf, 2, 4, 40)
        assert len(buf) > 0  # still sampleable after wrapping
        b = buf.sample(64)
        env = b.indices.numpy() % 2
        for i, (t, e) in enumerate(zip(b.actions.tolist(), env.tolist())):
            np.testing.assert_array_equal(b.obs[i].numpy(), log[t][0][e])
            np.testing.assert_array_equal(b.next_obs[i].numpy(), log[t][1][e])


def test_chronological_indices_env_by_env_oldest_first_after_wrapping():
    from canter.data.replay import ReplayBuffer

    buf = ReplayBuffer(6, (1,), (), n_envs=2)  # 3 rows per env plus the head row
    obs = np.zeros((2, 1), dtype=np.float32)
    for t in range(5):  # 5 vector steps into 4 rows: the oldest two are overwritten
        nxt = np.array([[t + 1.0], [100.0 + t + 1]], dtype=np.float32)
        buf.add(obs, np.zeros(2), np.zeros(2), nxt, np.zeros(2, dtype=bool))
        obs = nxt
    idx = buf.chronological_indices()
    assert len(idx) == len(buf) == 6
    np.testing.assert_array_equal(buf._obs[idx, 0], [2, 3, 4, 102, 103, 104])
    assert ReplayBuffer(4, (1,), ()).chronological_indices().size == 0


def test_reward_scaling_clips_each_step_of_an_n_step_sum():
    """normalize_reward with n-step returns: each step's reward is scaled and clipped at 10 on its own, as a
    one-step transition's is (the sum used to be clipped as one: 3 rewards of 3 at scale 4 gave 10, not
    10 + 0.5 * 10 + 0.25 * 10)."""
    trainer = canter.make_trainer("dqn", "CartPole-v1", n_step=3, gamma=G, normalize_reward=True, net_arch=[8],
                                  learning_starts=10, batch_size=16, eval_every=0)
    trainer.setup()
    trainer.agent.ret_rms.var = np.float64(1 / 16.0)  # scale 4 (up to the 1e-8 in the square root)
    obs, no = np.zeros((1, 4), np.float32), np.zeros(1, bool)
    for r in [3.0, 3.0, 3.0, -0.5, 1.0]:
        trainer.buffer.add(obs, np.zeros(1, np.int64), np.array([r], np.float32), obs + 1, no, ~no, no)
        obs = obs + 1
    seen = []
    trainer.agent.learn = lambda batch: seen.append(batch) or {}  # the batch the trainer's update gets
    trainer.train(1)
    by_row = {0: 10 + G * 10 + G * G * 10, 1: 10 + G * 10 + G * G * -2, 2: 10 + G * -2 + G * G * 4,
              3: -2 + G * 4, 4: 4.0}  # scaled 3 -> 12 -> clipped to 10; the last window ends at the newest data
    (batch,) = seen
    expected = [by_row[int(i)] for i in batch.indices]
    np.testing.assert_allclose(batch.rewards.numpy(), expected, rtol=1e-6)
    trainer.close()


def test_prioritized_n_step_batches_match_a_brute_force_reference():
    """Two NEXT_STEP streams with terminations and truncations, wrapped around a small prioritized
    n-step buffer: each sampled transition's n-step reward, ``gamma^k``, terminated flag and next
    observation, walked from the stream's log; its importance weight ``(N P(i))^-beta / max_k (N P(k))^-beta``
    over the N stored transitions with ``P(i) ~ p_i^alpha`` and beta annealed linearly from beta0 to 1;
    and how often each is drawn (stratified: within 2 of ``batch * P(i)``)."""
    gamma, n_step, alpha, beta0, eps = 0.8, 3, 0.7, 0.4, 1e-6
    buf = PrioritizedReplayBuffer(20, (1,), (), gamma=gamma, n_envs=2, n_step=n_step, alpha=alpha, beta0=beta0,
                                  eps=eps, seed=1)
    rng = np.random.default_rng(0)
    log = {0: [], 1: []}  # per env, per step: (reward, terminated, done, valid)
    prev_done = np.zeros(2, bool)
    for t in range(40):
        obs = np.array([[t], [1000 + t]], np.float32)  # env e's observation before step t: 1000 e + t
        term = rng.random(2) < 0.12
        trunc = (rng.random(2) < 0.12) & ~term
        reward = rng.normal(size=2).astype(np.float32)
        buf.add(obs, np.array([t, t]), reward, obs + 1, term, ~prev_done, trunc)
        for e in range(2):
            log[e].append((float(reward[e]), bool(term[e]), bool(term[e] | trunc[e]), not prev_done[e]))
        prev_done = term | trunc
    stored = buf.chronological_indices()
    assert buf.full and len(stored) < 40  # wrapped around: the oldest steps are gone
    td = rng.random(len(stored)) * 3
    buf.update_priorities(stored, td)
    p = dict(zip(stored.tolist(), (np.abs(td) + eps) ** alpha))
    total = sum(p.values())
    for step, beta in ((0, beta0), (300, beta0 + 0.3 * (1 - beta0)), (1000, 1.0), (5000, 1.0)):
        buf.set_progress(step, 1000)
        b = buf.sample(64)
        max_w = max((len(p) * q / total) ** -beta for q in p.values())
        want = [(len(p) * p[i] / total) ** -beta / max_w for i in b.indices.tolist()]
        np.testing.assert_allclose(b.weights.numpy(), want, rtol=1e-5)
    cuts = set()
    for i, start in enumerate(b.obs[:, 0].tolist()):
        e, t = divmod(int(start), 1000)
        assert log[e][t][3]  # never a reset row
        ret, k = 0.0, 0
        while k < n_step and t + k < len(log[e]) and log[e][t + k][3]:
            ret += gamma ** k * log[e][t + k][0]
            k += 1
            if log[e][t + k - 1][2]:
                break
        assert b.rewards[i].item() == pytest.approx(ret, rel=1e-5, abs=1e-6)
        assert b.discounts[i].item() == pytest.approx(gamma ** k)
        assert b.terminated[i].item() == log[e][t + k - 1][1]
        assert b.next_obs[i, 0].item() == 1000 * e + t + k
        cuts.add((k < n_step, log[e][t + k - 1][1], log[e][t + k - 1][2]))
    assert {(True, True, True), (True, False, True), (False, False, False)} <= cuts  # terminated, truncated, full
    counts = np.bincount(buf.sample(4000).indices.numpy(), minlength=buf.sums.capacity)
    for i, q in p.items():
        assert abs(counts[i] - 4000 * q / total) <= 2
    assert counts.sum() == 4000 and set(np.flatnonzero(counts)) <= set(p)


@pytest.mark.parametrize("prioritized", [False, True])
def test_frame_stack_n_step_samples_match_the_stream_across_episode_ends_and_wraps(prioritized):
    """Frame-once storage with 3-step returns, uniform and prioritized, sampled while the ring wraps and
    episodes end (terminated or truncated) and start (copy or zero padding): every sampled stack, next
    stack, n-step reward, discount and terminal is the stream's own, none from two episodes."""
    from canter.data.framestack import FrameStackReplay, PrioritizedFrameStackReplay

    n, stack, rng = 2, 4, np.random.default_rng(1)
    cls = PrioritizedFrameStackReplay if prioritized else FrameStackReplay
    buf = cls(30, (stack, 2), (), obs_dtype=np.uint8, act_dtype=np.int64, gamma=G, n_envs=n, n_step=3, seed=0)
    frames, episodes, zeros, log = iter(range(1, 10**6)), [[] for _ in range(n)], np.zeros(n, bool), []

    def stacks(new: np.ndarray) -> np.ndarray:  # each env's last frames, padded with copies or zeros (per episode)
        for e in range(n):
            f = next(frames) % 251
            episodes[e] = [f] if new[e] else episodes[e] + [f]
            zeros[e] = rng.random() < 0.5 if new[e] else zeros[e]
        pad = lambda e: [None if zeros[e] else episodes[e][0]] * (stack - len(episodes[e][-stack:]))  # noqa: E731
        return np.array([[[0, 0] if f is None else [f, 255 - f] for f in pad(e) + episodes[e][-stack:]]
                         for e in range(n)], np.uint8)

    obs, prev_done, checked = stacks(np.ones(n, bool)), np.zeros(n, bool), 0
    for t in range(160):
        term, trunc = rng.random(n) < 0.12, rng.random(n) < 0.06
        term, trunc = term & ~prev_done, trunc & ~prev_done
        nxt = stacks(prev_done)
        reward = rng.integers(1, 9, n).astype(np.float32)
        buf.add(obs, np.full(n, t), reward, nxt, term, ~prev_done, trunc)
        log.append((obs, nxt, reward, term, trunc, ~prev_done))
        obs, prev_done = nxt, term | trunc
        if t < 12:
            continue
        b = buf.sample(16)
        for i, (s, e) in enumerate(zip(b.actions.tolist(), (b.indices.numpy() % n).tolist())):
            assert log[s][5][e]  # a real transition
            np.testing.assert_array_equal(b.obs[i].numpy(), log[s][0][e])
            total, k = 0.0, 0
            while True:  # the window: up to 3 steps of the episode, no further than the newest step
                total += G**k * log[s + k][2][e]
                k += 1
                if k == 3 or log[s + k - 1][3][e] or log[s + k - 1][4][e] or s + k > t:
                    break
            np.testing.assert_array_equal(b.next_obs[i].numpy(), log[s + k - 1][1][e])
            assert (b.rewards[i].item(), b.discounts[i].item(), bool(b.terminated[i])) == \
                   (pytest.approx(total), pytest.approx(G**k), bool(log[s + k - 1][3][e]))
            checked += 1
        if prioritized:
            buf.update_priorities(b.indices, rng.random(16) * 5)
    assert buf.full and checked == 16 * 148


def test_load_refuses_a_buffer_of_other_actions_in_one_line(tmp_path):
    path = ReplayBuffer(16, (2,), (), act_dtype=np.int64).save(tmp_path / "discrete.npz")  # a DQN run's actions
    with pytest.raises(CanterError, match=r"actions do not match: saved \(\) int64, this buffer \(2,\) float32"):
        ReplayBuffer(16, (2,), (2,)).load(path)  # was NumPy's 'could not broadcast' ValueError
    with pytest.raises(CanterError, match="actions do not match"):
        ReplayBuffer(16, (2,), (), act_dtype=np.float32).load(path)


def test_a_prioritized_buffer_loads_a_uniform_buffers_file_with_equal_priorities(tmp_path):
    uniform = ReplayBuffer(16, (1,), (), act_dtype=np.int64, n_envs=2)
    obs = np.zeros((2, 1), np.float32)
    for t in range(5):
        uniform.add(obs, np.array([t, t]), np.ones(2, np.float32), obs + 1, np.zeros(2, bool), np.array([True, t != 2]))
        obs = obs + 1
    path = uniform.save(tmp_path / "uniform.npz")
    per = PrioritizedReplayBuffer(16, (1,), (), act_dtype=np.int64, n_envs=2, alpha=0.6)
    per.load(path)  # was KeyError: 'priorities'
    assert len(per) == len(uniform) == 9
    np.testing.assert_array_equal(per.sums.leaves > 0, per._valid[:per.sums.capacity])
    assert per.sums.total == pytest.approx(9.0) and per.mins.min == 1.0
    batch = per.sample(64)
    assert per._valid[batch.indices.numpy()].all()
    torch.testing.assert_close(batch.weights, torch.ones(64))  # equal priorities: equal weights
    per.update_priorities(batch.indices[:1], torch.tensor([3.0]))  # the loaded buffer learns on as a new one
    assert per.max_priority == pytest.approx(3.0 + per.eps)


@pytest.mark.parametrize("batch_size", [0, -3, 2.5, True])
def test_sample_refuses_a_batch_size_below_one_in_one_line(batch_size):
    """A prioritized buffer's sample(0) divided by zero (ZeroDivisionError), a negative size was NumPy's 'negative
    dimensions', a uniform buffer's sample(0) an empty batch; every buffer now refuses them, sharded ones too."""
    from canter.data.sharded import ShardedReplay

    buffers = [cls(16, (1,), (), act_dtype=np.int64, n_envs=1) for cls in (PrioritizedReplayBuffer, ReplayBuffer)]
    obs = np.zeros((1, 1), np.float32)
    for buf in buffers:
        for t in range(5):
            buf.add(obs, np.array([t]), np.ones(1, np.float32), obs + 1, np.zeros(1, bool), np.ones(1, bool))
        assert buf.sample(np.int64(2)).rewards.shape == (2,)
    for buf in [*buffers, ShardedReplay(buffers[:1])]:
        with pytest.raises(CanterError, match=rf"^batch_size must be a whole number >= 1, got {batch_size!r}$"):
            buf.sample(batch_size)
