"""canter tune / plot / benchmark and the statistics behind them, each on a tiny budget."""
import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from canter.cli import main
from canter.errors import CanterError
from canter.tools import stats
from canter.tools.plot import group_runs, mean_band, parse_size
from canter.tools.rundata import load_run

TINY_PPO = ["--max-steps", "512", "--n-envs", "2", "--set", "n_steps=64", "--set", "n_epochs=2",
            "--eval-episodes", "2", "--quiet"]


@pytest.fixture(scope="module")
def two_seeds(tmp_path_factory):
    """Two PPO CartPole runs that differ only in the seed."""
    root = tmp_path_factory.mktemp("runs")
    dirs = []
    for seed in (0, 1):
        d = root / f"ppo-s{seed}"
        assert main(["train", "ppo", "--env", "CartPole-v1", "--seed", str(seed), "--run-dir", str(d), *TINY_PPO]) == 0
        dirs.append(d)
    return dirs


# -- statistics ------------------------------------------------------------------------------
def test_iqm_matches_scipy_trim_mean():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 4, 5, 8, 11):
        x = rng.normal(size=n) * 10
        assert stats.iqm(x) == pytest.approx(scipy_stats.trim_mean(x, 0.25))
    assert stats.iqm([1, 2, 3, 4, 100, 5, 6, 7]) == pytest.approx(4.5)  # the outlier and the 1, 2, 7 are cut


def test_bootstrap_ci_is_a_percentile_interval_over_seeds():
    assert stats.bootstrap_ci([5.0, 5.0, 5.0]) == (5.0, 5.0)
    x = np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])
    lo, hi = stats.bootstrap_ci(x, reps=4000, seed=1)
    assert x.min() <= lo < stats.iqm(x) < hi <= x.max()
    # stratified: tasks are resampled separately, so a [runs, tasks] array with equal rows per task is exact
    assert stats.bootstrap_ci(np.array([[1.0, 9.0]] * 4)) == (5.0, 5.0)
    s = stats.summarize([1.0, 2.0, 3.0, 4.0])
    assert (s["median"], s["q25"], s["q75"], s["iqr"]) == (2.5, 1.75, 3.25, 1.5)
    assert s["iqm"] == 2.5 and s["iqm_low"] <= 2.5 <= s["iqm_high"]


# -- plot --------------------------------------------------------------------------------------
def test_mean_band_averages_where_runs_overlap():
    a = (np.array([0.0, 10.0]), np.array([0.0, 10.0]))
    b = (np.array([0.0, 20.0]), np.array([10.0, 30.0]))
    grid, mean, std = mean_band([a, b], points=3)  # grid 0, 10, 20
    np.testing.assert_allclose(grid, [0, 10, 20])
    np.testing.assert_allclose(mean, [5.0, 15.0, 30.0])  # at 20 only run b is there
    np.testing.assert_allclose(std, [5.0, 5.0, 0.0])
    _, mean, std = mean_band([a, b], points=3, hold=[True, False])  # run a stopped at its target: held at 10
    np.testing.assert_allclose(mean, [5.0, 15.0, 20.0])
    np.testing.assert_allclose(std, [5.0, 5.0, 10.0])


def test_a_curve_takes_the_rolling_return_after_all_episodes_that_ended_on_a_step(tmp_path):
    """Four envs whose episodes all end together (Pendulum: 200 steps each) give four history rows per step;
    the curve between two such steps went toward the first row of the next (a mean with one of its four new
    episodes): a PPO Pendulum run's curve read -1259 at step 1592 where the rolling return goes from
    -1172.6 after step 800 to -1307.4 after step 1604 (-1305)."""
    from canter.tools.plot import run_curve
    from canter.tools.rundata import RunData

    steps = np.array([800.0] * 4 + [1604.0] * 4)
    rolling = np.array([-960.5, -929.6, -1021.7, -1172.6, -1260.8, -1293.3, -1305.1, -1307.4])
    history = {"step": steps, "wall_time": steps / 100, "episode_return": rolling, "rolling_return": rolling}
    xs, ys = run_curve(RunData(tmp_path, {"algo": "ppo", "env": "Pendulum-v1"}, {}, history))
    np.testing.assert_array_equal(xs, [800.0, 1604.0])
    np.testing.assert_array_equal(ys, [-1172.6, -1307.4])
    grid, mean, _ = mean_band([(xs, ys)], points=3)
    np.testing.assert_allclose(mean, [-1172.6, -1240.0, -1307.4])


