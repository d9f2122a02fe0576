"""Hindsight experience replay: where relabelled goals come from, their rewards and flags, and refusals
(learning, success rates and resume: test_her_training.py)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from canter.data.her import HerReplayBuffer
from canter.envs.goals import BitFlippingEnv, GoalLayout
from canter.envs.packing import pack_observations
from goal_env import PointGoalEnv
from support import assert_train_refused

STORED_REWARD = 7.0  # real transitions' reward: tells them apart from relabelled ones (0 or -1)
DESIRED = -5.0  # every real transition's desired goal


class TerminatingPoint(PointGoalEnv):
    """PointGoal whose episodes end at the goal (a compute_terminated for relabelled transitions)."""

    def compute_terminated(self, achieved_goal, desired_goal, info):
        return self.compute_reward(achieved_goal, desired_goal, info) == 0.0


def _layout(env_cls=PointGoalEnv) -> GoalLayout:
    return GoalLayout(pack_observations(env_cls()), "test")


def _row(episode: int, k: int) -> np.ndarray:
    """A flat PointGoal observation: achieved goal (episode, k), desired goal (-5, -5), observation 0."""
    return np.array([episode, k, DESIRED, DESIRED, 0, 0], np.float32)


def _fill(buf: HerReplayBuffer, lengths: list[list[int]], steps: int) -> dict[int, int]:
    """Feed ``steps`` vector steps of NEXT_STEP streams: env ``e`` plays episodes of ``lengths[e]``
    (cycled); episode ids are ``100 * e + i``. Returns the steps made so far by each env's last episode."""
    n = buf.n_envs
    ep = [0] * n
    k = [0] * n
    ended = [False] * n
    obs = np.stack([_row(100 * e, 0) for e in range(n)])
    for _ in range(steps):
        nxt, term, trunc, valid = obs.copy(), np.zeros(n, bool), np.zeros(n, bool), np.ones(n, bool)
        for e in range(n):
            if ended[e]:  # the reset-only step after an episode's end
                ep[e], k[e], ended[e] = ep[e] + 1, 0, False
                nxt[e], valid[e] = _row(100 * e + ep[e], 0), False
                continue
            k[e] += 1
            nxt[e] = _row(100 * e + ep[e], k[e])
            if k[e] == lengths[e][ep[e] % len(lengths[e])]:
                ended[e] = trunc[e] = True
        buf.add(obs, np.zeros((n, 2), np.float32), np.full(n, STORED_REWARD), nxt, term, valid, trunc)
        obs = nxt
    return {100 * e + ep[e]: k[e] for e in range(n)}


def _buffer(strategy: str = "future", n_envs: int = 1, capacity: int = 10_000, her_goals: int = 4,
            env_cls=PointGoalEnv, seed: int = 0) -> HerReplayBuffer:
    return HerReplayBuffer(capacity, (6,), (2,), n_envs=n_envs, seed=seed, layout=_layout(env_cls),
                           her_goals=her_goals, strategy=strategy)


def _decoded(buf: HerReplayBuffer, size: int = 4000):
    b = buf.sample(size)
    obs, nxt = b.obs.numpy(), b.next_obs.numpy()
    return obs, nxt, b.rewards.numpy(), b.terminated.numpy()


def _episode_length(episode: int, lengths: list[list[int]]) -> int:
    e, i = divmod(episode, 100)
    return lengths[e][i % len(lengths[e])]


@pytest.mark.parametrize("strategy", ["future", "final", "episode"])
def test_relabelled_goals_come_from_the_same_episode(strategy):
    lengths = [[5, 9, 3], [7, 4]]
    buf = _buffer(strategy, n_envs=2)
    last = _fill(buf, lengths, 400)
    obs, nxt, rewards, _ = _decoded(buf)
    relabelled = obs[:, 2] != DESIRED
    assert np.array_equal(obs[:, 2:4], nxt[:, 2:4])  # the same goal in the observation and the next one
    assert abs(relabelled.mean() - 0.8) < 0.03  # her_goals=4: 4 of 5 sampled transitions
    assert np.all(rewards[~relabelled] == STORED_REWARD)
    ep, k = obs[relabelled, 0].astype(int), obs[relabelled, 1].astype(int)  # transition k of episode ep
    goal_ep, goal_k = obs[relabelled, 2].astype(int), obs[relabelled, 3].astype(int)
    assert np.array_equal(goal_ep, ep)
    # the episode each env is still playing counts up to its newest step
    ends = np.array([last.get(x, _episode_length(x, lengths)) for x in ep])
    if strategy == "future":
        assert np.all((goal_k >= k + 1) & (goal_k <= ends))
    elif strategy == "final":
        assert np.all(goal_k == ends)
    else:
        assert np.all((goal_k >= 1) & (goal_k <= ends))
        assert np.any(goal_k <= k)  # earlier steps too
    # the env's reward: 0 exactly where the goal is the next observation's achieved goal
    reached = goal_k == k + 1
    assert np.array_equal(rewards[relabelled], np.where(reached, 0.0, -1.0))
    if strategy != "final":
        assert reached.any() and not reached.all()


