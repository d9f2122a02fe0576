"""CLI happy paths (train -> eval -> play) and the optional loggers."""
import json
import os

import gymnasium as gym
import pytest

import canter
from canter.cli import main

TINY = ["--max-steps", "256", "--n-envs", "2", "--set", "n_steps=64", "--eval-episodes", "1", "--quiet"]


def test_train_eval_play_list(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", "ppo", "--env", "CartPole-v1", "--run-dir", str(run), *TINY]) == 0
    assert "->" in capsys.readouterr().out
    assert main(["eval", str(run), "--episodes", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["episodes"] == 2 and set(result) >= {"mean_return", "std_return"}
    pytest.importorskip("moviepy")
    assert main(["play", str(run), "--episodes", "1", "--video-dir", str(tmp_path / "vid")]) == 0
    assert list((tmp_path / "vid").glob("*.mp4"))
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "ppo" in out and "dqn" in out and "CartPole-v1" in out


def test_wandb_offline_logging(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    run = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run, wandb=True, max_steps=256, n_envs=2, n_steps=64,
                 eval_episodes=1, eval_every=0)
    offline = list((run / "wandb").glob("offline-run-*"))
    assert offline and any(offline[0].glob("*.wandb"))
    # a resumed run continues the same W&B run (it opened a new one with a new id)
    canter.resume(run, max_steps=512)
    # the id from each transaction log's name (run-<id>.wandb): a resume that starts in the same second as the
    # first run gets the directory offline-run-<time>-<id>-1, so the directory name's last part is not the id
    ids = {p.name[len("run-"):-len(".wandb")] for p in (run / "wandb").glob("offline-run-*/run-*.wandb")}
    assert len(list((run / "wandb").glob("offline-run-*"))) == 2
    assert ids == {(run / "wandb" / "canter-run-id").read_text().strip()}


def test_python_api_returns_agent_and_generator_form(tmp_path):
    agent = canter.train("ppo", env="CartPole-v1", seed=1, max_steps=256, n_envs=2, n_steps=64, eval_episodes=1,
                         run_dir=tmp_path / "r")
    import numpy as np

    assert agent.predict(np.zeros((3, 4), np.float32)).shape == (3,)
    records = list(canter.make_trainer("ppo", "CartPole-v1", max_steps=256, n_envs=2, n_steps=64, eval_episodes=1)())
    assert records[-1].done and records[-1].stop_reason == "max_steps" and records[-1].evaluation is not None


def test_tensorboard_event_file_is_readable_by_tensorboard(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from canter.logging.tensorboard import EventFileWriter

    writer = EventFileWriter(tmp_path)
    for step in range(5):
        writer.add_scalar("charts/episode_return", 10.0 * step, step)
    writer.add_scalar("losses/value_loss", 0.25, 7)
    writer.close()
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()  # the reader drops records whose CRC does not match, so all points back = valid records
    assert set(acc.Tags()["scalars"]) == {"charts/episode_return", "losses/value_loss"}
    assert [(e.step, e.value) for e in acc.Scalars("charts/episode_return")] == [(s, 10.0 * s) for s in range(5)]
    assert acc.Scalars("losses/value_loss")[0].value == 0.25


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_under_the_tensorboard_file_is_an_error_naming_it(tmp_path):
    """ENOSPC from the event file's flush named no file: 'canter train' ended in a traceback (exit 1)."""
    import errno

    from canter.logging.tensorboard import EventFileWriter

    writer = EventFileWriter(tmp_path)
    writer._file.close()
    writer._file = open("/dev/full", "ab")  # noqa: SIM115 - every write from here on: No space left on device
    writer.add_scalar("charts/episode_return", 1.0, 1)
    with pytest.raises(OSError) as info:
        writer.close()
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(writer.path)
    assert writer._file.closed


@pytest.mark.parametrize("wandb", [False, True])
def test_a_trainer_built_and_closed_without_running_writes_nothing(tmp_path, monkeypatch, wandb):
    """make_trainer(run_dir=...) created the TensorBoard event file (and with wandb the W&B run files) at once:
    closing it unrun left a directory that a new make_trainer(run_dir=...) refused as 'not empty'."""
    if wandb:
        pytest.importorskip("wandb")
        monkeypatch.setenv("WANDB_MODE", "offline")
    run_dir = tmp_path / "run"
    kw = dict(run_dir=run_dir, max_steps=64, n_envs=2, n_steps=32, eval_episodes=1, wandb=wandb)
    canter.make_trainer("ppo", "CartPole-v1", **kw).close()
    assert not run_dir.exists()
    with canter.make_trainer("ppo", "CartPole-v1", **kw) as run:
        list(run())
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    assert acc.Scalars("charts/rolling_return")[-1].step == 64
    assert (run_dir / "wandb").is_dir() == wandb


def test_console_script_exits_with_the_command_code(tmp_path):
    import subprocess
    import sys

    ok = subprocess.run([sys.executable, "-m", "canter", "list"], capture_output=True, text=True, cwd=tmp_path)
    bad = subprocess.run([sys.executable, "-m", "canter", "trian"], capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0 and "ppo" in ok.stdout
    assert bad.returncode == 2 and "did you mean 'train'" in bad.stderr


def test_train_max_seconds_flag_stops_on_the_wall_clock(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = main(["train", "ppo", "--env", "CartPole-v1", "--max-seconds", "0.5", "--set", "target_reward=null",
                 "--run-dir", str(run_dir), "--quiet"])
    assert code == 0
    # a run without a target says why it stopped (it said "not solved", as if it had missed one)
    assert capsys.readouterr().out.startswith("finished (max_seconds): best eval return ")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "max_seconds" and 0.5 <= summary["wall_seconds"] < 5


def test_a_run_that_misses_its_target_says_what_stopped_it(tmp_path, capsys):
    """With a target, the last line said only 'not solved', whether max_steps, early stopping or a time budget
    ended the run (summary.json's stop_reason)."""
    code = main(["train", "ppo", "--env", "CartPole-v1", "--max-steps", "3200", "--n-envs", "2", "--set", "n_steps=16",
                 "--set", "batch_size=32", "--eval-every", "32", "--eval-episodes", "1", "--set", "early_stopping=1",
                 "--target-reward", "1000", "--run-dir", str(tmp_path / "run"), "--quiet"])
    reason = json.loads((tmp_path / "run" / "summary.json").read_text())["stop_reason"]
    assert code == 0 and reason == "early_stopping"
    assert capsys.readouterr().out.startswith(f"not solved ({reason}): best eval return ")


def test_history_files_without_rows_have_typed_columns(tmp_path):
    """A run that has finished no episode (or update) yet wrote history.parquet with columns of type null,
    and updates.parquet with no columns at all."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from canter.logging.history import HistoryLogger

    logger = HistoryLogger(tmp_path)
    logger.flush()
    history = pq.read_schema(tmp_path / "history.parquet")
    assert [(f.name, f.type) for f in history] == [
        ("step", pa.int64()), ("wall_time", pa.float64()), ("episode_return", pa.float64()),
        ("episode_length", pa.int64()), ("rolling_return", pa.float64())]
    evaluations = pq.read_schema(tmp_path / "evaluations.parquet")
    assert evaluations.field("episodes").type == pa.int64() and evaluations.field("mean_return").type == pa.float64()
    assert pq.read_schema(tmp_path / "updates.parquet").names == ["step", "wall_time", "steps_per_second"]


def test_history_logger_keeps_no_dict_per_logged_row(tmp_path):
    """An off-policy run logging every iteration logs millions of update rows: they used to be kept as a
    Python dict each (10.7 MiB of Python objects for these 40,000 rows, +528 MiB at 1M) and converted all
    over again at every flush; they are now converted to a columnar table a batch at a time."""
    import tracemalloc

    from canter.logging.history import HistoryLogger
    from canter.trainers import TrainRecord

    logger = HistoryLogger(tmp_path, flush_seconds=1e9)
    record = TrainRecord(step=1, iteration=1, wall_time=0.5, steps_per_second=10.0,
                         losses={"actor_loss": 0.1, "critic_loss": 0.2, "ent_coef": 0.3, "learning_rate": 3e-4})
    tracemalloc.start()
    try:
        for _ in range(20_000):
            logger.log(record)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert logger.rows()["updates"] == 20_000 and held < 1_000_000


def test_history_columns_that_appear_mid_run_read_back_null_before(tmp_path, monkeypatch):
    """Rows converted and written a batch at a time: a loss first logged after earlier rows were converted
    (and flushed) reads back null for them, in the order the columns first came; a loss logged as an int
    and later as a float is a float column, as when every row was converted at once."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import canter.logging.history as history
    from canter.trainers import TrainRecord

    monkeypatch.setattr(history._Rows, "BATCH", 2)
    logger = history.HistoryLogger(tmp_path)
    for step, losses in enumerate([{"a": 1}, {"a": 2}, {"a": 2.5, "b": 0.1}, {"b": 0.2}, {"a": 3}], 1):
        logger.log(TrainRecord(step=step, iteration=step, wall_time=0.5 * step, steps_per_second=10.0, losses=losses))
        if step == 2:
            logger.flush()
    logger.flush()
    table = pq.read_table(tmp_path / "updates.parquet")
    assert table.column_names == ["step", "wall_time", "steps_per_second", "a", "b"]
    assert table.schema.field("a").type == pa.float64() and table.schema.field("step").type == pa.int64()
    assert table["a"].to_pylist() == [1.0, 2.0, 2.5, None, 3.0]
    assert table["b"].to_pylist() == [None, None, 0.1, 0.2, None]
    assert logger.rows()["updates"] == 5 and logger.updates == table.to_pylist()


def test_history_a_loss_logged_as_a_bool_then_a_number_is_written(tmp_path, monkeypatch):
    """A loss that is a bool in some rows and a float in others was one float column (True as 1.0) while
    every row was converted at once; converted a batch at a time, a batch that starts with the bool (or a
    bool batch after float ones) raised ArrowInvalid / ArrowTypeError at the flush, ending the run."""
    import pyarrow.parquet as pq

    import canter.logging.history as history
    from canter.trainers import TrainRecord

    monkeypatch.setattr(history._Rows, "BATCH", 2)
    logger = history.HistoryLogger(tmp_path)
    for step, value in enumerate([0.5, 0.25, True, 2.0, False, False], 1):
        logger.log(TrainRecord(step=step, iteration=step, wall_time=0.5, steps_per_second=1.0, losses={"a": value}))
    logger.flush()
    assert pq.read_table(tmp_path / "updates.parquet")["a"].to_pylist() == [0.5, 0.25, 1.0, 2.0, 0.0, 0.0]


def test_importing_canter_leaves_the_garbage_collector_as_it_found_it():
    """canter defers garbage collection while it imports (torch's objects make its full passes slow)
    and restores the caller's setting afterwards: enabled stays enabled, disabled stays disabled."""
    import subprocess
    import sys

    code = ("import gc, sys; before = sys.argv[1] == 'on'; (gc.enable if before else gc.disable)(); "
            "import canter; canter.train; print(gc.isenabled())")
    for before, expected in (("on", "True"), ("off", "False")):
        out = subprocess.run([sys.executable, "-c", code, before], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == expected, (before, out.stdout, out.stderr)


def test_the_console_script_imports_module_parts_from_the_working_directory(tmp_path):
    """`canter train ppo --env my_envs:ID` (docs/action-masks.md) from the folder holding my_envs.py: the
    console script, unlike `python -m canter`, starts without the working directory on sys.path
    (simulated here with python -P)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "my_envs.py").write_text(
        "import gymnasium as gym\n"
        "gym.register('MyCartPole-v0', entry_point='gymnasium.envs.classic_control:CartPoleEnv', max_episode_steps=50)\n")
    root = Path(canter.__file__).resolve().parents[1]
    argv = ["canter", "train", "ppo", "--env", "my_envs:MyCartPole-v0", "--max-steps", "256", "--n-envs", "2",
            "--set", "n_steps=64", "--eval-episodes", "1", "--run-dir", "run", "--quiet"]
    proc = subprocess.run([sys.executable, "-P", "-c", f"import sys; sys.argv = {argv!r}; from canter.cli import entry; entry()"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(root)))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["env"] == "my_envs:MyCartPole-v0"


def test_play_video_of_an_env_without_image_frames_is_one_line(tmp_path, capsys):
    """BitFlipping renders text: RecordVideo warned once, recorded nothing, and play exited 0."""
    from support import assert_one_line_error

    run = tmp_path / "run"
    canter.train("dqn", "BitFlipping-v0", run_dir=run, max_steps=64, learning_starts=16, eval_every=0)
    capsys.readouterr()
    code = main(["play", str(run), "--episodes", "1", "--video-dir", str(tmp_path / "vid")])
    assert_one_line_error(code, capsys.readouterr().err, "'BitFlipping-v0' renders no image frames (its render modes: "
                                                         "ansi): recording video needs an env with rgb_array rendering")
    assert not (tmp_path / "vid").exists()


def test_eval_json_of_a_diverged_policy_is_valid_json(monkeypatch, capsys):
    """NaN returns (a NaN policy, divergence guard off) were printed as NaN, which is not JSON (JSON.parse, strict
    parsers refuse it): they are null, as JSON.stringify writes them."""
    import types

    import canter.api
    import canter.cli
    import canter.envs.make
    import canter.trainers.evaluation
    from canter.trainers.evaluation import EvalResult

    agent = types.SimpleNamespace(run_config=types.SimpleNamespace(
        env="Pendulum-v1", env_kwargs={}, vectorization="sync", eval_envs=1, policies="shared", central_state=False), metadata={"step": 5})
    monkeypatch.setattr(canter.cli, "_load_for_env", lambda *a: (agent, "Pendulum-v1", {}))
    pendulum = gym.make("Pendulum-v1")  # the fake vec env has the env's spaces, which eval checks
    monkeypatch.setattr(canter.envs.make, "make_vec_env", lambda *a, **k: types.SimpleNamespace(
        close=lambda: None, single_observation_space=pendulum.observation_space,
        single_action_space=pendulum.action_space))
    monkeypatch.setattr(canter.api, "find_checkpoint", lambda d: "run/checkpoints/best")
    nan = float("nan")
    monkeypatch.setattr(canter.trainers.evaluation, "evaluate",
                        lambda *a, **k: EvalResult(nan, nan, [nan, -3.0], [200, 200]))
    assert main(["eval", "run", "--episodes", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert result["mean_return"] is None and result["std_return"] is None and result["returns"] == [None, -3.0]


def test_summary_json_of_a_nan_evaluation_is_valid_json(tmp_path, monkeypatch):
    """An evaluation whose returns were NaN (an env or policy gone non-finite: the eval env is not guarded) was
    written to summary.json as "last_eval_return": NaN, which is not JSON (Node's JSON.parse refused the file);
    it is null, as `canter eval --json` writes it."""
    from canter.trainers.base import Trainer
    from canter.trainers.evaluation import EvalResult

    nan = float("nan")
    monkeypatch.setattr(Trainer, "evaluate", lambda self: EvalResult(nan, nan, [nan], [9]))
    run = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run, max_steps=128, n_envs=2, n_steps=64, eval_episodes=1)
    text = (run / "summary.json").read_text()
    summary = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert summary["last_eval_return"] is None and summary["best_eval_return"] is None and summary["steps"] == 128


def test_wandb_run_of_a_failed_training_finishes_with_a_failing_exit_code(tmp_path, monkeypatch):
    """A run stopped by a hook's exception (or a divergence) finished its W&B run with exit code 0, so W&B showed it
    as finished like a successful one; it is 1 now (a clean run: 0)."""
    import types

    codes = []
    fake_run = types.SimpleNamespace(log=lambda data, step: None, finish=lambda exit_code=None: codes.append(exit_code))
    fake = types.SimpleNamespace(init=lambda **kw: fake_run, Settings=lambda **kw: None)
    monkeypatch.setitem(__import__("sys").modules, "wandb", fake)
    kw = dict(wandb=True, max_steps=256, n_envs=2, n_steps=64, eval_episodes=1, tensorboard=False)

    def fail(trainer, losses):
        if trainer.step >= 128:
            raise RuntimeError("hook failed")

    with pytest.raises(RuntimeError, match="hook failed"):
        canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "failed", hooks={"after_update": fail}, **kw)
    canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "ok", **kw)
    assert codes == [1, 0]


def test_a_wandb_too_old_for_the_logger_is_one_line_before_anything_is_written(tmp_path, monkeypatch, capsys):
    """The wandb extra asked for wandb>=0.16, but the logger passes reinit='create_new' (wandb 0.19.10) and the
    x_disable_stats setting: an older wandb failed inside wandb.init once training had started."""
    import types

    from support import assert_one_line_error, run_cli

    fake = types.SimpleNamespace(__version__="0.16.6", init=lambda **kw: pytest.fail("wandb.init reached"))
    monkeypatch.setitem(__import__("sys").modules, "wandb", fake)
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--wandb", "--run-dir", "run", "--quiet")
    assert_one_line_error(code, err, "--wandb needs wandb>=0.19.10, found 0.16.6; upgrade it with: pip install -U")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("mode, needle", [("offlin", "did you mean 'offline'"), ("", "choices: disabled, dryrun")])
def test_a_wandb_mode_wandb_does_not_have_is_one_line_before_anything_is_written(tmp_path, monkeypatch, capsys, mode,
                                                                               needle):
    """WANDB_MODE=offlin (or set but empty) reached wandb.init once training had started: a pydantic ValidationError
    traceback, exit 1. It is now one line naming WANDB_MODE, exit 2, for a new run (nothing made) and a resume
    (the run as it was)."""
    import types

    from support import assert_one_line_error, run_cli, snapshot

    fake = types.SimpleNamespace(__version__="0.31.0", init=lambda **kw: pytest.fail("wandb.init reached"))
    monkeypatch.setitem(__import__("sys").modules, "wandb", fake)
    monkeypatch.chdir(tmp_path)
    canter.train("ppo", "CartPole-v1", run_dir="old", max_steps=128, n_envs=2, n_steps=64, eval_episodes=1,
                 tensorboard=False)
    before = snapshot(tmp_path / "old")
    monkeypatch.setenv("WANDB_MODE", mode)
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--wandb", "--run-dir", "new", "--quiet")
    assert_one_line_error(code, err, f"unknown WANDB_MODE '{mode}'; {needle}")
    assert not (tmp_path / "new").exists()
    code, _, err = run_cli(capsys, "train", "--resume", "old", "--max-steps", "256", "--wandb", "--quiet")
    assert_one_line_error(code, err, f"unknown WANDB_MODE '{mode}'; {needle}")
    assert snapshot(tmp_path / "old") == before


@pytest.mark.parametrize("project, needle", [
    ("team/proj", "it holds / (none of / \\ # ? % : may appear); e.g. 'team-proj'"),
    ("p" * 129, "is longer than the 128 characters W&B allows (129)"),
])
def test_a_wandb_project_wandb_refuses_is_one_line_before_anything_is_written(tmp_path, monkeypatch, capsys, project,
                                                                            needle):
    """--set wandb_project=team/proj (a '/', '#', ':' ... or over 128 characters) reached wandb.init once training had
    started: W&B's UsageError ('Invalid project name') as a traceback, exit 1."""
    import types

    from support import assert_one_line_error, run_cli

    fake = types.SimpleNamespace(__version__="0.31.0", init=lambda **kw: pytest.fail("wandb.init reached"))
    monkeypatch.setitem(__import__("sys").modules, "wandb", fake)
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--wandb", "--run-dir", "run", "--quiet",
                           "--set", f"wandb_project={project}")
    assert_one_line_error(code, err, needle)
    assert not (tmp_path / "run").exists()


def _fake_wandb(monkeypatch, logged: list) -> None:
    """A wandb module whose runs append (run number, step) to ``logged``, as W&B offline does (starting_step 0)."""
    import types

    runs = []

    def init(**kw):
        runs.append(kw)
        n = len(runs)
        return types.SimpleNamespace(log=lambda data, step: logged.append((n, step)), starting_step=0,
                                     finish=lambda exit_code=None: None)

    monkeypatch.setitem(__import__("sys").modules, "wandb", types.SimpleNamespace(init=init, Settings=lambda **kw: None))


def test_a_resumed_run_logs_no_wandb_step_its_killed_part_logged(tmp_path, monkeypatch):
    """A run stopped inside an iteration (a kill -9, an error) had logged its records after the last checkpoint to
    W&B; the resumed run logged those steps again, which W&B (at sync) renumbers to keep its steps increasing:
    points at steps the run never had. The resumed run now logs only the steps after those W&B has."""
    logged: list = []
    _fake_wandb(monkeypatch, logged)
    kw = dict(wandb=True, max_steps=1024, n_envs=2, n_steps=64, eval_episodes=1, eval_every=0, tensorboard=False,
              checkpoint_every=256)

    def fail(trainer, losses):
        if trainer.step >= 768:
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "run", hooks={"after_update": fail}, **kw)
    assert [s for n, s in logged] == [128, 256, 384, 512, 640]  # the last checkpoint is at 512
    canter.resume(tmp_path / "run")
    steps = [s for _, s in logged]
    assert steps == list(range(128, 1025, 128)) and logged[-1][0] == 2


def test_a_stop_between_logged_iterations_adds_no_wandb_point(tmp_path, monkeypatch):
    """The record a Ctrl-C makes between two logged iterations (log_every > 1) sent its last episode's return to W&B
    at its off-grid step (208, an episode ended since step 160): the resumed run had a W&B point the uninterrupted
    run has not."""
    logged: list = []
    _fake_wandb(monkeypatch, logged)
    common = dict(n_envs=2, n_steps=8, max_steps=320, eval_every=0, eval_episodes=1, log_every=5, target_reward=None,
                  seed=1, wandb=True, tensorboard=False)

    def stop_off_the_log_grid(trainer, losses):  # at step 208, iteration 13: not a logged iteration
        if trainer.step >= 200 and trainer.iteration_count % 5 and trainer.resume_exact is None \
                and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    canter.train("a2c", "CartPole-v1", run_dir=tmp_path / "whole", **common)
    whole = [s for _, s in logged]
    logged.clear()
    canter.train("a2c", "CartPole-v1", run_dir=tmp_path / "part", hooks={"after_update": stop_off_the_log_grid},
                 **common)
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["steps"] == 208
    canter.resume(tmp_path / "part")
    assert [s for _, s in logged] == whole == list(range(80, 321, 80))


@pytest.mark.parametrize("name, damage", [
    ("canter-logged-step", lambda text: text[:10]),  # truncated: it read as step 0
    ("canter-run-id", lambda text: b"a/b\n"),  # was: W&B's UsageError (no '/' in a run id), a traceback and exit 1
    ("canter-run-id", lambda text: b"\xff\xfe"),  # was: a UnicodeDecodeError traceback
])
def test_a_damaged_wandb_file_is_one_line_and_the_run_stays_as_it_was(tmp_path, monkeypatch, capsys, name, damage):
    from support import assert_one_line_error, run_cli

    logged: list = []
    _fake_wandb(monkeypatch, logged)
    run = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run, wandb=True, max_steps=256, n_envs=2, n_steps=64,
                 eval_episodes=1, tensorboard=False)
    path = run / "wandb" / name
    path.write_bytes(damage(path.read_bytes()))
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    code, _, err = run_cli(capsys, "train", "--resume", str(run), "--max-steps", "512", "--quiet")
    assert_one_line_error(code, err, str(path))
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