def test_plot_group_counts_only_runs_with_a_curve(tmp_path):
    """A seed killed before its first episode draws nothing: the legend said n=3 for a mean of 2 runs,
    and the y label 'training rolling mean, or evaluation mean' though no evaluation mean was drawn."""
    from canter.tools.plot import draw_groups, new_figure
    from canter.tools.rundata import RunData

    def run(name, steps):
        steps = np.asarray(steps, dtype=float)
        history = {"step": steps, "wall_time": steps / 100, "episode_return": steps, "rolling_return": steps}
        return RunData(tmp_path / name, {"algo": "ppo", "env": "CartPole-v1"}, {}, history if len(steps) else {})

    ax = new_figure(400, 300).add_subplot()
    draw_groups(ax, group_runs([run("s0", [10, 20]), run("s1", [10, 30]), run("killed", [])]))
    assert ax.get_legend_handles_labels()[1] == ["ppo CartPole-v1 (n=2)"]
    assert ax.get_ylabel() == "return (rolling mean of 100 training episodes)"
    # a seed stopped after one episode (at step 1234, between two points of the 200-point grid) adds
    # nothing to the mean either: the legend said n=3
    ax = new_figure(400, 300).add_subplot()
    draw_groups(ax, group_runs([run("s0", [10, 5000]), run("s1", [10, 6000]), run("one", [1234])]))
    assert ax.get_legend_handles_labels()[1] == ["ppo CartPole-v1 (n=2)"]


def test_plot_writes_image_of_requested_size(two_seeds, tmp_path, capsys):
    from PIL import Image

    runs = [load_run(d) for d in two_seeds]
    assert list(group_runs(runs)) == ["ppo CartPole-v1"]  # two seeds -> one group
    assert list(group_runs(runs, ["a", "b"])) == ["a", "b"]
    out = tmp_path / "curves.png"
    assert main(["plot", *map(str, two_seeds), "--out", str(out), "--size", "640x360", "--x", "time"]) == 0
    with Image.open(out) as img:
        assert img.size == (640, 360)
        colors = img.convert("RGB").getcolors(maxcolors=1 << 20)
    assert len(colors) > 20  # axes, text, a curve and its band: not a blank canvas
    svg = tmp_path / "curves.svg"
    assert main(["plot", *map(str, two_seeds), "--out", str(svg), "--label", "x", "x"]) == 0
    assert svg.read_text().lstrip().startswith("<?xml") and "<path" in svg.read_text()


@pytest.mark.parametrize("args, message", [
    (["plot", "no/such/run"], "no such run directory"),
    (["plot", "{run}", "--out", "x.jpeg"], "unknown image format"),
    (["plot", "{run}", "--size", "12x5"], "--size"),
    (["plot", "{run}", "{run}", "--label", "only-one"], "one label per run"),
    (["plot", "{run}", "{run}/"], "given twice"),  # was n=2 of one run: drawn as two seeds
])
def test_plot_bad_input_is_one_line(two_seeds, tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    args = [a.replace("{run}", str(two_seeds[0])) for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())  # nothing written


def test_parse_size():
    assert parse_size("800x500") == (800, 500)
    with pytest.raises(CanterError):
        parse_size("800")


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
                          ("activation: {low: 1, high: 2}", "give 'choices'")]:
        f.write_text(text)
        with pytest.raises(CanterError, match=message):
            search_space("ppo", f)


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
    # resuming: the study has its 3 trials, so nothing runs; asking for 4 runs exactly one more
    assert main(args) == 0
    assert len(optuna.load_study(study_name="s", storage=url).trials) == 3
    more = list(args)
    more[args.index("--trials") + 1] = "4"
    assert main(more) == 0
    assert len(optuna.load_study(study_name="s", storage=url).trials) == 4
    # best.yaml is accepted by `canter train -f` as it is
    run = tmp_path / "run"
    assert main(["train", "ppo", "-f", str(out / "best.yaml"), "--max-steps", "256", "--run-dir", str(run),
                 "--quiet"]) == 0
    trained = yaml.safe_load((run / "config.yaml").read_text())
    assert trained["hparams"]["lr"] == best["hparams"]["lr"] and trained["n_envs"] == best["n_envs"]


