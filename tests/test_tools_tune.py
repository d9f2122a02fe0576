"""canter tune: search spaces, pruning, resumed studies, best.yaml and the configs' imports, each on a tiny budget."""
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from canter.cli import main
from canter.errors import CanterError
from support import assert_one_line_error, run_cli, snapshot


# -- tune --------------------------------------------------------------------------------------
def test_search_space_is_declared_on_config_fields_and_overridable(tmp_path):
    from canter.tools.tune import search_space

    space = search_space("ppo")
    assert space["lr"].kind == "float" and space["lr"].log and space["lr"].low == 1e-5
    assert space["n_steps"].kind == "categorical" and 2048 in space["n_steps"].choices
    assert space["n_epochs"].kind == "int"
    f = tmp_path / "space.yaml"
    f.write_text("lr: {low: 1.0e-4, high: 1.0e-2, log: true}\nn_epochs: null\nn_envs: {choices: [2, 4]}\n"
                 "net_arch: {choices: [[32], [64, 64]]}\n")
    space = search_space("ppo", f)
    assert space["lr"].low == 1e-4 and "n_epochs" not in space
    assert space["n_envs"].choices == (2, 4) and space["net_arch"].choices == ([32], [64, 64])
    for text, message in [("lrr: {low: 0.1, high: 0.2}", "did you mean 'lr'"),
                          ("lr: {low: 0.1, high: 0.01}", "must be below"),
                          ("ent_coef: {low: 0, high: 0.1, log: true}", "log scale"),
                          ("clip_range: {low: -1, high: 0.3}", "must be > 0"),
                          ("gamma: {choices: [0.9, 1.5]}", "must be <= 1"),
                          ("lr: {low: 0.1, hi: 0.2}", "did you mean 'high'"),
                          ("activation: {low: 1, high: 2}", "give 'choices'"),
                          # the range (or log) given beside choices was dropped without a word
                          ("n_steps: {low: 32, high: 64, choices: [32, 64]}", "cannot be combined with 'low'"),
                          ("lr: {choices: [0.001, 0.01], log: true}", "cannot be combined with 'log'")]:
        f.write_text(text)
        with pytest.raises(CanterError, match=message):
            search_space("ppo", f)
    with pytest.raises(CanterError, match="^--space file not found: "):  # it said 'config file', as for -f
        search_space("ppo", tmp_path / "nope.yaml")


