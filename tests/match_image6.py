"""match_agents (``pettingzoo:tests.match_image6``) with [8, 8, 6] uint8 image observations, the target's channel lit: read
as a vector by canter before 2026-11-27, as channels-last images since (a test helper module, not a test file)."""
from __future__ import annotations

import functools

import numpy as np
from gymnasium import spaces

from tests.match_agents import MatchAgents


class Match6(MatchAgents):
    """See the module docstring."""

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> spaces.Space:  # noqa: D102
        return spaces.Box(0, 255, (8, 8, 6), np.uint8)

    @staticmethod
    def _image(target: int) -> np.ndarray:
        frame = np.zeros((8, 8, 6), np.uint8)
        frame[..., target] = 255
        return frame


def parallel_env(**kwargs: object) -> Match6:
    """The env (``n_agents`` and the rest as :class:`MatchAgents` takes them)."""
    return Match6(image_obs=True, state=False, **kwargs)
