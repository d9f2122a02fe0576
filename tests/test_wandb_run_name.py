"""The W&B run's name is the run directory's own name however the directory was given: ``--run-dir .`` (training into
the working directory) named it '' (``Path('.').name``), and ``--resume RUN_DIR/..``-like paths '..', so the offline
run was stored without its name (W&B shows a made-up one once synced), and a part resumed as ``--resume .`` renamed it."""
from __future__ import annotations

import sys
import types

import canter


def _fake_wandb(monkeypatch, names: list) -> None:
    """A wandb module whose ``init`` appends the name it is given to ``names``."""
    def init(**kw):
        names.append(kw.get("name"))
        return types.SimpleNamespace(log=lambda data, step: None, starting_step=0, finish=lambda exit_code=None: None)

    monkeypatch.setitem(sys.modules, "wandb", types.SimpleNamespace(init=init, Settings=lambda **kw: None))


def test_a_run_trained_into_the_working_directory_is_named_as_it(tmp_path, monkeypatch):
    names: list = []
    _fake_wandb(monkeypatch, names)
    run = tmp_path / "my-run"
    run.mkdir()
    monkeypatch.chdir(run)
    kw = dict(n_envs=1, n_steps=8, eval_episodes=0, wandb=True, tensorboard=False)
    canter.train("a2c", "CartPole-v1", run_dir=".", max_steps=16, **kw)
    monkeypatch.chdir(run / "checkpoints")
    canter.resume("..", max_steps=32)
    assert names == ["my-run", "my-run"]
