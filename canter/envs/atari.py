"""Atari (ALE) environments with the DeepMind preprocessing, single and vectorised.

Every ALE id (``ALE/Pong-v5``, ``PongNoFrameskip-v4``, ...) gets the preprocessing of Mnih et al.
(2015) as Stable-Baselines3 / rl-zoo3 apply it: up to 30 no-op actions at reset, frame skip 4 with
a max-pool over the last two frames, 84x84 grayscale frames, FIRE at reset for games that need
it, a stack of the last 4 frames (``uint8 [4, 84, 84]``), and, for *training* envs only, episodic
life (a lost life ends the training episode) and rewards clipped to their sign. Evaluation envs
play whole games and report the raw game score; so do the training envs' episode statistics
(:class:`GameScore`, :class:`NativeGameScore`: ``history.parquet`` has one row per game).
``env_kwargs: {terminal_on_life_loss: false}`` (Stable-Baselines3's ``AtariWrapper`` switch) makes training
episodes whole games and presses FIRE only at a game's reset, never after a lost life, in training and
evaluation, on both paths. The other numbers are settings too, under SB3's names, on both paths
(:class:`canter.envs.atari_kwargs.Preprocessing`): ``noop_max``, ``frame_skip``, ``screen_size`` (an int or
``[height, width]``), ``frame_stack`` (or ``n_stack``) and ``clip_reward`` (training rewards); ``grayscale: false``
keeps the RGB screen (``uint8 [3 * frame_stack, 84, 84]``, each frame's 3 channels together;
:mod:`canter.envs.atari_rgb`).

Sticky actions are off (``repeat_action_probability = 0``) and the base env skips no frames
(``frameskip = 1``; the preprocessing's skip of 4 is the only one), which is what the ``NoFrameskip-v4``
ids mean and what rl-zoo3's published Atari settings use; pass ``env_kwargs:
{repeat_action_probability: 0.25}`` for Machado et al. (2018)'s protocol (the wrapper path draws them in Python,
:class:`~canter.envs.atari_sticky.StickyActions`, so its games can be saved; the native env in ALE). Episodes are cut at
108,000 frames (27,000 agent steps, 30 minutes of play). ``env_kwargs: {max_episode_steps: N}`` cuts each
game after N agent steps (:func:`wrap_deepmind`).

Vectorisation (``--vectorization``): ``auto``/``native`` use ale-py's C++ ``AtariVectorEnv``,
which does the same preprocessing natively in threads (``auto`` falls back to the wrappers for
``env_kwargs`` it does not take, such as ``mode``); ``sync``/``async`` build the
gymnasium-wrapper stack below in this process or in subprocesses. Differences of the native env:
its frame stack is padded with zero frames after a reset (the wrappers repeat the first frame); its
reset presses FIRE for a single frame, without the following action 2, and then takes 0 to 28
no-ops from its own generator (0 twice as likely as each other count; 0 to 29 in a game without
FIRE) (the wrappers: 1 to 30 no-ops, then FIRE and action 2 for 4 frames
each); after a lost life it continues the game and keeps its frame stack (in training,
:class:`NativeNewLifeStack` puts zero frames in place of the previous life's in the new episode's
stacks, as after a reset), and :class:`NativeFireAfterLifeLoss` presses FIRE there (evaluation: FIRE then action 2, as the wrapper
path's ``FireAfterLifeLoss``; training: FIRE on the step that NEXT_STEP treats as the episode
boundary, whose action no transition records; in a game without FIRE that step plays NOOP, as ``EpisodicLife``'s
reset does).
The replay buffer stores stacks exactly either way (:class:`canter.data.framestack.FrameStackReplay`).

Differences from Stable-Baselines3's ``AtariWrapper`` shared by both paths (measured in
``tests/test_reference_sb3_atari.py``, which otherwise finds every frame bitwise equal): frames are
converted to grayscale before the max over the last two frames (SB3 takes the max over RGB first;
they differ where an object moves over a non-black background, e.g. by up to 16 grey levels at
Pong's paddles), and the observation that ends a game (game over or truncation) does not include
the screen of the frame that ended it (gymnasium's ``AtariPreprocessing`` and ale-py stop the frame
skip before reading it). SB3's ``VecFrameStack`` pads with zeros, as the native env does.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from canter.ale import is_atari, looks_like_atari, register_ale, registered_spec, retired_id_hint  # noqa: F401  (re-exported)
from canter.envs.atari_kwargs import SETTINGS, Preprocessing, canonical, preprocessing
from canter.envs.atari_native import (NativeFireAfterLifeLoss, NativeGameScore, NativeNewLifeStack,  # noqa: F401
                                      NativeSeedRange)
from canter.envs.atari_rgb import NativeStackedRGB, StackedRGB
from canter.envs.atari_sticky import StickyActions
from canter.envs.vector import GAME_RETURN
from canter.envs.workers import vector_env
from canter.errors import CanterError, bad_env_kwargs
from canter.utils import available_cpus

#: the default preprocessing (``env_kwargs`` change it: :func:`canter.envs.atari_kwargs.preprocessing`)
FRAME_STACK = SETTINGS["frame_stack"]
FRAME_SKIP = SETTINGS["frame_skip"]
NOOP_MAX = SETTINGS["noop_max"]
SCREEN_SIZE = SETTINGS["screen_size"]
MAX_FRAMES = 108_000
#: frames per second of the Atari 2600 (NTSC) emulator: one agent step is ``frame_skip`` of them, so a
#: preprocessed env's ``render_fps`` (the fps of ``canter play --video-dir`` / ``--record-every``
#: videos, one frame per step) is ``EMULATOR_FPS / frame_skip`` (15 by default), the game's speed
EMULATOR_FPS = 60
_PREPROCESSING_KEYS = ("frameskip", "repeat_action_probability", "full_action_space", "max_num_frames_per_episode")
#: ale-py keys whose values the preprocessing makes no-ops (it reads the screen itself; sound_obs and continuous are
#: taken only false): the native env drops them, where they used to send ``auto`` to the slower wrapper path
_NATIVE_DROPS = ("obs_type", "sound_obs", "continuous")


def missing_extra(env_id: str) -> CanterError:
    """The one-line error for an ALE id without ale-py installed."""
    return CanterError(f"env '{env_id}' needs the 'atari' extra: pip install 'canter[atari]'")


def step_fps(frame_skip: int) -> float:
    """Agent steps per second of game time (one step is ``frame_skip`` emulator frames): a video's fps."""
    return EMULATOR_FPS / frame_skip


