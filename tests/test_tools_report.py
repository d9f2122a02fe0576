"""canter report in a real headless Chromium, and MP4 videos from --record-every and play --video-dir."""
import json
import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from canter.cli import main
from canter.tools.rundata import read_table

TINY = ["--max-steps", "512", "--n-envs", "2", "--set", "n_steps=64", "--set", "n_epochs=2", "--eval-episodes", "2",
        "--quiet"]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory):
    """A tiny PPO CartPole run that records an episode every 256 steps."""
    pytest.importorskip("moviepy")
    run = tmp_path_factory.mktemp("rec") / "run"
    assert main(["train", "ppo", "--env", "CartPole-v1", "--run-dir", str(run), "--record-every", "256", *TINY]) == 0
    return run


def mp4_boxes(path: Path) -> list[str]:
    """Top-level ISO-BMFF box types of an MP4 file (raises if the box sizes do not add up)."""
    data = path.read_bytes()
    boxes, pos = [], 0
    while pos < len(data):
        size, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if size == 1:
            size = struct.unpack(">Q", data[pos + 8:pos + 16])[0]
        assert size >= 8 and pos + size <= len(data), f"broken box at byte {pos} of {path}"
        boxes.append(kind.decode("latin-1"))
        pos += size
    return boxes


def frame_count(path: Path) -> tuple[int, tuple]:
    """Decode every frame with ffmpeg (through imageio): (frames, first frame shape)."""
    imageio = pytest.importorskip("imageio")
    reader = imageio.get_reader(path, "ffmpeg")
    try:
        frames = [f.shape for f in reader]
    finally:
        reader.close()
    return len(frames), frames[0]


def assert_valid_episode_video(path: Path, episode_return: float) -> None:
    boxes = mp4_boxes(path)
    assert boxes[0] == "ftyp" and "moov" in boxes and "mdat" in boxes
    frames, shape = frame_count(path)
    assert shape == (400, 600, 3)
    # CartPole: reward 1 per step, so the reset frame plus one per step; the decoder may not return the
    # final frame of a very short clip (seen for a 10-step episode), hence the one-frame tolerance
    assert int(episode_return) <= frames <= int(episode_return) + 1


def test_record_every_writes_valid_mp4_and_changes_no_training(recorded_run, tmp_path):
    index = json.loads((recorded_run / "videos" / "index.json").read_text())
    assert [e["step"] for e in index] == [256, 512]  # every 256 steps; the end (512) is not recorded twice
    for entry in index:
        assert_valid_episode_video(recorded_run / "videos" / entry["file"], entry["return"])
    assert not [p for p in (recorded_run / "videos").iterdir() if p.name.startswith(".")]  # no temp left
    plain = tmp_path / "plain"
    assert main(["train", "ppo", "--env", "CartPole-v1", "--run-dir", str(plain), *TINY]) == 0
    a, b = read_table(recorded_run / "history.parquet"), read_table(plain / "history.parquet")
    np.testing.assert_array_equal(a["episode_return"], b["episode_return"])  # same seed, same training


def test_play_video_dir_writes_valid_mp4(recorded_run, tmp_path, capsys):
    assert main(["play", str(recorded_run), "--video-dir", str(tmp_path / "vid"), "--seed", "3"]) == 0
    ret = float(re.search(r"episode 1: return ([\d.]+)", capsys.readouterr().out).group(1))
    (video,) = (tmp_path / "vid").glob("*.mp4")
    assert_valid_episode_video(video, ret)


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.refs += [(tag, k, v or "") for k, v in attrs if k in ("src", "href", "poster", "data")]


