"""canter's DeepMind Atari preprocessing against Stable-Baselines3's as a reference, on real games.

Reference: SB3's ``AtariWrapper`` (no-op reset, frame skip 4 with a max over the last two frames,
episodic life, FIRE reset, 84x84 grayscale by ``cv2.resize(INTER_AREA)``, reward clipping) with
SB3's ``Monitor`` under it (as ``make_atari_env`` builds it), in a ``DummyVecEnv`` under
``VecFrameStack(4)``. Both sides play the same seeded game with the same seeded pseudo-random
actions and every real transition is compared: the whole ``uint8 [4, 84, 84]`` stack, the reward,
``terminated`` / ``truncated``, the per-episode return, and (wrapper path) ALE's frame counter.

Alignment: canter's vector envs use ``NEXT_STEP`` autoreset (the call after an episode end only
resets and is marked invalid); SB3 resets inside the step that ends the episode and hands the final
stack back in ``info["terminal_observation"]``. canter's final stack is compared with that, and
canter's reset-only step with the stack SB3 returned from the ending step.

Games: Breakout (5 lives, needs FIRE after every reset and lost life), SpaceInvaders (3 lives, FIRE
in its action set, so both libraries press it at reset, and raw rewards of 5 to 30 points: random
play in Breakout only scores 1-point bricks and Pong's rewards are +-1, where clipping is invisible),
Asterix (3 lives, no FIRE: neither library presses it, at a reset or after a lost life; the references
follow SB3's own test, ``"FIRE" in get_action_meanings()``) and Pong (where the order of grayscale and
max-pool shows, below). Breakout again with canter's ``terminal_on_life_loss: false`` against SB3's
``AtariWrapper(terminal_on_life_loss=False)`` (no terminal and no FIRE after a lost life; whole games).

What is equal and what is not (each difference is asserted or bounded, none is skipped):

* Grayscale before the max-pool. gymnasium's ``AtariPreprocessing`` and ale-py's native env take
  ALE's grayscale screens and then their max; SB3 takes the max over RGB and then converts with
  ``cv2.cvtColor``. Where an object moves over a non-black background between the two pooled frames
  the results differ (Pong: the green paddle over the brown field). The bitwise comparisons therefore
  feed SB3 ALE's grayscale in all three channels (``_GrayAsRGB``), which leaves SB3's code to do the
  rest; ``test_max_pool_order_is_the_only_difference_from_sb3_on_rgb`` measures the unmodified
  reference and bounds the difference frame by frame.
* Padding of a fresh stack: gymnasium's ``FrameStackObservation`` (wrapper path) repeats the first
  frame, SB3's ``VecFrameStack`` and ale-py's native env pad with zeros.
* The last screen of a game (game over or truncation): gymnasium's wrapper and ale-py stop a frame
  skip before reading the screen of the frame that ended the game, SB3 reads it first. The newest
  frame of the final stack can differ (older frames are compared, the newest is bounded). Nothing
  bootstraps from a terminated transition's final stack; a truncated one (every 108,000 frames) is
  bootstrapped from a newest frame that is up to one agent step old.
* Native path (``auto``/``native``, ale-py's ``AtariVectorEnv``): its reset presses FIRE for one raw
  frame with no follow-up action 2 and draws its no-ops (0 to 28, after FIRE) from its own
  generator; after a lost life it keeps its frame stack, where canter's ``NativeNewLifeStack`` (training)
  puts zero frames in place of the previous life's, as SB3's ``VecFrameStack`` does at every episode end,
  and canter's ``NativeFireAfterLifeLoss`` presses FIRE on the step after it (training: the
  reset-only step; evaluation: FIRE then action 2 in place of the policy's next two actions). Its
  reference is SB3's own wrapper classes (``MaxAndSkipEnv``, ``EpisodicLifeEnv``, ``WarpFrame``,
  ``ClipRewardEnv``) around that reset (``_FireOneFrame``), with ``noop_max=0`` on both sides, FIRE in
  place of ``EpisodicLifeEnv.reset``'s NOOP after a lost life (``_EpisodicLifeFire``), and in
  evaluation ``_PressAfterLifeLoss`` replacing the next two actions after a lost life. ale-py resizes with OpenCV's ``INTER_AREA`` too: the frames are bitwise equal.
* Sticky actions (``repeat_action_probability``, wrapper path only): canter's ``StickyActions`` against SB3's
  ``StickyActionEnv`` (``AtariWrapper(action_repeat_probability=...)``), both around the raw game and drawing
  from its seeded ``np_random`` (ALE's own sticky actions cannot be saved for an exact resume); the native env
  keeps ALE's, from a generator of its own.
* The wrapper path keeps ``noop_max=30`` on both sides: gymnasium's wrapper and SB3's
  ``NoopResetEnv`` draw the count from the same seeded ``np_random`` of the ALE env (equal frame
  counters after every reset show it).
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("ale_py")
cv2 = pytest.importorskip("cv2", reason="gymnasium's AtariPreprocessing and SB3's WarpFrame need opencv")

from stable_baselines3.common.atari_wrappers import (  # noqa: E402
    AtariWrapper, ClipRewardEnv, EpisodicLifeEnv, MaxAndSkipEnv, WarpFrame,
)
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack  # noqa: E402

from canter.envs import atari, make_vec_env  # noqa: E402
from canter.trainers.evaluation import evaluate  # noqa: E402

atari.register_ale()
# the reference's settings, written out (not read from canter, so that changing canter's cannot pass unseen)
STACK, SKIP, SIZE, NOOP_MAX, MAX_FRAMES = 4, 4, 84, 30, 108_000
BREAKOUT, INVADERS, PONG = "BreakoutNoFrameskip-v4", "SpaceInvadersNoFrameskip-v4", "PongNoFrameskip-v4"
ASTERIX = "AsterixNoFrameskip-v4"  # 3 lives and no FIRE: neither library presses it, at a reset or a lost life


# --------------------------------------------------------------------------------------- references
class _GrayAsRGB(gym.ObservationWrapper):
    """The raw screen in ALE's grayscale, copied into all three colour channels: SB3's max-pool then
    works on grayscale values, as gymnasium's and ale-py's do, and its ``cv2.cvtColor(RGB2GRAY)``
    returns them unchanged (OpenCV's fixed-point weights sum to exactly 1)."""

    def observation(self, observation: np.ndarray) -> np.ndarray:  # noqa: D102
        return np.repeat(self.env.unwrapped.ale.getScreenGrayscale()[..., None], 3, axis=-1)


class _FireOneFrame(gym.Wrapper):
    """ale-py's native reset on a raw (frameskip 1) env: reset, then FIRE for one frame (games with FIRE)."""

    def reset(self, **kwargs):  # noqa: D102
        obs, _ = self.env.reset(**kwargs)
        if _has_fire(self.env):
            obs, *_ = self.env.step(1)
        return obs, {}


def _has_fire(env: gym.Env) -> bool:
    """SB3's test for a game that waits for FIRE (``AtariWrapper`` adds ``FireResetEnv`` then)."""
    return "FIRE" in env.unwrapped.get_action_meanings()


class _EpisodicLifeFire(EpisodicLifeEnv):
    """SB3's EpisodicLifeEnv whose reset after a lost life plays FIRE where it plays NOOP (canter's
    native env presses FIRE on that step, ``NativeFireAfterLifeLoss``)."""

    def reset(self, **kwargs):  # noqa: D102
        if self.was_real_done:
            return super().reset(**kwargs)
        obs, _, terminated, truncated, info = self.env.step(1)
        if terminated or truncated:
            obs, info = self.env.reset(**kwargs)
        self.lives = self.env.unwrapped.ale.lives()
        return obs, info


class _PressAfterLifeLoss(gym.Wrapper):
    """Evaluation reference: after a lost life (game going on) the next two actions are FIRE and 2."""

    def reset(self, **kwargs):  # noqa: D102
        self.pending, self.lives = [], None
        obs, info = self.env.reset(**kwargs)
        self.lives = self.env.unwrapped.ale.lives()
        return obs, info

    def step(self, action):  # noqa: D102
        if self.pending:
            action = self.pending.pop(0)
        obs, reward, terminated, truncated, info = self.env.step(action)
        lives = self.env.unwrapped.ale.lives()
        if 0 < lives < self.lives and not (terminated or truncated):
            self.pending = [1, 2]
        self.lives = lives
        return obs, reward, terminated, truncated, info


def _raw(game: str, max_frames: int, gray_first: bool) -> gym.Env:
    env = gym.make(game, frameskip=1, repeat_action_probability=0.0, max_num_frames_per_episode=max_frames)
    env = Monitor(env)  # whole games and their raw score, as in SB3's make_atari_env
    return _GrayAsRGB(env) if gray_first else env


def _stacked(make) -> VecFrameStack:
    return VecFrameStack(DummyVecEnv([make]), STACK, channels_order="last")


def _sb3_atari(game: str, training: bool, max_frames: int, gray_first: bool = True, sticky: float = 0.0,
               life_loss: bool = True) -> VecFrameStack:
    """SB3's AtariWrapper, configured as canter's wrapper path (evaluation: serving after a lost life);
    ``sticky``: SB3's own sticky actions (``action_repeat_probability``: its ``StickyActionEnv`` around the raw game);
    ``life_loss`` false: ``terminal_on_life_loss=False`` in training and evaluation, no FIRE after a lost life."""
    def make() -> gym.Env:
        env = AtariWrapper(_raw(game, max_frames, gray_first), noop_max=NOOP_MAX, frame_skip=SKIP, screen_size=SIZE,
                           terminal_on_life_loss=training and life_loss, clip_reward=training,
                           action_repeat_probability=sticky)
        if training or not life_loss or not _has_fire(env):
            return env
        return atari.FireAfterLifeLoss(env)  # serving after a lost life: tested on its own
    return _stacked(make)


def _sb3_native_like(game: str, training: bool, max_frames: int, life_loss: bool = True) -> VecFrameStack:
    """SB3's wrapper classes around ale-py's native reset (one FIRE frame, no no-ops) and its FIRE after a lost life
    (``life_loss`` false: no episodic life, no FIRE after a lost life, as ``terminal_on_life_loss=False``)."""
    def make() -> gym.Env:
        env: gym.Env = MaxAndSkipEnv(_FireOneFrame(_raw(game, max_frames, True)), skip=SKIP)
        if not life_loss:
            pass
        elif _has_fire(env):  # canter's NativeFireAfterLifeLoss
            env = _EpisodicLifeFire(env) if training else _PressAfterLifeLoss(env)
        elif training:
            env = EpisodicLifeEnv(env)
        env = WarpFrame(env, SIZE, SIZE)
        return ClipRewardEnv(env) if training else env
    return _stacked(make)


def _chw(stack: np.ndarray) -> np.ndarray:
    """SB3's channels-last ``[84, 84, 4]`` stack as canter's ``[4, 84, 84]``."""
    return np.moveaxis(stack, -1, 0)


def _base(venv: VecFrameStack, cls: type | None = None) -> gym.Env:
    env = venv.venv.envs[0]
    while cls is not None and not isinstance(env, cls):
        env = env.env
    return env


# --------------------------------------------------------------------------------------- comparison
def _check_stack(mine: np.ndarray, ref: np.ndarray, ref_age: int, padding: str, previous: np.ndarray | None,
                 newest: bool = True) -> None:
    """``ref_age``: frames SB3's stack has taken since its reset (0 right after it). The part SB3
    filled is bitwise equal (the newest frame only if ``newest``), SB3 pads the rest with zeros and
    canter with ``padding``: ``repeat`` (its first frame), ``zeros``, or ``carry`` (the previous stack, shifted)."""
    k = min(ref_age + 1, STACK)
    np.testing.assert_array_equal(mine[STACK - k:STACK if newest else -1], ref[STACK - k:STACK if newest else -1])
    assert not ref[:STACK - k].any()
    if k == STACK:
        return
    if padding == "repeat":
        assert (mine[:STACK - k] == mine[STACK - k]).all()
    elif padding == "zeros":
        assert not mine[:STACK - k].any()
    else:
        np.testing.assert_array_equal(mine[:STACK - 1], previous[1:])


def _compare(game: str, vectorization: str, training: bool, seed: int, action_seed: int, n_steps: int,
             max_frames: int = MAX_FRAMES, games: int | None = None, sticky: float = 0.0, life_loss: bool = True,
             settings: dict | None = None) -> dict:
    """Play ``n_steps`` real transitions (or until ``games`` games have ended) in canter's env and
    the SB3 reference; assert each; return what happened. ``sticky``: the wrapper path only (ale-py's
    native env draws its sticky actions from a generator of its own). ``life_loss`` false: canter's
    ``terminal_on_life_loss: false`` against SB3's ``AtariWrapper(terminal_on_life_loss=False)``. ``settings``:
    canter's preprocessing env_kwargs, the reference's numbers (``STACK``, ``SKIP``, ... above) patched to match."""
    native = vectorization == "native"
    assert not (native and sticky)
    kwargs = {**(settings or {}), **_env_kwargs(vectorization)}
    if max_frames != MAX_FRAMES:
        kwargs["max_num_frames_per_episode"] = max_frames
    if sticky:
        kwargs["repeat_action_probability"] = sticky
    if not life_loss:
        kwargs["terminal_on_life_loss"] = False
    mine = make_vec_env(game, 1, vectorization, env_kwargs=kwargs, training=training)
    # ALE counts a game's frames from its reset (no-ops and FIRE included), ale-py's native env from
    # the end of its reset (one FIRE frame with noop_max 0)
    ref = _sb3_native_like(game, training, max_frames + 1, life_loss) if native \
        else _sb3_atari(game, training, max_frames, sticky=sticky, life_loss=life_loss)
    mine_ale = None if native else mine.env.envs[0].unwrapped.ale
    ref_ale = _base(ref).unwrapped.ale
    rng = np.random.default_rng(action_seed)
    seen = {"life_losses": 0, "game_overs": 0, "truncations": 0, "silent_life_losses": 0, "rewards": [],
            "final_frame_diffs": []}
    try:
        obs = mine.reset(seed=seed)[0]
        ref.seed(seed)
        _check_stack(obs, _chw(ref.reset()[0]), 0, "zeros" if native else "repeat", None)
        if mine_ale is not None:  # the same number of no-ops (and FIRE, 2) at reset
            assert mine_ale.getEpisodeFrameNumber() == ref_ale.getEpisodeFrameNumber() > 2 * SKIP
        age, ep_return, lives = 0, 0.0, ref_ale.lives()
        for _ in range(n_steps):
            action = rng.integers(mine.single_action_space.n, size=1)
            step = mine.step(action)
            ref_stack, ref_reward, ref_done, ref_infos = ref.step(action)
            info, done = ref_infos[0], bool(ref_done[0])
            truncated = bool(info.get("TimeLimit.truncated", False))
            game_end = "episode" in info  # the Monitor under SB3's wrappers saw the game end
            assert step.valid[0]
            assert step.reward[0] == ref_reward[0]
            assert (bool(step.terminated[0]), bool(step.truncated[0])) == (done and not truncated, truncated)
            if mine_ale is not None and not done:  # (SB3 has already reset after done)
                assert mine_ale.getEpisodeFrameNumber() == ref_ale.getEpisodeFrameNumber()
            ep_return += float(ref_reward[0])
            if ref_reward[0]:
                seen["rewards"].append(float(ref_reward[0]))
            if not done and info["lives"] < lives:
                seen["silent_life_losses"] += 1
            lives = info["lives"]
            age += 1
            final = _chw(info["terminal_observation"]) if done else _chw(ref_stack[0])
            _check_stack(step.obs[0], final, age, "carry", obs, newest=not game_end)
            if game_end:
                diff = np.abs(step.obs[0, -1].astype(int) - final[-1])
                seen["final_frame_diffs"].append((int(diff.max()), int((diff > 0).sum())))
            obs = step.obs[0]
            if not done:
                continue
            seen["truncations" if truncated else "game_overs" if game_end else "life_losses"] += 1
            # canter's episode statistics (history.parquet) are whole games with their raw score, as SB3's
            # Monitor under the wrappers reports them; a lost life in training ends an episode, not a game
            if game_end:
                np.testing.assert_allclose(mine.finished_returns, [info["episode"]["r"]])
                if not training:
                    np.testing.assert_allclose(mine.finished_returns, [ep_return])
            else:
                assert not len(mine.finished_returns)
            ep_return = 0.0
            # canter's reset-only step (NEXT_STEP). After a lost life the native env plays it (FIRE,
            # NativeFireAfterLifeLoss; _EpisodicLifeFire's reset), its older frames zeroed by NativeNewLifeStack
            # (training) as SB3's are; after a game end it resets
            step = mine.step(np.zeros(1, dtype=np.int64))
            assert not step.valid[0]
            if mine_ale is not None:
                assert mine_ale.getEpisodeFrameNumber() == ref_ale.getEpisodeFrameNumber()
            padding = ("zeros" if game_end or training else "carry") if native else "repeat"
            _check_stack(step.obs[0], _chw(ref_stack[0]), 0, padding, obs)
            obs, age, lives = step.obs[0], 0, ref_ale.lives()
            if games is not None and seen["game_overs"] + seen["truncations"] >= games:
                break
    finally:
        mine.close()
        ref.close()
    return seen


def _env_kwargs(vectorization: str) -> dict:
    """ale-py's native env draws its no-ops from its own generator: none on either side there (``noop_max: 0``,
    the setting; the test patched ``atari.NOOP_MAX`` when the preprocessing was fixed)."""
    return {"noop_max": 0} if vectorization == "native" else {}


# -------------------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("vectorization", ["sync", "native"])
@pytest.mark.parametrize("game, action_seed, games, min_life_losses, min_rewards", [
    (BREAKOUT, 3, 2, 8, 4),
    (INVADERS, 0, 1, 2, 5),
    (ASTERIX, 1, 1, 2, 3),
])
def test_training_env_matches_sb3_atari_wrapper(vectorization, game, action_seed, games, min_life_losses,
                                                 min_rewards):
    """Frames, clipped rewards, a terminal at every lost life, the game going on until game over."""
    seen = _compare(game, vectorization, True, seed=5, action_seed=action_seed, n_steps=2000, games=games)
    assert seen["life_losses"] >= min_life_losses and seen["game_overs"] == games and seen["silent_life_losses"] == 0
    assert len(seen["rewards"]) >= min_rewards and set(seen["rewards"]) <= {-1.0, 1.0}


@pytest.mark.parametrize("vectorization", ["sync", "native"])
@pytest.mark.parametrize("training", [True, False])
def test_other_preprocessing_settings_match_sb3_with_the_same_settings(monkeypatch, vectorization, training):
    """``env_kwargs: {frame_stack: 2, frame_skip: 3, screen_size: 64, noop_max: 10}`` against SB3's
    ``AtariWrapper(noop_max=10, frame_skip=3, screen_size=64)`` + ``VecFrameStack(n_stack=2)`` (the native env
    without no-ops on both sides, as above): the same frames, rewards and flags over 300 Breakout steps."""
    import sys

    module = sys.modules[__name__]
    for name, value in (("STACK", 2), ("SKIP", 3), ("SIZE", 64), ("NOOP_MAX", 10)):
        monkeypatch.setattr(module, name, value)
    settings = {"frame_stack": 2, "frame_skip": 3, "screen_size": 64, "noop_max": 10}
    seen = _compare(BREAKOUT, vectorization, training, seed=5, action_seed=1, n_steps=300, settings=settings)
    assert seen["life_losses" if training else "silent_life_losses"] >= 2


@pytest.mark.parametrize("training", [True, False])
def test_sticky_actions_match_sb3_on_the_wrapper_path(training):
    """``repeat_action_probability: 0.25`` (Machado et al.'s protocol): the previous action is repeated on
    each emulator frame with that probability, drawn from the game's seeded ``np_random`` under both libraries'
    frame skip, no-op and FIRE resets alike; equal frames, rewards and flags over 300 Breakout steps."""
    seen = _compare(BREAKOUT, "sync", training, seed=5, action_seed=1, n_steps=300, sticky=0.25)
    assert seen["life_losses" if training else "silent_life_losses"] >= 2


@pytest.mark.slow  # ~3.4 s each: whole 5-life Breakout games
@pytest.mark.parametrize("vectorization", ["sync", "native"])
@pytest.mark.parametrize("training", [True, False])
def test_no_terminal_on_life_loss_matches_sb3(vectorization, training):
    """``terminal_on_life_loss: false`` against SB3's ``AtariWrapper(terminal_on_life_loss=False)`` on Breakout
    (5 lives, FIRE): no terminal at a lost life, FIRE pressed only at a game's reset (never after a lost life,
    in training or evaluation), equal frames and rewards, and the episode statistics whole games."""
    seen = _compare(BREAKOUT, vectorization, training, seed=5, action_seed=3, n_steps=3000, games=1, life_loss=False)
    assert seen["game_overs"] == 1 and seen["life_losses"] == 0 and seen["silent_life_losses"] == 4


@pytest.mark.parametrize("vectorization", ["sync", "native"])
def test_evaluation_of_a_game_without_fire_matches_sb3(vectorization):
    """No FIRE in the game (Asterix): neither library presses it at the reset nor after a lost life."""
    seen = _compare(ASTERIX, vectorization, False, seed=5, action_seed=1, n_steps=2000, games=1)
    assert seen["game_overs"] == 1 and seen["life_losses"] == 0 and seen["silent_life_losses"] == 2
    assert max(seen["rewards"]) > 1.0


@pytest.mark.parametrize("vectorization", ["sync", "native"])
def test_truncation_flags_and_final_frame(vectorization):
    """Games cut at 600 frames: ``truncated`` (not ``terminated``), a real reset afterwards, lives refilled."""
    # action seeds whose games are not cut on the step right after a lost life (the reference resets
    # inside EpisodicLifeEnv.reset there; canter's reset-only step is itself the truncated one)
    seen = _compare(BREAKOUT, vectorization, True, seed=5, action_seed={"sync": 1, "native": 7}[vectorization],
                    n_steps=330, max_frames=600)
    assert seen["truncations"] == 2 and seen["life_losses"] >= 4
    # the newest frame of a game's last stack (older frames are compared exactly): canter's is the
    # previous step's pooled screen, or its max with this step's third frame, where SB3 pools the
    # screens up to the frame that ended the game. Measured here: 39 (sync) and 63 (native) of
    # 7,056 pixels differ; none where the screen is frozen at the end (Breakout's game over)
    assert all(n < 0.05 * SIZE ** 2 for _, n in seen["final_frame_diffs"])


@pytest.mark.parametrize("vectorization", ["sync", "native"])
def test_evaluation_env_reports_the_unclipped_game_score(vectorization):
    """Evaluation envs: raw rewards, no terminal at a lost life, and ``evaluate`` returns SB3's Monitor score."""
    seen = _compare(INVADERS, vectorization, False, seed=5, action_seed=0, n_steps=2000, games=1)
    assert seen["game_overs"] == 1 and seen["life_losses"] == 0 and seen["silent_life_losses"] >= 2
    assert max(seen["rewards"]) > 1.0

    class Scripted:
        def __init__(self) -> None:
            self.rng, self.actions = np.random.default_rng(7), []

        def predict(self, obs: np.ndarray) -> np.ndarray:
            action = self.rng.integers(6, size=len(obs))
            self.actions.append(action)
            return action

    env = make_vec_env(INVADERS, 1, vectorization, training=False, env_kwargs=_env_kwargs(vectorization))
    agent = Scripted()
    result = evaluate(agent, env, 1, seed=11)
    env.close()
    ref = _sb3_native_like(INVADERS, False, MAX_FRAMES + 1) if vectorization == "native" \
        else _sb3_atari(INVADERS, False, MAX_FRAMES)
    ref.seed(11)
    ref.reset()
    rewards = []
    for i, action in enumerate(agent.actions):
        _, reward, done, infos = ref.step(action)
        rewards.append(float(reward[0]))
        assert bool(done[0]) == (i == len(agent.actions) - 1)
    ref.close()
    score = infos[0]["episode"]["r"]  # SB3's Monitor: the whole game's raw score
    assert result.returns == [score] and result.lengths == [len(agent.actions)] and sum(rewards) == score
    assert score > np.count_nonzero(rewards)  # a clipped return would be this count


def test_max_pool_order_is_the_only_difference_from_sb3_on_rgb():
    """Against SB3 on RGB frames: per step, the difference is bounded by the max-pool order's own
    difference on the two pooled raw frames, ``D = max |Y(max(a, b)) - max(Y(a), Y(b))|`` (+1 for the two
    roundings after INTER_AREA's weighted mean), and frames are bitwise equal where ``D == 0``.
    Pong with this seed pools frame pairs in which a paddle moves over the field: D = 16 on most steps."""
    mine = make_vec_env(PONG, 1, "sync", training=True)
    ref = _sb3_atari(PONG, True, MAX_FRAMES, gray_first=False)
    pool = _base(ref, MaxAndSkipEnv)._obs_buffer  # SB3's two pooled raw RGB frames of the last step
    mine.reset(seed=0)
    ref.seed(0)
    ref.reset()
    rng = np.random.default_rng(0)
    differ = worst = 0
    for _ in range(150):
        action = rng.integers(mine.single_action_space.n, size=1)
        step = mine.step(action)
        ref_stack, reward, done, _ = ref.step(action)
        assert step.valid[0] and step.reward[0] == reward[0] and not done[0]
        gray = [cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY).astype(int) for frame in pool]
        bound = int(np.abs(cv2.cvtColor(pool.max(axis=0), cv2.COLOR_RGB2GRAY) - np.maximum(*gray)).max())
        diff = np.abs(step.obs[0, -1].astype(int) - ref_stack[0, ..., -1])
        assert diff.max() <= (bound + 1 if bound else 0)
        differ += bool(diff.any())
        worst = max(worst, int(diff.max()))
    mine.close()
    ref.close()
    assert differ >= 100 and worst >= 10  # measured: 122 of 150 steps differ, D = 16, up to 16 on up to 36 pixels
