"""canter report leaves out the hidden unfinished video that a canter play or recording writes into (``.NAME.partial.mp4``,
renamed to NAME.mp4 only when its episode ends): one of a play killed mid-episode (or still playing) was embedded as
the run's newest video, an MP4 without its index that no player shows."""
from __future__ import annotations

import types

from canter.tools.report import videos


def test_report_does_not_embed_an_unfinished_video(tmp_path):
    folder = tmp_path / "videos"
    folder.mkdir()
    (folder / "play-episode-0.mp4").write_bytes(b"a finished video")
    (folder / ".play-episode-1.partial.mp4").write_bytes(b"half a video")
    html_text = videos(types.SimpleNamespace(dir=tmp_path))
    assert "<figcaption>play-episode-0.mp4" in html_text
    assert "partial" not in html_text


def test_a_run_with_only_an_unfinished_video_has_none(tmp_path):
    (tmp_path / "videos").mkdir()
    (tmp_path / "videos" / ".play-episode-0.partial.mp4").write_bytes(b"half a video")
    assert "No video was recorded" in videos(types.SimpleNamespace(dir=tmp_path))
