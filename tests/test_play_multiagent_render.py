"""``canter play RUN --render`` of a PettingZoo parallel env that shows no window: one line, as a single-agent env's
(tests/test_play_render_headless.py). It played the episodes unseen and exited 0: where there was no display (pygame
drew to SDL's offscreen driver), and for an env whose render modes do not include 'human'."""
from __future__ import annotations

import numpy as np
import pytest

from canter.errors import CanterError
from canter.play import play


class _Match:
    """Each agent takes the action its one-hot observation names."""

    def predict(self, obs: np.ndarray) -> np.ndarray:
        return np.asarray(obs).argmax(-1)


def test_render_of_a_parallel_env_without_a_display_is_refused(monkeypatch):
    pytest.importorskip("pygame")
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER"):  # the tests' conftest picks 'dummy'
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    with pytest.raises(CanterError, match=r"--render opened no window for 'pettingzoo:tests.window_agents': there is "
                                          r"no display.*record the episodes with --video-dir"):
        play(_Match(), "pettingzoo:tests.window_agents", 1, render=True)
    import pygame

    assert not pygame.display.get_init()  # the env was closed


def test_sdls_own_complaint_does_not_come_before_a_parallel_envs_refusal(monkeypatch, capfd):
    """As a single-agent env's: SDL's 'XDG_RUNTIME_DIR is invalid or not set' line came before the refusal."""
    pytest.importorskip("pygame")
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER", "XDG_RUNTIME_DIR"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    with pytest.raises(CanterError, match=r"--render opened no window"):
        play(_Match(), "pettingzoo:tests.window_agents", 1, render=True)
    assert "XDG_RUNTIME_DIR" not in capfd.readouterr().err


def test_a_driver_the_user_chose_is_kept(monkeypatch):
    pytest.importorskip("pygame")
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    assert play(_Match(), "pettingzoo:tests.window_agents", 1, render=True) == [8.0]


def test_render_of_a_parallel_env_without_the_human_mode_is_refused():
    with pytest.raises(CanterError, match=r"'pettingzoo:tests.window_agents' cannot render in a window \(its render "
                                          r"modes: rgb_array\): --render needs an env that renders in render_mode "
                                          r"'human'"):
        play(_Match(), "pettingzoo:tests.window_agents", 1, render=True, env_kwargs={"frames_only": True})