def test_goals_after_the_ring_wraps_stay_in_their_episode():
    lengths = [[37]]  # longer than the ring holds of some episodes' starts
    buf = _buffer("episode", capacity=50)
    _fill(buf, lengths, 333)
    obs, nxt, rewards, _ = _decoded(buf)
    relabelled = obs[:, 2] != DESIRED
    held = buf.obs[buf.valid]  # what the ring still holds
    assert np.array_equal(obs[relabelled, 2], obs[relabelled, 0])
    for episode, goal_k in zip(obs[relabelled, 2].astype(int), obs[relabelled, 3].astype(int)):
        oldest = held[held[:, 0] == episode, 1].min()
        assert goal_k >= oldest + 1  # never a step the ring has overwritten


@pytest.mark.parametrize("strategy", ["future", "final", "episode"])
def test_an_episode_longer_than_the_ring_keeps_its_goals(strategy):
    """An episode of 30 steps in a ring of 21 rows writes over its own start; every row it still holds
    must know where it ends (it once marked only the last 9, and the rest took goals from the next
    episode, even its reset observation)."""
    buf = _buffer(strategy, capacity=20)
    assert buf.length == 21
    _fill(buf, [[30, 50]], 36)  # episode 0: 30 steps, its reset-only step, then 5 steps of episode 1
    obs, nxt, rewards, _ = _decoded(buf)
    relabelled = obs[:, 2] != DESIRED
    assert relabelled.any()
    assert np.array_equal(obs[relabelled, 2], obs[relabelled, 0])  # the goal comes from the same episode
    held = buf.obs[buf.valid]
    for episode, k, goal_k in zip(obs[relabelled, 0].astype(int), obs[relabelled, 1].astype(int),
                                  obs[relabelled, 3].astype(int)):
        last = 30 if episode == 0 else 5
        assert held[held[:, 0] == episode, 1].min() + 1 <= goal_k <= last
        if strategy == "future":
            assert goal_k >= k + 1
        elif strategy == "final":
            assert goal_k == last


class PerStepTerminatingPoint(PointGoalEnv):
    """compute_terminated for one step only, as some gymnasium-robotics envs write it: a batch gets one
    value (here: whether the first row reached its goal), so canter asks row by row."""

    def compute_terminated(self, achieved_goal, desired_goal, info):
        return bool(np.linalg.norm(np.atleast_2d(achieved_goal)[0] - np.atleast_2d(desired_goal)[0]) == 0)


@pytest.mark.parametrize("env_cls", [TerminatingPoint, PerStepTerminatingPoint], ids=["batched", "per-step"])
def test_terminated_comes_from_compute_terminated_when_the_env_has_it(env_cls):
    buf = _buffer("future", env_cls=env_cls)
    _fill(buf, [[6]], 200)
    obs, nxt, rewards, terminated = _decoded(buf)
    relabelled = obs[:, 2] != DESIRED
    assert np.array_equal(terminated[relabelled], rewards[relabelled] == 0.0)
    assert terminated[relabelled].any() and not terminated[relabelled].all()
    assert not terminated[~relabelled].any()  # the stored flags (truncations only)
    plain = _buffer("future")
    _fill(plain, [[6]], 200)
    assert not _decoded(plain)[3].any()  # no compute_terminated: the stored flag, as SB3 keeps it


class UnwrittenTerminatedPoint(PointGoalEnv):
    """As a subclass of gymnasium-robotics' GoalEnv that writes compute_reward only: GoalEnv declares
    compute_terminated (an abstractmethod on a gym.Env, so not enforced) raising NotImplementedError."""

    def compute_terminated(self, achieved_goal, desired_goal, info):
        raise NotImplementedError


def test_a_compute_terminated_that_is_not_implemented_keeps_the_stored_flags():
    """It once raised NotImplementedError out of the first training step (a traceback)."""
    buf = _buffer("future", env_cls=UnwrittenTerminatedPoint)
    _fill(buf, [[6]], 200)
    obs, _, rewards, terminated = _decoded(buf)
    relabelled = obs[:, 2] != DESIRED
    assert (rewards[relabelled] == 0.0).any() and not terminated.any()  # the stored flags: truncations only
    assert buf.layout.compute_terminated is None


