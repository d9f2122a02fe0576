"""``pettingzoo:tests.window_agents``: :mod:`tests.match_agents`' env drawing in a pygame window for
``render_mode="human"`` (its render modes: human, rgb_array); ``frames_only=True`` lists rgb_array alone."""
from __future__ import annotations

from tests.match_agents import MatchAgents


class WindowAgents(MatchAgents):
    """Match agents whose human rendering is a pygame window, as PettingZoo's MPE and classic games draw."""

    metadata = {"name": "window_agents_v0", "render_modes": ["human", "rgb_array"], "render_fps": 30}

    def render(self):  # noqa: D102
        if self.render_mode != "human":
            return super().render()
        import pygame

        if not pygame.display.get_init():
            pygame.display.init()
            pygame.display.set_mode((48, 16))
        pygame.display.flip()
        return None

    def close(self) -> None:  # noqa: D102
        import sys

        pygame = sys.modules.get("pygame")
        if self.render_mode == "human" and pygame is not None and pygame.display.get_init():
            pygame.display.quit()


class FramesOnly(MatchAgents):
    """Match agents that render frames only."""

    metadata = {"name": "frames_only_v0", "render_modes": ["rgb_array"], "render_fps": 30}


def parallel_env(frames_only: bool = False, **kwargs: object) -> MatchAgents:
    """PettingZoo's factory convention."""
    return (FramesOnly if frames_only else WindowAgents)(**kwargs)
