"""canter.play closes the env it made when it stops before the first episode: a video folder that cannot be made
(a path under a file) left the rendering env open (a window, an emulator, a simulator's process)."""
from __future__ import annotations

import numpy as np
import pytest

import canter.play


class _Zeros:
    """An agent that always takes action 0."""

    def predict(self, obs: np.ndarray) -> np.ndarray:
        return np.zeros(len(obs), np.int64)


def test_play_closes_its_env_when_the_video_folder_cannot_be_made(tmp_path, monkeypatch):
    made, closed = [], []
    real = canter.play.make_render_env

    def spy(*args, **kwargs):
        env = real(*args, **kwargs)
        made.append(env)
        inner_close = env.close
        monkeypatch.setattr(env, "close", lambda: closed.append(env) or inner_close())
        return env

    monkeypatch.setattr(canter.play, "make_render_env", spy)
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(OSError):
        canter.play.play(_Zeros(), "CartPole-v1", 1, video_dir=str(tmp_path / "file" / "videos"))
    assert len(made) == 1 and closed == made
