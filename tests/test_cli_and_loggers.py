"""CLI happy paths (train -> eval -> play) and the optional loggers."""
import json

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


def test_console_script_exits_with_the_command_code(tmp_path):
    import subprocess
    import sys

    ok = subprocess.run([sys.executable, "-m", "canter", "list"], capture_output=True, text=True, cwd=tmp_path)
    bad = subprocess.run([sys.executable, "-m", "canter", "trian"], capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0 and "ppo" in ok.stdout
    assert bad.returncode == 2 and "did you mean 'train'" in bad.stderr


def test_train_max_seconds_flag_stops_on_the_wall_clock(tmp_path):
    run_dir = tmp_path / "run"
    code = main(["train", "ppo", "--env", "CartPole-v1", "--max-seconds", "0.5", "--set", "target_reward=null",
                 "--run-dir", str(run_dir), "--quiet"])
    assert code == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "max_seconds" and 0.5 <= summary["wall_seconds"] < 5
