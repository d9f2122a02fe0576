"""``canter play`` and ``--record-every`` on an Atari run's own env path: a run trained on ale-py's native env
(``--vectorization auto``, the default, or ``native``) is played and recorded on it, as ``canter eval`` evaluates
it, rather than on the gymnasium-wrapper path (whose reset and frame-stack padding differ)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("ale_py", reason="the 'atari' extra (ale-py) is not installed")
pytest.importorskip("cv2", reason="gymnasium's AtariPreprocessing needs opencv (part of the 'atari' extra)")

from canter.envs import make_vec_env  # noqa: E402
from canter.play import make_render_env, play  # noqa: E402
from canter.trainers.evaluation import evaluate  # noqa: E402

GAME = "BreakoutNoFrameskip-v4"


class Scripted:
    """A deterministic policy of the observation (so the same game gives the same actions), with the run it
    was "trained" in; records the first observation of each episode and how many steps it played."""

    def __init__(self, vectorization: str) -> None:
        self.run_config = SimpleNamespace(env=GAME, vectorization=vectorization)
        self.firsts, self.steps = [], 0

    def predict(self, obs: np.ndarray) -> np.ndarray:  # noqa: D102
        if self.steps == 0:
            self.firsts.append(obs[0].copy())
        self.steps += 1
        return (obs.reshape(len(obs), -1).sum(axis=1) % 4).astype(np.int64)


def _evaluated(vectorization: str, seed: int) -> tuple[float, int, np.ndarray]:
    """The first evaluation game of :class:`Scripted` with ``seed`` on the run's path: return, length, first stack."""
    agent = Scripted(vectorization)
    env = make_vec_env(GAME, 1, vectorization)
    result = evaluate(agent, env, 1, seed=seed)
    env.close()
    return result.returns[0], result.lengths[0], agent.firsts[0]


@pytest.mark.parametrize("vectorization", ["auto", "native", "sync"])
def test_play_uses_the_run_s_own_atari_path(vectorization):
    """play's game is the run's first evaluation game with the same seed: the same first stack (zero-padded on the
    native env), length and return. A native run was played on the wrapper path (1 to 30 no-ops, FIRE and action 2,
    the first frame repeated): another game."""
    agent = Scripted(vectorization)
    (ret,) = play(agent, GAME, 1, seed=5)
    score, length, first = _evaluated(vectorization, 5)
    np.testing.assert_array_equal(agent.firsts[0], first)
    assert (ret, agent.steps) == (score, length)
    assert (not first[0].any()) == (vectorization != "sync")  # zero padding: the native env's


@pytest.mark.parametrize("kwargs,size,fps,most", [
    ({}, (84, 84), 15, 2),  # measured 0.27 (another game: tens)
    ({"frame_skip": 3, "screen_size": [60, 48], "frame_stack": 2}, (60, 48), 20, 0.6),  # 0.35; 1.0 skipping 4
])
def test_native_play_renders_the_game_it_plays(kwargs, size, fps, most):
    """The native env cannot render: a second native env plays the same game beside it and its RGB screen is the
    frame; downscaled to grey it is the observation's newest frame, up to the max-pool over two frames. With other
    env_kwargs settings (tests/test_atari_settings.py) the screen env skips the same frames, and the fps follows."""
    import cv2

    env = make_render_env(GAME, "rgb_array", vectorization="auto", env_kwargs=kwargs)
    obs, _ = env.reset(seed=3)
    rng, worst = np.random.default_rng(1), 0.0
    for _ in range(120):
        obs, *_ = env.step(int(rng.integers(4)))
        frame = env.render()
        assert frame.shape == (210, 160, 3) and frame.dtype == np.uint8
        grey = cv2.resize(cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY), size[::-1], interpolation=cv2.INTER_AREA)
        worst = max(worst, float(np.abs(grey.astype(int) - obs[-1]).mean()))
    env.close()
    assert obs.shape == (kwargs.get("frame_stack", 4), *size)
    assert env.metadata["render_fps"] == fps and worst < most


@pytest.mark.slow  # ~3 s: two recordings with ffmpeg
def test_record_every_records_the_run_s_own_atari_path(tmp_path):
    """``--record-every`` on a native run records its evaluation game (seed ``seed + 10_007`` for the first)."""
    pytest.importorskip("moviepy")
    from canter.tools.video import VideoRecorder

    recorder = VideoRecorder(tmp_path, GAME, 100, seed=2, vectorization="auto")
    recorder.start(SimpleNamespace(agent=Scripted("auto")))
    recorder.record(100)
    (entry,) = json.loads((tmp_path / "videos" / "index.json").read_text())
    assert entry["return"] == _evaluated("auto", 2 + 10_007)[0]
    assert (tmp_path / "videos" / entry["file"]).stat().st_size > 0
