"""The ``env_kwargs`` an ALE id takes (both Atari paths, :mod:`canter.envs.atari`), checked before any env is built.

A key that is not one of them used to reach ``gymnasium.make`` (wrapper path) or the native env's check: a
preprocessing setting (``noop_max``, ``frame_stack``, ``screen_size``, ...) was refused with gymnasium's long
TypeError and a hint taken from ale-py's native env's signature, which named keys canter refuses too (``noop_max``
got "did you mean 'noop_max'?", ``frame_stack`` "'stack_num'"); ``--vectorization native`` sent it to ``auto``, which
refused it the same way; ``sound_obs: true`` was a traceback from gymnasium's ``AtariPreprocessing`` and
``continuous: true`` an ``AssertionError`` from the first no-op at reset.
"""
from __future__ import annotations

from typing import Any

from canter.errors import CanterError, closest

#: the keys taken: ale-py's ``AtariEnv`` arguments passed on, and canter's own two
TAKEN = ("mode", "difficulty", "repeat_action_probability", "full_action_space", "max_num_frames_per_episode",
         "obs_type", "render_mode", "frameskip", "terminal_on_life_loss", "max_episode_steps")
#: settings of other Atari wrappers (gymnasium's, SB3's, ale-py's native env's) that canter's preprocessing fixes
FIXED = ("noop_max", "frame_skip", "screen_size", "grayscale_obs", "grayscale", "grayscale_newaxis", "scale_obs",
         "frame_stack", "stack_num", "n_stack", "num_stack", "stack_size", "clip_reward", "reward_clipping",
         "img_height", "img_width", "maxpool", "use_fire_reset")
#: other wrappers' names of settings canter takes under its own name (SB3's AtariWrapper, ale-py's native env)
ALIASES = {"action_repeat_probability": "repeat_action_probability", "sticky_actions": "repeat_action_probability",
           "episodic_life": "terminal_on_life_loss"}
#: ale-py's arguments that the preprocessing cannot take (value given: the one it can)
REFUSED = {"continuous": (False, "continuous actions (the preprocessing presses the discrete no-op and FIRE)"),
           "continuous_action_threshold": (None, "it applies to continuous actions, which the preprocessing does "
                                                 "not take"),
           "sound_obs": (False, "sound observations (the preprocessing reads the screen)"),
           "game": (None, "the game is the env id's")}
_PREPROCESSING = ("frame skip 4 with a max over the last two frames, 1 to 30 no-ops at reset, 84x84 grayscale frames, "
                  "a stack of the last 4; in training rewards clipped to their sign and a lost life ending the "
                  "episode (terminal_on_life_loss)")


def check_atari_kwargs(env_id: str, env_kwargs: dict[str, Any] | None) -> None:
    """A one-line :class:`CanterError` for the first key of ``env_kwargs`` that an ALE id does not take, naming what
    to do instead: the preprocessing's fixed settings, or the closest key taken (see the module docstring)."""
    for key, value in (env_kwargs or {}).items():
        if key in TAKEN:
            continue
        if key in REFUSED:
            allowed, why = REFUSED[key]
            if allowed is not None and value is allowed:
                continue
            raise CanterError(f"env '{env_id}': env_kwargs {key}: {value!r} is not supported: {why}")
        if key in ALIASES:
            raise CanterError(f"env '{env_id}': env_kwargs '{key}' is {ALIASES[key]} here")
        if key in FIXED:
            raise CanterError(f"env '{env_id}': env_kwargs '{key}' is not a setting: canter's Atari preprocessing is "
                              f"fixed ({_PREPROCESSING}); the env_kwargs it takes: {', '.join(TAKEN)}")
        hint = closest(str(key), TAKEN)
        raise CanterError(f"env '{env_id}': unknown env_kwargs key '{key}'"
                          + (f"; did you mean {' or '.join(repr(h) for h in hint)}?" if hint else "")
                          + f" (the env_kwargs an Atari env takes: {', '.join(TAKEN)})")
