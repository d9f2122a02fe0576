"""Hindsight replay of a goal env whose reward reads its step infos: the replay buffer keeps the entries
compute_reward reads, and each relabelled transition's reward gets its own step's info back (as
Stable-Baselines3's HerReplayBuffer with copy_info_dict=True), across vector envs, episode ends and a resume."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.checkpoint import flatten_state, unflatten_state
from canter.data.her import HerReplayBuffer, check_goal_functions, step_info
from canter.envs import make_env, make_vec_env
from canter.envs.goals import GoalLayout
from canter.errors import CanterError
from goal_env import PenaltyPointEnv
from support import assert_train_refused

STEPS = 5  # PenaltyPoint's shortest episode in these tests
VARY = 3  # ... and how many steps longer one may be (the envs of a vector env end at different steps)
ENV = "goal_env:PenaltyPoint-v0"


def _layout() -> GoalLayout:
    env = make_env(ENV, steps=STEPS)
    layout = GoalLayout(env, "penalty")
    check_goal_functions(layout, "penalty", step_info(env))
    return layout


def _filled(strategy: str = "future", n_envs: int = 2, steps: int = 23, seed: int = 0,
            vary: int = VARY, capacity: int = 1000) -> HerReplayBuffer:
    """A buffer fed ``steps`` vector steps of PenaltyPoint (NEXT_STEP streams with their step infos)."""
    buf = HerReplayBuffer(capacity, (6,), (2,), n_envs=n_envs, layout=_layout(), strategy=strategy, seed=seed)
    venv = make_vec_env(ENV, n_envs, "sync", env_kwargs={"steps": STEPS, "vary": vary})
    obs, rng = venv.reset(seed=seed), np.random.default_rng(seed)
    for _ in range(steps):
        actions = rng.uniform(-1, 1, (n_envs, 2)).astype(np.float32)
        step = venv.step(actions)
        buf.add(obs, actions, step.reward, step.obs, step.terminated, step.valid, step.truncated, info=venv.info)
        obs = step.obs
    venv.close()
    return buf


def _expected(next_obs: np.ndarray) -> np.ndarray:
    """Brute force: the reward of reaching next_obs's achieved goal for its desired goal, with the info of
    the step that produced next_obs (its t: penalty -0.01 t, bonus 1 on the episode's last step)."""
    t, length = next_obs[:, 4], next_obs[:, 5]
    base = -(np.linalg.norm(next_obs[:, 0:2] - next_obs[:, 2:4], axis=1) > 0.1).astype(np.float32)
    return base - np.float32(0.01) * t + (t == length)


def test_only_the_info_keys_the_reward_reads_are_kept():
    layout = _layout()
    assert layout.info_keys == ("bonus", "penalty")  # not is_success, which compute_reward does not read
    bits = GoalLayout(make_env("BitFlipping-v0"), "bits")
    check_goal_functions(bits, "bits", step_info(make_env("BitFlipping-v0")))
    assert bits.info_keys == ()


@pytest.mark.parametrize("reads, kept", [
    (lambda i: i["a"], ("a",)), (lambda i: i.get("c", 0), ("c",)), (lambda i: "b" in i, ("b",)),
    (lambda i: len({**i}), ("a", "b")), (lambda i: len(list(i.values())), ("a", "b")), (lambda i: 0, ()),
], ids=["item", "get-missing", "contains", "unpacked", "values", "none"])
def test_the_keys_a_reward_reads_are_recorded(reads, kept):
    layout = _layout()
    layout.compute_reward = lambda achieved, desired, info: np.array([reads(i) for i in info], np.float32)
    check_goal_functions(layout, "p", {"a": 1.0, "b": np.array([2, 3])})
    assert layout.info_keys == kept


@pytest.mark.parametrize("capacity", [1000, 30], ids=["", "ring-wrapped"])
@pytest.mark.parametrize("strategy", ["future", "final", "episode"])
def test_relabelled_rewards_read_each_transitions_own_step_info(strategy, capacity):
    """Two envs, episodes of 5 to 8 steps: the penalty of the step that gave the next observation, and the
    bonus only on an episode's last transition (where the other env's step may have reported none); also
    once the ring has written over its oldest rows (capacity 30: 16 rows per env, 40 steps)."""
    buf = _filled(strategy, steps=40, capacity=capacity)
    assert (buf.info_set["bonus"].sum(1) == 1).any()  # one env's episode ended while the other's went on
    buf.relabel_fraction = 1.0
    batch = buf.sample(600)
    next_obs = batch.next_obs.numpy()
    assert (next_obs[:, 4] == next_obs[:, 5]).any()  # episodes' last transitions are among them
    assert (next_obs[:, 2:4] != -5).any()  # relabelled: goals achieved in the episode
    np.testing.assert_allclose(batch.rewards.numpy(), _expected(next_obs), atol=1e-6)


def test_a_trainers_buffer_gets_the_vector_envs_step_infos():
    trainer = canter.make_trainer("sac", ENV, env_kwargs={"steps": STEPS, "vary": VARY}, n_envs=2, her_goals=4, seed=0,
                                  max_steps=40, learning_starts=1000, eval_every=0)
    list(trainer())
    trainer.close()
    buf = trainer.buffer
    buf.relabel_fraction = 1.0
    batch = buf.sample(300)
    np.testing.assert_allclose(batch.rewards.numpy(), _expected(batch.next_obs.numpy()), atol=1e-6)
    assert set(buf.infos) == {"bonus", "penalty"}  # is_success, which it does not read, is not kept


def test_relabelled_rewards_match_stable_baselines3():
    """The same transitions in SB3's HerReplayBuffer (copy_info_dict=True), strategy final (the new goal
    is fixed): its relabelled reward of each equals canter's."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import DummyVecEnv
    from stable_baselines3.her import HerReplayBuffer as SB3Her

    n = 2
    buf = _filled("final", n_envs=n, steps=3 * (STEPS + 1), vary=0)  # both envs' episodes end together
    one = PenaltyPointEnv(steps=STEPS)
    sb3 = SB3Her(100, one.observation_space, one.action_space, DummyVecEnv([lambda: PenaltyPointEnv(steps=STEPS)]),
                 device="cpu", n_envs=n, goal_selection_strategy="final", copy_info_dict=True)
    rows = np.flatnonzero(buf.valid[:-1].all(1))  # the steps that were transitions in both envs
    for r in rows:
        obs, nxt = buf.obs[r], buf.obs[r + 1]
        split = [{"achieved_goal": o[:, 0:2], "desired_goal": o[:, 2:4], "observation": o[:, 4:6]} for o in (obs, nxt)]
        infos = [{k: buf.infos[k][r, e] for k in buf.infos if buf.info_set[k][r, e]} for e in range(n)]
        for e in range(n):
            infos[e]["TimeLimit.truncated"] = bool(buf.done[r, e])
        sb3.add(*split, buf.actions[r], buf.rewards[r], buf.done[r], infos)
    positions, envs = np.meshgrid(np.arange(len(rows)), np.arange(n), indexing="ij")
    theirs = sb3._get_virtual_samples(positions.ravel(), envs.ravel()).rewards.numpy().ravel()
    buf.relabel_fraction = 1.0
    ours = buf.transitions(rows[positions.ravel()] * n + envs.ravel()).rewards.numpy()
    np.testing.assert_array_equal(ours, theirs)
    assert len(set(np.round(ours, 3))) > 3  # penalties and bonuses differ from transition to transition


def test_step_infos_survive_a_checkpoint_round_trip(tmp_path):
    buf = _filled("future")
    skeleton, tensors = flatten_state(buf.state_dict())  # as a checkpoint saves it: safetensors + JSON
    other = _filled("future", steps=3, seed=5)
    other.load_state_dict(unflatten_state(skeleton, tensors))
    for key in buf.infos:
        np.testing.assert_array_equal(other.infos[key], buf.infos[key])
        np.testing.assert_array_equal(other.info_set[key], buf.info_set[key])
    a, b = buf.sample(200), other.sample(200)
    for x, y in zip(a, b):
        assert np.array_equal(x.numpy(), y.numpy())
    buf.save(tmp_path / "buffer.npz")  # the buffer's own file (no pickled objects) too
    third = _filled("future", steps=3, seed=5)
    third.load(tmp_path / "buffer.npz")
    np.testing.assert_array_equal(third.infos["penalty"], buf.infos["penalty"])


def test_an_info_value_of_another_dtype_widens_its_storage():
    buf = HerReplayBuffer(10, (6,), (2,), layout=_layout())
    obs = np.zeros((1, 6), np.float32)
    for value in (np.array([3]), np.array([-0.5])):  # an int first (a Python 0), then a float
        buf.add(obs, np.zeros((1, 2), np.float32), np.zeros(1), obs.copy(), np.zeros(1), info={"penalty": value})
    assert buf.infos["penalty"].dtype == np.float64 and list(buf.infos["penalty"][:2, 0]) == [3.0, -0.5]
    assert "bonus" not in buf.infos  # never reported: nothing allocated



@pytest.mark.parametrize("value, message", [
    (np.array(["slow"], dtype=object), r"info\['penalty'\], which its goal functions read, came as an array of object"),
    (np.array([[1.0, 2.0]]), r"info\['penalty'\] changed shape from \(\) to \(2,\)"),
])
def test_a_kept_info_that_turns_unstorable_mid_run_is_a_one_line_error(value, message):
    from canter.errors import CanterError

    buf = HerReplayBuffer(10, (6,), (2,), layout=_layout())
    obs = np.zeros((1, 6), np.float32)
    args = (obs, np.zeros((1, 2), np.float32), np.zeros(1), obs.copy(), np.zeros(1))
    buf.add(*args, info={"penalty": np.array([-0.5])})
    with pytest.raises(CanterError, match=message):
        buf.add(obs.copy(), *args[1:], info={"penalty": value})
    assert buf.infos["penalty"][0, 0] == -0.5 and buf.pos == 1 and len(buf) == 1  # refused before anything was written

class ModePoint(PenaltyPointEnv):
    """A reward that reads a string from its infos, which the replay buffer cannot keep."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, {**info, "mode": "fast"}

    def compute_reward(self, achieved_goal, desired_goal, info):
        fast = np.array([i.get("mode", "fast") == "fast" for i in info])
        return super().compute_reward(achieved_goal, desired_goal, info) * fast


def test_a_reward_reading_a_non_numeric_info_is_refused_before_the_run_starts(tmp_path, capsys, monkeypatch):
    monkeypatch.delitem(gym.registry, "mode-point", raising=False)
    gym.register("mode-point", entry_point=ModePoint, disable_env_checker=True)
    try:
        assert_train_refused(capsys, tmp_path, ["train", "sac", "--env", "mode-point", "--set", "her_goals=4",
                                                "--max-steps", "40"],
                             "her_goals: the goal functions of 'mode-point' read info['mode'], which is a str; the "
                             "replay buffer keeps numeric info values only")
    finally:
        gym.registry.pop("mode-point", None)


@pytest.mark.filterwarnings("ignore:learning_starts")  # collection only
def test_ape_x_explorers_bring_the_step_infos_to_their_shards():
    """An Ape-X explorer's rollout carries the entries compute_reward reads (in-process pool; Ray's explorers
    run the same Explorer.rollout), and each shard relabels with them."""
    from canter.config import resolve_config
    from canter.distributed.explorer import Explorer
    from canter.distributed.pool import LocalPool
    from canter.distributed.trainers import ApeXTrainer

    run, cfg = resolve_config("sac", ENV, hparams={"her_goals": 4, "learning_starts": 1000, "train_freq": 4},
                              n_envs=2, max_steps=40, eval_every=0, env_kwargs={"steps": STEPS, "vary": VARY})
    env = make_vec_env(run.env, run.n_envs, env_kwargs=run.env_kwargs)
    agent = canter.make_agent(run, cfg, env.single_observation_space, env.single_action_space)
    trainer = ApeXTrainer(agent, LocalPool(Explorer(agent, env, seed=0)), None, run)
    list(trainer())
    trainer.close()
    shard = trainer.buffer.shards[0]
    shard.relabel_fraction = 1.0
    batch = shard.sample(300)
    np.testing.assert_allclose(batch.rewards.numpy(), _expected(batch.next_obs.numpy()), atol=1e-6)


def test_resume_continues_exactly_with_step_infos(tmp_path):
    """The kept info entries are saved with the checkpoint: a resumed run relabels with the same rewards."""
    from canter.api import resume_trainer

    common = dict(env=ENV, env_kwargs={"steps": STEPS, "vary": VARY}, n_envs=2, seed=3, eval_every=0, quiet=True,
                  her_goals=4, learning_starts=30, batch_size=16, net_arch=[8], checkpoint_every=50)
    whole = canter.make_trainer("sac", max_steps=100, run_dir=tmp_path / "whole", **common)
    list(whole())
    whole.close()
    canter.train("sac", max_steps=50, run_dir=tmp_path / "part", **common)
    part = resume_trainer(tmp_path / "part", max_steps=100)
    list(part())
    part.close()
    for name, module in whole.agent.algorithm.modules().items():
        for a, b in zip(module.parameters(), part.agent.algorithm.modules()[name].parameters()):
            assert torch.equal(a, b), name


class _MaskedPenaltyGoal(PenaltyPointEnv):
    """PenaltyPoint with 8 discrete moves, of which its action mask allows only the last: another one raises, and
    its reward indexes ``info["penalty"]`` (which only a step reports)."""

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(steps=STEPS, render_mode=render_mode)
        self.observation_space = gym.spaces.Dict({**self.observation_space.spaces,
                                                  "action_mask": gym.spaces.MultiBinary(8)})
        self.action_space = gym.spaces.Discrete(8)

    def _obs(self) -> dict:
        return {**super()._obs(), "action_mask": np.eye(8, dtype=np.int8)[7]}

    def step(self, action):
        if int(action) != 7:
            raise ValueError(f"action {action} is masked")
        return super().step(np.zeros(2, np.float32))

    def compute_reward(self, achieved_goal, desired_goal, info):
        return super().compute_reward(achieved_goal, desired_goal, info) + np.array([i["penalty"] for i in info])


class _FailingGoal(PenaltyPointEnv):
    def step(self, action):
        raise RuntimeError("simulator diverged\nsecond line")


def test_the_info_probe_steps_with_an_allowed_action_and_reports_an_env_error_in_one_line():
    """The probe step (one random action before the run, to see which info entries compute_reward reads) that
    raised was swallowed and the reset's info used: a masked env's refused random action then looked like a
    reward that cannot read info['penalty'], and a real env error was hidden behind whatever came next. The probe
    now draws among the allowed actions, and an error of its step is the env's: one line naming env and error."""
    gym.register("test-her-masked-goal-v0", entry_point=_MaskedPenaltyGoal, disable_env_checker=True)
    try:
        env = make_env("test-her-masked-goal-v0")
        layout = GoalLayout(env, "masked")
        check_goal_functions(layout, "masked", step_info(env))
        assert layout.info_keys == ("bonus", "penalty")
    finally:
        del gym.registry["test-her-masked-goal-v0"]
    with pytest.raises(CanterError, match=r"^her_goals: a step of 'failing' raised RuntimeError: simulator diverged "
                                          r"\(after reset\(seed=0\), with a random action[^\n]*$"):
        step_info(_FailingGoal(steps=STEPS), "failing")
