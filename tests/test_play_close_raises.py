"""canter play / --record-every on an env whose close() raises: a one-line warning naming the env, the videos kept.

It was a traceback after the episodes were played (and --record-every's check that the env renders stopped the run
before it began), where the vector envs' copies warn (tests/test_env_close_raises.py).
"""
from __future__ import annotations

import warnings

import numpy as np

import odd_api_env
from canter.errors import CanterWarning
from canter.play import make_render_env, play


class _Zeros:
    """An agent that always takes action 0."""

    def predict(self, obs: np.ndarray) -> np.ndarray:
        return np.zeros(len(obs), np.int64)


def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in caught if issubclass(w.category, CanterWarning)]


def test_render_check_closes_with_a_warning():
    before = odd_api_env.CLOSED[0]
    _, said = _warnings_of(lambda: make_render_env("odd_api_env:RenderCloseRaises-v0", "rgb_array").close())
    assert odd_api_env.CLOSED[0] == before + 1
    assert len(said) == 1 and "env 'odd_api_env:RenderCloseRaises-v0': close() raised RuntimeError" in said[0], said


def test_play_records_and_warns(tmp_path):
    returns, said = _warnings_of(lambda: play(_Zeros(), "odd_api_env:RenderCloseRaises-v0", 1,
                                              video_dir=str(tmp_path / "v")))
    assert returns == [5.0]
    assert [p.name for p in (tmp_path / "v").glob("*.mp4")] == ["play-episode-0.mp4"]
    assert len(said) == 1 and "licence server" in said[0], said