def _tune_three_enqueued(tmp_path: Path, monkeypatch: Any, trainer: Any, name: str, values: tuple, *args: str) -> list:
    """Run `canter tune ppo` (``trainer`` as its make_trainer) on three enqueued trials that set PPO's ``name``
    to ``values`` (the one hyperparameter tuned), prune-startup 2; the study's trials."""
    import optuna

    import canter.api

    monkeypatch.setattr(canter.api, "make_trainer", trainer)
    monkeypatch.setattr("canter.tools.tune.save_plots", lambda *a: {})
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


def _ctrl_c_tune_jobs(out: Path, wait: Any) -> None:
    """Start `canter tune --jobs 2` in its own process group, call ``wait(proc)``, send the group a Ctrl-C
    and check the exit: 130, one line, no traceback from any process."""
    import os
    import signal

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "canter", "tune", "ppo", "--env", "CartPole-v1", "--trials", "4",
                             "--jobs", "2", "--out", str(out), "--max-steps", "10000000", "--eval-every", "256",
                             "--n-envs", "2", "--eval-episodes", "1", "--quiet"], start_new_session=True, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait(proc)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    err = err.decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.splitlines()[-1].startswith("interrupted;"), err[-3000:]


def test_tune_jobs_ctrl_c_prints_no_traceback(tmp_path):
    """Ctrl-C to the process group of `canter tune --jobs 2`: exit 130, one line, no worker traceback."""
    import time

    pytest.importorskip("optuna")

    def training(proc):
        time.sleep(12)  # the workers are training their first trials
        assert proc.poll() is None

    _ctrl_c_tune_jobs(tmp_path / "t", training)


def test_tune_jobs_ctrl_c_while_the_workers_start_prints_no_traceback(tmp_path):
    """Ctrl-C while the --jobs workers were still importing torch printed a KeyboardInterrupt traceback from
    each of them (a loaded host made the test above hit this too); they now start deaf to SIGINT and the
    parent ends them."""
    import os
    import time

    pytest.importorskip("optuna")
    if not Path(f"/proc/self/task/{os.getpid()}/children").exists():
        pytest.skip("needs /proc/PID/task/TID/children")

    def starting(proc):
        spawned = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(spawned.read_text().split()) < 3:  # resource tracker + 2 workers
            time.sleep(0.02)
        time.sleep(0.3)  # the workers are importing

    _ctrl_c_tune_jobs(tmp_path / "t", starting)


# -- benchmark ---------------------------------------------------------------------------------
GRID = """
seeds: 2
set: {max_steps: 512, eval_episodes: 2, eval_every: 0, checkpoint_every: 0, tensorboard: false}
envs: [CartPole-v1, MountainCar-v0]
algos:
  ppo:
    set: {n_envs: 2, n_steps: 64, n_epochs: 2}
  dqn:
    set: {learning_starts: 100, buffer_size: 5000, train_freq: 4, gradient_steps: 1, target_update_interval: 100}
"""


