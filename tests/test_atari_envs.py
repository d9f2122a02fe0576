"""Atari envs: DeepMind preprocessing on real ALE games (the native env and the wrapper path), env ids,
env kwargs, one-line errors and videos."""
from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("ale_py", reason="the 'atari' extra (ale-py) is not installed")
pytest.importorskip("cv2", reason="gymnasium's AtariPreprocessing needs opencv (part of the 'atari' extra)")

import canter  # noqa: E402
from canter.cli import main  # noqa: E402
from canter.envs import atari, check_env_id, make_vec_env  # noqa: E402
from canter.errors import CanterError  # noqa: E402
from support import FRAMES  # noqa: E402


# ---------------------------------------------------------------------------------------------- envs
@pytest.mark.parametrize("vectorization", ["native", "sync"])
def test_frames_are_uint8_stacks_of_84x84(vectorization):
    env = make_vec_env("ALE/Pong-v5", 2, vectorization, training=True)
    try:
        assert env.single_observation_space == gym.spaces.Box(0, 255, FRAMES, np.uint8)
        obs = env.reset(seed=0)
        assert obs.shape == (2,) + FRAMES and obs.dtype == np.uint8
        if vectorization == "sync":  # gymnasium's FrameStackObservation repeats the first frame
            assert all((obs[:, i] == obs[:, 3]).all() for i in range(3))
        else:  # ale-py's native stack is zero-padded after a reset
            assert not obs[:, :3].any() and obs[:, 3].any()
        step = env.step(np.zeros(2, dtype=np.int64))
        assert step.obs.shape == (2,) + FRAMES and step.obs.dtype == np.uint8
        assert (step.obs[:, 2] == obs[:, 3]).all()  # the stack shifted by one frame
    finally:
        env.close()


def test_both_id_styles_resolve_with_sticky_actions_off():
    for env_id in ("ALE/Pong-v5", "PongNoFrameskip-v4"):
        env = atari.make_atari_env(env_id)
        try:
            assert env.observation_space.shape == FRAMES
            base = env.unwrapped
            assert base._frameskip == 1 and base.ale.getFloat("repeat_action_probability") == 0.0
        finally:
            env.close()