def test_tune_prunes_resumes_and_best_yaml_trains(tmp_path, capsys):
    optuna = pytest.importorskip("optuna")
    from optuna.trial import TrialState

    out = tmp_path / "tune"
    url = f"sqlite:///{tmp_path / 'study.db'}"
    space = tmp_path / "space.yaml"  # keep every trial cheap
    space.write_text("lr: {low: 1.0e-6, high: 3.0e-3, log: true}\nn_steps: {choices: [32, 64]}\n"
                     "batch_size: {choices: [256]}\nn_epochs: {low: 2, high: 6}\n")
    # two known trials first: a sound one, then one that cannot learn (lr 1e-6) and must be pruned
    study = optuna.create_study(study_name="s", storage=url, direction="maximize")
    study.enqueue_trial({"lr": 1e-3, "n_steps": 32, "n_epochs": 6, "gamma": 0.98, "gae_lambda": 0.8, "ent_coef": 1e-8,
                         "clip_range": 0.2, "vf_coef": 0.5, "max_grad_norm": 0.5})
    study.enqueue_trial({"lr": 1e-6, "n_steps": 32, "n_epochs": 2})
    args = ["tune", "ppo", "--env", "CartPole-v1", "--trials", "3", "--out", str(out), "--space", str(space),
            "--storage", url, "--study", "s", "--max-steps", "3000", "--eval-every", "1500", "--eval-episodes", "3",
            "--prune-startup", "1", "--prune-warmup", "0", "--quiet"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    trials = optuna.load_study(study_name="s", storage=url).trials
    # the sound trial completes and the lr=1e-6 one is pruned; the third (sampled) trial may go either way
    assert [t.state for t in trials[:2]] == [TrialState.COMPLETE, TrialState.PRUNED]
    assert trials[2].state in (TrialState.COMPLETE, TrialState.PRUNED)
    n_complete = sum(t.state == TrialState.COMPLETE for t in trials)
    assert trials[1].params["lr"] == 1e-6 and list(trials[1].intermediate_values) == [1]
    assert list(trials[0].intermediate_values) == [1, 2]  # evaluations at 1,536 and 3,072 steps
    assert trials[1].intermediate_values[1] < trials[0].intermediate_values[1]  # below the median: pruned
    assert f"{n_complete} complete, {3 - n_complete} pruned" in printed and "best trial" in printed
    for name in ("best.yaml", "optimization_history.png", "intermediate_values.png"):
        assert (out / name).stat().st_size > 1000
    # Optuna's importance plot needs two completed trials
    assert (out / "param_importances.png").exists() == (n_complete >= 2)
    best = yaml.safe_load((out / "best.yaml").read_text())
    best_trial = max((t for t in trials if t.state == TrialState.COMPLETE), key=lambda t: t.value)
    assert best["algo"] == "ppo" and best["env"] == "CartPole-v1" and best["max_steps"] == 3000
    for k, v in best_trial.params.items():
        assert best["hparams"][k] == v
    _assert_best_agent_kept(out, best_trial.number, best)
    # the trials table (rl-zoo3's report; tune wrote none): one row per trial, its state, value and parameters
    import csv

    rows = list(csv.DictReader((out / "trials.csv").open()))
    assert [(int(r["number"]), r["state"]) for r in rows] == [(t.number, t.state.name.lower()) for t in trials]
    assert float(rows[0]["value"]) == trials[0].value and int(rows[0]["steps"]) >= 3000
    assert float(rows[1]["lr"]) == 1e-6 and rows[1]["n_epochs"] == "2"
    # resuming: the study has its 3 trials, so nothing runs; asking for 4 runs exactly one more
    assert main(args) == 0
    assert len(optuna.load_study(study_name="s", storage=url).trials) == 3
    more = list(args)
    more[args.index("--trials") + 1] = "4"
    assert main(more) == 0
    trials = optuna.load_study(study_name="s", storage=url).trials
    assert len(trials) == 4
    best_trial = max((t for t in trials if t.state == TrialState.COMPLETE), key=lambda t: t.value)
    _assert_best_agent_kept(out, best_trial.number, yaml.safe_load((out / "best.yaml").read_text()))
    # best.yaml is accepted by `canter train -f` as it is
    run = tmp_path / "run"
    assert main(["train", "ppo", "-f", str(out / "best.yaml"), "--max-steps", "256", "--run-dir", str(run),
                 "--quiet"]) == 0
    trained = yaml.safe_load((run / "config.yaml").read_text())
    assert trained["hparams"]["lr"] == best["hparams"]["lr"] and trained["n_envs"] == best["n_envs"]


def _assert_best_agent_kept(out: Path, number: int, best: dict) -> None:
    """OUT/agents holds the agent of trial ``number`` alone (tune wrote no agent at all, and `canter play` had no
    checkpoint to play), as canter.load reads it, named in best.yaml's header."""
    import canter

    path = out / "agents" / f"trial-{number}"
    assert sorted(p.name for p in (out / "agents").iterdir()) == [f"trial-{number}.json", f"trial-{number}.safetensors"]
    assert f"# its agent: canter play {path}\n" in (out / "best.yaml").read_text()
    agent = canter.load(path)
    assert agent.metadata["step"] >= best["max_steps"] and agent.metadata["config"]["hparams"] == best["hparams"]


def _tune_three_enqueued(tmp_path: Path, monkeypatch: Any, trainer: Any, name: str, values: tuple, *args: str) -> list:
    """Run `canter tune ppo` (``trainer`` as its make_trainer) on three enqueued trials that set PPO's ``name``
    to ``values`` (the one hyperparameter tuned), prune-startup 2; the study's trials."""
    import optuna

    import canter.api

    monkeypatch.setattr(canter.api, "make_trainer", trainer)
    monkeypatch.setattr("canter.tools.tune.save_plots", lambda *a: {})
    monkeypatch.setattr("canter.tools.tune.save_if_best", lambda *a: None)  # ``trainer`` has no agent to save
    space = tmp_path / "space.yaml"
    others = ("lr", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range", "ent_coef", "vf_coef",
              "max_grad_norm")
    space.write_text(f"{name}: {{choices: {sorted(set(values))}}}\n" + "".join(f"{k}: null\n" for k in others
                                                                              if k != name))
    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(study_name="s", storage=url, direction="maximize")
    for value in values:
        study.enqueue_trial({name: value})
    assert main(["tune", "ppo", "--env", "CartPole-v1", "--space", str(space), "--storage", url, "--study", "s",
                 "--out", str(tmp_path / "t"), "--trials", "3", "--prune-startup", "2", "--quiet", *args]) == 0
    return optuna.load_study(study_name="s", storage=url).trials


def test_tune_prunes_at_the_same_env_step_not_the_same_evaluation_count(tmp_path, capsys, monkeypatch):
    """Intermediate values were numbered by evaluation count: a trial with 128-step rollouts was compared at
    its 2nd evaluation (4,096 env steps) with the median of 4,096-step-rollout trials at their 2nd (8,192
    steps), and pruned although it learned exactly as fast per step. They are now reported at env steps //
    eval_every, so trials are compared at the same env step."""
    pytest.importorskip("optuna")
    from types import SimpleNamespace

    class FakeTrainer:  # every trial's return is env steps / 100: all learn equally fast per env step
        def __init__(self, *args: object, n_steps: int, **kwargs: object) -> None:
            self.run, self.step, self.rollout = SimpleNamespace(eval_every=2048, max_steps=8192), 0, n_steps * 4

        def __call__(self):
            next_eval = self.run.eval_every
            while self.step < self.run.max_steps:
                self.step += self.rollout
                result = None
                if self.step >= next_eval:
                    result = SimpleNamespace(mean_return=self.step / 100)
                    while next_eval <= self.step:
                        next_eval += self.run.eval_every
                yield SimpleNamespace(step=self.step, evaluation=result, done=self.step >= self.run.max_steps)

        def close(self) -> None:
            pass

    trials = _tune_three_enqueued(tmp_path, monkeypatch, FakeTrainer, "n_steps", (1024, 1024, 32))
    assert list(trials[0].intermediate_values) == [2, 4]  # evaluations at 4,096 and 8,192 env steps
    assert list(trials[2].intermediate_values) == [1, 2, 3, 4]  # at 2,048, 4,096, 6,144 and 8,192
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE", "COMPLETE"]


def test_tune_never_prunes_a_trial_at_the_evaluation_that_ends_its_budget(tmp_path, capsys, monkeypatch):
    """A trial below the median was PRUNED at its last evaluation, after it had trained its whole budget:
    that saved nothing and lost a complete result. It now completes."""
    pytest.importorskip("optuna")
    from types import SimpleNamespace

    class FakeTrainer:  # one evaluation per 2,048-step rollout; the return is 100 for lr 0.1, else 1
        stop_at: int | None = None  # a step at which the trial stops before max_steps (early stopping...)

        def __init__(self, *args: object, lr: float, max_steps: int, **kwargs: object) -> None:
            self.run, self.step = SimpleNamespace(eval_every=2048, max_steps=max_steps), 0
            self.value = 100.0 if lr == 0.1 else 1.0

        def __call__(self):
            end = min(self.run.max_steps, self.stop_at or self.run.max_steps)
            while self.step < end:
                self.step += 2048
                yield SimpleNamespace(step=self.step, evaluation=SimpleNamespace(mean_return=self.value),
                                      done=self.step >= end)

        def close(self) -> None:
            pass

    trials = _tune_three_enqueued(tmp_path, monkeypatch, FakeTrainer, "lr", (0.1, 0.1, 0.001), "--max-steps", "4096")
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE", "COMPLETE"]
    assert list(trials[2].intermediate_values) == [1, 2] and trials[2].value == 1.0
    # nor at the evaluation where something else ends it before max_steps (early stopping, max_seconds): the
    # third trial, stopped at 4,096 of 8,192 steps, was PRUNED there
    FakeTrainer.stop_at = 4096
    (tmp_path / "study.db").unlink()
    trials = _tune_three_enqueued(tmp_path, monkeypatch, FakeTrainer, "lr", (0.1, 0.1, 0.001), "--max-steps", "8192")
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE", "COMPLETE"] and trials[2].value == 1.0


def test_tune_resumed_study_samples_new_parameters(tmp_path, capsys):
    """Resuming a study must not restart the sampler's stream: the new (random startup) trials would
    repeat the parameters of the ones the study already has; a fresh study with the seed is reproduced."""
    optuna = pytest.importorskip("optuna")
    space = tmp_path / "space.yaml"
    space.write_text("".join(f"{k}: null\n" for k in ("n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda",
                                                       "clip_range", "ent_coef", "vf_coef", "max_grad_norm")))
    base = ["tune", "ppo", "--env", "CartPole-v1", "--space", str(space), "--max-steps", "64", "--n-envs", "2",
            "--set", "n_steps=32", "--set", "n_epochs=1", "--eval-every", "64", "--eval-episodes", "1", "--quiet",
            "--no-prune"]

    def lrs(out):
        study = optuna.load_study(study_name="ppo-CartPole-v1", storage=f"sqlite:///{out / 'study.db'}")
        return [t.params["lr"] for t in study.trials]

    assert main([*base, "--out", str(tmp_path / "a"), "--trials", "2"]) == 0
    assert main([*base, "--out", str(tmp_path / "a"), "--trials", "4"]) == 0
    resumed = lrs(tmp_path / "a")
    assert len(resumed) == 4 and len(set(resumed)) == 4, resumed
    assert main([*base, "--out", str(tmp_path / "b"), "--trials", "2"]) == 0
    assert lrs(tmp_path / "b") == resumed[:2]  # the same seed gives the same first trials
    capsys.readouterr()


def test_tune_trials_counts_finished_trials_not_failed_ones(tmp_path, capsys):
    """--trials N is the number of finished trials wanted: a trial that fails (a CanterError from its
    sampled config) does not use up one of them."""
    optuna = pytest.importorskip("optuna")
    from canter.tools.tune import search_space

    space = tmp_path / "space.yaml"
    space.write_text("".join(f"{n}: null\n" for n in search_space("dqn") if n != "buffer_size")
                     + "buffer_size: {low: 16, high: 100000}\n")
    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(study_name="s", storage=url, direction="maximize")
    study.enqueue_trial({"buffer_size": 16})  # below batch_size 32: this trial fails
    assert main(["tune", "dqn", "--env", "CartPole-v1", "--space", str(space), "--storage", url, "--study", "s",
                 "--out", str(tmp_path / "t"), "--trials", "2", "--set", "batch_size=32", "--set",
                 "learning_starts=1000", "--max-steps", "64", "--eval-every", "64", "--eval-episodes", "1",
                 "--quiet"]) == 0
    states = [t.state.name for t in optuna.load_study(study_name="s", storage=url).trials]
    assert states == ["FAIL", "COMPLETE", "COMPLETE"]
    assert "2 complete, 0 pruned, 1 failed" in capsys.readouterr().out


def test_tune_best_yaml_is_the_best_trials_own_config_after_a_resume(tmp_path, capsys):
    """best.yaml is the config the best trial trained with, also when the study was resumed with other
    flags (here --max-steps): training it gives the trial's value again."""
    optuna = pytest.importorskip("optuna")
    space = tmp_path / "space.yaml"
    space.write_text("".join(f"{k}: null\n" for k in ("n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda",
                                                       "clip_range", "ent_coef", "vf_coef", "max_grad_norm")))
    out = tmp_path / "t"
    base = ["tune", "ppo", "--env", "CartPole-v1", "--space", str(space), "--n-envs", "2", "--set", "n_steps=64",
            "--eval-every", "256", "--eval-episodes", "2", "--out", str(out), "--no-prune", "--quiet", "--sampler-seed", "3"]
    assert main([*base, "--max-steps", "1024", "--trials", "1"]) == 0
    assert main([*base, "--max-steps", "256", "--trials", "2"]) == 0
    study = optuna.load_study(study_name="ppo-CartPole-v1", storage=f"sqlite:///{out / 'study.db'}")
    best = study.best_trial
    assert best.number == 0  # the longer-trained trial (deterministic with these seeds)
    config = yaml.safe_load((out / "best.yaml").read_text())
    assert config["max_steps"] == 1024 and config["hparams"]["lr"] == best.params["lr"]
    run = tmp_path / "run"
    assert main(["train", "ppo", "-f", str(out / "best.yaml"), "--run-dir", str(run), "--quiet"]) == 0
    assert json.loads((run / "summary.json").read_text())["last_eval_return"] == best.value
    capsys.readouterr()


def test_tune_gives_the_callers_optuna_verbosity_back(tmp_path):
    """canter.tools.tune.tune set Optuna's logging level for the whole process and left it so."""
    optuna = pytest.importorskip("optuna")
    from canter.tools.tune import tune

    old = optuna.logging.get_verbosity()
    try:
        optuna.logging.set_verbosity(optuna.logging.ERROR)
        space = tmp_path / "space.yaml"
        space.write_text("".join(f"{k}: null\n" for k in ("n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda",
                                                           "clip_range", "ent_coef", "vf_coef", "max_grad_norm")))
        tune("ppo", "CartPole-v1", 1, out=tmp_path / "t", space_file=space, sets=["n_steps=32", "n_epochs=1"],
             prune=False, max_steps=64, n_envs=2, eval_every=64, eval_episodes=1)
        assert optuna.logging.get_verbosity() == optuna.logging.ERROR
    finally:
        optuna.logging.set_verbosity(old)


def test_tune_an_algorithm_registered_by_the_configs_imports(tmp_path, capsys, monkeypatch):
    """``canter tune NAME --set imports=[module]`` for an algorithm that module registers: the search space
    was looked up before the imports were imported ('unknown algorithm', exit 2)."""
    pytest.importorskip("optuna")
    import sys

    from canter.registry import _REGISTRY

    (tmp_path / "tune_imported_algo.py").write_text(
        "import canter\nfrom canter.algorithms.ppo import PPO\n"
        "@canter.register('algorithm', 'tune_imported_ppo_test')\nclass TunedPPO(PPO):\n    '''PPO by another name.'''\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    space = tmp_path / "space.yaml"
    space.write_text("".join(f"{k}: null\n" for k in ("n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda",
                                                       "clip_range", "ent_coef", "vf_coef", "max_grad_norm")))
    try:
        assert main(["tune", "tune_imported_ppo_test", "--env", "CartPole-v1", "--set", "imports=[tune_imported_algo]",
                     "--set", "n_steps=32", "--set", "n_epochs=1", "--trials", "1", "--out", str(tmp_path / "t"),
                     "--space", str(space), "--no-prune", "--max-steps", "64", "--n-envs", "2", "--eval-every", "64",
                     "--eval-episodes", "1", "--quiet"]) == 0, capsys.readouterr().err
        assert "tune_imported_algo" in (tmp_path / "t" / "best.yaml").read_text()
    finally:
        sys.modules.pop("tune_imported_algo", None)
        _REGISTRY["algorithm"].pop("tune_imported_ppo_test", None)


def test_tune_jobs_workers_import_the_configs_imports(tmp_path, capsys, monkeypatch):
    """With --jobs 2 each worker is a fresh (spawned) process, which read the search space of an algorithm
    registered by the config's imports before importing them: every worker exited with 'unknown algorithm'."""
    pytest.importorskip("optuna")
    import sys

    from canter.registry import _REGISTRY

    (tmp_path / "tune_jobs_algo.py").write_text(
        "import canter\nfrom canter.algorithms.ppo import PPO\n"
        "@canter.register('algorithm', 'tune_jobs_ppo_test')\nclass JobsPPO(PPO):\n    '''PPO by another name.'''\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # spawned workers get the parent's sys.path
    space = tmp_path / "space.yaml"
    space.write_text("".join(f"{k}: null\n" for k in ("n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda",
                                                       "clip_range", "ent_coef", "vf_coef", "max_grad_norm")))
    try:
        assert main(["tune", "tune_jobs_ppo_test", "--env", "CartPole-v1", "--set", "imports=[tune_jobs_algo]",
                     "--set", "n_steps=32", "--set", "n_epochs=1", "--trials", "2", "--jobs", "2",
                     "--out", str(tmp_path / "t"), "--space", str(space), "--no-prune", "--max-steps", "64",
                     "--n-envs", "2", "--eval-every", "64", "--eval-episodes", "1", "--quiet"]) == 0, capsys.readouterr().err
        assert "0 failed trials" in capsys.readouterr().out
    finally:
        sys.modules.pop("tune_jobs_algo", None)
        _REGISTRY["algorithm"].pop("tune_jobs_ppo_test", None)


def test_tune_processes_starting_on_one_study_at_once_sample_different_parameters(tmp_path, monkeypatch):
    """Each process seeded TPE from --sampler-seed and the study's trial count when it started, so machines (or
    --jobs workers' counterparts on other machines) starting on one shared study at once drew the same values
    trial after trial: every trial was run twice. Seeds now follow each trial's number, which the storage gives
    one process only; one process reproduces the same values."""
    optuna = pytest.importorskip("optuna")
    import threading

    import canter.tools.tune as tune_mod

    url = f"sqlite:///{tmp_path / 'study.db'}"
    optuna.create_study(study_name="s", storage=url, direction="maximize")
    sampled: list[float] = []
    monkeypatch.setattr(tune_mod, "_objective", lambda job, space: lambda trial: sampled.append(
        space["lr"].suggest(trial)) or 1.0)
    both_loaded, load = threading.Barrier(2), optuna.load_study

    def load_together(**kw: Any) -> Any:  # two machines: both open the study before either has a trial
        study = load(**kw)
        both_loaded.wait(timeout=30)
        return study

    monkeypatch.setattr(optuna, "load_study", load_together)
    job = {"quiet": True, "config_file": None, "run_overrides": {}, "sets": [], "algo": "ppo", "space_file": None,
           "prune": False, "prune_startup": 0, "study": "s", "storage": url, "sampler_seed": 0, "trials": 6,
           "timeout": None}
    tune_mod.search_space("ppo")  # the built-ins registered before the threads look them up
    machines = [threading.Thread(target=tune_mod._optimize, args=(job,)) for _ in range(2)]
    for m in machines:
        m.start()
    for m in machines:
        m.join(timeout=60)
    assert len(sampled) >= 6 and len(set(sampled)) == len(sampled)
    monkeypatch.setattr(optuna, "load_study", load)
    optuna.create_study(study_name="again", storage=url, direction="maximize")
    by_number = {t.number: t.params["lr"] for t in optuna.load_study(study_name="s", storage=url).trials}
    sampled.clear()
    tune_mod._optimize({**job, "study": "again", "trials": len(by_number)})
    assert sampled == [by_number[n] for n in sorted(by_number)]  # one process, the same seed: the same values


def test_tune_draws_no_intermediate_values_plot_when_no_trial_reported_one(tmp_path, capsys, monkeypatch):
    """With --eval-every past --max-steps a trial's one evaluation is its value, never reported: Optuna warned
    'You need to set up the pruning feature to utilize plot_intermediate_values()' and tune wrote an empty
    intermediate_values.png, listed among the files written."""
    pytest.importorskip("optuna")
    monkeypatch.setattr("canter.tools.tune._objective", lambda job, space: lambda trial: 1.0)  # reports nothing
    out = tmp_path / "t"
    assert main(["tune", "ppo", "--env", "CartPole-v1", "--out", str(out), "--trials", "1", "--quiet"]) == 0
    printed, err = capsys.readouterr()
    assert "pruning feature" not in err and "intermediate_values" not in printed
    assert not (out / "intermediate_values.png").exists() and (out / "optimization_history.png").exists()


@pytest.mark.slow
def test_tune_jobs_workers_stop_when_the_parent_is_killed(tmp_path):
    """kill -9 of `canter tune --jobs 2` left its two workers training on as orphans (the parent can pass on a
    Ctrl-C or SIGTERM, not a SIGKILL); they now notice and stop as on a Ctrl-C, their trials marked failed."""
    import os
    import signal
    import subprocess
    import time

    optuna = pytest.importorskip("optuna")
    children = Path("/proc/self/task/{0}/children".format(os.getpid()))
    if not children.exists():
        pytest.skip("needs /proc/PID/task/TID/children")
    out = tmp_path / "t"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "canter", "tune", "ppo", "--env", "CartPole-v1", "--trials", "4",
                             "--jobs", "2", "--out", str(out), "--max-steps", "10000000", "--eval-every", "256",
                             "--target-reward", "1e6", "--n-envs", "2", "--eval-episodes", "1", "--quiet"],
                            start_new_session=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(12)  # the workers are training their first trials
        kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(Path(f"/proc/{k}").exists() for k in kids):
            time.sleep(0.2)
        alive = [k for k in kids if Path(f"/proc/{k}").exists() and "Z" not in Path(f"/proc/{k}/stat").read_text()
                 .split(")")[-1].split()[0]]
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the group
        except ProcessLookupError:
            pass
    assert not alive, f"workers still running after their parent was killed: {alive}"
    states = [t.state.name for t in optuna.load_study(study_name="ppo-CartPole-v1",
                                                        storage=f"sqlite:///{out / 'study.db'}").trials]
    assert states and "RUNNING" not in states, states  # marked failed as they stopped


def test_tune_a_trial_whose_agent_cannot_be_saved_keeps_its_result(tmp_path):
    """Saving the best trial's agent caught only OSError and CanterError: any other error of an agent's state_dict
    (a user's algorithm) failed a trial that had trained to the end. It is now a warning; the trial completes."""
    from types import SimpleNamespace

    from canter.tools.tune_agents import save_if_best

    class Unsaveable:
        metadata = {"config": {}, "observation_space": None, "action_space": None}

        def state_dict(self):
            raise RuntimeError("cannot copy this buffer")

    import logging

    import optuna

    trial = SimpleNamespace(number=3, study=SimpleNamespace(get_trials=lambda **kwargs: []))
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # Optuna's own handler writes to the stderr of the test that made it, not capsys's
    logger = optuna.logging.get_logger("optuna")
    level = logger.level  # a quiet tune earlier in the process set Optuna's verbosity above WARNING
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    try:
        save_if_best(trial, SimpleNamespace(agent=Unsaveable()), tmp_path, 1.0)  # raised RuntimeError
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert any("trial 3: its agent was not saved: RuntimeError: cannot copy this buffer" in r.getMessage()
               for r in records), [r.getMessage() for r in records]
    assert not list((tmp_path / "agents").glob("trial-3.*"))


@pytest.mark.parametrize("storage", ["default", "sqlite:///:memory:"])
def test_tune_refuses_a_new_study_beside_an_earlier_studys_agents(tmp_path, capsys, monkeypatch, storage):
    """With OUT/study.db deleted (or a new --storage / --study), a new study started in OUT beside the earlier one's
    agents/trial-N: its trial-0 overwrote theirs, the others stayed mixed with its own. Now refused before any trial,
    nothing written or removed."""
    pytest.importorskip("optuna")
    out = tmp_path / "t"
    (out / "agents").mkdir(parents=True)
    for name in ("trial-7.json", "trial-7.safetensors"):
        (out / "agents" / name).write_text("an earlier study's")
    before = snapshot(tmp_path)
    monkeypatch.setattr("canter.tools.tune._optimize", lambda *a, **k: pytest.fail("a trial ran"))
    flags = [] if storage == "default" else ["--storage", storage]
    code, _, err = run_cli(capsys, "tune", "ppo", "--env", "CartPole-v1", "--out", str(out), "--quiet", *flags)
    assert_one_line_error(code, err, "agents/trial-7", "has no trials", "choose another --out")
    assert snapshot(tmp_path) == before
