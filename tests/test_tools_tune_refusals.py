"""canter tune refusing a study before any trial: nothing written, not even the storage file or --out's folders."""
import pytest

from support import assert_one_line_error, run_cli, snapshot

BASE = ["tune", "ppo", "--env", "CartPole-v1", "--trials", "1", "--max-steps", "64", "--eval-every", "64", "--quiet"]


@pytest.fixture
def no_trials(monkeypatch):
    """Fail the test if a trial runs."""
    monkeypatch.setattr("canter.tools.tune._optimize", lambda *a, **k: pytest.fail("a trial ran"))


def test_tune_refused_with_a_new_storage_file_leaves_no_file(tmp_path, capsys, no_trials):
    """--storage sqlite:///NEW.db beside an --out holding an earlier study's agents was refused after the storage
    had been opened, which created NEW.db: the refused command left a new SQLite file behind."""
    pytest.importorskip("optuna")
    out = tmp_path / "t"
    (out / "agents").mkdir(parents=True)
    for name in ("trial-0.json", "trial-0.safetensors"):
        (out / "agents" / name).write_text("an earlier study's")
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, *BASE, "--out", str(out), "--storage", f"sqlite:///{tmp_path / 'new.db'}")
    assert_one_line_error(code, err, "agents/trial-0", "has no trials")
    assert snapshot(tmp_path) == before  # no new.db


@pytest.mark.parametrize("problem", ["minimize", "other algo", "other space"])
def test_tune_refused_study_leaves_no_out_folder(tmp_path, capsys, no_trials, problem):
    """A study refused once opened (it minimizes, tunes another algorithm, or sampled a parameter of another kind)
    left the --out folders that tune had made for it, empty."""
    optuna = pytest.importorskip("optuna")
    url = f"sqlite:///{tmp_path / 'study.db'}"
    if problem == "minimize":
        study = optuna.create_study(study_name="s", storage=url)
        needle = "direction(s) minimize"
    else:
        study = optuna.create_study(study_name="s", storage=url, direction="maximize")
        study.set_user_attr("canter", {"algo": "dqn" if problem == "other algo" else "ppo", "env": "CartPole-v1"})
        needle = "tunes dqn on CartPole-v1" if problem == "other algo" else "sampled 'lr'"
        if problem == "other space":  # a categorical lr: the declared space is a log-scale float range
            study.enqueue_trial({"lr": 0.001})
            trial = study.ask({"lr": optuna.distributions.CategoricalDistribution([0.001, 0.01])})
            study.tell(trial, 1.0)
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, *BASE, "--out", str(tmp_path / "a" / "b"), "--storage", url, "--study", "s")
    assert_one_line_error(code, err, needle)
    assert snapshot(tmp_path) == before  # no a/b, study.db as it was


def test_new_sqlite_file():
    """The SQLite file a URL would create: none for an existing file, memory, a file: URI or another database."""
    from canter.tools.tune_storage import new_sqlite_file

    assert str(new_sqlite_file("sqlite:////tmp/no/such%3Fdir/x.db")) == "/tmp/no/such?dir/x.db"
    assert new_sqlite_file(f"sqlite:///{__file__}") is None
    for url in ("sqlite://", "sqlite:///:memory:", "sqlite:///file:x?mode=ro&uri=true", "postgresql://u@h/db", "?"):
        assert new_sqlite_file(url) is None, url


@pytest.mark.parametrize("entry, needle", [
    ("n_steps: {low: 16, high: 64, step: 100}", "cut to [16, 16]; use 'high': 116 or a 'step' of at most 48"),
    ("n_steps: {low: 16, high: 64, step: 5}", "cut to [16, 61]; use 'high': 61 or 66"),
    ("lr: {low: 0.001, high: 0.01, step: 0.004}", "cut to [0.001, 0.009]; use 'high': 0.009 or 0.013"),
])
def test_tune_refuses_a_step_that_does_not_divide_the_range(tmp_path, capsys, no_trials, entry, needle):
    """A 'step' that does not divide high - low was accepted: Optuna lowered 'high' with a UserWarning from its
    own source (n_steps low 16, high 64, step 100 became [16, 16]: every trial had n_steps 16, nothing tuned)."""
    pytest.importorskip("optuna")
    space = tmp_path / "space.yaml"
    space.write_text(entry + "\n")
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, *BASE, "--out", str(tmp_path / "t"), "--space", str(space))
    assert_one_line_error(code, err, "does not divide the range", needle)
    assert snapshot(tmp_path) == before