def load_in_chromium(page: Path, workdir: Path) -> tuple[list[str], Path]:
    """Open ``page`` in headless Chromium; return its console messages and a screenshot."""
    shot = workdir / f"{page.stem}.png"
    cmd = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={workdir / ('profile-' + page.stem)}",
           "--enable-logging=stderr", "--v=0", "--window-size=1100,2400", f"--screenshot={shot}", page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [line for line in proc.stderr.splitlines() if ":CONSOLE" in line], shot


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium package (apt-get install chromium)")
def test_report_loads_in_headless_chromium_without_errors(recorded_run, tmp_path, capsys):
    from PIL import Image

    assert main(["report", str(recorded_run), "--eval-episodes", "5"]) == 0
    page = recorded_run / "report.html"
    text = page.read_text()
    parser = _Refs()
    parser.feed(text)
    assert "script" not in parser.tags and "link" not in parser.tags  # inline CSS, no scripts
    assert parser.refs and all(v.startswith(("data:", "#")) for _, _, v in parser.refs), parser.refs[:3]
    kinds = [v.split(";")[0] for _, _, v in parser.refs]
    assert kinds.count("data:image/png") == 4 and kinds.count("data:video/mp4") == 2
    for section in ("Learning curve", "Evaluation return distribution", "Losses and update statistics",
                    "Throughput", "Checkpoints", "Videos", "Config", "5 deterministic episodes of checkpoint"):
        assert section in text
    # the console check is able to fail: a page with a console error is caught
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><script>console.error("boom")</script></body></html>')
    console, _ = load_in_chromium(bad, tmp_path)
    assert any("boom" in line for line in console)
    console, shot = load_in_chromium(page, tmp_path)
    assert console == []
    pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert pixels.shape[:2] == (2400, 1100)
    blue = (np.abs(pixels - [31, 119, 180]).sum(-1) < 60).sum()  # the rolling-return curve
    red = (np.abs(pixels - [214, 39, 40]).sum(-1) < 60).sum()  # the evaluation markers
    purple = (np.abs(pixels - [148, 103, 189]).sum(-1) < 60).sum()  # the loss panels
    assert blue > 300 and red > 50 and purple > 300, (blue, red, purple)


def test_report_outcome_of_a_run_without_a_target_is_not_not_solved(tmp_path):
    """A run without target_reward had the red outcome card 'not solved' (canter train says 'finished')."""
    from canter.tools.report import _cards
    from canter.tools.rundata import RunData

    summary = {"steps": 256, "wall_seconds": 1.0, "solved": False, "stop_reason": "max_steps"}
    untargeted = _cards(RunData(tmp_path, {"algo": "ppo", "env": "MountainCar-v0", "target_reward": None}, summary))
    assert '<b class="">no target</b><span>outcome</span>' in untargeted and "not solved" not in untargeted
    missed = _cards(RunData(tmp_path, {"algo": "ppo", "env": "CartPole-v1", "target_reward": 475}, summary))
    assert '<b class="no">not solved</b><span>outcome</span>' in missed


def test_report_without_videos_or_evaluation(tmp_path):
    run = tmp_path / "run"
    assert main(["train", "dqn", "--env", "CartPole-v1", "--run-dir", str(run), "--max-steps", "400", "--set",
                 "learning_starts=100", "--set", "gradient_steps=1", "--set", "train_freq=4", "--eval-episodes", "1",
                 "--quiet"]) == 0
    out = tmp_path / "r.html"
    assert main(["report", str(run), "--out", str(out), "--eval-episodes", "0"]) == 0
    text = out.read_text()
    assert "No video was recorded" in text and "Skipped (no best or last checkpoint, or --eval-episodes 0)" in text
    assert text.count("data:image/png") == 3  # learning curve, update statistics, throughput
    assert main(["report", str(tmp_path / "missing")]) == 2


def test_report_distribution_is_what_canter_eval_gives(tmp_path, capsys):
    """The report's return distribution uses `canter eval`'s envs (the run's evaluation copies and
    vectorization): same checkpoint, seed and episodes, same returns."""
    import html

    run = tmp_path / "run"
    assert main(["train", "ppo", "--env", "CartPole-v1", "--run-dir", str(run), *TINY]) == 0
    capsys.readouterr()
    assert main(["eval", str(run), "--episodes", "6", "--json"]) == 0
    returns = np.array(json.loads(capsys.readouterr().out)["returns"])
    assert main(["report", str(run), "--eval-episodes", "6"]) == 0
    caption = html.unescape((run / "report.html").read_text())
    assert f"mean {returns.mean():.2f} ± {returns.std():.2f}, median {np.median(returns):.2f}" in caption


