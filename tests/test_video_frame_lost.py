"""A recorded episode whose env stops returning frames part-way (render() gives None) is not kept under the
episode's name: gymnasium's RecordVideo stops the recording and canter finished the file then, so
play-episode-0.mp4 held the first steps only, passing for the whole episode (docs/tools.md: a video under an
episode's name always shows the whole episode)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from support import frame_env_maker


#: 10 steps; render() returns None from step 4 on
_make = frame_env_maker("LosesFrames", 10, 1.0, lambda t: np.zeros((16, 16, 3), np.uint8) if t < 4 else None)


def test_a_video_whose_frames_stopped_is_not_kept(tmp_path):
    pytest.importorskip("moviepy")
    import gymnasium as gym

    from canter.play import play

    if "CanterLosesFrames-v0" not in gym.registry:
        gym.register("CanterLosesFrames-v0", entry_point=_make, disable_env_checker=True)

    class Zero:
        def predict(self, obs):
            return np.zeros(1, np.int64)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert play(Zero(), "CanterLosesFrames-v0", 1, video_dir=str(tmp_path)) == [10.0]
    assert not list(tmp_path.glob("*.mp4")), sorted(p.name for p in tmp_path.iterdir())
    assert any("play-episode-0" in str(w.message) and "not kept" in str(w.message) for w in caught), \
        [str(w.message) for w in caught]


def test_record_every_skips_a_recording_whose_frames_stopped(tmp_path):
    """--record-every on such an env kept the cut video as step-N.mp4, listed in the index with the whole episode's
    return; now the recording is skipped (its warning says why) and the index lists none."""
    pytest.importorskip("moviepy")
    from types import SimpleNamespace

    import gymnasium as gym

    from canter.tools.video import VideoRecorder

    if "CanterLosesFrames-v0" not in gym.registry:
        gym.register("CanterLosesFrames-v0", entry_point=_make, disable_env_checker=True)

    class Zero:
        def predict(self, obs):
            return np.zeros(1, np.int64)

    recorder = VideoRecorder(tmp_path, "CanterLosesFrames-v0", 100)
    recorder.start(SimpleNamespace(agent=Zero()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert recorder.record(100) is None
    assert not list((tmp_path / "videos").glob("*.mp4")) and not (tmp_path / "videos" / "index.json").exists()


def test_a_parallel_envs_video_whose_frames_stopped_is_not_kept(tmp_path):
    """A PettingZoo parallel env's recording raised "returned no rgb_array frame ... it cannot be recorded" mid-episode
    (canter play --video-dir stopped there; --record-every refuses multi-agent envs), where a single-agent env's
    discards that episode's video with a warning."""
    pytest.importorskip("moviepy")
    from canter.play import play

    class Match:
        def predict(self, obs):
            return np.asarray(obs).argmax(-1)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert play(Match(), "pettingzoo:tests.frame_losing_agents", 3, video_dir=str(tmp_path)) == [8.0] * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["play-episode-0.mp4", "play-episode-2.mp4"]
    assert any("play-episode-1.mp4 is not kept" in str(w.message) for w in caught), [str(w.message) for w in caught]
