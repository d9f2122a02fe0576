"""``pettingzoo:tests.frame_losing_agents``: :mod:`tests.match_agents`' env whose ``render()`` returns None from step 4
of an episode reset with seed 1 on (an env that stops giving frames part-way), for the recording tests."""
from __future__ import annotations

from tests.match_agents import MatchAgents


class FrameLosingAgents(MatchAgents):
    """Match agents rendering rgb_array frames, but none from step 4 of an episode reset with seed 1."""

    metadata = {"name": "frame_losing_agents_v0", "render_modes": ["rgb_array"], "render_fps": 30}
    loses = False

    def reset(self, seed=None, options=None):  # noqa: D102
        self.loses = seed == 1
        return super().reset(seed=seed, options=options)

    def render(self):  # noqa: D102
        return None if self.loses and self.t >= 4 else super().render()


def parallel_env(**kwargs: object) -> MatchAgents:
    """PettingZoo's factory convention."""
    return FrameLosingAgents(**kwargs)
