"""Sticky actions (Machado et al., 2018) on the Atari wrapper path, drawn in Python so a game can be saved.

ALE's own sticky actions (``repeat_action_probability`` of the raw game) repeat the previous action from
inside the emulator, which ``cloneState`` does not save: a restored game's next frame differed, so a run
with sticky actions could not resume exactly. :class:`StickyActions` does the same thing around the raw
(``frameskip=1``) game, as Stable-Baselines3's ``StickyActionEnv`` (``AtariWrapper(action_repeat_probability=p)``):
on each emulator frame, with probability ``p`` the previous frame's action is played in place of the one
given, the draw coming from the game's own seeded ``np_random`` (the one the no-op reset draws from), and
NOOP is the previous action after a reset. Its state (the action held) is a plain attribute and the
generator is the env's, so :func:`canter.envs.state.capture_env` saves both. ale-py's native vector env keeps
ALE's sticky actions (it cannot be saved either way).
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym

#: ALE's NOOP, the action held after a reset
NOOP = 0


class StickyActions(gym.Wrapper):
    """Repeat the previous emulator frame's action with probability ``probability`` (see the module docstring)."""

    def __init__(self, env: gym.Env, probability: float) -> None:
        super().__init__(env)
        self.probability = float(probability)
        self.held = NOOP

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:  # noqa: D102
        self.held = NOOP
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:  # noqa: D102
        if self.np_random.random() >= self.probability:
            self.held = action
        return self.env.step(self.held)