def test_a_step_that_divides_the_range_is_taken(tmp_path):
    """Floats are compared as decimals (0.1 to 0.7 by 0.2 is a grid of four, though 0.6 % 0.2 != 0 in binary)."""
    from canter.tools.tune_space import search_space

    space = tmp_path / "space.yaml"
    space.write_text("lr: {low: 0.1, high: 0.7, step: 0.2}\nn_steps: {low: 16, high: 64, step: 16}\n")
    params = search_space("ppo", space)
    assert (params["lr"].step, params["n_steps"].step) == (0.2, 16)


def test_tune_refusing_an_existing_study_prints_one_line(tmp_path, capsys, monkeypatch, no_trials):
    """Without --quiet, Optuna's 'Using an existing study ...' log line came before the refusal: two lines on
    stderr. Optuna's line now waits until the study is accepted."""
    optuna = pytest.importorskip("optuna")
    import sys

    monkeypatch.setattr(optuna.logging._default_handler, "stream", sys.stderr)  # its lines into capsys
    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(study_name="s", storage=url, direction="maximize")
    study.set_user_attr("canter", {"algo": "dqn", "env": "CartPole-v1"})
    argv = [a for a in BASE if a != "--quiet"]
    code, _, err = run_cli(capsys, *argv, "--out", str(tmp_path / "t"), "--storage", url, "--study", "s")
    assert_one_line_error(code, err, "tunes dqn on CartPole-v1")
    optuna.create_study(study_name="s2", storage=url, direction="maximize")  # still logged once it is accepted
    monkeypatch.setattr("canter.tools.tune._optimize", lambda *a, **k: None)
    code, _, err = run_cli(capsys, *argv, "--out", str(tmp_path / "t"), "--storage", url, "--study", "s2")
    assert "Using an existing study with `study_name='s2'`" in err


def test_tune_jobs_called_again_by_a_worker_importing_an_unguarded_script_is_one_line(tmp_path, monkeypatch, capsys):
    """A script calling tune(jobs=2) without an `if __name__ == '__main__':` guard runs that call again in each spawned
    worker, while it imports the script: the worker opened the study and tried to start workers of its own, ending in
    Python's 'bootstrapping phase' RuntimeError. It now stops there first, in one line that says what to do (a
    CanterError, which nothing in the worker catches, printed a traceback), exit code 2, before anything is
    written."""
    import multiprocessing

    from canter.tools.tune import tune

    monkeypatch.setattr("canter.tools.tune.run_workers", lambda *a, **k: pytest.fail("workers started"))
    monkeypatch.setattr(multiprocessing.current_process(), "_inheriting", True, raising=False)
    with pytest.raises(SystemExit) as stopped:
        tune("ppo", "CartPole-v1", 1, out=tmp_path / "t", jobs=2, max_steps=64, quiet=True)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("canter: error: tune(jobs=...) ran again") and "__main__" in err
    assert not (tmp_path / "t").exists()


@pytest.mark.slow
def test_an_unguarded_script_with_tune_jobs_prints_one_line_per_worker(tmp_path):
    """The real case, with spawned workers: each printed a traceback ending in the CanterError; now one line each."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("optuna")
    script = tmp_path / "unguarded.py"
    script.write_text(
        "from canter.errors import CanterError\n"
        "from canter.tools.tune import tune\n"
        "try:\n"
        f"    tune('ppo', 'CartPole-v1', 2, out={str(tmp_path / 't')!r}, jobs=2, max_steps=64, quiet=True)\n"
        "except CanterError as exc:\n"
        "    print('parent:', exc)\n")
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("canter: error: tune(jobs=...) ran again") == 2, done.stderr
    assert "parent: tune worker(s) canter-tune-1, canter-tune-2 exited with an error" in done.stdout