def test_report_rolling_mean_label_names_the_runs_reward_window(tmp_path, monkeypatch):
    """history.parquet's rolling_return averages the last reward_window episodes; the legend says so."""
    from canter.tools import report
    from canter.tools.rundata import load_run

    run = tmp_path / "run"
    assert main(["train", "ppo", "--env", "CartPole-v1", "--run-dir", str(run), "--set", "reward_window=10",
                 *TINY]) == 0
    history = read_table(run / "history.parquet")
    returns = history["episode_return"]
    assert np.allclose(history["rolling_return"], [returns[max(0, k - 9):k + 1].mean() for k in range(len(returns))])
    monkeypatch.setattr(report, "_img", lambda fig, alt: fig)
    labels = [t.get_text() for t in report.learning_curve(load_run(run)).axes[0].get_legend().get_texts()]
    assert "rolling mean (10 episodes)" in labels


def test_report_rolling_mean_takes_the_mean_after_all_episodes_that_ended_on_a_step(tmp_path, monkeypatch):
    """Four Pendulum envs end their episodes on one step: four history rows, whose first three hold partial
    means that depend on the envs' order. The report drew them all (its line peaked at -929.6, the mean
    after two of the four), where canter plot's curve and summary.json's best_rolling_return say -1172.6."""
    from canter.tools import report
    from canter.tools.rundata import RunData

    steps = np.array([800.0] * 4 + [1604.0] * 4)
    rolling = np.array([-960.5, -929.6, -1021.7, -1172.6, -1260.8, -1293.3, -1305.1, -1307.4])
    history = {"step": steps, "wall_time": steps / 100, "episode_return": rolling, "rolling_return": rolling}
    monkeypatch.setattr(report, "_img", lambda fig, alt: fig)
    fig = report.learning_curve(RunData(tmp_path, {"algo": "ppo", "env": "Pendulum-v1"}, {}, history))
    line = fig.axes[0].get_lines()[0]
    np.testing.assert_array_equal(line.get_xdata(), [800.0, 1604.0])
    np.testing.assert_array_equal(line.get_ydata(), [-1172.6, -1307.4])


def test_report_videos_are_newest_first(tmp_path):
    """'Newest first' sorted by name: a play --video-dir RUN_DIR/videos recording came after every
    step-* video of the training, however recent it was."""
    import os
    import types

    from canter.tools.report import videos

    folder = tmp_path / "videos"
    folder.mkdir()
    names = ["step-000000100.mp4", "play-episode-0.mp4", "step-000000200.mp4"]  # in the order they were made
    for i, name in enumerate(names):
        (folder / name).write_bytes(b"not really a video")
        os.utime(folder / name, ns=(10**18 + i * 10**9, 10**18 + i * 10**9))
    html_text = videos(types.SimpleNamespace(dir=tmp_path))
    shown = [html_text.index(f"<figcaption>{name}") for name in reversed(names)]
    assert shown == sorted(shown)


def test_report_does_not_embed_a_video_that_links_out_of_the_run(tmp_path):
    """videos/a.mp4 -> a file elsewhere (a run directory from someone else): its bytes went into report.html."""
    import base64
    import types

    from canter.tools.report import videos

    (tmp_path / "secret.txt").write_bytes(b"SECRET")
    folder = tmp_path / "run" / "videos"
    folder.mkdir(parents=True)
    (folder / "a.mp4").symlink_to(tmp_path / "secret.txt")
    (folder / "b.mp4").write_bytes(b"not really a video")
    html_text = videos(types.SimpleNamespace(dir=tmp_path / "run"))
    assert base64.b64encode(b"SECRET").decode() not in html_text
    assert base64.b64encode(b"not really a video").decode() in html_text and "a.mp4" in html_text


