"""canter tune's pruning compares trials at the same env steps, whatever each run's --eval-every."""
import pytest

from canter.cli import main


def test_a_resumed_study_with_another_eval_every_prunes_at_the_same_env_steps(tmp_path, monkeypatch):
    """Trials reported at their own eval_every intervals: a study run with --eval-every 512 and resumed with 256
    compared the new trials' evaluation at step 512 (interval 2) with the first trials' at step 1024 (their interval
    2), and pruned them on it (seen: two of two resumed CartPole trials pruned at step 512, by a median taken at
    1024). Intervals are now the study's first eval_every."""
    optuna = pytest.importorskip("optuna")  # (in the test: its log handler takes the stderr of its first use)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("canter.tools.tune.save_plots", lambda *a: {})
    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(study_name="s", storage=url, direction="maximize")
    # a trial of the first run (eval_every 512): nothing at step 512, a return of 1000 at step 1024
    study.add_trial(optuna.trial.create_trial(value=1000.0, intermediate_values={1: -1.0, 2: 1000.0},
                                              user_attrs={"config": {"eval_every": 512}}))
    code = main(["tune", "ppo", "--env", "CartPole-v1", "--storage", url, "--study", "s", "--out", str(tmp_path / "t"),
                 "--trials", "2", "--eval-every", "256", "--max-steps", "1024", "--n-envs", "2", "--eval-episodes", "1",
                 "--prune-startup", "1", "--sampler-seed", "1", "--space", _space(tmp_path), "--quiet"])
    assert code == 0
    trial = optuna.load_study(study_name="s", storage=url).trials[1]
    assert trial.state.name == "COMPLETE", trial.intermediate_values  # its step 512 beats the median there (-1)
    assert sorted(trial.intermediate_values) == [1, 2]  # steps 512 and 1024 (256 and 768: in the same intervals)
    assert optuna.load_study(study_name="s", storage=url).user_attrs["report_every"] == 512


def _space(tmp_path) -> str:
    space = tmp_path / "space.yaml"
    space.write_text("n_steps: {choices: [64]}\nn_epochs: {choices: [1]}\nbatch_size: {choices: [64]}\n"
                     "lr: {low: 1.0e-4, high: 1.0e-3}\n" + "".join(f"{k}: null\n" for k in (
                         "gamma", "gae_lambda", "clip_range", "ent_coef", "vf_coef", "max_grad_norm")))
    return str(space)
