"""canter play / --record-every on an env whose close() raises: a one-line warning naming the env, the videos kept.

It was a traceback after the episodes were played (and --record-every's check that the env renders stopped the run
before it began), where the vector envs' copies warn (tests/test_env_close_raises.py).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import odd_api_env
from canter.errors import CanterError, CanterWarning
from canter.envs.vector import _CLOSE_WARNED
from canter.play import make_render_env, play


class _Zeros:
    """An agent that always takes action 0."""

    def predict(self, obs: np.ndarray) -> np.ndarray:
        return np.zeros(len(obs), np.int64)


def _warnings_of(fn):
    _CLOSE_WARNED.clear()  # (warned once per process)
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


@pytest.mark.slow  # a training run in a fresh process (~6 s)
def test_a_run_recording_videos_warns_once(tmp_path):
    from support import run_python

    tests = str(__import__("pathlib").Path(__file__).resolve().parent)
    argv = ["canter", "train", "ppo", "--env", "odd_api_env:RenderCloseRaises-v0", "--max-steps", "100", "--n-envs",
            "2", "--set", "n_steps=64", "--set", "batch_size=64", "--eval-every", "64", "--eval-episodes", "1",
            "--record-every", "64", "--run-dir", str(tmp_path / "run"), "--quiet"]
    done = run_python(f"import sys; sys.path.insert(0, {tests!r}); sys.argv = {argv!r}; from canter.cli import entry; "
                      f"entry()")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "close() raised" in line]
    assert len(said) == 1, done.stderr  # the training, evaluation and recording envs' closes: one warning
    assert [p.name for p in (tmp_path / "run" / "videos").glob("*.mp4")] == ["step-000000128.mp4"]


def test_a_refused_render_mode_is_its_one_line_error_not_the_close_traceback():
    """--render on an env without render_mode 'human' is refused (one line) after closing the env: its close() error
    was the traceback instead, as the refusal closed the env before WarnOnClose wrapped it."""
    with pytest.raises(CanterError, match=r"cannot render in a window \(its render modes: rgb_array\)"):
        _warnings_of(lambda: make_render_env("odd_api_env:RenderCloseRaises-v0", "human"))