def test_benchmark_grid_table_figure_and_resume(tmp_path, capsys):
    spec = tmp_path / "grid.yaml"
    spec.write_text(GRID)
    out = tmp_path / "bench"
    assert main(["benchmark", str(spec), "--out", str(out), "--jobs", "2"]) == 0
    assert "[8/8]" in capsys.readouterr().out
    with open(out / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["algo"], r["env"]) for r in rows] == [
        ("ppo", "CartPole-v1"), ("ppo", "MountainCar-v0"), ("dqn", "CartPole-v1"), ("dqn", "MountainCar-v0")]
    for r in rows:
        runs = [load_run(out / "runs" / f"{r['algo']}-{r['env']}-seed{s}") for s in (0, 1)]
        finals = [run.summary["last_eval_return"] for run in runs]
        assert r["seeds"] == "2" and float(r["steps"]) == 512
        assert float(r["final_median"]) == pytest.approx(np.median(finals))
        assert float(r["final_iqm_low"]) <= float(r["final_iqm"]) <= float(r["final_iqm_high"])
        assert all(run.summary["stop_reason"] == "max_steps" for run in runs)
    for r in rows[1::2]:
        assert float(r["final_median"]) == -200.0  # 512 steps cannot solve MountainCar
    table = (out / "results.md").read_text()
    assert sum(line.startswith("| ppo") or line.startswith("| dqn") for line in table.splitlines()) == 4
    assert (out / "benchmark.png").stat().st_size > 10_000
    # a second call reuses the finished runs
    assert main(["benchmark", str(spec), "--out", str(out)]) == 0
    assert "[1/8]" not in capsys.readouterr().out
    with open(out / "results.csv") as fh:
        assert list(csv.DictReader(fh)) == rows
    # ... but not when the file now asks for something else
    spec.write_text(GRID.replace("max_steps: 512", "max_steps: 1024"))
    assert main(["benchmark", str(spec), "--out", str(out)]) == 2
    assert "different 'max_steps'" in capsys.readouterr().err
    # an unfinished cell that another live process is training into is neither deleted nor rerun
    spec.write_text(GRID)
    cell = out / "runs" / "ppo-CartPole-v1-seed0"
    (cell / "summary.json").unlink()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        (cell / ".canter.lock").write_text(json.dumps({"pid": holder.pid, "token": "theirs"}))
        assert main(["benchmark", str(spec), "--out", str(out)]) == 2
        assert f"being written by process {holder.pid}" in capsys.readouterr().err
        assert (cell / "history.parquet").exists() and not (cell / "summary.json").exists()
    finally:
        holder.kill()
        holder.wait()
    assert main(["benchmark", str(spec), "--out", str(out)]) == 0  # its process is gone: the cell runs again
    assert (cell / "summary.json").exists() and not (cell / ".canter.lock").exists()


def test_benchmark_ctrl_c_stops_it_and_writes_no_results(tmp_path, capsys):
    """Ctrl-C stops the run under way (saved as interrupted, as canter train does) and the benchmark:
    the other runs do not start and no results table is written; run again, it continues."""
    import os
    import signal

    spec = tmp_path / "b.yaml"
    spec.write_text("seeds: 2\nset: {max_steps: 10000000, max_seconds: 4, eval_every: 0, n_envs: 2, n_steps: 64, "
                    "n_epochs: 1, tensorboard: false}\nenvs: [CartPole-v1]\nalgos: [ppo]\n")
    out = tmp_path / "out"
    old = signal.signal(signal.SIGALRM, lambda signum, frame: os.kill(os.getpid(), signal.SIGINT))
    signal.setitimer(signal.ITIMER_REAL, 1.5)  # a Ctrl-C 1.5 s in: during the first run
    try:
        assert main(["benchmark", str(spec), "--out", str(out)]) == 130
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["ppo-CartPole-v1-seed0"]
    assert json.loads((out / "runs" / "ppo-CartPole-v1-seed0" / "summary.json").read_text())["stop_reason"] == \
        "interrupted"
    assert not (out / "results.md").exists() and not (out / "results.csv").exists()
    assert "run the same command again" in capsys.readouterr().err


def test_benchmark_jobs_ctrl_c_starts_no_further_run(tmp_path):
    """With --jobs, Ctrl-C (to the whole process group, as a terminal sends it) stops the running runs
    and starts no other: the pool is never handed more runs than it has workers."""
    import os
    import signal
    import time

    spec = tmp_path / "b.yaml"
    spec.write_text("seeds: 3\nset: {max_steps: 10000000, max_seconds: 40, eval_every: 0, n_envs: 2, n_steps: 64, "
                    "n_epochs: 1, tensorboard: false, target_reward: null}\nenvs: [CartPole-v1]\nalgos: [ppo]\n")
    out = tmp_path / "out"
    runs = [out / "runs" / f"ppo-CartPole-v1-seed{s}" for s in range(3)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "canter", "benchmark", str(spec), "--out", str(out), "--jobs", "2",
                             "--quiet"], start_new_session=True, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not all((r / "config.yaml").exists() for r in runs[:2]):  # both workers are training
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        time.sleep(1.0)
        started = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert time.monotonic() - started < 30  # no 40-second run started after the Ctrl-C
    assert not runs[2].exists()
    for r in runs[:2]:
        assert json.loads((r / "summary.json").read_text())["stop_reason"] == "interrupted"


