"""canter plot of runs of several policies (policies: type | agent): one curve per policy, its legend naming the
policy, seeds of one config as a mean and band per policy, ``--policy NAME`` to choose some (it drew one curve of
every policy's episodes mixed, the history's ``rolling_return``)."""
from __future__ import annotations

import numpy as np
import pytest

import canter.tools.plot as plot
from canter.logging.history import HISTORY_COLUMNS, write_parquet
from support import assert_one_line_error, run_cli_paths

ENV = "pettingzoo:tests.mixed_agents"
#: each policy's episode returns, in the order they end (two per step: a's, then b's)
RETURNS = {"speaker": [1.0, 2.0, 3.0, 4.0, 5.0], "listener": [10.0, 20.0, 30.0, 40.0, 50.0]}


def _run(root, name, returns=RETURNS, shift=0.0, policies=True):
    """A run directory of several policies (or one, ``policies=False``) whose history holds ``returns``."""
    run = root / name
    run.mkdir()
    (run / "config.yaml").write_text(f"algo: ppo\nenv: '{ENV}'\nreward_window: 2\npolicies: type\n")
    rows, everything = [], []
    for i in range(len(next(iter(returns.values())))):
        for policy, values in returns.items():
            everything.append(values[i] + shift)
            rows.append({"step": 10 * (i + 1), "wall_time": i + 1.0, "episode_return": values[i] + shift,
                         "episode_length": 8, "rolling_return": float(np.mean(everything[-2:])),
                         **({"agent": f"{policy}_0", "policy": policy} if policies else {})})
    write_parquet(run / "history.parquet", rows, HISTORY_COLUMNS + (("agent", "policy") if policies else ()))
    return run


@pytest.fixture
def figures(monkeypatch):
    """The figures plot_runs draws (not written)."""
    drawn = []
    monkeypatch.setattr(plot, "save_figure_atomic", lambda fig, path, *a, **k: drawn.append(fig) or path)
    return drawn


def _lines(fig):
    return {line.get_label(): line for line in fig.axes[0].lines}


def _window2(values):
    return [float(np.mean(values[max(0, i - 1):i + 1])) for i in range(len(values))]


def test_a_multi_policy_run_is_one_curve_per_policy(tmp_path, figures):
    plot.plot_runs([_run(tmp_path, "a")], out=tmp_path / "c.png")
    lines = _lines(figures[0])
    assert set(lines) == {f"ppo {ENV} / speaker", f"ppo {ENV} / listener"}
    for policy, values in RETURNS.items():  # its own episodes' rolling mean over reward_window (2), per step
        line = lines[f"ppo {ENV} / {policy}"]
        y = np.interp([10, 20, 30, 40, 50], line.get_xdata(), line.get_ydata())  # the grid's 200 points hold 10, 50
        assert np.allclose(y, _window2(values), atol=0.05 * values[-1]) and np.allclose(y[[0, -1]], _window2(values)[::4])


def test_seeds_of_a_multi_policy_config_are_a_mean_and_band_per_policy(tmp_path, figures):
    plot.plot_runs([_run(tmp_path, "a"), _run(tmp_path, "b", shift=2.0)], out=tmp_path / "c.png")
    lines = _lines(figures[0])
    assert set(lines) == {f"ppo {ENV} / speaker (n=2)", f"ppo {ENV} / listener (n=2)"}
    line = lines[f"ppo {ENV} / speaker (n=2)"]
    assert np.allclose(line.get_ydata()[[0, -1]], [2.0, 5.5])  # speaker's rolling means 1, 4.5 and 3, 6.5
    assert len(figures[0].axes[0].collections) == 2  # a band each


def test_policy_chooses_the_curves(tmp_path, capsys, figures):
    run = _run(tmp_path, "a")
    code, out, err = run_cli_paths(capsys, "plot", run, "--policy", "listener", "--out", tmp_path / "c.png")
    assert code == 0, err
    assert list(_lines(figures[0])) == [f"ppo {ENV} / listener"]
    code, out, err = run_cli_paths(capsys, "plot", run, "--policy", "listener", "--policy", "speaker",
                                   "--out", tmp_path / "c.png")
    assert code == 0 and set(_lines(figures[1])) == {f"ppo {ENV} / listener", f"ppo {ENV} / speaker"}


def test_an_unknown_policy_is_refused_naming_the_closest(tmp_path, capsys):
    run = _run(tmp_path, "a")
    code, _, err = run_cli_paths(capsys, "plot", run, "--policy", "speakr", "--out", tmp_path / "c.png")
    assert_one_line_error(code, err, "unknown policy 'speakr'", "did you mean 'speaker'")
    assert not (tmp_path / "c.png").exists()


