"""The ``env_kwargs`` an ALE id takes (both Atari paths, :mod:`canter.envs.atari`), checked before any env is built,
and the preprocessing settings among them (:class:`Preprocessing`).

The preprocessing's settings are Stable-Baselines3's ``AtariWrapper`` / ``VecFrameStack`` names: ``noop_max``,
``frame_skip``, ``screen_size`` (an int or ``[height, width]``), ``frame_stack`` (SB3's ``n_stack`` is taken for it),
``clip_reward`` and ``terminal_on_life_loss``; and ``grayscale`` (ale-py's native env's name; SB3 has no such switch):
false keeps the RGB screen, each frame 3 channels of the stack (``uint8 [3 * frame_stack, height, width]``, as SB3's
``VecFrameStack`` + ``VecTransposeImage`` and EnvPool's ``gray_scale=False`` give). The numbers used to be
fixed (a stack of 4 84x84 frames, ...) and refused with a one-line error (RGB frames too: "RGB frames are not
supported"); before that gymnasium's long TypeError named keys of ale-py's native env's signature.
A key that is not taken is one line naming what to do instead: ``sound_obs: true`` was a traceback from gymnasium's
``AtariPreprocessing`` and ``continuous: true`` an ``AssertionError`` from the first no-op at reset.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from canter.errors import CanterError, closest

#: canter's preprocessing settings (Stable-Baselines3's ``AtariWrapper`` names) and their defaults
SETTINGS: dict[str, Any] = {"noop_max": 30, "frame_skip": 4, "screen_size": 84, "frame_stack": 4, "clip_reward": True,
                            "terminal_on_life_loss": True, "grayscale": True}
#: the keys taken: ale-py's ``AtariEnv`` arguments passed on, and canter's own
TAKEN = ("mode", "difficulty", "repeat_action_probability", "full_action_space", "max_num_frames_per_episode",
         "obs_type", "render_mode", "frameskip", *SETTINGS, "max_episode_steps")
#: Stable-Baselines3's names taken for canter's keys (``VecFrameStack(n_stack)``, ``AtariWrapper``'s sticky actions)
SAME = {"n_stack": "frame_stack", "action_repeat_probability": "repeat_action_probability"}
#: other wrappers' names of settings canter takes under its own name (ale-py's native env's, gymnasium's, ...)
ALIASES = {"sticky_actions": "repeat_action_probability", "episodic_life": "terminal_on_life_loss",
           "stack_num": "frame_stack", "num_stack": "frame_stack", "stack_size": "frame_stack",
           "reward_clipping": "clip_reward", "img_height": "screen_size", "img_width": "screen_size",
           "grayscale_obs": "grayscale", "gray_scale": "grayscale"}
#: settings of other Atari wrappers that canter's preprocessing fixes
FIXED = ("grayscale_newaxis", "scale_obs", "maxpool", "use_fire_reset")
#: ale-py's arguments that the preprocessing cannot take (value given: the one it can)
REFUSED = {"continuous": (False, "continuous actions (the preprocessing presses the discrete no-op and FIRE)"),
           "continuous_action_threshold": (None, "it applies to continuous actions, which the preprocessing does "
                                                 "not take"),
           "sound_obs": (False, "sound observations (the preprocessing reads the screen)"),
           "game": (None, "the game is the env id's")}
_FIXED = ("frames are always uint8 (divided by 255 in the network), [channels, height, width] (grayscale: false for "
          "RGB), each the max over the last two frames of its frame skip, and FIRE is pressed at reset in games that "
          "have it")
#: the smallest screen side taken (a convolutional encoder's image, and not a channel count)
MIN_SIDE = 8


@dataclass(frozen=True)
class Preprocessing:
    """The Atari preprocessing an env's ``env_kwargs`` ask for (:func:`preprocessing`; defaults: DeepMind's)."""

    noop_max: int = 30
    frame_skip: int = 4
    height: int = 84
    width: int = 84
    frame_stack: int = 4
    clip_reward: bool = True
    life_loss: bool = True
    grayscale: bool = True

    @property
    def channels(self) -> int:
        """Channels of each stacked frame: 1 (grayscale) or 3 (RGB); the observation has ``frame_stack`` times this."""
        return 1 if self.grayscale else 3


def check_atari_kwargs(env_id: str, env_kwargs: dict[str, Any] | None) -> None:
    """A one-line :class:`CanterError` for the first key of ``env_kwargs`` that an ALE id does not take, naming what
    to do instead: canter's key for it, what the preprocessing fixes, or the closest key taken."""
    for key, value in (env_kwargs or {}).items():
        if key in TAKEN or key in SAME:
            if key in SAME and SAME[key] in env_kwargs:  # type: ignore[operator]
                raise CanterError(f"env '{env_id}': env_kwargs '{key}' and '{SAME[key]}' are the same setting; "
                                  f"give '{SAME[key]}' only")
            continue
        if key in REFUSED:
            allowed, why = REFUSED[key]
            if allowed is not None and value is allowed:
                continue
            raise CanterError(f"env '{env_id}': env_kwargs {key}: {value!r} is not supported: {why}")
        if key in ALIASES:
            raise CanterError(f"env '{env_id}': env_kwargs '{key}' is {ALIASES[key]} here")
        if key in FIXED:
            raise CanterError(f"env '{env_id}': env_kwargs '{key}' is not a setting: {_FIXED}; the preprocessing's "
                              f"settings: {', '.join(SETTINGS)}")
        hint = closest(str(key), TAKEN)
        raise CanterError(f"env '{env_id}': unknown env_kwargs key '{key}'"
                          + (f"; did you mean {' or '.join(repr(h) for h in hint)}?" if hint else "")
                          + f" (the env_kwargs an Atari env takes: {', '.join(TAKEN)})")