def test_a_diverging_benchmark_run_is_a_result_not_the_end_of_the_benchmark(tmp_path):
    """A run the divergence guard stopped ended the whole benchmark with exit 2 (the grid's other runs never
    ran), while running the same command again reused that run as finished and wrote the table."""
    from canter.tools.benchmark import Cell, run_cell

    cell = Cell("dqn", "CartPole-v1", 0, {"lr": 1e30, "learning_starts": 32, "train_freq": 4, "buffer_size": 500,
                                          "n_envs": 1, "max_steps": 400, "eval_every": 0, "tensorboard": False})
    summary = run_cell(cell, str(tmp_path / cell.name), None)
    assert summary["stop_reason"] == "diverged" and "training diverged at step" in summary["diverged"]


def test_benchmark_jobs_worker_errors_reach_the_parent_as_they_are():
    """A --jobs worker's error is pickled to the parent: TrainingDiverged (a run diverging) and MissingExtraError
    could not be unpickled (their __init__ takes more than the message), so the parent got BrokenProcessPool
    and a traceback (exit 1) instead of the one-line error that --jobs 1 gives."""
    import pickle

    from canter.errors import MissingExtraError
    from canter.trainers.guard import TrainingDiverged

    for err in (TrainingDiverged("training diverged at step 80: non-finite loss", "loss", 80),
                MissingExtraError("--record-every", "video", "moviepy")):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err) and vars(back) == vars(err)


