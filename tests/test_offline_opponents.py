"""Datasets of turn-based games collected against a trained opponent: the opponent is recorded where an offline
run finds it from any working directory."""
from __future__ import annotations

import json

import canter
from canter.data.dataset import collect
from support import run_cli

GAME = "pettingzoo:tests.resign_game"


def _opponent_run(path):
    canter.train("ppo", GAME, run_dir=path, max_steps=128, n_envs=2, eval_every=0, n_steps=64, batch_size=64,
                 n_epochs=1)
    return path


def test_a_dataset_records_its_opponent_by_its_absolute_path(tmp_path, monkeypatch, capsys):
    """``canter collect --env GAME --env-kwargs '{opponent: RUN}'`` recorded RUN as given, relative to where collect
    ran: an offline run started from another directory failed ('opponent ... is neither random nor self nor a
    canter run directory'), and one given the same opponent again was refused as other env_kwargs."""
    monkeypatch.chdir(tmp_path)
    _opponent_run(tmp_path / "opp")
    code, _, err = run_cli(capsys, "collect", "--env", GAME, "--env-kwargs", "{opponent: opp}", "--out", "data",
                           "--transitions", "40")
    assert code == 0, err
    recorded = json.loads((tmp_path / "data.json").read_text())["env_kwargs"]["opponent"]
    assert recorded == str(tmp_path / "opp")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    canter.train("bc", dataset=str(tmp_path / "data"), run_dir=tmp_path / "run", max_steps=10, gradient_steps=10,
                 batch_size=8, eval_episodes=2)
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["steps"] == 10


def test_collect_from_python_records_the_opponent_absolute_too(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _opponent_run(tmp_path / "opp")
    data = collect(GAME, 20, None, env_kwargs={"opponent": ["opp", "random"]})
    assert data.env_kwargs == {"opponent": [str(tmp_path / "opp"), "random"]}
