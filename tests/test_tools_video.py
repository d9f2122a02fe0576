"""Video recording for canter play (--video-dir, --record-every): frames written as they come, every frame once."""
import numpy as np
import pytest
from support import frame_env_maker


def test_video_recording_writes_frames_as_they_come(tmp_path, monkeypatch):
    """play --video-dir / --record-every went through gymnasium's RecordVideo, which keeps every frame of
    the episode in a list until it ends (an Atari episode of 27,000 steps: ~2.7 GB); the recorder now
    writes each frame to the MP4 at once and holds none, and the video still has every frame."""
    pytest.importorskip("moviepy")
    import gymnasium as gym
    import imageio

    from canter.play import play

    held = []
    step = gym.wrappers.RecordVideo.step

    def spy(self, action):
        out = step(self, action)
        held.append(len(self.recorded_frames))
        return out

    monkeypatch.setattr(gym.wrappers.RecordVideo, "step", spy)

    class Upright:  # keeps the pole up: the episode lasts until the time limit
        def predict(self, obs):
            return np.array([int(obs[0, 2] + 0.5 * obs[0, 3] > 0)])

    assert play(Upright(), "CartPole-v1", 1, video_dir=str(tmp_path), env_kwargs={"max_episode_steps": 20}) == [20.0]
    assert len(held) == 20 and max(held) == 0  # RecordVideo: 2, 3, ..., 21 frames held
    reader = imageio.get_reader(str(tmp_path / "play-episode-0.mp4"))
    assert reader.get_meta_data()["fps"] == 50 and sum(1 for _ in reader) == 21  # the reset's frame and 20 steps


def test_video_appears_under_its_name_only_when_finished(tmp_path):
    """A play killed mid-episode (SIGKILL) left a truncated play-episode-0.mp4, which the rerun's --video-dir
    check then refused; the frames now go to a hidden .partial.mp4 renamed when the video is closed, and a
    partial file a killed process left is overwritten."""
    pytest.importorskip("moviepy")
    import imageio

    from canter.play import play

    (tmp_path / ".play-episode-0.partial.mp4").write_bytes(b"truncated")  # what a killed play leaves
    seen = []

    class Upright:
        def predict(self, obs):
            seen.append(sorted(p.name for p in tmp_path.iterdir()))
            return np.array([int(obs[0, 2] + 0.5 * obs[0, 3] > 0)])

    assert play(Upright(), "CartPole-v1", 1, video_dir=str(tmp_path), env_kwargs={"max_episode_steps": 5}) == [5.0]
    assert seen[-1] == [".play-episode-0.partial.mp4"]  # while recording: no play-episode-0.mp4 to refuse
    assert sorted(p.name for p in tmp_path.iterdir()) == ["play-episode-0.mp4"]
    assert sum(1 for _ in imageio.get_reader(str(tmp_path / "play-episode-0.mp4"))) == 6


def test_record_every_removes_the_folder_of_a_killed_recording(tmp_path):
    """--record-every records into videos/.rec-*/ and moves the file out; a process killed meanwhile left that
    folder for good. The next start of the run's recorder removes it (and nothing else)."""
    pytest.importorskip("moviepy")
    from types import SimpleNamespace

    from canter.tools.video import VideoRecorder

    stale = tmp_path / "videos" / ".rec-abc123" / "video"
    stale.mkdir(parents=True)
    (stale / "play-episode-0.mp4").write_bytes(b"half")
    (tmp_path / "videos" / "step-000000100.mp4").write_bytes(b"kept")
    VideoRecorder(tmp_path, "CartPole-v1", 100).start(SimpleNamespace(agent=None))
    assert sorted(p.name for p in (tmp_path / "videos").iterdir()) == ["step-000000100.mp4"]


def test_multiagent_video_writes_frames_as_they_come(tmp_path, monkeypatch):
    """play --video-dir on a PettingZoo env kept every frame of the episode in a list and saved it at the end
    (17 frames alive at the second episode's last render); frames are now written as they come."""
    pytest.importorskip("moviepy")
    import weakref

    import imageio

    import tests.match_agents as match_agents
    from canter.play import play

    alive, most = [], []
    render = match_agents.MatchAgents.render

    def spy(self):
        frame = render(self)
        most.append(sum(ref() is not None for ref in alive))  # earlier frames still in memory
        alive.append(weakref.ref(frame))
        return frame

    monkeypatch.setattr(match_agents.MatchAgents, "render", spy)

    class Match:
        def predict(self, obs):
            return np.asarray(obs).argmax(-1)

    assert play(Match(), "pettingzoo:tests.match_agents", 2, video_dir=str(tmp_path)) == [8.0, 8.0]
    assert max(most) <= 1
    for i in range(2):  # the reset's frame and one per step, at the env's fps (30 without render_fps)
        reader = imageio.get_reader(str(tmp_path / f"play-episode-{i}.mp4"))
        assert reader.get_meta_data()["fps"] == 30 and sum(1 for _ in reader) == 9


class _GrayRamp:
    """A 39-step env whose frame ``t`` is solid gray ``6 * t`` at 15 fps (Atari's video fps)."""

    make = staticmethod(frame_env_maker("GrayRamp", 39, 0.0, lambda t: np.full((32, 32, 3), 6 * t, np.uint8)))