def test_report_distribution_of_non_finite_returns_is_a_caption_not_a_crash(tmp_path, monkeypatch):
    """(Also: a multi-agent run's caption counts its returns.) A NaN policy (divergence guard off) evaluates to NaN returns: np.histogram raised 'autodetected range of
    [nan, nan] is not finite', a traceback from canter report. Only finite returns are drawn; the caption counts the rest."""
    import types

    import canter.api
    import canter.envs
    import canter.trainers.evaluation
    from canter.tools import report

    agent = types.SimpleNamespace(run_config=types.SimpleNamespace(
        env="Pendulum-v1", eval_envs=1, vectorization="sync", env_kwargs={}, policies="shared", central_state=False))
    monkeypatch.setattr(canter.api, "find_checkpoint", lambda d: tmp_path / "checkpoints" / "best")
    monkeypatch.setattr(canter.api, "load", lambda d: agent)
    monkeypatch.setattr(canter.envs, "make_vec_env", lambda *a, **k: types.SimpleNamespace(close=lambda: None))
    run = types.SimpleNamespace(dir=tmp_path, target_reward=None)
    for returns, want in (([np.nan] * 3, "every return was NaN"),
                          ([np.nan, -1.0, -3.0, np.inf], "2 returned NaN or inf, left out: 2 shown: mean -2.00 ± 1.00")):
        monkeypatch.setattr(canter.trainers.evaluation, "evaluate",
                            lambda *a, r=returns, **k: types.SimpleNamespace(returns=r))
        img, caption = report.eval_distribution(run, len(returns))
        assert want in caption, caption
        assert ("data:image/png" in img) == (want != "every return was NaN")
    # a 3-agent env: 2 episodes give 6 returns, all in the histogram; the caption said '2 deterministic episodes'
    monkeypatch.setattr(canter.trainers.evaluation, "evaluate",
                        lambda *a, **k: types.SimpleNamespace(returns=[8.0, 7.0, 8.0, 6.0, 8.0, 8.0]))
    caption = report.eval_distribution(run, 2)[1]
    assert caption.startswith("2 deterministic episodes (6 returns, one per agent and episode) of checkpoint"), caption


def test_report_title_names_the_run_given_as_dot(tmp_path, monkeypatch):
    """canter report . (from inside the run directory) titled the page 'ppo on CartPole-v1: ' (Path('.').name is
    ''); the title names the directory itself."""
    from canter.tools.report import render
    from canter.tools.rundata import RunData

    run = tmp_path / "ppo-run"
    (run / "sub").mkdir(parents=True)
    monkeypatch.chdir(run / "sub")
    for given in (Path(".."), Path("../sub/..")):
        page = render(RunData(given, {"algo": "ppo", "env": "CartPole-v1"}, {}), eval_episodes=0)
        assert "<title>ppo on CartPole-v1: ppo-run</title>" in page
    monkeypatch.chdir(run)
    page = render(RunData(Path("."), {"algo": "ppo", "env": "CartPole-v1"}, {}), eval_episodes=0)
    assert "<title>ppo on CartPole-v1: ppo-run</title>" in page


@pytest.mark.parametrize("episodes", [-3, 2.5, True])
def test_report_refuses_a_bad_episode_count_from_python_too(recorded_run, tmp_path, episodes):
    """Only the command line checked --eval-episodes: write_report(run, eval_episodes=-3) raised an IndexError
    from the evaluation, 2.5 a 'bad env_kwargs' error. write_report checks it, before anything is written."""
    from canter.errors import CanterError
    from canter.tools.report import write_report

    with pytest.raises(CanterError, match="--eval-episodes must be a whole number >= 0"):
        write_report(recorded_run, out=tmp_path / "r.html", eval_episodes=episodes)
    assert not (tmp_path / "r.html").exists()
    code = main(["report", str(recorded_run), "--out", str(tmp_path / "r.html"), "--eval-episodes", "-1"])
    assert code == 2 and not (tmp_path / "r.html").exists()


def test_report_cards_of_an_offline_run_give_updates_per_second(tmp_path):
    """An offline run's steps are gradient updates, and the report's cards said so for the count but called
    the rate 'steps / s' (its throughput panel says 'updates / s')."""
    from canter.tools.report import _cards
    from canter.tools.rundata import RunData

    summary = {"steps": 1000, "wall_seconds": 2.0, "stop_reason": "max_steps"}
    offline = _cards(RunData(tmp_path, {"algo": "bc", "env": "CartPole-v1", "dataset": "/data/cp"}, summary))
    assert '<b class="">500</b><span>updates / s</span>' in offline and "steps / s" not in offline
    online = _cards(RunData(tmp_path, {"algo": "ppo", "env": "CartPole-v1"}, summary))
    assert "<span>steps / s</span>" in online


