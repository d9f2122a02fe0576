"""What a run records of the user's project: the commit of the repository that holds the working directory
(its scripts and configs), beside canter's own checkout's (tests/test_git_provenance.py)."""
import json
from pathlib import Path

import pytest

import canter
from canter import utils
from support import commit_repo


def test_the_working_directory_s_project_commit_and_dirty_flag(tmp_path):
    """Since canter's git_commit names only its own checkout, the user's project went unrecorded."""
    sha = commit_repo(tmp_path, "train.yaml", "algo: ppo\n")
    utils.project_git_state.cache_clear()
    assert utils.project_git_state(str(tmp_path)) == (sha, False)
    (tmp_path / "train.yaml").write_text("algo: dqn\n")
    utils.project_git_state.cache_clear()
    assert utils.project_git_state(str(tmp_path)) == (sha, True)
    outside = tmp_path.parent / f"{tmp_path.name}-plain"
    outside.mkdir()
    assert utils.project_git_state(str(outside)) == (None, None)
    utils.project_git_state.cache_clear()


@pytest.mark.skipif(utils.git_commit() is None, reason="canter is not run from its git checkout")
def test_canter_s_own_checkout_is_not_recorded_twice():
    root = str(Path(canter.__file__).resolve().parent.parent)
    assert utils.project_git_state(root) == (None, None)


def test_checkpoints_and_summaries_record_the_project(tmp_path, monkeypatch):
    (tmp_path / "project").mkdir()
    sha = commit_repo(tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project")
    utils.project_git_state.cache_clear()
    try:
        canter.train("ppo", env="CartPole-v1", seed=0, max_steps=64, n_envs=2, n_steps=32, batch_size=32,
                     n_epochs=1, eval_every=64, eval_episodes=1, run_dir=tmp_path / "run", quiet=True)
    finally:
        utils.project_git_state.cache_clear()
    meta = json.loads((tmp_path / "run" / "checkpoints" / "last.json").read_text())
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    for record in (meta, summary):
        assert record["project_git_commit"] == sha and record["project_git_dirty"] is False
        assert record["git_commit"] == utils.git_commit()


def test_a_saved_agent_keeps_the_project(tmp_path, monkeypatch):
    """agent.save (and a turn-based run's opponent copies) kept AGENT_METADATA's keys only, which lacked the
    project's: a saved agent's JSON had canter's commit but not the project's."""
    (tmp_path / "project").mkdir()
    sha = commit_repo(tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project")
    utils.project_git_state.cache_clear()
    try:
        agent = canter.train("ppo", env="CartPole-v1", seed=0, max_steps=64, n_envs=2, n_steps=32, batch_size=32,
                             n_epochs=1, eval_every=64, eval_episodes=1, run_dir=tmp_path / "run", quiet=True)
    finally:
        utils.project_git_state.cache_clear()
    agent.save(tmp_path / "agent")
    meta = json.loads((tmp_path / "agent.json").read_text())
    assert meta["project_git_commit"] == sha and meta["project_git_dirty"] is False


def test_a_removed_working_directory_records_no_project(tmp_path, monkeypatch):
    """provenance() asked Path.cwd() at each checkpoint and summary: a run whose working directory was removed
    while it trained (its run_dir elsewhere) crashed at its next checkpoint with FileNotFoundError."""
    (tmp_path / "gone").mkdir()
    monkeypatch.chdir(tmp_path / "gone")
    (tmp_path / "gone").rmdir()
    record = utils.provenance()
    assert record["project_git_commit"] is None and record["project_git_dirty"] is None
    assert record["git_commit"] == utils.git_commit()