def test_policy_of_runs_of_one_policy_is_refused(tmp_path, capsys):
    run = _run(tmp_path, "a", policies=False)
    code, _, err = run_cli_paths(capsys, "plot", run, "--policy", "speaker", "--out", tmp_path / "c.png")
    assert_one_line_error(code, err, "--policy", "several policies", str(run))
    assert not (tmp_path / "c.png").exists()


def test_a_single_policy_run_is_drawn_as_before(tmp_path, figures):
    """No policy column: the history's rolling_return, under the group's label alone."""
    run = _run(tmp_path, "a", policies=False)
    plot.plot_runs([run], out=tmp_path / "c.png")
    (line,) = figures[0].axes[0].lines
    assert line.get_label() == f"ppo {ENV}"
    assert np.allclose(line.get_ydata()[[0, -1]], [5.5, 27.5])  # the mixed rolling mean of the last row per step


def test_the_reports_learning_curve_has_each_policys_rolling_mean(tmp_path, monkeypatch):
    """The report's rolling mean is canter plot's curve: one line per policy (it was every policy's episodes mixed)."""
    import canter.tools.report as report
    from canter.tools.rundata import load_run

    figures = []
    monkeypatch.setattr(report, "_img", lambda fig, alt: figures.append(fig) or "")
    report.learning_curve(load_run(_run(tmp_path, "a")))
    lines = _lines(figures[0])
    assert set(lines) == {"speaker: rolling mean (2 episodes)", "listener: rolling mean (2 episodes)"}
    assert np.allclose(lines["listener: rolling mean (2 episodes)"].get_ydata(), _window2(RETURNS["listener"]))
    report.learning_curve(load_run(_run(tmp_path, "b", policies=False)))  # one policy: as before
    assert list(_lines(figures[1])) == ["rolling mean (2 episodes)"]


def test_the_reports_policy_lines_are_not_in_the_evaluations_colour(tmp_path, monkeypatch):
    """Four policies (simple_tag's agents, policies: agent): the fourth line took matplotlib's fourth colour, the
    evaluations' red, and read as the evaluation mean."""
    import canter.tools.report as report
    from matplotlib.colors import to_hex

    from canter.logging.history import EVALUATION_WRITTEN
    from canter.tools.rundata import load_run

    returns = {f"agent_{i}": [1.0 + i, 2.0 + i, 3.0 + i] for i in range(9)}
    run = _run(tmp_path, "a", returns=returns)
    write_parquet(run / "evaluations.parquet", [{"step": 30, "wall_time": 3.0, "mean_return": 5.0, "std_return": 1.0,
                                                 "episodes": 9, "deterministic": True}], EVALUATION_WRITTEN)
    figures = []
    monkeypatch.setattr(report, "_img", lambda fig, alt: figures.append(fig) or "")
    report.learning_curve(load_run(run))
    ax = figures[0].axes[0]
    (evaluation,) = ax.containers
    colours = {line.get_label(): to_hex(line.get_color()) for line in ax.lines if "rolling mean" in line.get_label()}
    assert len(colours) == 9 and to_hex(evaluation.lines[0].get_color()) not in colours.values()
    assert len(set(list(colours.values())[:8])) == 8  # distinct while there are colours enough


def test_the_benchmark_figure_draws_a_curve_per_policy(tmp_path, monkeypatch):
    """A benchmark of runs of several policies (its spec's ``set: {policies: type}``): its figure drew the mixed
    rolling mean that canter plot no longer draws; each policy is a curve, in a colour of its own."""
    import canter.tools.bench_results as bench_results
    from canter.tools.rundata import load_run

    figures = []
    monkeypatch.setattr(plot, "save_figure_atomic", lambda fig, path, *a, **k: figures.append(fig) or path)
    runs = [load_run(_run(tmp_path, "a")), load_run(_run(tmp_path, "b", shift=2.0))]
    bench_results.save_figure(runs, tmp_path / "benchmark.png")
    lines = _lines(figures[0])
    assert set(lines) == {"ppo / speaker (n=2)", "ppo / listener (n=2)"}
    assert np.allclose(lines["ppo / speaker (n=2)"].get_ydata()[[0, -1]], [2.0, 5.5])
    assert lines["ppo / speaker (n=2)"].get_color() != lines["ppo / listener (n=2)"].get_color()