def test_a_boundary_row_ends_the_episode_for_relabelling():
    buf = _buffer("future")
    _fill(buf, [[50]], 10)  # 10 steps of episode 0, then the env is reset without an episode end
    first = np.array([[3, 0, DESIRED, DESIRED, 0, 0]], np.float32)
    buf.add(first, np.zeros((1, 2), np.float32), np.array([STORED_REWARD]), np.array([[3, 1, DESIRED, DESIRED, 0, 0]],
            np.float32), np.zeros(1, bool))
    obs, _, _, _ = _decoded(buf)
    relabelled = obs[:, 2] != DESIRED
    cut = relabelled & (obs[:, 0] == 0)
    assert np.all(obs[cut, 2] == 0)  # episode 0's goals are its own
    assert obs[cut, 3].max() == 10  # and end where it was cut
    assert np.all(obs[relabelled & (obs[:, 0] == 3), 2:4] == [3, 1])  # the new one has its own step only


def test_state_round_trip_samples_the_same(tmp_path):
    buf = _buffer("future", n_envs=2)
    _fill(buf, [[5, 9], [4]], 123)
    buf.save(tmp_path / "her.npz")
    other = _buffer("future", n_envs=2, seed=99)
    other.load(tmp_path / "her.npz")
    for a, b in zip(buf.sample(512), other.sample(512)):
        assert np.array_equal(a.numpy(), b.numpy())
    _fill(buf, [[5], [3]], 7)  # both continue alike: the running episodes' state was saved too
    _fill(other, [[5], [3]], 7)
    assert np.array_equal(buf.ep_end, other.ep_end) and np.array_equal(buf.ep_start, other.ep_start)


def test_goal_columns_skip_an_action_mask_packed_last():
    class MaskedGoals(PointGoalEnv):
        def __init__(self):
            super().__init__()
            self.observation_space = gym.spaces.Dict({**self.observation_space.spaces,
                                                      "action_mask": gym.spaces.MultiBinary(3)})
            self.action_space = gym.spaces.Discrete(3)

        def _obs(self):
            return {**super()._obs(), "action_mask": np.array([1, 0, 1], np.int8)}

    env = pack_observations(MaskedGoals())
    layout = GoalLayout(env, "test")
    obs, _ = env.reset(seed=0)
    raw = env.unwrapped._obs()
    assert np.array_equal(layout.goals(obs[None], "achieved_goal")[0], raw["achieved_goal"])
    assert np.array_equal(layout.goals(obs[None], "desired_goal")[0], raw["desired_goal"])


def test_a_goal_that_flattens_to_another_width_is_refused():
    """A MultiDiscrete achieved goal (one-hot when flattened: 6 columns) beside a MultiBinary(3) desired
    goal has the same shape, so it once passed, and training crashed at the first relabelled sample
    ("cannot reshape array of size 156 into shape (26,3)")."""
    from canter.errors import CanterError

    class OneHotAchieved(PointGoalEnv):
        def __init__(self):
            super().__init__()
            self.observation_space = gym.spaces.Dict({"observation": gym.spaces.MultiBinary(3),
                                                      "achieved_goal": gym.spaces.MultiDiscrete([2, 2, 2]),
                                                      "desired_goal": gym.spaces.MultiBinary(3)})

    with pytest.raises(CanterError, match="her_goals needs Box \\(or MultiBinary\\) goals of one shape"):
        GoalLayout(pack_observations(OneHotAchieved()), "test")


def test_bit_flipping_env():
    env = BitFlippingEnv(n_bits=4)
    obs, _ = env.reset(seed=0)
    assert not np.array_equal(obs["achieved_goal"], obs["desired_goal"])
    for bit in np.flatnonzero(obs["achieved_goal"] != obs["desired_goal"]):
        obs, reward, terminated, truncated, info = env.step(bit)
    assert (reward, terminated, truncated, info["is_success"]) == (0.0, True, False, True)
    goals = np.array([[0, 1], [1, 1]])
    assert env.compute_reward(goals, np.array([[0, 1], [0, 1]]), {}).tolist() == [0.0, -1.0]


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_steps=-3), "max_steps to be an integer >= 1, got -3"),  # once: every episode truncated after 1 step
    (dict(max_steps=0), "max_steps to be an integer >= 1, got 0"),  # once: silently n_bits
    (dict(n_bits=2.5), "n_bits to be an integer >= 1, got 2.5"),  # once: silently 2 bits
    (dict(n_bits="abc"), "n_bits to be an integer >= 1, got 'abc'"),  # once: "'<' not supported between ..."
])
def test_bit_flipping_refuses_bad_sizes(kwargs, message):
    from canter.errors import CanterError

    with pytest.raises(CanterError, match=message):
        BitFlippingEnv(**kwargs)
    assert BitFlippingEnv(n_bits=np.int64(3), max_steps=5).max_steps == 5