def _base_kwargs(env_id: str, env_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """gymnasium.make kwargs of the raw game: no frame skip, no sticky actions unless asked; canter's preprocessing
    settings checked (:func:`~canter.envs.atari_kwargs.preprocessing`) and left out."""
    preprocessing(env_id, env_kwargs)
    kwargs = {"repeat_action_probability": 0.0, "max_num_frames_per_episode": MAX_FRAMES,
              **canonical(env_id, env_kwargs)}
    for key in SETTINGS:  # canter's, not ale-py's
        kwargs.pop(key, None)
    if kwargs.pop("frameskip", 1) != 1:
        raise CanterError(f"env '{env_id}': env_kwargs frameskip is the raw game's, which the preprocessing needs at "
                          f"1; set frame_skip (default {FRAME_SKIP}) instead")
    kwargs["frameskip"] = 1
    p = kwargs["repeat_action_probability"]
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise CanterError(f"env '{env_id}': repeat_action_probability must be a number from 0 to 1, got {p!r}")
    frames = kwargs["max_num_frames_per_episode"]
    if isinstance(frames, bool) or not isinstance(frames, int) or frames < 1:
        raise CanterError(f"env '{env_id}': max_num_frames_per_episode must be a whole number >= 1, got {frames!r}")
    if not isinstance(kwargs.get("full_action_space", False), bool):
        raise CanterError(f"env '{env_id}': full_action_space must be true or false, got {kwargs['full_action_space']!r}")
    if kwargs.get("obs_type", "rgb") not in ("rgb", "grayscale"):  # the preprocessing reads the screen itself
        raise CanterError(f"env '{env_id}': obs_type {kwargs['obs_type']!r} is not supported; the Atari preprocessing "
                          f"gives screen frames whatever obs_type is (grayscale: false for RGB ones)")
    return kwargs


class GameScore(gym.Wrapper):
    """Training envs, under :class:`EpisodicLife` and the reward clipping: the raw score of the whole
    game, reported in ``info[GAME_RETURN]`` on the step that ends the game (game over or truncation),
    for the episode statistics (:class:`~canter.envs.vector.VecEnv` ``whole_games``), as
    Stable-Baselines3's ``Monitor`` under its ``AtariWrapper`` reports it. The FIRE and no-op steps that
    follow a lost life count (they are steps of the game); the no-ops of a new game's reset do not. A game
    that ends on one of those steps, inside ``EpisodicLife``'s or ``FireReset``'s reset, is reported in the
    reset's info (:func:`_game_kept`), so on the vector env's reset step."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.score = 0.0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:  # noqa: D102
        self.score = 0.0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:  # noqa: D102
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.score += float(reward)
        if terminated or truncated:
            info = {**info, GAME_RETURN: self.score}
        return obs, reward, terminated, truncated, info


class EpisodicLife(gym.Wrapper):
    """A lost life ends the episode for the learner; the game itself continues (DeepMind's
    ``EpisodicLifeEnv``). ``reset`` after a lost life takes one no-op step instead of resetting
    the game; after a real game over it resets. A ``reset(seed=...)`` always starts a new game from
    that seed (gymnasium's contract, and what ale-py's native env does): it used to take the no-op step
    whenever the game was going on (as SB3's ``EpisodicLifeEnv`` does), so the seed was dropped, e.g.
    a resumed run's fresh episodes on the wrapper path continued the first reset's game. gymnasium's
    ``terminal_on_life_loss`` resets the whole game on every lost life, so it is not used."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.lives = 0
        self.game_over = True

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:  # noqa: D102
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = terminated or truncated
        lives = self.env.unwrapped.ale.lives()
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:  # noqa: D102
        if self.game_over or kwargs.get("seed") is not None:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:  # the game ended on the no-op: its score goes with the reset's info
                obs, info = _game_kept(self.env.reset(**kwargs), info)
        self.game_over = False
        self.lives = self.env.unwrapped.ale.lives()
        return obs, info


class FireReset(gym.Wrapper):
    """Press FIRE (then action 2) after every reset, for games that wait for it (gymnasium has no such wrapper)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        meanings = env.unwrapped.get_action_meanings()
        if len(meanings) < 3 or meanings[1] != "FIRE":
            raise CanterError(f"FireReset needs a game whose action 1 is FIRE, got {meanings[:3]}")

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:  # noqa: D102
        _, info = self.env.reset(**kwargs)
        ended = info  # a game that ended inside a reset (training: GameScore's info) is reported with this one
        again = {k: v for k, v in kwargs.items() if k != "seed"}  # seeded once: a second reset goes on from it
        for action in (1, 2):
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                ended = info if GAME_RETURN in info else ended  # a lost life (training) ends no game
                obs, info = _game_kept(self.env.reset(**again), ended)
        return _game_kept((obs, info), ended)


def _game_kept(reset: tuple[Any, dict[str, Any]], ended: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A reset's ``(obs, info)`` with the :data:`GAME_RETURN` of ``ended``, the info of a step that a wrapper
    took inside its ``reset`` (training envs: a game that ended there is reported on the vector env's reset
    step, which ``NEXT_STEP`` autoreset gives this info; without it the game went unrecorded and its steps
    were counted in the next game's)."""
    obs, info = reset
    if GAME_RETURN in ended and GAME_RETURN not in info:
        info = {**info, GAME_RETURN: ended[GAME_RETURN]}
    return obs, info


class FireAfterLifeLoss(gym.Wrapper):
    """Evaluation on the wrapper path: press FIRE (then action 2) after a lost life, as training's
    ``EpisodicLife`` + ``FireReset`` do at the reset that follows one (and as Stable-Baselines3,
    which evaluates through the same wrappers, does); the rewards of those steps count. Without it
    a policy trained there never serves after a lost life, and a FIRE game (Breakout) stalls until
    the frame cap. On ale-py's native env :class:`NativeFireAfterLifeLoss` does the same."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.lives = 0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:  # noqa: D102
        obs, info = self.env.reset(**kwargs)
        self.lives = self.env.unwrapped.ale.lives()
        return obs, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:  # noqa: D102
        obs, reward, terminated, truncated, info = self.env.step(action)
        lives = self.env.unwrapped.ale.lives()
        for press in ((1, 2) if 0 < lives < self.lives else ()):
            if terminated or truncated:
                break
            obs, r, terminated, truncated, info = self.env.step(press)
            reward += r
        self.lives = self.env.unwrapped.ale.lives()
        return obs, reward, terminated, truncated, info


def _sign(reward: float) -> float:
    return float(np.sign(reward))


def wrap_deepmind(env: gym.Env, training: bool, max_episode_steps: int | None = None,
                  settings: Preprocessing = Preprocessing()) -> gym.Env:
    """DeepMind preprocessing around a raw (``frameskip=1``) ALE env; see the module docstring.
    ``max_episode_steps`` (None or -1: none) truncates each game after that many agent steps. ``settings``: the
    no-ops, frame skip, screen size, stack and reward clipping; its ``life_loss`` false (``terminal_on_life_loss:
    false``): training episodes are whole games, and FIRE is pressed only at a game's reset, in training and
    evaluation (SB3's ``AtariWrapper(terminal_on_life_loss=False)``)."""
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation, TimeLimit, TransformReward

    meanings = env.unwrapped.get_action_meanings()
    if meanings[0] != "NOOP":  # gymnasium's no-op reset raises a bare ValueError for these (Backgammon, VideoCheckers)
        raise CanterError(f"{env.spec.id if env.spec else 'this game'}: the wrapper path's no-op reset needs action 0 "
                          f"to be NOOP, this game's actions are {meanings}; use --vectorization native")
    life_loss = settings.life_loss
    env = AtariPreprocessing(  # gymnasium's screen_size is (width, height)
        env, noop_max=settings.noop_max, frame_skip=settings.frame_skip, screen_size=(settings.width, settings.height),
        terminal_on_life_loss=False, grayscale_obs=settings.grayscale, scale_obs=False,
    )
    if max_episode_steps is not None and max_episode_steps != -1:  # agent steps of a whole game, lives included
        env = TimeLimit(env, max_episode_steps)
    if training:
        env = EpisodicLife(GameScore(env)) if life_loss else GameScore(env)
    if "FIRE" in env.unwrapped.get_action_meanings():
        env = FireReset(env if training or not life_loss else FireAfterLifeLoss(env))
    if training and settings.clip_reward:
        env = TransformReward(env, _sign)
    env = FrameStackObservation(env, settings.frame_stack)
    if not settings.grayscale:  # [S, H, W, 3] -> [3 * S, H, W]
        env = StackedRGB(env)
    # ale-py's metadata says 30 fps for any frameskip; one step here is frame_skip emulator frames
    env.metadata = {**env.metadata, "render_fps": step_fps(settings.frame_skip)}
    return env


def make_atari_env(env_id: str, training: bool = False, render_mode: str | None = None,
                   env_kwargs: dict[str, Any] | None = None) -> gym.Env:
    """One preprocessed ALE env (gymnasium wrappers); ``training`` adds episodic life and reward clipping.
    A ``render_mode`` in ``env_kwargs`` is used where ``render_mode`` is None (it was passed to ``gymnasium.make``
    twice). ``env_kwargs``' ``max_episode_steps`` counts agent steps (gymnasium's ``TimeLimit`` around the raw
    ``frameskip=1`` game would count emulator frames, the reset's no-ops included)."""
    settings = preprocessing(env_id, env_kwargs)
    kwargs = _base_kwargs(env_id, env_kwargs)
    limit = kwargs.pop("max_episode_steps", None)
    given = kwargs.pop("render_mode", None)  # env_kwargs' render_mode, as other envs take it; ``render_mode`` wins
    sticky = kwargs.pop("repeat_action_probability")  # drawn in Python (StickyActions), so the game can be saved
    try:
        env = gym.make(env_id, render_mode=given if render_mode is None else render_mode,
                       repeat_action_probability=0.0, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a bad value is ale-py's RuntimeError (mode: 99) or TypeError
        raise bad_env_kwargs(env_id, env_kwargs, exc) from None
    env = wrap_deepmind(StickyActions(env, sticky) if sticky > 0 else env, training, limit, settings)
    _channels_first(env.observation_space)
    return env


#: how the Atari envs lay out their frame stacks, whatever their sizes (:func:`_channels_first`)
STACK_LAYOUT = "chw"


def _channels_first(space: gym.Space) -> None:
    """Mark an Atari observation space as the channels-first stack it is (``[C * frame_stack, height, width]``): an
    RGB stack of a small screen (``[12, 10, 10]``) or a stack longer than the screen is wide (``[12, 8, 8]``) has a
    last axis shorter than its first, which the encoders' shape rule reads as channels-last (it convolved across
    the frames, and the IMPALA encoder took 10 channels)."""
    from canter.models.cnn import mark_image_layout

    mark_image_layout(space, STACK_LAYOUT)


def _native(env_id: str, n_envs: int, training: bool, env_kwargs: dict[str, Any] | None,
            screen: bool = False) -> gym.vector.VectorEnv:
    """ale-py's C++ vector env with the same preprocessing (life loss ends training episodes only). ``screen``:
    the same game with the full RGB screen of each step's last frame as its observation (``[n, 1, 210, 160, 3]``;
    the same seeds, no-ops and forced FIRE presses), which :class:`canter.envs.atari_play.NativePlayEnv` renders."""
    from ale_py.vector_env import AtariVectorEnv

    settings = preprocessing(env_id, env_kwargs)
    life_loss = settings.life_loss
    kwargs = _base_kwargs(env_id, env_kwargs)
    kwargs.pop("frameskip")
    for key in _NATIVE_DROPS:
        kwargs.pop(key, None)
    unknown = set(kwargs) - set(_PREPROCESSING_KEYS)
    if unknown:
        raise CanterError(f"env_kwargs {sorted(unknown)} are not supported by the native Atari vector env; "
                          f"use --vectorization auto, sync or async")
    env = AtariVectorEnv(
        gym.spec(env_id).kwargs["game"], n_envs, num_threads=min(n_envs, available_cpus()),
        img_height=210 if screen else settings.height, img_width=160 if screen else settings.width,
        grayscale=settings.grayscale and not screen, stack_num=1 if screen else settings.frame_stack,
        maxpool=not screen,
        frameskip=settings.frame_skip, noop_max=settings.noop_max,
        use_fire_reset=True, episodic_life=False, life_loss_info=training and life_loss, reward_clipping=False,
        autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP, **kwargs,
    )
    actions = env.ale.get_action_set()
    fire = len(actions) >= 3 and actions[1] == _ale_fire()
    seeded = NativeSeedRange(env)
    # training: zero frames in place of the previous life's in a new episode's stacks, NOOP (no FIRE) on the step
    # after a lost life; rewards clipped
    wrapped: gym.vector.VectorEnv = NativeGameScore(NativeNewLifeStack(seeded, noop=not fire), settings.clip_reward,
                                                    kwargs["max_num_frames_per_episode"]) if training else seeded
    if life_loss and fire:
        wrapped = NativeFireAfterLifeLoss(wrapped, training)
    return wrapped if settings.grayscale or screen else NativeStackedRGB(wrapped)  # RGB: [n, 3 * S, H, W]


def _ale_fire() -> Any:
    """ale-py's FIRE action."""
    from ale_py import Action

    return Action.FIRE


def native_takes(env_kwargs: dict[str, Any] | None) -> bool:
    """Whether ale-py's native vector env takes every key of ``env_kwargs`` (else only the wrapper path does:
    ``mode``, ``difficulty``, ``max_episode_steps``, ...)."""
    return not set(env_kwargs or {}) - {"frameskip", *SETTINGS, "n_stack", "action_repeat_probability",
                                        *_PREPROCESSING_KEYS, *_NATIVE_DROPS}


def make_atari_vec(env_id: str, n_envs: int, vectorization: str = "auto", training: bool = False,
                   env_kwargs: dict[str, Any] | None = None) -> gym.vector.VectorEnv:
    """``n_envs`` preprocessed copies of an ALE game: native (ale-py's C++ vector env) for
    ``auto``/``native``, else gymnasium wrappers in ``sync`` or ``async`` (subprocess) vector envs.
    ``auto`` with ``env_kwargs`` the native env does not take (``mode``, ``difficulty``, ...) uses the
    wrappers instead (``sync`` for one copy, else ``async``), where ``native`` refuses them."""
    _base_kwargs(env_id, env_kwargs)  # a bad value: one line here, not in each subprocess
    if vectorization == "auto" and not native_takes(env_kwargs):
        vectorization = "sync" if n_envs == 1 else "async"
    if vectorization in ("auto", "native"):
        env = _native(env_id, n_envs, training, env_kwargs)
    else:
        kwargs = dict(env_kwargs or {})
        env = vector_env(lambda: make_atari_env(env_id, training, env_kwargs=kwargs), n_envs,
                         vectorization == "async", env_id)
    _channels_first(env.single_observation_space)
    return env
