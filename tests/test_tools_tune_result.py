"""canter tune's result as read back and printed: categorical choices sampled as JSON text (a list among them, such as
net_arch's) read back as values (a null choice is None, not the text 'null'), and the trial counts."""
import pytest

from canter.tools.commands import _print_result


class _OneEvaluation:
    """A trainer that yields one evaluation (return 1.0) at its budget."""

    run = type("Run", (), {"eval_every": 64, "max_steps": 64})()
    step = 64

    def __call__(self):
        evaluation = type("Evaluation", (), {"mean_return": 1.0})()
        yield type("Record", (), {"evaluation": evaluation, "step": 64, "done": True})()

    def close(self):
        pass


def test_a_null_choice_beside_a_list_is_none_in_the_best_params(tmp_path, capsys, monkeypatch):
    """`critic_net_arch: {choices: [null, [256, 256]]}` (tools.md's example) is sampled as JSON text; a best trial that
    drew null had best_params['critic_net_arch'] == 'null', the text (only texts starting with '[' or '{' were read
    back), printed as the word and given to the API caller as a string."""
    optuna = pytest.importorskip("optuna")
    from canter.tools.tune import tune
    from canter.tools.tune_space import Param

    monkeypatch.setattr("canter.api.make_trainer", lambda *args, **kwargs: _OneEvaluation())
    monkeypatch.setattr("canter.tools.tune.save_if_best", lambda *args, **kwargs: None)
    monkeypatch.setattr("canter.tools.tune.save_plots", lambda *args, **kwargs: {})  # (seconds of matplotlib)
    space = tmp_path / "space.yaml"
    space.write_text("critic_net_arch: {choices: [null, [8]]}\n")
    out = tmp_path / "t"
    out.mkdir()
    study = optuna.create_study(study_name="s", storage=f"sqlite:///{out / 'study.db'}", direction="maximize")
    encoded = Param("critic_net_arch", "categorical", choices=(None, [8])).distribution().choices
    study.enqueue_trial({"critic_net_arch": encoded[0]})
    result = tune("ppo", "CartPole-v1", 1, out=out, study="s", space_file=space, quiet=True)
    assert result.best_params["critic_net_arch"] is None
    _print_result(result)  # as canter tune prints it: the YAML word
    assert "  critic_net_arch: null\n" in capsys.readouterr().out


def test_describe_reads_an_encoded_null_choice_back():
    """A refused resume names the stored choices as values: [None, [8]], not ['null', [8]]."""
    pytest.importorskip("optuna")
    from canter.tools.tune_space import Param, describe

    assert describe(Param("critic_net_arch", "categorical", choices=(None, [8])).distribution()) == "choices [None, [8]]"


def test_the_printed_counts_name_a_trial_still_running(capsys):
    """A study resumed within 3 minutes of a kill -9 (or beside another process on its storage) has a RUNNING trial,
    shown as 'running' in trials.csv, but the printed line counted only complete, pruned and failed ones."""
    from canter.tools.tune import TuneResult

    counts = {"complete": 3, "pruned": 0, "fail": 0, "running": 1}
    _print_result(TuneResult("s", "sqlite://", 1, 1.0, {}, counts))
    assert "3 complete, 0 pruned, 0 failed, 1 running trials" in capsys.readouterr().out
    _print_result(TuneResult("s", "sqlite://", 1, 1.0, {}, {**counts, "running": 0}))
    assert "3 complete, 0 pruned, 0 failed trials" in capsys.readouterr().out


def test_the_printed_counts_name_an_enqueued_trial_still_waiting(tmp_path, capsys, monkeypatch):
    """Two enqueued trials and --trials 1: trials.csv showed the second as 'waiting', but the printed line counted
    only complete, pruned and failed (and running) trials."""
    optuna = pytest.importorskip("optuna")
    from canter.cli import main

    monkeypatch.setattr("canter.api.make_trainer", lambda *args, **kwargs: _OneEvaluation())
    monkeypatch.setattr("canter.tools.tune.save_if_best", lambda *args, **kwargs: None)
    monkeypatch.setattr("canter.tools.tune.save_plots", lambda *args, **kwargs: {})  # (seconds of matplotlib)
    out = tmp_path / "t"
    out.mkdir()
    study = optuna.create_study(study_name="s", storage=f"sqlite:///{out / 'study.db'}", direction="maximize")
    study.enqueue_trial({"lr": 0.001})
    study.enqueue_trial({"lr": 0.002})
    assert main(["tune", "ppo", "--env", "CartPole-v1", "--out", str(out), "--study", "s", "--trials", "1",
                 "--quiet"]) == 0
    assert "study 's': 1 complete, 0 pruned, 0 failed, 1 waiting trials" in capsys.readouterr().out
    assert "\n1,waiting," in (out / "trials.csv").read_text()
