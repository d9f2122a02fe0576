"""Bad input for ``canter tune`` (search spaces, flags, studies made or resumed elsewhere, interrupted workers)
and ``canter list``'s output: one ``canter: error:`` line, exit code 2, no traceback, nothing already written lost.
Split from test_tools_errors.py."""
from __future__ import annotations

import pytest
import yaml

from canter.errors import CanterError
from support import assert_one_line_error
from support import run_cli_paths as run_cli


# -------------------------------------------------------------------------------- tune


@pytest.mark.parametrize("text,message", [
    ("net_arch: {low: 32, high: 64}", "'net_arch' is not a number"),
    ("lr: {low: 1.0e-5, high: 1.0e-3, log: maybe}", "'log' must be true or false"),
    ("lr: {low: 1.0e-5, high: 1.0e-3, log: 1}", "'log' must be true or false"),
    ("n_epochs: {low: 2, high: 6, step: 0}", "'step' must be > 0"),
    ("clip_range: {low: 0.1, high: 0.3, step: -0.1}", "'step' must be > 0"),
    # pointed to 'canter list', which shows registered names, not hyperparameters
    ("zqxjw: {low: 1, high: 2}", r"'zqxjw'; \d+ choices; 'canter train ppo --help' lists the hyperparameters"),
    # another algorithm's hyperparameter was '78 choices' too (a config key names the algorithms that have it)
    ("tau: {low: 0.01, high: 0.1}", r"'tau': ppo has no hyperparameter 'tau', c51, .*\(a search space written for"),
    ("hparams.buffer_size: {low: 10, high: 20}", r"acer, c51, ddpg, dqn and \d+ more .*did you mean 'batch_size'"),
    # a value listed twice (also once as text) was taken: Optuna drew it twice as often, as two choices
    ("n_steps: {choices: [64, '64', 128]}", r"the choice 64 is given twice \(64 and '64'\); list each value once"),
    ("net_arch: {choices: [[64, 64], [32], [64, 64]]}", r"the choice \[64, 64\] is given twice"),
])
def test_search_space_refuses_bad_ranges(tmp_path, text, message):
    from canter.tools.tune import search_space

    f = tmp_path / "space.yaml"
    f.write_text(text + "\n")
    with pytest.raises(CanterError, match=message):
        search_space("ppo", f)


def test_tune_range_on_a_list_field_is_one_line_before_the_study(tmp_path, capsys, monkeypatch):
    pytest.importorskip("optuna")
    monkeypatch.chdir(tmp_path)
    space = tmp_path / "space.yaml"
    space.write_text("net_arch: {low: 32, high: 64}\n")
    code, _, err = run_cli(capsys, "tune", "ppo", "--env", "CartPole-v1", "--trials", "1", "--space", space,
                           "--out", tmp_path / "t", "--max-steps", "256", "--quiet")
    assert_one_line_error(code, err, "net_arch", "choices")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["space.yaml"]


@pytest.mark.parametrize("flags,needles", [
    (["--sampler-seed", "-1"], ["--sampler-seed", "-1"]),
    (["--sampler-seed", str(2**32)], ["--sampler-seed", str(2**32)]),
    (["--timeout", "nan"], ["--timeout", "nan"]),
    (["--timeout", "inf"], ["--timeout", "inf"]),
], ids=["seed-negative", "seed-too-big", "timeout-nan", "timeout-inf"])
def test_tune_bad_sampler_seed_or_timeout_is_one_line_before_the_study(tmp_path, capsys, monkeypatch, flags, needles):
    """A seed numpy refuses gave a ValueError traceback after study.db was written; --timeout nan was taken."""
    pytest.importorskip("optuna")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "tune", "ppo", "--env", "CartPole-v1", "--trials", "1", "--out", tmp_path / "t",
                           "--max-steps", "256", "--quiet", *flags)
    assert_one_line_error(code, err, *needles)
    assert list(tmp_path.iterdir()) == []