def test_report_cards_of_a_run_without_summary_give_what_its_tables_saved(tmp_path, monkeypatch):
    """A killed run (no summary.json) had the cards '–' for best and last evaluation, steps, episodes and wall
    time beside plots of its saved tables (best 225.67 at step 12,032, 210 episodes), and a red 'not solved'."""
    from canter.tools.report import _cards
    from canter.tools.rundata import RunData

    history = {"step": np.array([100.0, 250.0, 250.0]), "wall_time": np.array([0.5, 1.0, 1.0]),
               "episode_return": np.array([9.0, 20.0, 30.0]), "rolling_return": np.array([9.0, 14.5, 19.7])}
    evaluations = {"step": np.array([200.0, 300.0]), "wall_time": np.array([0.8, 1.5]),
                   "mean_return": np.array([50.0, 40.0]), "std_return": np.array([1.0, 2.0])}
    updates = {"step": np.array([128.0, 256.0]), "wall_time": np.array([0.6, 1.2])}
    cards = _cards(RunData(tmp_path, {"algo": "dqn", "env": "CartPole-v1", "target_reward": 475}, {},
                           history, evaluations, updates))
    for value, name in (("unfinished", "outcome"), ("50.00", "best eval return"), ("40.00", "last eval return"),
                        ("300", "env steps"), ("3", "episodes"), ("1.5 s", "wall time"), ("200", "steps / s")):
        assert f"<b class=\"\">{value}</b><span>{name}</span>" in cards, (value, name)
    assert "not solved" not in cards
    # ... and the throughput panel its whole-run rate, which it left out
    from canter.tools import report
    drawn = []
    monkeypatch.setattr(report, "_img", lambda fig, alt: drawn.append(fig) or "")
    report.throughput(RunData(tmp_path, {"algo": "dqn", "env": "CartPole-v1"}, {}, history, evaluations,
                              dict(updates, steps_per_second=np.array([200.0, 210.0]))))
    assert "whole run, with evaluations 200" in drawn[0].axes[0].get_legend_handles_labels()[1]
    empty = _cards(RunData(tmp_path, {"algo": "dqn", "env": "CartPole-v1", "target_reward": 475}, {}))
    assert '<b class="">–</b><span>best eval return</span>' in empty and '<b class="">0</b><span>episodes</span>' in empty


def test_report_of_a_resumed_run_killed_since_does_not_show_its_earlier_stop(tmp_path):
    """A resumed run keeps the summary.json of its previous stop (interrupted) while it trains: killed at step 9,216
    after a resume from 4,096, its report's cards said 'not solved', 4,096 steps, 138 episodes and last evaluation
    182.67 beside plots of tables that went on to 181 episodes and a last evaluation of 115.00 at 8,192."""
    from canter.tools.report import _cards, current_summary, render
    from canter.tools.rundata import RunData

    history = {"step": np.array([90.0, 250.0]), "wall_time": np.array([0.5, 1.0]),
               "episode_return": np.array([9.0, 20.0]), "rolling_return": np.array([9.0, 14.5])}
    evaluations = {"step": np.array([100.0, 200.0]), "wall_time": np.array([0.6, 0.9]),
                   "mean_return": np.array([50.0, 40.0]), "std_return": np.array([1.0, 2.0])}
    config = {"algo": "dqn", "env": "CartPole-v1", "target_reward": 475}
    stop = {"steps": 100, "episodes": 1, "updates": 5, "wall_seconds": 0.6, "best_eval_return": 50.0,
            "last_eval_return": 50.0, "solved": False, "stop_reason": "interrupted"}
    went_on = RunData(tmp_path, config, stop, history, evaluations)
    assert current_summary(went_on) == {}
    cards = _cards(went_on)
    for value, name in (("unfinished", "outcome"), ("40.00", "last eval return"), ("250", "env steps"),
                        ("2", "episodes"), ("–", "updates"), ("–", "stop reason")):
        assert f"<b class=\"\">{value}</b><span>{name}</span>" in cards, (value, name)
    assert "summary.json is from the stop at step 100 before the run was resumed" in render(went_on, 0)
    # an interrupted run not resumed (its tables end at its stop) and a finished one keep their summary
    stopped = RunData(tmp_path, config, dict(stop, steps=250), history, evaluations)
    assert current_summary(stopped) == dict(stop, steps=250) and "<b class=\"no\">not solved</b>" in _cards(stopped)
    finished = RunData(tmp_path, config, dict(stop, stop_reason="max_steps"), history, evaluations)
    assert current_summary(finished)["stop_reason"] == "max_steps"
