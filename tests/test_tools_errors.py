"""Bad input and damaged files for the experiment tools (record-every, plot, report; tune and list are in
test_tools_errors_tune.py): one ``canter: error:`` line, exit code 2, no traceback, nothing already written lost
or overwritten."""
from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

from canter.cli import main
from canter.errors import CanterError
from support import assert_one_line_error
from support import run_cli_paths as run_cli

TINY = ["--n-envs", "2", "--set", "n_steps=64", "--set", "n_epochs=2", "--eval-episodes", "1", "--quiet"]


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (relative) -> its bytes (None for directories)."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes()) for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def good_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny finished PPO CartPole run (with checkpoints, history, evaluations and a summary)."""
    run = tmp_path_factory.mktemp("good") / "run"
    assert main(["train", "ppo", "--env", "CartPole-v1", "--max-steps", "256", *TINY, "--run-dir", str(run)]) == 0
    return run


@pytest.fixture
def run_copy(good_run: Path, tmp_path: Path) -> Path:
    """A fresh copy of the good run that a test may damage."""
    return Path(shutil.copytree(good_run, tmp_path / "run"))


# -------------------------------------------------------------------------------- --record-every resume


@pytest.fixture
def fake_play(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Replace the recording episode by a stub that writes a dummy MP4 and returns its seed as the return."""
    import canter.play

    seeds: list[int] = []

    def play(agent, env_id, episodes, video_dir=None, seed=0, env_kwargs=None, **kw):
        Path(video_dir).mkdir(parents=True, exist_ok=True)
        (Path(video_dir) / "episode-0.mp4").write_bytes(b"mp4 of seed %d" % seed)
        seeds.append(seed)
        return [float(seed)]

    monkeypatch.setattr(canter.play, "play", play)
    return seeds


def index_of(run: Path) -> list[tuple[int, float]]:
    return [(e["step"], e["return"]) for e in json.loads((run / "videos" / "index.json").read_text())]


def test_record_every_resume_keeps_the_index_the_grid_and_the_seeds(tmp_path, capsys, fake_play):
    """A run stopped at 640 steps (off the 256-step grid) and resumed to 1,024 keeps its earlier videos in
    the index, records at 768 and 1,024 as an uninterrupted run does, with the same episode seeds."""
    pytest.importorskip("moviepy")
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    base = ["train", "ppo", "--env", "CartPole-v1", *TINY, "--record-every", "256"]
    assert run_cli(capsys, *base, "--max-steps", "1024", "--run-dir", whole)[0] == 0
    assert run_cli(capsys, *base, "--max-steps", "640", "--run-dir", parts)[0] == 0
    first = index_of(parts)
    assert [s for s, _ in first] == [256, 512, 640]  # the grid, then the end of the run
    old_files = {p.name: p.read_bytes() for p in (parts / "videos").glob("*.mp4")}
    assert run_cli(capsys, "train", "--resume", parts, "--max-steps", "1024", "--quiet")[0] == 0
    resumed = index_of(parts)
    assert resumed[:3] == first  # the videos before the resume stay listed
    assert [s for s, _ in resumed] == [256, 512, 640, 768, 1024]  # the grid continues: 768, not 640 + 128
    uninterrupted = dict(index_of(whole))
    assert [s for s, _ in index_of(whole)] == [256, 512, 768, 1024]
    # the return of a stub episode is its seed: the same steps get the same seeds as without the stop
    for step, seed in resumed:
        if step in uninterrupted:
            assert seed == uninterrupted[step], (step, resumed, uninterrupted)
    for name, data in old_files.items():
        assert (parts / "videos" / name).read_bytes() == data  # the earlier files are untouched


@pytest.mark.parametrize("log_every", [1, 5])
def test_record_every_a_ctrl_c_records_nothing_the_uninterrupted_run_does_not(tmp_path, fake_play, log_every):
    """A Ctrl-C is not the end of training: stopped at 512 (off the 300-step grid) and resumed, the run
    has the uninterrupted run's videos (it recorded one more at the stop step, 512). With log_every 5
    the stop record at 384 is one the uninterrupted run never yields (its records: 320, 640, ...)."""
    pytest.importorskip("moviepy")
    import canter

    common = dict(n_envs=2, n_steps=32, batch_size=64, n_epochs=1, max_steps=1024, eval_every=0, eval_episodes=1,
                  record_every=300, tensorboard=False, target_reward=None, seed=1, log_every=log_every)
    at = 500 if log_every == 1 else 380

    def stop(trainer, losses):  # what Run's handler does on a first Ctrl-C / SIGTERM
        if trainer.step >= at and trainer.resume_exact is None and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "whole", **common)
    canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "part", hooks={"after_update": stop}, **common)
    canter.resume(tmp_path / "part")
    assert index_of(tmp_path / "part") == index_of(tmp_path / "whole")
    assert sorted(p.name for p in (tmp_path / "part" / "videos").glob("*.mp4")) == \
        sorted(p.name for p in (tmp_path / "whole" / "videos").glob("*.mp4"))


def test_record_every_resume_refuses_a_damaged_video_index(tmp_path, capsys, fake_play):
    pytest.importorskip("moviepy")
    run = tmp_path / "run"
    assert run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *TINY, "--record-every", "128", "--max-steps",
                   "256", "--run-dir", run)[0] == 0
    (run / "videos" / "index.json").write_text("[{\"file\": ")
    before = snapshot(run)
    code, _, err = run_cli(capsys, "train", "--resume", run, "--max-steps", "512", "--quiet")
    assert_one_line_error(code, err, "index.json")
    assert snapshot(run) == before  # refused before anything was written


def test_video_of_an_env_without_rgb_frames_is_one_line_before_anything(tmp_path, capsys):
    """BitFlipping-v0 renders text: --record-every trained and wrote the run, then crashed with a ValueError
    traceback at the first recording; play --video-dir printed its episodes, exit 0, and wrote no video."""
    pytest.importorskip("moviepy")
    code, _, err = run_cli(capsys, "train", "dqn", "--env", "BitFlipping-v0", "--max-steps", "1000", "--record-every", "16",
                           "--quiet", "--run-dir", tmp_path / "rec")
    assert_one_line_error(code, err, "BitFlipping-v0", "renders no image frames")
    assert not (tmp_path / "rec").exists()
    from canter.play import play

    with pytest.raises(CanterError, match="renders no image frames"):  # checked before the agent acts
        play(None, "BitFlipping-v0", video_dir=str(tmp_path / "videos"))
    assert not (tmp_path / "videos").exists()


def test_play_and_record_take_a_render_mode_from_env_kwargs(good_run, tmp_path, capsys):
    """A render_mode in env_kwargs (--env-kwargs, or a run trained with it) reached make_env beside its own
    render_mode=: play and train --record-every stopped with a TypeError traceback."""
    pytest.importorskip("moviepy")
    from canter.tools.video import check_video_support

    check_video_support("CartPole-v1", {"render_mode": "rgb_array"})  # what train --record-every checks first
    code, out, err = run_cli(capsys, "play", good_run, "--env-kwargs", "{render_mode: rgb_array}")
    assert code == 0 and out.startswith("episode 1: return"), err
    with pytest.raises(CanterError, match="render_mode='ansi' cannot render"):  # a mode the env cannot render in
        from canter.play import make_render_env

        make_render_env("CartPole-v1", None, env_kwargs={"render_mode": "ansi"})


# -------------------------------------------------------------------------------- damaged run files


def _parquet(**columns) -> bytes:
    """A parquet file of ``columns`` (a table canter did not write: a column is missing or not numeric)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = pa.BufferOutputStream()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue().to_pybytes()


DAMAGED = {
    "config-bad-yaml": ("config.yaml", b"algo: ppo\nenv: [CartPole-v1\n"),
    "config-a-list": ("config.yaml", b"- algo\n- env\n"),
    "config-binary": ("config.yaml", b"\xff\xfe\x00\x81garbage"),
    "config-bad-target": ("config.yaml", b"algo: ppo\nenv: CartPole-v1\ntarget_reward: lots\n"),
    "summary-bad-json": ("summary.json", b"{\"steps\": 256,"),
    "summary-a-list": ("summary.json", b"[1, 2, 3]"),
    "summary-text-steps": ("summary.json", b"{\"steps\": \"x\", \"wall_seconds\": 2}"),  # report: TypeError traceback
    "summary-null-wall": ("summary.json", b"{\"steps\": 256, \"wall_seconds\": null}"),  # report: TypeError traceback
    "history-garbage": ("history.parquet", b"garbage"),
    "evaluations-garbage": ("evaluations.parquet", b"PAR1 this is not parquet PAR1"),
    "updates-garbage": ("updates.parquet", b"\x00" * 64),
    "history-no-step": ("history.parquet", _parquet(wall_time=[0.1], episode_return=[9.0], rolling_return=[9.0])),
    "evaluations-text-step": ("evaluations.parquet", _parquet(step=["x"], wall_time=[0.1], mean_return=[9.0],
                                                              std_return=[0.0])),
}


def test_a_checkpoint_json_with_a_damaged_step_is_left_out_of_the_report(run_copy):
    """A checkpoint JSON whose step is text: the report's checkpoint table sorted the rows by step and
    stopped with a TypeError traceback ('<' between str and int)."""
    import json

    from canter.tools.rundata import checkpoints

    meta = json.loads((run_copy / "checkpoints" / "last.json").read_text())
    (run_copy / "checkpoints" / "extra.json").write_text(json.dumps({**meta, "step": "x"}))
    names = [row["name"] for row in checkpoints(run_copy)]  # the report's checkpoint table
    assert "last" in names and "extra" not in names


@pytest.mark.parametrize("cmd", ["plot", "report"])
@pytest.mark.parametrize("name,content", list(DAMAGED.values()), ids=list(DAMAGED))
def test_damaged_run_file_is_one_line_naming_it(capsys, run_copy, tmp_path, cmd, name, content):
    (run_copy / name).write_bytes(content)
    before = snapshot(run_copy)
    argv = ([cmd, run_copy, "--out", tmp_path / "curves.png"] if cmd == "plot"
            else [cmd, run_copy, "--eval-episodes", "0"])
    code, _, err = run_cli(capsys, *argv)
    assert_one_line_error(code, err, name)
    assert snapshot(run_copy) == before  # nothing written, nothing removed
    assert not (tmp_path / "curves.png").exists()


@pytest.mark.parametrize("content", [b"[1, 2]", b"\xff\xfe", b"{\"step\": 5, \"trainer\": 3}"],
                         ids=["list", "binary", "trainer"])
def test_report_leaves_out_a_damaged_checkpoint_file(capsys, run_copy, content):
    (run_copy / "checkpoints" / "step-000000128.json").write_bytes(content)
    code, _, err = run_cli(capsys, "report", run_copy, "--eval-episodes", "0")
    assert code == 0 and err == "", err


def test_report_refuses_a_damaged_video_index(capsys, run_copy):
    (run_copy / "videos").mkdir()
    (run_copy / "videos" / "index.json").write_text("{\"file\": 3}")
    before = snapshot(run_copy)
    code, _, err = run_cli(capsys, "report", run_copy, "--eval-episodes", "0")
    assert_one_line_error(code, err, "index.json")
    assert snapshot(run_copy) == before


# -------------------------------------------------------------------------------- report --out


@pytest.mark.parametrize("target", ["config.yaml", "summary.json", "history.parquet", "checkpoints/last.json"])
def test_report_out_never_overwrites_run_files(capsys, run_copy, target):
    before = snapshot(run_copy)
    code, _, err = run_cli(capsys, "report", run_copy, "--out", run_copy / target, "--eval-episodes", "0")
    assert_one_line_error(code, err, ".html")
    assert snapshot(run_copy) == before


def test_report_out_overwrites_only_earlier_reports(capsys, run_copy, tmp_path):
    notes = tmp_path / "notes.html"
    notes.write_text("<p>my notes</p>\n")
    code, _, err = run_cli(capsys, "report", run_copy, "--out", notes, "--eval-episodes", "0")
    assert_one_line_error(code, err, "notes.html", "not a canter report")
    assert notes.read_text() == "<p>my notes</p>\n"
    # a new file, then the same file again (an earlier report is replaced)
    out = tmp_path / "r.HTML"
    for _ in range(2):
        code, _, err = run_cli(capsys, "report", run_copy, "--out", out, "--eval-episodes", "0")
        assert code == 0, err
        assert "<title>" in out.read_text()
    # the default RUN_DIR/report.html is always the run's own report, also when written by an older canter
    (run_copy / "report.html").write_text("<!DOCTYPE html><html><body>old report</body></html>")
    code, _, err = run_cli(capsys, "report", run_copy, "--eval-episodes", "0")
    assert code == 0, err
    assert "old report" not in (run_copy / "report.html").read_text()


# -------------------------------------------------------------------------------- report legend warning


def test_report_of_a_killed_run_warns_nothing(capsys, run_copy):
    """Killed before any episode, evaluation or summary was written, and no target: an empty learning curve."""
    for name in ("summary.json", "history.parquet", "evaluations.parquet"):
        (run_copy / name).unlink()
    config = (run_copy / "config.yaml").read_text().replace("target_reward: 475.0", "target_reward: null")
    (run_copy / "config.yaml").write_text(config)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, out, err = run_cli(capsys, "report", run_copy, "--eval-episodes", "0")
    assert code == 0, err
    assert err == ""
    assert "No summary.json" in (run_copy / "report.html").read_text()


def test_draw_groups_without_curves_warns_nothing():
    from canter.tools.plot import draw_groups, new_figure
    from canter.tools.rundata import RunData

    empty = RunData(Path("x"), {"algo": "ppo", "env": "CartPole-v1"}, {})
    ax = new_figure(400, 300).add_subplot()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        draw_groups(ax, {"ppo CartPole-v1": [empty]})
    assert ax.get_legend() is None