def test_tune_refuses_a_study_made_beforehand_that_minimizes(tmp_path, capsys, monkeypatch):
    """A study created with Optuna's defaults (to enqueue trials first) minimizes: tune ran it and reported
    the trial with the lowest return as the best (seen: trials 211, 134, 107 -> 'best trial 2: 106.67')."""
    optuna = pytest.importorskip("optuna")
    url = f"sqlite:///{tmp_path / 'study.db'}"
    optuna.create_study(study_name="s", storage=url)  # direction: minimize
    monkeypatch.setattr("canter.tools.tune._objective", lambda job, space: lambda trial: 1.0)  # no training
    code, _, err = run_cli(capsys, "tune", "ppo", "--env", "CartPole-v1", "--storage", url, "--study", "s",
                           "--out", tmp_path / "t", "--trials", "1", "--quiet")
    assert_one_line_error(code, err, "study 's'", "minimize", "maximize")
    assert optuna.load_study(study_name="s", storage=url).trials == []


def test_tune_resume_with_an_incompatible_space_is_refused(tmp_path, capsys):
    """A study resumed with a space whose parameter changes kind, scale or choices is refused before any
    trial (Optuna would fail every new trial with a traceback); a changed range is fine."""
    optuna = pytest.importorskip("optuna")
    out = tmp_path / "tune"
    space_file = tmp_path / "space.yaml"
    base = ["tune", "ppo", "--env", "CartPole-v1", "--out", out, "--space", space_file, "--max-steps", "256",
            "--eval-every", "256", "--eval-episodes", "1", "--n-envs", "2", "--no-prune", "--quiet"]
    space = {"n_steps": {"choices": [64]}, "batch_size": {"choices": [64]}, "n_epochs": None,
             "net_arch": {"choices": [[16], [32]]}, "lr": {"low": 1e-4, "high": 1e-3, "log": True}}
    space_file.write_text(yaml.safe_dump(space))
    code, _, err = run_cli(capsys, *base, "--trials", "1")
    assert code == 0, err
    url = f"sqlite:///{(out / 'study.db').resolve()}"

    def trials():
        return optuna.load_study(study_name="ppo-CartPole-v1", storage=url).trials

    assert [t.state for t in trials()] == [optuna.trial.TrialState.COMPLETE]
    for changed, needle in [({"lr": {"choices": [1e-4, 1e-3]}}, "'lr'"),
                            ({"lr": {"low": 1e-4, "high": 1e-3}}, "'lr'"),  # the log scale dropped
                            ({"n_steps": {"choices": [64, 128]}}, "'n_steps'"),
                            ({"net_arch": {"choices": [[16], [64]]}}, "'net_arch'"),
                            ({"n_epochs": {"low": 2, "high": 3}, "max_grad_norm": {"choices": [0.5]}},
                             "'max_grad_norm'")]:  # n_epochs is new: fine; max_grad_norm was a float range
        space_file.write_text(yaml.safe_dump({**space, **changed}))
        code, _, err = run_cli(capsys, *base, "--trials", "2")
        assert_one_line_error(code, err, needle, "--study")
        assert [t.state for t in trials()] == [optuna.trial.TrialState.COMPLETE]  # no FAIL trial added
    # a narrower range of the same kind and scale is fine: the study continues
    space_file.write_text(yaml.safe_dump({**space, "lr": {"low": 2e-4, "high": 8e-4, "log": True}}))
    code, _, err = run_cli(capsys, *base, "--trials", "2")
    assert code == 0, err
    assert [t.state for t in trials()] == [optuna.trial.TrialState.COMPLETE] * 2
    # another study into the same --out would overwrite its best.yaml and plots: refused before any trial
    best = (out / "best.yaml").read_bytes()
    code, _, err = run_cli(capsys, "tune", "dqn", "--env", "CartPole-v1", "--out", out, "--trials", "1",
                           "--max-steps", "256", "--quiet")
    assert_one_line_error(code, err, "study 'ppo-CartPole-v1'", "another --out")
    assert (out / "best.yaml").read_bytes() == best
    assert {s.study_name for s in optuna.get_all_study_summaries(url)} == {"ppo-CartPole-v1"}


def test_param_distribution_is_what_suggest_stores():
    optuna = pytest.importorskip("optuna")
    from canter.tools.tune import Param

    params = [Param("a", "int", 2, 8, step=2), Param("b", "float", 1e-4, 1e-2, log=True),
              Param("c", "float", 0.1, 0.5, step=0.1), Param("d", "categorical", choices=(1, "x", None)),
              Param("e", "categorical", choices=([16], [32, 32]))]
    study = optuna.create_study()
    trial = study.ask()
    for p in params:
        p.suggest(trial)
    for p in params:
        assert trial.distributions[p.name] == p.distribution(), p.name


# -------------------------------------------------------------------------------- canter list


