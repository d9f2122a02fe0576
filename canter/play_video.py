"""The MP4 writers of :mod:`canter.play` and ``--record-every``: :class:`PartialVideo` (a file that appears under its
name only once finished) and :class:`StreamingRecordVideo` (gymnasium's ``RecordVideo`` writing each frame as it
comes)."""
from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np


class PartialVideo:
    """An MP4 being written to ``path``: frames go to a hidden ``.NAME.partial.mp4`` beside it, which
    ``close`` finishes and renames to ``path``. A process killed mid-episode (SIGKILL, power loss) so
    leaves only the hidden file, which the next recording of that name overwrites, never a truncated
    ``path`` that a rerun's ``--video-dir`` check would refuse."""

    def __init__(self, path: str, frame: np.ndarray, fps: float) -> None:
        from moviepy.video.io.ffmpeg_writer import FFMPEG_VideoWriter

        folder, name = os.path.split(path)
        stem = name[:-4] if name.endswith(".mp4") else name
        self.path, self.partial = path, os.path.join(folder, f".{stem}.partial.mp4")
        self._writer = FFMPEG_VideoWriter(self.partial, (frame.shape[1], frame.shape[0]), fps)

    def write_frame(self, frame: np.ndarray) -> None:
        """Append one RGB frame."""
        self._writer.write_frame(frame)

    def close(self) -> None:
        """Finish the file and give it its name."""
        self._writer.close()
        os.replace(self.partial, self.path)

    def discard(self) -> None:
        """Stop writing and remove the unfinished file (an episode cut short: no video under its name)."""
        try:
            self._writer.close()
        finally:
            if os.path.exists(self.partial):
                os.remove(self.partial)


def open_video(path: str, frame: np.ndarray, fps: float) -> PartialVideo:
    """An MP4 writer (``write_frame``, ``close``) for frames shaped like ``frame``: moviepy's ffmpeg writer
    with the settings gymnasium's ``RecordVideo`` and ``save_video`` use (libx264, preset medium); the file
    appears at ``path`` only once closed (:class:`PartialVideo`)."""
    return PartialVideo(path, frame, fps)


class StreamingRecordVideo(gym.wrappers.RecordVideo):
    """gymnasium's ``RecordVideo`` (same files, names and fps) that writes each frame to the MP4 as it
    comes, with moviepy's ffmpeg writer and the settings ``RecordVideo`` uses, instead of keeping every
    frame of the episode in a list until it ends (an Atari episode of 27,000 steps: ~2.7 GB).

    Each video is finished as soon as its episode ends (``RecordVideo`` finishes it at the next reset,
    so a caller could not show it yet), and one whose episode has not ended when the wrapper is closed (a
    Ctrl-C or an error in the middle of an episode) is discarded, not saved under the episode's name as
    ``RecordVideo`` saves it: a cut video would pass for a whole episode, and a rerun's ``--video-dir``
    check would refuse it."""

    _writer: Any = None

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Step the env and write its frame; finish the video when the episode ends."""
        out = super().step(action)
        if (out[2] or out[3]) and self.recording:
            self.stop_recording()
        return out

    def close(self) -> None:
        """Close the env; a video still open (its episode did not end) is discarded."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.discard()
        super().close()

    def _capture_frame(self) -> None:
        """Render the frame and write it to the open video (opened at the recording's first frame)."""
        frame = self.env.render()
        if isinstance(frame, list):  # an rgb_array_list env: its latest frame, as RecordVideo takes
            self.render_history += frame
            frame = frame[-1] if frame else None
        if not isinstance(frame, np.ndarray):  # the video would not show the whole episode: discarded
            name, writer, self._writer = self._video_name, self._writer, None
            if writer is not None:
                writer.discard()
            self.stop_recording()
            warn_frame_lost(name, frame)
            return
        if self._writer is None:
            self._writer = open_video(os.path.join(self.video_folder, f"{self._video_name}.mp4"), frame,
                                      self.frames_per_sec)
        self._writer.write_frame(np.asarray(frame, dtype=np.uint8))

    def stop_recording(self) -> None:
        """Close the video being written (a recording with no frame writes no file, as RecordVideo)."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()
        self.recorded_frames = []
        self.recording = False
        self._video_name = None


def warn_frame_lost(name: str, frame: Any) -> None:
    """Warn that the recording of ``name``.mp4 stopped, its env's ``render()`` having returned ``frame`` (not an
    array): the unfinished video is not kept, as it would not show the whole episode."""
    gym.logger.warn(f"Recording stopped: render() returned {type(frame).__name__}, not a frame; the video "
                    f"{name}.mp4 is not kept (it would not show the whole episode).")