@pytest.mark.parametrize("algo, env, sets, message", [
    ("dqn", "CartPole-v1", ["her_goals=4"], "her_goals needs a goal env"),
    ("dqn", "BitFlipping-v0", ["her_goals=4", "n_step=3"], "set n_step=1"),
    ("dqn", "BitFlipping-v0", ["her_goals=4", "prioritized=true"], "set prioritized=false"),
    ("dqn", "BitFlipping-v0", ["her_strategy=later"], "her_strategy"),
    ("qmix", "pettingzoo:tests.match_agents", ["her_goals=4"], "her_goals needs a single-agent goal env"),
])


def test_refusals(tmp_path, capsys, algo, env, sets, message):
    args = ["train", algo, "--env", env, "--max-steps", "5000"]
    for s in sets:
        args += ["--set", s]
    assert_train_refused(capsys, tmp_path, args, message)


def test_tune_does_not_search_hindsight_by_default():
    """her_goals > 0 is refused on envs without goals, so a default study (CartPole) must not draw it;
    a goal env's study adds it with --space."""
    from canter.tools.tune import search_space

    for algo in ("dqn", "sac", "td3", "tqc"):
        assert "her_goals" not in search_space(algo)


def test_goal_columns_follow_the_packed_order_with_an_action_mask_and_unsorted_keys():
    from canter.envs.packing import PackObservations

    class MaskedGoal(gym.Env):
        observation_space = gym.spaces.Dict({
            "observation": gym.spaces.Box(-9, 9, (1,)), "desired_goal": gym.spaces.Box(-9, 9, (2,)),
            "achieved_goal": gym.spaces.Box(-9, 9, (2,)), "action_mask": gym.spaces.MultiBinary(3)}, sort_keys=False)
        action_space = gym.spaces.Discrete(3)

        def reset(self, seed=None, options=None):
            return {"observation": np.array([7.0], np.float32), "desired_goal": np.array([1.0, 2.0], np.float32),
                    "achieved_goal": np.array([3.0, 4.0], np.float32), "action_mask": np.ones(3, np.int8)}, {}

        def compute_reward(self, achieved, desired, info):
            return -np.abs(achieved - desired).sum(-1)

    env = PackObservations(MaskedGoal())
    obs, _ = env.reset()
    layout = GoalLayout(env, "MaskedGoal")
    np.testing.assert_array_equal(layout.goals(obs[None], "desired_goal"), [[1.0, 2.0]])
    np.testing.assert_array_equal(layout.goals(obs[None], "achieved_goal"), [[3.0, 4.0]])


def test_a_misspelled_bit_flipping_kwarg_names_the_closest_one():
    # the factory took **kwargs, so the error (training, and canter play's single env) named no valid key
    from canter.envs import make_env, make_vec_env
    from canter.errors import CanterError

    with pytest.raises(CanterError, match=r"'n_bit'; did you mean 'n_bits'\?$"):
        make_vec_env("BitFlipping-v0", 1, "sync", env_kwargs={"n_bit": 5})
    with pytest.raises(CanterError, match=r"'max_step'; did you mean 'max_steps'\?$"):
        make_env("BitFlipping-v0", max_step=5)
    assert make_env("BitFlipping-v0", n_bits=4).observation_space.shape == (12,)


class InfoReadingPoint(PointGoalEnv):
    """PointGoal whose batched reward reads an info key its steps never report (relabelling gives each
    transition its own step's info, without it)."""

    def compute_reward(self, achieved_goal, desired_goal, info):
        scale = np.array([i["scale"] for i in info]) if isinstance(info, list) else info.get("scale", 2.0)
        return super().compute_reward(achieved_goal, desired_goal, {}) * scale


class ResetInfoReadingPoint(InfoReadingPoint):
    """InfoReadingPoint whose reset reports the key: relabelling never gives it (a transition's info is its step's)."""

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return obs, {**info, "scale": 2.0}


class UnwrittenReward(PointGoalEnv):
    """A goal env that declares compute_reward without writing it (gymnasium-robotics' GoalEnv's own)."""

    def compute_reward(self, achieved_goal, desired_goal, info):
        raise NotImplementedError