def test_video_has_every_frame_once_in_order(tmp_path):
    """gymnasium's RecordVideo encoded through moviepy's ImageSequenceClip, which samples the frame list at
    t * fps, which at 15 fps (Atari) duplicated and skipped frames (40 frames: ..., 34, 35, 35, 36, 38, 39)
    and at some lengths dropped the last one (13 frames: 12); every frame is now written once, in order."""
    pytest.importorskip("moviepy")
    import gymnasium as gym
    import imageio

    from canter.play import play

    if "CanterGrayRamp-v0" not in gym.registry:
        gym.register("CanterGrayRamp-v0", entry_point=_GrayRamp.make, disable_env_checker=True)

    class Zero:
        def predict(self, obs):
            return np.zeros(1, np.int64)

    play(Zero(), "CanterGrayRamp-v0", 1, video_dir=str(tmp_path))
    reader = imageio.get_reader(str(tmp_path / "play-episode-0.mp4"))
    grays = [round(float(frame.mean()) / 6) for frame in reader]
    assert reader.get_meta_data()["fps"] == 15 and grays == list(range(40))


@pytest.mark.parametrize("env_id", ["CartPole-v1", "pettingzoo:tests.match_agents"])
def test_video_of_an_episode_cut_short_is_not_kept(tmp_path, env_id):
    """A Ctrl-C in the middle of an episode of play --video-dir closed the recording as if the episode had
    ended: play-episode-1.mp4 held a cut episode (166 of 500 frames), looked like a whole one, and the rerun's
    --video-dir check refused it. The cut recording is now discarded; the finished episodes' videos stay."""
    pytest.importorskip("moviepy")
    from canter.play import play

    calls = []

    class Interrupted:  # finishes the first episode, then is interrupted 3 steps into the second
        def predict(self, obs):
            calls.append(1)
            if len(calls) == (5 if env_id == "CartPole-v1" else 8) + 3:
                raise KeyboardInterrupt
            if env_id != "CartPole-v1":
                return np.asarray(obs).argmax(-1)
            return np.array([int(obs[0, 2] + 0.5 * obs[0, 3] > 0)])

    with pytest.raises(KeyboardInterrupt):
        play(Interrupted(), env_id, 3, video_dir=str(tmp_path), env_kwargs={"max_episode_steps": 5}
             if env_id == "CartPole-v1" else None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["play-episode-0.mp4"]


def test_play_prints_each_episode_as_it_ends(capsys, tmp_path, monkeypatch):
    """canter play printed the episodes' returns only after the last one: a long play showed nothing, and a
    Ctrl-C lost the lines of the episodes already played. Each line now comes as its episode ends, naming
    its video, which is finished by then."""
    pytest.importorskip("moviepy")
    import types

    import canter.cli
    from canter.cli import main

    calls = []

    class Interrupted:  # two whole episodes of 5 steps, then a Ctrl-C 2 steps into the third
        run_config = types.SimpleNamespace(env="CartPole-v1", env_kwargs={"max_episode_steps": 5}, vectorization="auto")

        def predict(self, obs):
            calls.append(1)
            if len(calls) == 12:
                raise KeyboardInterrupt
            return np.array([int(obs[0, 2] + 0.5 * obs[0, 3] > 0)])

    monkeypatch.setattr(canter.cli, "_load_for_env",  # the run's env_kwargs: play merges them (its run_config's)
                        lambda *a, **k: (Interrupted(), "CartPole-v1", {"max_episode_steps": 5}))
    assert main(["play", "RUN", "--episodes", "3", "--video-dir", str(tmp_path)]) == 130
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"episode {i + 1}: return 5.00 ({tmp_path / f'play-episode-{i}.mp4'})" for i in range(2)]


def test_play_on_a_multiagent_env_that_cannot_render_says_so(tmp_path):
    """play --render / --video-dir on a PettingZoo env whose parallel_env() takes no render_mode blamed the
    user's env_kwargs ('bad env_kwargs ...: unexpected keyword argument render_mode') though none were given;
    it now says that the env cannot render. A real bad env_kwarg is still named as such."""
    import types

    from canter.errors import CanterError
    from canter.play import play

    class Speaker:  # one policy per agent type, as the env needs
        run_config = types.SimpleNamespace(policies="type", central_state=False)

        def predict(self, obs):
            return np.zeros(len(obs), np.int64)

    for kw in ({"render": True}, {"video_dir": str(tmp_path / "v")}):
        with pytest.raises(CanterError, match=r"cannot render: its parallel_env\(\) takes no render_mode"):
            play(Speaker(), "pettingzoo:tests.mixed_agents", 1, **kw)
    assert not (tmp_path / "v").exists()
    with pytest.raises(CanterError, match="bad env_kwargs.*bogus"):
        play(Speaker(), "pettingzoo:tests.mixed_agents", 1, render=True, env_kwargs={"bogus": 1})


def test_play_refuses_render_with_video_dir(tmp_path, capsys):
    """`canter play RUN --render --video-dir DIR` recorded the video and silently opened no window (the env
    renders in one mode); it is refused in one line before anything is written."""
    import canter
    from canter.cli import main

    run = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run, max_steps=64, n_envs=1, n_steps=64, batch_size=64, eval_every=0,
                 eval_episodes=1, quiet=True, tensorboard=False)
    assert main(["play", str(run), "--render", "--video-dir", str(tmp_path / "v")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "cannot be combined" in err
    assert not (tmp_path / "v").exists()