def test_list_descriptions_are_complete_sentences(capsys):
    code, out, err = run_cli(capsys, "list")
    assert code == 0, err
    lines = out.split("algorithms:\n", 1)[1].split("\nmodels:", 1)[0].splitlines()
    assert len(lines) > 10
    for line in lines:
        description = line.split(None, 2)[2]
        assert description.endswith("."), line
        assert description.count("(") == description.count(")"), line


def test_list_names_the_registered_encoders(capsys):
    """docs/architecture.md lists the encoders among canter list's built-ins, and 'encoder' takes a registered
    name, but canter list printed algorithms, models, agents and envs only."""
    code, out, err = run_cli(capsys, "list")
    assert code == 0, err
    assert "encoders: flat, impala, multi, nature, nature_pool, split" in out.splitlines()


def test_list_names_presets_by_the_env_id_that_uses_them(capsys, tmp_path):
    """'canter list' printed the preset file's name, 'dqn ALE-Pong-v5', which --env refused with 'did you mean
    'Ant-v5' or 'Walker2d-v5'?' (ale-py's ids were not among the close matches until an ALE/ id registered them)."""
    pytest.importorskip("ale_py")
    code, out, err = run_cli(capsys, "list")
    presets = out.split("presets:\n", 1)[1].splitlines()
    assert "  dqn ALE/Pong-v5" in presets and "  dqn CartPole-v1" in presets and "  dqn ALE-Pong-v5" not in presets
    assert any(line.startswith("  dqn atari (every Atari game") for line in presets)
    code, _, err = run_cli(capsys, "train", "dqn", "--env", "ALE-Pong-v5", "--run-dir", tmp_path / "run")
    assert_one_line_error(code, err, "did you mean 'ALE/Pong-v5'")
    assert not (tmp_path / "run").exists()


def test_tune_continues_its_own_study_in_a_moved_out_dir(tmp_path):
    """best.yaml names the study in the directory's old path: moved (or reached by another path), the
    same study may go on there; another study, or another storage, is still refused."""
    from canter.tools.tune import _check_out_owner

    out = tmp_path / "moved"
    out.mkdir()
    (out / "study.db").write_bytes(b"")
    (out / "best.yaml").write_text("# canter tune: best of 2 complete trials\n"
                                   f"# study 'ppo-CartPole-v1' in sqlite:///{tmp_path / 'old' / 'study.db'}\n")
    url = f"sqlite:///{(out / 'study.db').resolve()}"
    _check_out_owner(out, "ppo-CartPole-v1", url, default_storage=True)
    with pytest.raises(CanterError, match="study 'ppo-CartPole-v1'"):
        _check_out_owner(out, "dqn-CartPole-v1", url, default_storage=True)
    with pytest.raises(CanterError, match="study 'ppo-CartPole-v1'"):
        _check_out_owner(out, "ppo-CartPole-v1", "sqlite:////elsewhere/other.db")


def test_a_tune_worker_interrupted_inside_a_storage_commit_exits_quietly():
    """Ctrl-C inside an Optuna storage commit reaches a --jobs worker as StorageInternalError raised from the
    KeyboardInterrupt: the worker printed its traceback (seen in `canter tune --jobs 2` + Ctrl-C)."""
    from canter.tools import tune as tune_mod

    def interrupted_commit(job, worker):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("An exception is raised during the commit.") from exc

    def broken(job, worker):
        raise RuntimeError("a real error")

    import signal
    import unittest.mock as mock

    from canter.tools import tune_workers

    old = signal.getsignal(signal.SIGTERM)  # _worker installs its SIGTERM handler in this process
    try:
        with mock.patch.object(tune_mod, "_optimize", interrupted_commit), pytest.raises(SystemExit) as exit_:
            tune_workers._worker({}, 1)
        assert exit_.value.code == 130
        with mock.patch.object(tune_mod, "_optimize", broken), pytest.raises(RuntimeError, match="a real error"):
            tune_workers._worker({}, 1)
        # any error after the parent's SIGTERM arrived is its doing (a commit it cut left SQLite locked)
        with mock.patch.object(tune_mod, "_optimize", broken), mock.patch.object(tune_workers.INTERRUPTS, "pending",
                                                                               True), pytest.raises(SystemExit):
            tune_workers._worker({}, 1)
    finally:
        signal.signal(signal.SIGTERM, old)