class _CountSteps(gym.Wrapper):
    """Counts raw (single-frame) steps."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.steps = 0

    def step(self, action):  # noqa: D102
        self.steps += 1
        return self.env.step(action)


def test_noop_reset_takes_1_to_30_noops():
    raw = _CountSteps(gym.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0))
    env = atari.wrap_deepmind(raw, training=False)
    counts = []
    for seed in range(25):
        raw.steps = 0
        env.reset(seed=seed)
        counts.append(raw.steps - 2 * atari.FRAME_SKIP)  # FireReset: FIRE and action 2, 4 frames each
    env.close()
    assert min(counts) >= 1 and max(counts) <= atari.NOOP_MAX
    assert len(set(counts)) >= 8  # drawn at random, not a constant


def _play_until_done(env: gym.Env, rng: np.random.Generator, limit: int = 5000) -> tuple[float, int]:
    total = 0.0
    for _ in range(limit):
        _, reward, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        total += float(reward)
        if terminated or truncated:
            return total, env.unwrapped.ale.lives()
    raise AssertionError("no episode end")


def test_episodic_life_in_training_envs_only():
    rng = np.random.default_rng(0)
    train = atari.make_atari_env("ALE/Breakout-v5", training=True)
    train.reset(seed=1)
    _, lives = _play_until_done(train, rng)
    assert lives == 4  # a lost life ends the training episode...
    train.reset()
    assert train.unwrapped.ale.lives() == 4  # ...but the game goes on (no new game, no refilled lives)
    train.close()
    evaluation = atari.make_atari_env("ALE/Breakout-v5", training=False)
    evaluation.reset(seed=1)
    _, lives = _play_until_done(evaluation, rng)
    assert lives == 0  # evaluation episodes are whole games
    evaluation.close()


@pytest.mark.parametrize("vectorization", ["native", "sync"])
def test_training_episode_statistics_are_whole_games_with_the_raw_score(vectorization):
    """history.parquet's rows (VecEnv.finished_*) were one per life, with the clipped score; SB3's Monitor
    under its AtariWrapper (rl-zoo3's logs) reports whole games with the raw score."""
    env = make_vec_env("ALE/SpaceInvaders-v5", 1, vectorization, training=True)  # 3 lives, rewards of 5 to 30
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    lives_lost = clipped = steps = 0
    for _ in range(3000):
        step = env.step(rng.integers(0, 6, size=1))
        assert step.reward[0] in (-1.0, 0.0, 1.0)  # training rewards stay clipped
        clipped += step.reward[0] * step.valid[0]
        steps += int(step.valid[0])
        if env.finished_envs.size:
            break
        lives_lost += int(step.terminated[0])
    env.close()
    assert lives_lost == 2  # two lives ended training episodes without an entry in the statistics
    assert env.finished_lengths.tolist() == [steps]  # the game's agent steps
    assert env.finished_returns[0] > clipped > 0  # the raw game score, not the sum of clipped rewards
    assert env.finished_returns[0] % 5 == 0


def test_native_env_takes_every_run_seed():
    """ale-py's native env seeds copy i with seed + i as a 32-bit signed integer and raised a TypeError
    past 2**31 - 1: a traceback for --seed 2147483647 with 2 envs (the run's seed may go to 2**32 - 1),
    and for a Ray explorer's 22nd replacement (seed + 22 * 100,000,007). Such seeds now wrap; a seed the
    env takes is unchanged."""
    env = make_vec_env("ALE/Breakout-v5", 2, "native", training=True)
    try:
        assert env.reset(seed=2**32 - 1).shape == (2, 4, 84, 84)
        assert atari.NativeSeedRange.wrapped(2**31 - 2, 2) == 2**31 - 2  # a seed the env takes: unchanged
        assert atari.NativeSeedRange.wrapped(2**31 - 1, 2) == 0  # the last seed + 1 it takes: the first
    finally:
        env.close()


def test_native_env_ends_training_episodes_on_life_loss_only():
    env = make_vec_env("ALE/Breakout-v5", 1, "native", training=True)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        step = env.step(rng.integers(0, 4, size=1))
        if step.terminated[0]:
            break
    assert step.terminated[0]
    _, _, _, _, info = env.env.step(np.zeros(1, dtype=np.int64))
    assert 0 < info["lives"][0] < 5  # terminated on a lost life; the next step continues the game
    env.close()


def test_native_training_stacks_hold_no_frame_of_the_previous_life():
    """ale-py's native env keeps its frame stack over a lost life: a training episode's first stacks held
    the previous life's last frames. They are zero frames now, as after a reset and in SB3's VecFrameStack."""
    env = make_vec_env("ALE/Breakout-v5", 1, "native", training=True)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    starts, since, prev = 0, None, None
    for _ in range(300):
        step = env.step(rng.integers(0, 4, size=1))
        stack = step.obs[0]
        since = 0 if not step.valid[0] else (None if since is None or since >= 2 else since + 1)
        if since is not None:  # the new episode's first three stacks: zero frames, then its own frames only
            assert [not frame.any() for frame in stack] == [i < 3 - since for i in range(4)]
            starts += since == 0
        if since and prev is not None:
            np.testing.assert_array_equal(stack[:3], prev[1:])  # otherwise the usual shift
        prev = stack.copy()
        if starts == 2:
            break
    env.close()
    assert starts == 2


_BAD_ACTIONS = """
import numpy as np
from canter.envs import make_vec_env
from canter.errors import CanterError
env = make_vec_env("PongNoFrameskip-v4", 2, "{vectorization}", training=True)
env.reset(seed=0)
env.step(np.array([0, 5]))  # Pong: Discrete(6)
for actions in ([0, 6], [-1, 0]):
    try:
        env.step(np.array(actions))
    except CanterError as err:
        print("error:", err)
env.step(np.array([1, 2]))  # still usable
env.close()
print("done")
"""


@pytest.mark.parametrize("vectorization", ["native", "sync"])
def test_an_action_outside_the_game_s_action_set_is_a_clear_error(vectorization):
    # in a child process: without the check, ale-py's native env never returns from that step
    import subprocess

    proc = subprocess.run([sys.executable, "-c", _BAD_ACTIONS.format(vectorization=vectorization)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [
        "error: action 6 is outside the env's action space Discrete(6): valid actions are 0..5",
        "error: action -1 is outside the env's action space Discrete(6): valid actions are 0..5",
        "done",
    ]


@pytest.mark.parametrize("vectorization", ["native", "sync"])
def test_rewards_are_clipped_in_training_envs_only(vectorization):
    rewards = {}
    for training in (True, False):
        env = make_vec_env("ALE/SpaceInvaders-v5", 2, vectorization, training=training)
        env.reset(seed=3)
        rng = np.random.default_rng(3)
        seen = [env.step(rng.integers(0, 6, size=2)).reward for _ in range(300)]
        env.close()
        rewards[training] = np.unique(np.concatenate(seen))
    assert set(rewards[True]) <= {-1.0, 0.0, 1.0} and 1.0 in rewards[True]
    assert rewards[False].max() > 1.0  # the raw game score (5 to 30 points per invader)


def test_ale_id_without_the_extra_is_a_one_line_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ale_py", None)  # import ale_py now raises ImportError
    monkeypatch.delitem(gym.registry, "ALE/Pong-v5")
    with pytest.raises(CanterError, match=r"pip install 'canter\[atari\]'"):
        check_env_id("ALE/Pong-v5")
    assert main(["train", "dqn", "--env", "ALE/Pong-v5", "--max-steps", "10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "canter[atari]" in err[0]


@pytest.mark.parametrize("vectorization", ["sync", "native"])
def test_evaluation_serves_after_a_lost_life_as_training_does(vectorization):
    """Training's EpisodicLife + FireReset press FIRE after every lost life; evaluation (whole games)
    must too, else a Breakout game never resumes and runs to the frame cap (27,000 steps). ale-py's
    native env pressed FIRE only at a game's start (NativeFireAfterLifeLoss now presses it)."""
    env = make_vec_env("ALE/Breakout-v5", 1, vectorization, training=False)
    env.reset(seed=0)
    for steps in range(1, 2001):
        env.step(np.zeros(1, np.int64))  # NOOP only: the ball is served by the wrappers alone
        if env.finished_envs.size:
            break
    env.close()
    assert env.finished_envs.size and steps < 500  # five lives lost in ~115 steps (SB3's AtariWrapper: the same)


def test_native_training_presses_fire_only_on_the_boundary_step_after_a_lost_life():
    """The step after a lost life's ``terminated`` is NEXT_STEP's boundary (no transition records its
    action): FIRE there serves the ball, as FireReset does at the wrapper path's reset; every other
    step runs the policy's action (here NOOP, which never serves)."""
    env = make_vec_env("ALE/Breakout-v5", 2, "native", training=True)
    env.reset(seed=0)
    sent = []
    native = env.env.unwrapped
    base_step = native.step
    native.step = lambda actions: (sent.append(np.array(actions)), base_step(actions))[1]
    lost = []
    for _ in range(1000):
        step = env.step(np.zeros(2, np.int64))
        lost.append(step.terminated.copy())
    env.close()
    sent, lost = np.array(sent), np.array(lost)
    assert lost.sum(0).min() >= 5  # every life of both copies was served and lost again (games over too)
    after_loss = np.zeros_like(lost)
    after_loss[1:] = lost[:-1]
    lives_left = sent == 1  # FIRE only where a life (not the game) was lost on the step before
    assert lives_left.sum() > 0 and not (lives_left & ~after_loss).any()


def test_a_mistyped_ale_id_with_the_extra_installed_suggests_the_close_ids():
    with pytest.raises(CanterError, match="unknown env id 'ALE/Pongg-v5'.*'ALE/Pong-v5'"):
        check_env_id("ALE/Pongg-v5")


def test_a_module_prefixed_ale_id_is_atari_for_the_presets_and_the_replay_buffer():
    """``ale_py:ALE/Pong-v5`` (gymnasium's ``module:EnvId``) builds the Atari envs, so it must also get
    the Atari presets and the frame-once replay buffer (it got DQN's 1M-transition default buffer of
    whole stacks, about 28 GB, and no Atari settings)."""
    from canter.config import resolve_config

    atari.register_ale()
    assert atari.looks_like_atari("ale_py:ALE/Pong-v5") and atari.looks_like_atari("ale_py:PongNoFrameskip-v4")
    assert atari.is_atari("ale_py:ALE/Pong-v5") and not atari.is_atari("gymnasium:CartPole-v1")
    plain, prefixed = resolve_config("dqn", env="ALE/Pong-v5"), resolve_config("dqn", env="ale_py:ALE/Pong-v5")
    for key in ("buffer_size", "learning_starts", "target_update_interval", "exploration_final_eps"):
        assert getattr(prefixed[1], key) == getattr(plain[1], key), key
    assert prefixed[0].max_steps == plain[0].max_steps and prefixed[0].eval_episodes == plain[0].eval_episodes
    assert prefixed[0].target_reward == plain[0].target_reward == 20  # the game's own preset (ALE-Pong-v5.yaml)


@pytest.mark.parametrize("vectorization", ["native", "sync"])
def test_ram_observations_are_refused_not_silently_replaced_by_screens(vectorization):
    # the preprocessing reads ALE's screen itself: obs_type 'ram' gave [4, 84, 84] screen stacks without a word
    with pytest.raises(CanterError, match="obs_type 'ram' is not supported"):
        make_vec_env("ALE/Pong-v5", 1, vectorization, training=True, env_kwargs={"obs_type": "ram"})


@pytest.mark.parametrize("vectorization,kwargs,message", [
    ("native", {"repeat_action_probability": "abc"}, "repeat_action_probability must be a number from 0 to 1"),
    ("sync", {"repeat_action_probability": 2}, "repeat_action_probability must be a number from 0 to 1"),
    ("native", {"max_num_frames_per_episode": -5}, "max_num_frames_per_episode must be a whole number >= 1"),
    ("sync", {"full_action_space": 3}, "full_action_space must be true or false"),
    ("sync", {"mode": 99}, r"bad env_kwargs for 'ALE/Pong-v5' \{'mode': 99\}: RuntimeError: Invalid game mode"),
    ("native", {"terminal_on_life_loss": "no"}, "terminal_on_life_loss must be true or false, got 'no'"),
    ("sync", {"terminal_on_life_loss": 0}, "terminal_on_life_loss must be true or false, got 0"),
])
def test_bad_env_kwargs_values_are_one_line_errors(vectorization, kwargs, message):
    # these were tracebacks from ale-py (TypeError, RuntimeError), or accepted: a probability of 2 repeated
    # every action, the agent's never reached the game; -5 frames ended the native env's games at once
    with pytest.raises(CanterError, match=message):
        make_vec_env("ALE/Pong-v5", 1, vectorization, training=True, env_kwargs=kwargs)


@pytest.mark.parametrize("vectorization", ["native", "sync"])
@pytest.mark.parametrize("training", [True, False])
def test_no_terminal_on_life_loss_and_no_fire_after_it(vectorization, training):
    """``terminal_on_life_loss: false`` (SB3's ``AtariWrapper`` switch): a lost life ends no training episode and
    nothing presses FIRE after it, so a NOOP-only Breakout policy serves once (the reset's FIRE), loses that ball
    and then stands still: the same frame, no terminal (ale-py took the key as an unknown argument before)."""
    env = make_vec_env("BreakoutNoFrameskip-v4", 1, vectorization, training=training,
                       env_kwargs={"terminal_on_life_loss": False})
    env.reset(seed=0)
    steps = [env.step(np.zeros(1, dtype=np.int64)) for _ in range(250)]
    env.close()
    assert not any(s.terminated[0] or s.truncated[0] for s in steps) and all(s.valid[0] for s in steps)
    assert all((s.obs == steps[-1].obs).all() for s in steps[-60:])  # stalled: the ball is never served again


def test_auto_vectorization_takes_env_kwargs_the_native_env_does_not():
    # auto refused mode/difficulty ("use --vectorization async"), and canter eval, which has no such flag,
    # could not evaluate a run trained with the default vectorization in another game mode at all
    env = make_vec_env("ALE/Pong-v5", 1, "auto", env_kwargs={"mode": 1})
    assert isinstance(env.env, gym.vector.SyncVectorEnv) and env.env.envs[0].unwrapped._game_mode == 1
    assert env.reset(seed=0).shape == (1,) + FRAMES
    env.close()
    with pytest.raises(CanterError, match=r"not supported by the native Atari vector env; use --vectorization auto"):
        make_vec_env("ALE/Pong-v5", 1, "native", env_kwargs={"mode": 1})


def test_ale_py_s_plain_v0_and_v4_ids_are_atari_envs():
    """``Pong-v4`` / ``Breakout-v0`` are ale-py ids too (registered with ``PongNoFrameskip-v4``); in a fresh
    process they were refused as unknown env ids (nothing had registered ale-py's envs yet)."""
    import subprocess

    code = ("from canter.envs.make import check_env_id\nfrom canter.envs import atari\n"
            "from canter.config import resolve_config\n"
            "for name in ('Pong-v4', 'Breakout-v0'):\n"
            "    check_env_id(name)\n"
            "    print(name, atari.is_atari(name), resolve_config('dqn', env=name)[1].buffer_size)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["Pong-v4", "True", "100000", "Breakout-v0", "True", "100000"]  # atari.yaml
    assert not atari.looks_like_atari("CartPole-v0") and not atari.looks_like_atari("FrozenLake-v1")
    env = make_vec_env("Pong-v4", 1, "sync", training=True)
    assert env.reset(seed=0).shape == (1, 4, 84, 84)
    env.close()


def test_is_atari_registers_ale_py_s_envs_for_an_unknown_id(monkeypatch):
    """is_atari read gymnasium's registry, where ale-py's ids appear only once ale-py is imported: in a process
    that had made no env (canter collect RUN --from-replay) 'ALE/Pong-v5' was not Atari, so the replay buffer
    was rebuilt as one of whole stacks and the saved frame-once buffer refused ('observations do not match').
    Here the registry is made to lack the id until register_ale runs, as in a fresh process."""
    atari.register_ale()
    spec = gym.registry["ALE/Pong-v5"]
    monkeypatch.delitem(gym.registry, "ALE/Pong-v5")
    calls = []

    def register() -> bool:
        calls.append(1)
        gym.registry["ALE/Pong-v5"] = spec
        return True

    import canter.ale

    monkeypatch.setattr(canter.ale, "register_ale", register)
    assert atari.is_atari("ALE/Pong-v5") and calls == [1]
    assert not atari.is_atari("CartPole-v1") and calls == [1]  # a known id registers nothing


def test_a_minari_dataset_of_an_atari_game_round_trips(tmp_path, monkeypatch):
    """canter collect ATARI_RUN --out minari:ID failed after collecting ('Cannot handle this data type: (1, 1,
    84), |u1'): Minari took the raw game's RGB screen space from the env spec and JPEG-encoded the [4, 84, 84]
    stacks as images. And reading one back in a fresh process took ALE/Pong-v5's own frameskip for an env_kwarg
    (ale-py's ids were not registered yet), which the Atari preprocessing refuses. The data's own spaces are
    written, losslessly, and the recorded spec is compared with the registered one after registering ale-py."""
    pytest.importorskip("minari")
    import canter.ale
    from canter.data.dataset import TransitionDataset
    from canter.data.minari import from_minari

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    rng = np.random.default_rng(0)
    n, space = 12, gym.spaces.Box(0, 255, FRAMES, np.uint8)
    frames = rng.integers(0, 256, (n + 1,) + FRAMES, dtype=np.uint8)
    done = np.zeros(n, bool)
    done[-1] = True
    data = TransitionDataset(obs=frames[:-1], actions=rng.integers(0, 6, n), rewards=np.zeros(n, np.float32),
                             next_obs=frames[1:], terminated=done, truncated=np.zeros(n, bool), env_id="ALE/Pong-v5",
                             observation_space=space, action_space=gym.spaces.Discrete(6),
                             env_kwargs={"max_num_frames_per_episode": 400})
    atari.register_ale()
    assert data.to_minari("pong/frames-v0") == n
    spec = gym.registry["ALE/Pong-v5"]
    monkeypatch.delitem(gym.registry, "ALE/Pong-v5")  # as in a fresh process, until ale-py is registered
    monkeypatch.setattr(canter.ale, "register_ale", lambda: gym.registry.__setitem__("ALE/Pong-v5", spec) or True)
    back = from_minari("pong/frames-v0")
    np.testing.assert_array_equal(back.obs, data.obs)
    np.testing.assert_array_equal(back.next_obs, data.next_obs)
    assert back.observation_space == space and back.env_kwargs == {"max_num_frames_per_episode": 400}


@pytest.mark.slow  # ~3 s: a fresh interpreter
def test_an_ale_id_is_atari_in_a_process_that_has_made_no_env():
    import subprocess

    code = ("from canter.envs import atari\n"
            "print(*(atari.is_atari(i) for i in ('ALE/Pong-v5', 'ale_py:ALE/Pong-v5', 'CartPole-v1')))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["True", "True", "False"]


@pytest.mark.slow  # ~15 s: a short Atari DQN run, then canter collect in a fresh interpreter
def test_collect_from_replay_of_an_atari_run_in_a_fresh_process(tmp_path):
    import subprocess

    run = tmp_path / "pong"
    assert main(["train", "dqn", "--env", "ALE/Pong-v5", "--max-steps", "600", "--n-envs", "2", "--set",
                 "learning_starts=200", "--set", "buffer_size=1000", "--eval-episodes", "1", "--eval-every", "0",
                 "--env-kwargs", "{max_num_frames_per_episode: 400}", "--quiet", "--run-dir", str(run)]) == 0
    proc = subprocess.run([sys.executable, "-m", "canter", "collect", str(run), "--from-replay", "--out",
                           str(tmp_path / "replay")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    from canter.data.dataset import TransitionDataset

    data = TransitionDataset.load(tmp_path / "replay")
    assert data.obs.shape[1:] == FRAMES and data.info["episodes"] >= 1


def test_a_game_without_noop_is_a_one_line_error_on_the_wrapper_path(capsys):
    # Backgammon's actions are FIRE, RIGHT, LEFT: gymnasium's no-op reset raised a bare ValueError (a traceback)
    with pytest.raises(CanterError, match="action 0 to be NOOP.*--vectorization native"):
        make_vec_env("ALE/Backgammon-v5", 1, "sync", training=True)
    env = make_vec_env("ALE/Backgammon-v5", 1, "native", training=True)  # the native env has no such reset
    assert env.reset(seed=0).shape == (1,) + FRAMES
    env.close()


def test_videos_play_at_the_game_s_speed_one_frame_per_agent_step(tmp_path):
    """An agent step is FRAME_SKIP emulator frames at 60 per second: 15 video frames per second (ale-py says 30)."""
    env = canter.envs.make_env("ALE/Pong-v5", render_mode="rgb_array")
    try:
        assert env.metadata["render_fps"] == 60 // atari.FRAME_SKIP == 15
        assert gym.wrappers.RecordVideo(env, str(tmp_path / "videos"), disable_logger=True).frames_per_sec == 15
    finally:
        env.close()
