"""What a run records of the code that made it: canter's own checkout's commit and dirty flag, or unknown."""
import json
import subprocess
from pathlib import Path

import pytest

import canter
from canter import utils
from checkpoint_support import write_checkpoint_json
from support import commit_repo

ROOT = Path(canter.__file__).resolve().parent.parent


def _state_as_if_installed_in(package: Path, monkeypatch) -> tuple:
    """git_state() for canter's files at ``package`` (``__init__.py`` and ``utils.py`` there)."""
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    monkeypatch.setattr(utils, "__file__", str(package / "utils.py"))
    utils.git_state.cache_clear()
    try:
        return utils.git_state()
    finally:
        utils.git_state.cache_clear()


def test_a_copy_outside_any_checkout_run_from_another_repository_records_unknown(tmp_path, monkeypatch):
    """It recorded the working directory's repository's HEAD as canter's commit (a user's project, say)."""
    (tmp_path / "project").mkdir()
    commit_repo(tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project")
    assert _state_as_if_installed_in(tmp_path / "site" / "canter", monkeypatch) == (None, None)


def test_site_packages_inside_another_repository_is_not_that_repositorys_commit(tmp_path, monkeypatch):
    """A virtualenv inside a user's repository: canter's files are there, untracked; that HEAD is not canter's."""
    (tmp_path / "project").mkdir()
    commit_repo(tmp_path / "project")
    assert _state_as_if_installed_in(tmp_path / "project" / ".venv" / "site" / "canter", monkeypatch) == (None, None)


def test_without_git_on_path_the_commit_is_unknown(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    utils.git_state.cache_clear()
    try:
        assert utils.git_state() == (None, None)
    finally:
        utils.git_state.cache_clear()


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="canter is not run from its checkout")
def test_the_checkout_records_its_commit_and_whether_it_is_dirty():
    sha, dirty = utils.git_state()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=8", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    changes = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert sha == head and dirty is bool(changes)


def test_checkpoints_and_summaries_record_the_dirty_flag(tmp_path):
    canter.train("ppo", env="CartPole-v1", seed=0, max_steps=64, n_envs=2, n_steps=32, batch_size=32, n_epochs=1,
                 eval_every=64, eval_episodes=1, run_dir=tmp_path / "run", quiet=True)
    meta = json.loads((tmp_path / "run" / "checkpoints" / "last.json").read_text())
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    for record in (meta, summary):
        assert record["git_commit"] == utils.git_commit() and record["git_dirty"] == utils.git_dirty()


def test_config_yaml_names_the_code_that_wrote_it(tmp_path):
    """config.yaml recorded neither canter's version nor its commit (only the run dir's name had the sha)."""
    import yaml

    canter.train("ppo", env="CartPole-v1", seed=0, max_steps=64, n_envs=2, n_steps=32, batch_size=32, n_epochs=1,
                 eval_every=64, eval_episodes=1, run_dir=tmp_path / "run", quiet=True)
    text = (tmp_path / "run" / "config.yaml").read_text()
    dirty = {None: "unknown", True: "yes", False: "no"}[utils.git_dirty()]
    assert text.splitlines()[0] == (f"# written by canter {canter.__version__}, git commit "
                                    f"{utils.git_commit() or 'unknown'}, uncommitted changes: {dirty}")
    assert yaml.safe_load(text)["algo"] == "ppo"


def test_the_report_says_when_the_commit_had_uncommitted_changes():
    """canter report showed the commit alone, a dirty tree's as a clean one's, and 'none' for an unknown commit."""
    from canter.tools.report import code_version

    assert code_version({"canter_version": "0.1.0", "git_commit": "abcd1234", "git_dirty": True}) == (
        "canter 0.1.0 · commit abcd1234 (uncommitted changes)")
    assert code_version({"canter_version": "0.1.0", "git_commit": "abcd1234", "git_dirty": False}) == (
        "canter 0.1.0 · commit abcd1234")
    assert code_version({"canter_version": "0.1.0", "git_commit": None}) == "canter 0.1.0 · commit unknown"


def test_the_report_of_a_run_without_a_summary_names_the_code_from_its_checkpoint(tmp_path):
    """A run still going or killed (no summary.json) showed 'canter ? · commit unknown', though its checkpoints
    record both."""
    import html

    from canter.tools.report import code_version, render
    from canter.tools.rundata import load_run

    canter.train("ppo", env="CartPole-v1", seed=0, max_steps=64, n_envs=2, n_steps=32, batch_size=32, n_epochs=1,
                 eval_every=64, eval_episodes=1, run_dir=tmp_path / "run", quiet=True)
    (tmp_path / "run" / "summary.json").unlink()
    page = render(load_run(tmp_path / "run"), eval_episodes=0)
    line = code_version({"canter_version": canter.__version__, "git_commit": utils.git_commit(),
                         "git_dirty": utils.git_dirty()})
    assert f"seed 0 · {html.escape(line)} · 2 envs" in page


def test_the_report_of_a_run_with_only_periodic_checkpoints_names_the_code_from_the_newest(tmp_path):
    """A run without summary.json whose checkpoints are only step-N ones (last and best deleted) showed
    'canter ? · commit unknown', though each step-N checkpoint records the code."""
    import json

    from canter.tools.report import code_record, code_version
    from canter.tools.rundata import load_run

    run = tmp_path / "run"
    canter.train("ppo", env="CartPole-v1", seed=0, max_steps=128, n_envs=2, n_steps=32, batch_size=32, n_epochs=1,
                 eval_episodes=0, checkpoint_every=64, tensorboard=False, run_dir=run, quiet=True)
    (run / "summary.json").unlink()
    for name in ("last", "best"):
        for suffix in (".json", ".safetensors"):
            (run / "checkpoints" / f"{name}{suffix}").unlink(missing_ok=True)  # (no best: no evaluation)
    newest = run / "checkpoints" / "step-000000128.json"
    meta = json.loads(newest.read_text())
    meta["git_commit"], meta["git_dirty"] = "feedbeef", False  # only the newest says so
    write_checkpoint_json(newest, meta)
    assert code_version(code_record(load_run(run, read=()))) == f"canter {canter.__version__} · commit feedbeef"