def canonical(env_id: str, env_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """``env_kwargs``, checked (:func:`check_atari_kwargs`), with Stable-Baselines3's names (:data:`SAME`) as canter's."""
    check_atari_kwargs(env_id, env_kwargs)
    return {SAME.get(key, key): value for key, value in (env_kwargs or {}).items()}


def _whole(env_id: str, kwargs: dict[str, Any], key: str, least: int) -> int:
    value = kwargs.get(key, SETTINGS[key])
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise CanterError(f"env '{env_id}': env_kwargs {key} must be a whole number >= {least}, got {value!r}")
    return value


def _flag(env_id: str, kwargs: dict[str, Any], key: str) -> bool:
    value = kwargs.get(key, SETTINGS[key])
    if not isinstance(value, bool):
        raise CanterError(f"env '{env_id}': env_kwargs {key} must be true or false, got {value!r}")
    return value


def _screen(env_id: str, kwargs: dict[str, Any]) -> tuple[int, int]:
    value = kwargs.get("screen_size", SETTINGS["screen_size"])
    sides = list(value) if isinstance(value, (list, tuple)) else [value, value]
    if len(sides) != 2 or any(isinstance(s, bool) or not isinstance(s, int) or s < MIN_SIDE for s in sides):
        raise CanterError(f"env '{env_id}': env_kwargs screen_size must be a whole number >= {MIN_SIDE} (square "
                          f"frames) or [height, width] of two, got {value!r}; e.g. screen_size: 84")
    return sides[0], sides[1]


def preprocessing(env_id: str, env_kwargs: dict[str, Any] | None) -> Preprocessing:
    """The :class:`Preprocessing` ``env_kwargs`` ask for; a one-line :class:`CanterError` naming the key of a bad
    value (``frame_stack: 0``, ``screen_size: [84]``, ``noop_max: -1``, a string, ...)."""
    kwargs = canonical(env_id, env_kwargs)
    height, width = _screen(env_id, kwargs)
    return Preprocessing(noop_max=_whole(env_id, kwargs, "noop_max", 0), frame_skip=_whole(env_id, kwargs, "frame_skip", 1),
                         height=height, width=width, frame_stack=_whole(env_id, kwargs, "frame_stack", 1),
                         clip_reward=_flag(env_id, kwargs, "clip_reward"),
                         life_loss=_flag(env_id, kwargs, "terminal_on_life_loss"),
                         grayscale=_flag(env_id, kwargs, "grayscale"))