def test_benchmark_bad_spec_is_refused_before_running(tmp_path, capsys):
    spec = tmp_path / "bad.yaml"
    for text, message in [("algos: [ppo, dqnn]\nenvs: [CartPole-v1]", "did you mean 'dqn'"),
                          ("algos: [dqn]\nenvs: [Pendulum-v1]", "Discrete action space"),
                          ("algos: [ppo]\nenvs: [CartPole-v1]\nseed: 3", "did you mean 'seeds'"),
                          ("algos: [ppo]\nenvs: [CartPole-v1]\nset: {lrr: 0.1}", "did you mean 'lr'"),
                          # these three were TypeError tracebacks (exit 1): env / algo reached resolve_config twice
                          ("algos: [ppo]\nenvs: [CartPole-v1]\nset: {env: Acrobot-v1}", "'env' cannot be set here"),
                          ("algos: {ppo: {set: {algo: dqn}}}\nenvs: [CartPole-v1]", "'algo' cannot be set here"),
                          ("algos: [ppo]\nenvs: [CartPole-v1]\nset: {hparams: 5}", "'hparams' must be a mapping"),
                          ("algos: [ppo]", "no envs")]:
        spec.write_text(text)
        assert main(["benchmark", str(spec), "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_benchmark_refuses_a_hyperparameter_given_twice_in_one_set(tmp_path):
    """set: {lr: 0.1, hparams: {lr: 0.2}} ran every cell with lr 0.2 (the last spelling), dropping 0.1 silently."""
    from canter.tools.benchmark import load_spec

    spec = tmp_path / "b.yaml"
    spec.write_text("algos: [ppo]\nenvs: [CartPole-v1]\nset: {lr: 0.1, hparams: {lr: 0.2}}\n")
    with pytest.raises(CanterError, match=r"set: 'lr' and 'hparams: \{lr: ...\}' both set 'lr'; give it once"):
        load_spec(spec)
    spec.write_text("algos: {ppo: {set: {hparams.gamma: 0.9, gamma: 0.8}}}\nenvs: [CartPole-v1]\n")
    with pytest.raises(CanterError, match="'hparams.gamma' and 'gamma' both set 'gamma'"):
        load_spec(spec)
    spec.write_text("algos: {ppo: {set: {lr: 0.2}}}\nenvs: [CartPole-v1]\nset: {lr: 0.1}\n")  # layers override
    assert load_spec(spec)[0].overrides == {"lr": 0.2}


@pytest.mark.parametrize("name, content", [("summary.json", b"[1, 2]"), ("summary.json", b"\xff\xfe"),
                                           ("summary.json", b"{\"stop_reason\": "), ("config.yaml", b"- a\n- b\n"),
                                           ("config.yaml", b"algo: ppo\nenv: [CartPole\n")],
                         ids=["summary-list", "summary-binary", "summary-bad-json", "config-list", "config-bad-yaml"])
def test_benchmark_refuses_a_damaged_run_file_and_keeps_the_run(tmp_path, capsys, name, content):
    """A damaged summary.json of a grid run: a list or non-UTF-8 bytes were an AttributeError /
    UnicodeDecodeError traceback; bad JSON counted as unfinished, so the run directory was deleted and rerun.
    A finished run's damaged config.yaml (checked against the file) was an AttributeError / YAMLError traceback."""
    spec = tmp_path / "b.yaml"
    spec.write_text("seeds: 1\nalgos: [ppo]\nenvs: [CartPole-v1]\nset: {max_steps: 64}\n")
    run = tmp_path / "out" / "runs" / "ppo-CartPole-v1-seed0"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({"stop_reason": "max_steps"}))
    (run / name).write_bytes(content)
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    assert main(["benchmark", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert name in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


def test_shipped_classic_benchmark_is_valid():
    from pathlib import Path

    from canter.registry import lookup, names
    from canter.tools.benchmark import check_cells, load_spec

    cells = load_spec(Path(__file__).parent.parent / "benchmarks" / "classic.yaml")
    check_cells(cells)
    # every algorithm that learns from a classic-control env is covered (offline ones need a dataset,
    # which a shipped spec cannot assume; multi-agent ones, QMIX and MAPPO, need a multi-agent env)
    online = {n for n in names("algorithm") if lookup("algorithm", n).family != "offline"
              and not lookup("algorithm", n).multiagent_only}
    assert {c.algo for c in cells} == online


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


def test_tune_an_error_caused_by_ctrl_c_in_a_trial_stops_the_study(tmp_path, capsys, monkeypatch):
    """Every exception of a trial fails only that trial, but one raised while a Ctrl-C was handled (the
    KeyboardInterrupt in its chain) is the Ctrl-C: the study went on with its next trial."""
    pytest.importorskip("optuna")

    def interrupted(*args, **kwargs):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("a vector env worker died") from exc

    monkeypatch.setattr("canter.api.make_trainer", interrupted)
    args = ["tune", "ppo", "--env", "CartPole-v1", "--out", str(tmp_path / "t"), "--trials", "2", "--quiet"]
    assert main(args) == 130
    assert capsys.readouterr().err.splitlines()[-1].startswith("interrupted;")


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
    assert sorted(p.name for p in (tmp_path / name).iterdir()) == ["best.yaml", "study.db"]


def test_tune_ctrl_c_inside_a_trials_final_storage_commit_exits_130(tmp_path, capsys, monkeypatch):
    """Ctrl-C that lands in the storage commit of a trial's result (seen with `canter tune` + Ctrl-C):
    Optuna's bookkeeping then raises UnboundLocalError from the KeyboardInterrupt, and the single-process
    tune printed that traceback and exited 1 instead of 130 with its one line."""
    optuna = pytest.importorskip("optuna")
    real = optuna.storages.RDBStorage.set_trial_state_values

    def interrupted(self, *args, **kwargs):
        real(self, *args, **kwargs)
        raise KeyboardInterrupt  # the signal arrives while the commit runs

    monkeypatch.setattr(optuna.storages.RDBStorage, "set_trial_state_values", interrupted)
    monkeypatch.setattr("canter.tools.tune._objective", lambda job, space: lambda trial: 1.0)  # no training
    args = ["tune", "ppo", "--env", "CartPole-v1", "--out", str(tmp_path / "t"), "--trials", "2", "--quiet"]
    assert main(args) == 130
    assert capsys.readouterr().err.splitlines()[-1].startswith("interrupted;")


def test_tune_best_yaml_is_the_best_trials_own_config_after_a_resume(tmp_path, capsys):
    """best.yaml is the config the best trial trained with, also when the study was resumed with other
    flags (here --max-steps): training it gives the trial's value again."""
    optuna = pytest.importorskip("optuna")
    space = tmp_path / "space.yaml"
    space.write_text("".join(f"{k}: null\n" for k in ("n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda",
                                                       "clip_range", "ent_coef", "vf_coef", "max_grad_norm")))
    out = tmp_path / "t"
    base = ["tune", "ppo", "--env", "CartPole-v1", "--space", str(space), "--n-envs", "2", "--set", "n_steps=64",
            "--eval-every", "256", "--eval-episodes", "2", "--out", str(out), "--no-prune", "--quiet"]
    assert main([*base, "--max-steps", "1024", "--trials", "1"]) == 0
    assert main([*base, "--max-steps", "256", "--trials", "2"]) == 0
    study = optuna.load_study(study_name="ppo-CartPole-v1", storage=f"sqlite:///{out / 'study.db'}")
    best = study.best_trial
    assert best.number == 0  # the longer-trained trial (deterministic with the default seeds)
    config = yaml.safe_load((out / "best.yaml").read_text())
    assert config["max_steps"] == 1024 and config["hparams"]["lr"] == best.params["lr"]
    run = tmp_path / "run"
    assert main(["train", "ppo", "-f", str(out / "best.yaml"), "--run-dir", str(run), "--quiet"]) == 0
    assert json.loads((run / "summary.json").read_text())["last_eval_return"] == best.value
    capsys.readouterr()


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


def test_video_recording_writes_frames_as_they_come(tmp_path, monkeypatch):
    """play --video-dir / --record-every went through gymnasium's RecordVideo, which keeps every frame of
    the episode in a list until it ends (an Atari episode of 27,000 steps: ~2.7 GB); the recorder now
    writes each frame to the MP4 at once and holds none, and the video still has every frame."""
    pytest.importorskip("moviepy")
    import gymnasium as gym
    import imageio

    from canter.play import play

    held = []
    step = gym.wrappers.RecordVideo.step

    def spy(self, action):
        out = step(self, action)
        held.append(len(self.recorded_frames))
        return out

    monkeypatch.setattr(gym.wrappers.RecordVideo, "step", spy)

    class Upright:  # keeps the pole up: the episode lasts until the time limit
        def predict(self, obs):
            return np.array([int(obs[0, 2] + 0.5 * obs[0, 3] > 0)])

    assert play(Upright(), "CartPole-v1", 1, video_dir=str(tmp_path), env_kwargs={"max_episode_steps": 20}) == [20.0]
    assert len(held) == 20 and max(held) == 0  # RecordVideo: 2, 3, ..., 21 frames held
    reader = imageio.get_reader(str(tmp_path / "play-episode-0.mp4"))
    assert reader.get_meta_data()["fps"] == 50 and sum(1 for _ in reader) == 21  # the reset's frame and 20 steps


def test_video_appears_under_its_name_only_when_finished(tmp_path):
    """A play killed mid-episode (SIGKILL) left a truncated play-episode-0.mp4, which the rerun's --video-dir
    check then refused; the frames now go to a hidden .partial.mp4 renamed when the video is closed, and a
    partial file a killed process left is overwritten."""
    pytest.importorskip("moviepy")
    import imageio

    from canter.play import play

    (tmp_path / ".play-episode-0.partial.mp4").write_bytes(b"truncated")  # what a killed play leaves
    seen = []

    class Upright:
        def predict(self, obs):
            seen.append(sorted(p.name for p in tmp_path.iterdir()))
            return np.array([int(obs[0, 2] + 0.5 * obs[0, 3] > 0)])

    assert play(Upright(), "CartPole-v1", 1, video_dir=str(tmp_path), env_kwargs={"max_episode_steps": 5}) == [5.0]
    assert seen[-1] == [".play-episode-0.partial.mp4"]  # while recording: no play-episode-0.mp4 to refuse
    assert sorted(p.name for p in tmp_path.iterdir()) == ["play-episode-0.mp4"]
    assert sum(1 for _ in imageio.get_reader(str(tmp_path / "play-episode-0.mp4"))) == 6


def test_record_every_removes_the_folder_of_a_killed_recording(tmp_path):
    """--record-every records into videos/.rec-*/ and moves the file out; a process killed meanwhile left that
    folder for good. The next start of the run's recorder removes it (and nothing else)."""
    pytest.importorskip("moviepy")
    from types import SimpleNamespace

    from canter.tools.video import VideoRecorder

    stale = tmp_path / "videos" / ".rec-abc123" / "video"
    stale.mkdir(parents=True)
    (stale / "play-episode-0.mp4").write_bytes(b"half")
    (tmp_path / "videos" / "step-000000100.mp4").write_bytes(b"kept")
    VideoRecorder(tmp_path, "CartPole-v1", 100).start(SimpleNamespace(agent=None))
    assert sorted(p.name for p in (tmp_path / "videos").iterdir()) == ["step-000000100.mp4"]


def test_multiagent_video_writes_frames_as_they_come(tmp_path, monkeypatch):
    """play --video-dir on a PettingZoo env kept every frame of the episode in a list and saved it at the end
    (17 frames alive at the second episode's last render); frames are now written as they come."""
    pytest.importorskip("moviepy")
    import weakref

    import imageio

    import tests.match_agents as match_agents
    from canter.play import play

    alive, most = [], []
    render = match_agents.MatchAgents.render

    def spy(self):
        frame = render(self)
        most.append(sum(ref() is not None for ref in alive))  # earlier frames still in memory
        alive.append(weakref.ref(frame))
        return frame

    monkeypatch.setattr(match_agents.MatchAgents, "render", spy)

    class Match:
        def predict(self, obs):
            return np.asarray(obs).argmax(-1)

    assert play(Match(), "pettingzoo:tests.match_agents", 2, video_dir=str(tmp_path)) == [8.0, 8.0]
    assert max(most) <= 1
    for i in range(2):  # the reset's frame and one per step, at the env's fps (30 without render_fps)
        reader = imageio.get_reader(str(tmp_path / f"play-episode-{i}.mp4"))
        assert reader.get_meta_data()["fps"] == 30 and sum(1 for _ in reader) == 9


class _GrayRamp:
    """A 39-step env whose frame ``t`` is solid gray ``6 * t`` at 15 fps (Atari's video fps)."""

    @staticmethod
    def make(render_mode: str | None = None):
        import gymnasium as gym

        class GrayRamp(gym.Env):
            metadata = {"render_modes": ["rgb_array"], "render_fps": 15}
            observation_space = gym.spaces.Box(0.0, 39.0, (1,), np.float32)
            action_space = gym.spaces.Discrete(2)

            def __init__(self):
                self.render_mode, self.t = render_mode, 0

            def reset(self, *, seed=None, options=None):
                super().reset(seed=seed)
                self.t = 0
                return np.zeros(1, np.float32), {}

            def step(self, action):
                self.t += 1
                return np.full(1, self.t, np.float32), 0.0, self.t == 39, False, {}

            def render(self):
                return np.full((32, 32, 3), 6 * self.t, np.uint8)

        return GrayRamp()


def test_video_has_every_frame_once_in_order(tmp_path):
    """gymnasium's RecordVideo encoded through moviepy's ImageSequenceClip, which samples the frame list at
    t * fps, which at 15 fps (Atari) duplicated and skipped frames (40 frames: ..., 34, 35, 35, 36, 38, 39)
    and at some lengths dropped the last one (13 frames: 12); every frame is now written once, in order."""
    pytest.importorskip("moviepy")
    import gymnasium as gym
    import imageio

    from canter.play import play

    if "CanterGrayRamp-v0" not in gym.registry:
        gym.register("CanterGrayRamp-v0", entry_point=_GrayRamp.make, disable_env_checker=True)

    class Zero:
        def predict(self, obs):
            return np.zeros(1, np.int64)

    play(Zero(), "CanterGrayRamp-v0", 1, video_dir=str(tmp_path))
    reader = imageio.get_reader(str(tmp_path / "play-episode-0.mp4"))
    grays = [round(float(frame.mean()) / 6) for frame in reader]
    assert reader.get_meta_data()["fps"] == 15 and grays == list(range(40))