@pytest.mark.parametrize("env_cls, message", [
    (InfoReadingPoint, "compute_reward(achieved_goal, desired_goal, info) of 'info-point' fails on a batch of goals "
                       "with a step's infos, as hindsight replay calls it: KeyError: 'scale'"),
    (ResetInfoReadingPoint, "compute_reward(achieved_goal, desired_goal, info) of 'info-point' fails on a batch of "
                            "goals with a step's infos, as hindsight replay calls it: KeyError: 'scale'"),
    (UnwrittenReward, "needs the env's compute_reward, which 'info-point' does not implement"),
])
def test_a_reward_relabelling_cannot_compute_is_refused_before_the_run_starts(tmp_path, capsys, env_cls, message,
                                                                             monkeypatch):
    """A compute_reward that fails on a step's infos (reads a key no step reports) was a KeyError traceback at
    the first update, after the run had started writing; so was one reading a key only reset's info has (the probe
    gave it the reset's info and its step's together)."""
    monkeypatch.delitem(gym.registry, "info-point", raising=False)
    gym.register("info-point", entry_point=env_cls, disable_env_checker=True)
    try:
        assert_train_refused(capsys, tmp_path, ["train", "sac", "--env", "info-point", "--set", "her_goals=4",
                                                "--set", "learning_starts=10", "--max-steps", "40"], message)
    finally:
        gym.registry.pop("info-point", None)



def test_a_plain_buffers_file_is_refused_by_a_hindsight_buffer_before_anything_is_overwritten(tmp_path):
    from canter.data import ReplayBuffer
    from canter.errors import CanterError

    plain = ReplayBuffer(10_000, (6,), (2,), n_envs=1)
    _fill(plain, [[5]], 10)
    path = plain.save(tmp_path / "plain.npz")
    buf = _buffer()
    _fill(buf, [[3]], 12)
    kept, held = {k: np.copy(getattr(buf, k)) for k in buf.ARRAYS}, len(buf)
    with pytest.raises(CanterError, match="saved by another kind of buffer than this HerReplayBuffer: it holds no "
                                          "ep_start, ep_end"):
        buf.load(path)  # was KeyError: 'ep_start', after the plain arrays had replaced the buffer's
    assert all(np.array_equal(kept[k], getattr(buf, k)) for k in buf.ARRAYS)
    assert len(buf) == held == 9 and len(buf.sample(8).obs) == 8  # still the buffer it was


@pytest.mark.parametrize("multi", [False, True], ids=["Discrete", "MultiDiscrete"])
def test_discrete_goals_are_relabelled_one_hot_and_rewarded_as_the_envs_integers(multi):
    """Discrete and MultiDiscrete goals were refused ('needs Box (or MultiBinary) goals of one shape') though they
    flatten one-hot like the rest of the observation. Their columns are read back as the env's integers (``start``
    included) for compute_reward, and a relabelled goal is written one-hot."""
    from goal_env import LineGoalEnv

    env = pack_observations(LineGoalEnv(n=5, start=2, multi=multi))
    layout = GoalLayout(env, "test")
    buf = HerReplayBuffer(1000, env.observation_space.shape, (), np.float32, np.int64, seed=0, layout=layout,
                          her_goals=4)
    obs, _ = env.reset(seed=0)
    rng, ended = np.random.default_rng(0), False
    for _ in range(300):
        if ended:
            nxt, _ = env.reset()
            reward, terminated, truncated, valid = 0.0, False, False, False
        else:
            nxt, reward, terminated, truncated, _ = env.step(rng.integers(2))
            valid = True
        buf.add(obs[None], np.zeros(1, np.int64), np.array([reward]), nxt[None], np.array([terminated]),
                np.array([valid]), np.array([truncated]))
        obs, ended = nxt, terminated or truncated
    batch = buf.sample(512)
    unpacked = [gym.spaces.unflatten(env.unwrapped.observation_space, row) for row in batch.next_obs.numpy()]
    desired = np.array([u["desired_goal"] for u in unpacked])
    assert np.array_equal(layout.goals(batch.next_obs.numpy(), "desired_goal"), desired.astype(np.int64))
    assert ((desired >= 2) & (desired < 7)).all()  # one-hot rows that unflatten to goals of the space
    reached = np.array([u["achieved_goal"] for u in unpacked])
    want = -(reached != desired).reshape(len(desired), -1).any(1).astype(np.float32)
    assert np.array_equal(batch.rewards.numpy(), want) and (want == 0).mean() > 0.2  # relabelled ones reach theirs
