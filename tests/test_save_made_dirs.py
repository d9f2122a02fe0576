"""A save that fails (a full disk: ENOSPC in the write) removes the directories it made for itself: ``canter collect
--out a/b/c`` left a/ and a/b/ behind, empty. Directories that were there, or that hold other files, stay."""
from __future__ import annotations

import errno
import os

import pytest
import torch

import canter.checkpoint
from canter.checkpoint import save_checkpoint
from canter.cli import main


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    def write(tensors, path, metadata):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(canter.checkpoint, "_save_tensors", write)


def test_collect_to_new_directories_on_a_full_disk_leaves_none(tmp_path, capsys, monkeypatch):
    _full_disk(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert main(["collect", "--env", "CartPole-v1", "--transitions", "20", "--out", "a/b/c"]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_failed_save_keeps_directories_that_were_there_or_hold_files(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "notes.txt").write_text("mine")
    _full_disk(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        save_checkpoint(tmp_path / "a" / "b" / "c" / "ck", {"w": torch.ones(2)}, {})
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "notes.txt"]
    monkeypatch.undo()
    base = save_checkpoint(tmp_path / "a" / "b" / "c" / "ck", {"w": torch.ones(2)}, {})  # a save that works: made
    assert base.with_name("ck.safetensors").is_file() and base.with_name("ck.json").is_file()


def test_a_tune_agent_that_cannot_be_saved_leaves_no_agents_folder(tmp_path, monkeypatch):
    """canter tune's OUT/agents was made before the trial's agent was saved (save_agent's own mkdir): a save that
    failed left it there, empty, with no agent in the study."""
    optuna = pytest.importorskip("optuna")
    from types import SimpleNamespace

    from support import untrained_agent

    from canter.tools.tune_agents import save_if_best

    verbosity = optuna.logging.get_verbosity()  # restored: a quiet Optuna hid later tests' warning records
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        trial = optuna.create_study(direction="maximize").ask()
    finally:
        optuna.logging.set_verbosity(verbosity)
    trainer = SimpleNamespace(agent=untrained_agent("ppo", "CartPole-v1", n_envs=1, n_steps=64))
    _full_disk(monkeypatch)
    save_if_best(trial, trainer, tmp_path, 1.0)  # logged as not saved; the trial's value stays
    assert not (tmp_path / "agents").exists()
    monkeypatch.undo()
    save_if_best(trial, trainer, tmp_path, 1.0)
    assert sorted(p.name for p in (tmp_path / "agents").iterdir()) == ["trial-0.json", "trial-0.safetensors"]
