"""canter tune when something goes wrong: bad input and storage, failed or killed trials (Ctrl-C and SIGTERM:
test_tools_tune_interrupts.py)."""
import pytest

from canter.cli import main


def test_tune_bad_input_exits_2(tmp_path, capsys, monkeypatch):
    pytest.importorskip("optuna")
    monkeypatch.chdir(tmp_path)
    base = ["tune", "ppo", "--env", "CartPole-v1", "--out", str(tmp_path / "t")]
    assert main([*base, "--trials", "0"]) == 2
    assert main([*base, "--set", "lr=0.001"]) == 2  # tuned and fixed at once
    assert "both tuned and fixed" in capsys.readouterr().err
    assert main(["tune", "ppo", "--env", "CartPole-v9"]) == 2
    assert "CartPole-v1" in capsys.readouterr().err
    assert main(["tune", "dqn", "--env", "Pendulum-v1"]) == 2
    assert "Discrete action space" in capsys.readouterr().err
    assert main([*base, "--set", "record_every=1000"]) == 2  # trials write no run dir: it recorded nothing
    assert "'record_every' applies to a run directory" in capsys.readouterr().err
    # an offline algorithm without a dataset: every trial failed on it (study.db written, Optuna's warnings),
    # and the error's hint named a --dataset flag that tune did not have
    assert main(["tune", "bc", "--env", "CartPole-v1", "--out", str(tmp_path / "t")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["tune", "bc", "--env", "CartPole-v1", "--out", str(tmp_path / "t"), "--dataset", "nope"]) == 2
    assert "dataset not found" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


def test_tune_refuses_a_tuned_hyperparameter_fixed_in_an_hparams_mapping(tmp_path, capsys, monkeypatch):
    """--set lr=0.01 is refused (tuned and fixed), but --set 'hparams={lr: 0.01}' was not: every trial trained
    with lr 0.01 (the --set layer is over the sampled values) while the study recorded, and printed as the best,
    the lr values it sampled."""
    pytest.importorskip("optuna")
    monkeypatch.chdir(tmp_path)
    code = main(["tune", "ppo", "--env", "CartPole-v1", "--out", str(tmp_path / "t"), "--set", "hparams={lr: 0.01}",
                 "--trials", "1", "--max-steps", "64", "--eval-every", "64", "--quiet"])
    assert code == 2 and "'lr' is both tuned and fixed" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


def test_tune_bad_storage_or_out_writes_nothing(tmp_path, capsys, monkeypatch):
    """A storage URL that cannot be opened, or an --out that is a file, is one line and leaves no directory."""
    pytest.importorskip("optuna")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("precious\n")
    base = ["tune", "ppo", "--env", "CartPole-v1", "--trials", "1", "--max-steps", "512", "--quiet"]
    assert main([*base, "--storage", "nosuchdialect://x", "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "nosuchdialect" in err
    assert main([*base, "--out", str(tmp_path / "notes.txt")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "notes.txt" in err and "not a directory" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert (tmp_path / "notes.txt").read_text() == "precious\n"


def test_tune_marks_a_killed_runs_stale_trial_failed_even_when_no_trial_runs(tmp_path, capsys, monkeypatch):
    """A trial left RUNNING by a killed ``canter tune`` (its heartbeat stopped) stayed RUNNING when the
    study already had its finished trials: Optuna fails stale trials only when a new one starts."""
    optuna = pytest.importorskip("optuna")
    import time

    from canter.tools import tune as tune_mod

    url = f"sqlite:///{tmp_path / 'study.db'}"
    args = ["tune", "ppo", "--env", "CartPole-v1", "--storage", url, "--study", "s", "--out", str(tmp_path / "t"),
            "--trials", "1", "--max-steps", "64", "--set", "n_envs=2", "--eval-every", "64",
            "--eval-episodes", "1", "--quiet"]
    assert main(args) == 0
    real = tune_mod._storage
    monkeypatch.setattr(tune_mod, "_storage", lambda u: optuna.storages.RDBStorage(u, heartbeat_interval=1,
                                                                                   grace_period=1))
    study = optuna.load_study(study_name="s", storage=tune_mod._storage(url))
    killed = study.ask()  # a trial whose process died: RUNNING, its last heartbeat now
    study._storage.record_heartbeat(killed._trial_id)
    time.sleep(2.5)
    capsys.readouterr()
    assert main(args) == 0  # one finished trial already: nothing new runs
    states = [t.state.name for t in optuna.load_study(study_name="s", storage=real(url)).trials]
    assert states == ["COMPLETE", "FAIL"], states


def test_tune_failed_or_interrupted_trial_prints_no_traceback(tmp_path, capsys, monkeypatch):
    """A trial that fails on a CanterError is one warning line (no traceback); Ctrl-C during a trial
    exits 130 with one line saying how to continue, the trial marked failed."""
    import io
    import logging

    optuna = pytest.importorskip("optuna")
    from canter.tools.tune import search_space

    log = io.StringIO()  # what Optuna's own handler prints (it keeps the stderr of the test that created it)
    handler = logging.StreamHandler(log)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.getLogger("optuna").addHandler(handler)
    space = tmp_path / "space.yaml"
    space.write_text("".join(f"{n}: null\n" for n in search_space("dqn") if n != "buffer_size")
                     + "buffer_size: {low: 16, high: 100000}\n")
    url = f"sqlite:///{tmp_path / 'study.db'}"
    optuna.create_study(study_name="s", storage=url, direction="maximize").enqueue_trial({"buffer_size": 16})
    args = ["tune", "dqn", "--env", "CartPole-v1", "--space", str(space), "--storage", url, "--study", "s",
            "--out", str(tmp_path / "t"), "--trials", "1", "--set", "batch_size=32", "--set", "learning_starts=1000",
            "--max-steps", "64", "--eval-every", "64", "--eval-episodes", "1", "--quiet"]
    try:
        assert main(args) == 2  # its only trial failed
        assert "Traceback" not in log.getvalue() and "smaller than 'hparams.batch_size'" in log.getvalue()

        def interrupted(*args, **kwargs):
            raise KeyboardInterrupt

        monkeypatch.setattr("canter.api.make_trainer", interrupted)
        capsys.readouterr()
        assert main([*args[:-1], "--trials", "2"]) == 130
        assert "Traceback" not in log.getvalue() and "KeyboardInterrupt" in log.getvalue()
        err = capsys.readouterr().err
        assert err.splitlines()[-1].startswith("interrupted;")  # (Optuna's warnings may come before it)
        assert "run the same command again" in err
    finally:
        logging.getLogger("optuna").removeHandler(handler)
    assert [t.state.name for t in optuna.load_study(study_name="s", storage=url).trials] == ["FAIL", "FAIL"]


def test_tune_a_trial_raising_any_exception_fails_alone(tmp_path, capsys, monkeypatch):
    """A trial that raises an exception other than CanterError (a GPU out-of-memory error of a sampled
    batch size, an error in the user's env) ended the whole study with a traceback and no best.yaml."""
    optuna = pytest.importorskip("optuna")

    def objective(job, space):
        def run(trial):
            if trial.number == 0:
                raise RuntimeError("CUDA out of memory")
            return float(trial.number)
        return run

    monkeypatch.setattr("canter.tools.tune._objective", objective)
    monkeypatch.setattr("canter.tools.tune.save_plots", lambda *args: {})
    out = tmp_path / "t"
    assert main(["tune", "ppo", "--env", "CartPole-v1", "--out", str(out), "--trials", "2", "--quiet"]) == 0
    trials = optuna.load_study(study_name="ppo-CartPole-v1", storage=f"sqlite:///{out / 'study.db'}").trials
    assert [t.state.name for t in trials] == ["FAIL", "COMPLETE", "COMPLETE"]
    assert "2 complete, 0 pruned, 1 failed" in capsys.readouterr().out and (out / "best.yaml").exists()


def test_tune_default_storage_is_in_out_even_with_url_characters_in_its_path(tmp_path, capsys, monkeypatch):
    """The default storage URL was the out path pasted after sqlite:///: with --out 't?x=1' the study was
    written to a file 't' beside it ('?' starts a URL query), with 't%20b' to a missing 't b' (refused)."""
    pytest.importorskip("optuna")
    name = "t%41?x=1"  # was a file 'tA' beside it
    monkeypatch.setattr("canter.tools.tune._objective", lambda job, space: lambda trial: 1.0)  # no training
    monkeypatch.setattr("canter.tools.tune.save_plots", lambda *args: {})
    assert main(["tune", "ppo", "--env", "CartPole-v1", "--out", str(tmp_path / name), "--trials", "1",
                 "--quiet"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    assert sorted(p.name for p in (tmp_path / name).iterdir()) == ["best.yaml", "study.db", "trials.csv"]


def test_tune_and_benchmark_refuse_empty_out_study_storage(tmp_path, capsys, monkeypatch):
    """`--out ''` is not the current directory (nor `--study ''` / `--storage ''` the defaults): one line, exit 2,
    nothing written."""
    pytest.importorskip("optuna")
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "b.yaml"
    spec.write_text("seeds: 1\nset: {max_steps: 64, eval_episodes: 1, n_envs: 2, n_steps: 32, tensorboard: false}\n"
                    "envs: [CartPole-v1]\nalgos: [ppo]\n")
    tune = ["tune", "ppo", "--env", "CartPole-v1", "--trials", "1", "--max-steps", "64", "--n-envs", "2",
            "--eval-episodes", "1", "--quiet"]
    for argv in ([*tune, "--out", ""], [*tune, "--study", " "], [*tune, "--storage", ""],
                 ["benchmark", str(spec), "--out", ""]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and "needs a value" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.yaml"]


def test_tune_error_lines_show_a_storage_password_as_stars(tmp_path):
    """tune's error lines gave the --storage URL as typed, password and all; they show it as SQLAlchemy does."""
    pytest.importorskip("optuna")
    from canter.errors import CanterError
    from canter.tools.tune import _check_out_owner, _storage

    url = "postgresql://user:s3cret@dbhost/studies"
    with pytest.raises(CanterError) as exc:  # no driver for it here: the error line names the URL
        _storage(url)
    assert "s3cret" not in str(exc.value) and "user:***@dbhost" in str(exc.value)
    (tmp_path / "best.yaml").write_text("# canter tune: ...\n# study 's' in postgresql://user:***@dbhost/studies\n")
    _check_out_owner(tmp_path, "s", url)  # the header this study wrote: its own --out
    with pytest.raises(CanterError) as exc:  # another study's --out: named without the password
        _check_out_owner(tmp_path, "s", f"sqlite:///{tmp_path / 'x.db'}")
    assert "user:***@dbhost" in str(exc.value)
    (tmp_path / "best.yaml").write_text(f"# canter tune: ...\n# study 's' in {url}\n")  # an earlier canter's
    _check_out_owner(tmp_path, "s", url)
    with pytest.raises(CanterError) as exc:
        _check_out_owner(tmp_path, "s", f"sqlite:///{tmp_path / 'x.db'}")
    assert "s3cret" not in str(exc.value)


def test_tune_best_yaml_shows_a_storage_password_as_stars(tmp_path, monkeypatch):
    """best.yaml's header named the --storage URL as typed, password and all (a file made to be shared)."""
    optuna = pytest.importorskip("optuna")
    import canter.tools.tune as tune_mod

    url = "postgresql://user:s3cret@dbhost/studies"
    real, db = tune_mod._storage, f"sqlite:///{tmp_path / 'study.db'}"
    monkeypatch.setattr(tune_mod, "_storage", lambda u: real(db if u == url else u))  # a server stood in for
    study = optuna.create_study(study_name="s", storage=db, direction="maximize")  # one finished trial
    study.add_trial(optuna.trial.create_trial(value=1.0, params={}, distributions={},
                                              user_attrs={"config": {"algo": "ppo", "env": "CartPole-v1"}}))
    (tmp_path / "t").mkdir()
    tune_mod._finish("s", url, "ppo", "CartPole-v1", None, [], {}, tmp_path / "t", 0)
    best = (tmp_path / "t" / "best.yaml").read_text()
    assert "s3cret" not in best and "# study 's' in postgresql://user:***@dbhost/studies" in best


def test_tune_jobs_worker_error_is_one_line_not_a_traceback(tmp_path, capsys, monkeypatch):
    """A --jobs worker that met a CanterError the parent had not (a storage it could not open, a --space file gone
    by the time it started) printed the whole traceback before the parent's 'exited with an error' line."""
    pytest.importorskip("optuna")
    import signal

    from canter.tools import tune_workers

    monkeypatch.setattr(signal, "signal", lambda *a: None)  # the worker's SIGTERM handler, not this process's
    monkeypatch.setattr(tune_workers.INTERRUPTS, "pending", False)  # a fresh worker's (an earlier test's Ctrl-C)
    job = {"quiet": True, "config_file": None, "run_overrides": {}, "sets": [], "algo": "ppo",
           "space_file": str(tmp_path / "gone.yaml"), "storage": f"sqlite:///{tmp_path / 'study.db'}"}
    with pytest.raises(SystemExit) as exc:
        tune_workers._worker(job, 1)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and err.startswith("canter: error: ") and "gone.yaml" in err


def test_tune_in_memory_sqlite_storage_runs_in_one_process_and_is_refused_for_jobs(tmp_path, capsys, monkeypatch):
    """--storage sqlite:// (rl-zoo3's default: a study in memory) raised KeyError('Record does not exist.') with a
    traceback: tune opened a new storage, a new empty in-memory database, to run the trials and another for the
    result. --jobs workers cannot share such a database: refused in one line, nothing written."""
    pytest.importorskip("optuna")
    from canter.tools import tune as tune_mod
    from tests.support import assert_one_line_error, run_cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tune_mod, "save_plots", lambda *a: {})  # not what this test is about (seconds)
    (tmp_path / "space.yaml").write_text("n_steps: {choices: [32]}\nn_epochs: {choices: [1]}\n")
    args = ["tune", "ppo", "--env", "CartPole-v1", "--trials", "1", "--max-steps", "64", "--set", "n_envs=2",
            "--eval-every", "64", "--eval-episodes", "1", "--space", "space.yaml", "--quiet", "--storage", "sqlite://"]
    code, out, err = run_cli(capsys, *args, "--out", "mem")
    assert code == 0 and "Traceback" not in err, err  # the heartbeat thread had a database of its own
    assert "1 complete" in out and (tmp_path / "mem" / "best.yaml").exists()
    assert not (tmp_path / "mem" / "study.db").exists()
    code, _, err = run_cli(capsys, *args, "--jobs", "2", "--out", "jobs")
    assert_one_line_error(code, err, "in-memory", "--jobs")
    assert not (tmp_path / "jobs").exists()
    assert all(map(tune_mod.in_memory, ("sqlite://", "sqlite:///:memory:", "sqlite:///file:x?mode=memory&uri=true")))
    assert not any(map(tune_mod.in_memory, ("sqlite:///study.db", "postgresql://u@h/db", "not a url")))
