"""A curve's points that no line segment draws (one logged update, a value between NaNs) are marked: the report's
update-statistics and throughput panels of a run with one update were empty frames."""

from __future__ import annotations

import numpy as np

from canter.tools import report
from canter.tools.rundata import RunData


def _shown(line) -> bool:
    """Whether a Line2D puts anything on the canvas: a segment between two finite points, or a marker."""
    y = np.asarray(line.get_ydata(), dtype=np.float64)
    finite = np.isfinite(y)
    marked = line.get_marker() not in ("None", None, "", " ") and line.get_markevery() != []
    return bool((finite[1:] & finite[:-1]).any()) or (marked and bool(finite.any()))


def _figures(monkeypatch):
    figures = []
    monkeypatch.setattr(report, "_img", lambda fig, alt: figures.append(fig) or "")
    return figures


def test_lone_markers_marks_only_points_no_segment_draws():
    from canter.tools.plot import lone_markers

    nan = float("nan")
    assert lone_markers(np.array([1.0]))["markevery"] == [0]
    assert lone_markers(np.array([1.0, nan, 2.0, 3.0, nan, 4.0]))["markevery"] == [0, 5]
    assert lone_markers(np.array([1.0, 2.0])) == {}
    assert lone_markers(np.array([nan, nan])) == {}


def test_report_panels_of_a_run_with_one_update_show_it(tmp_path, monkeypatch):
    """A run of one logged update (a multi-agent PPO run of one iteration): each of its panels drew a line of one
    point, which matplotlib shows as nothing."""
    figures = _figures(monkeypatch)
    updates = {"step": np.array([2048.0]), "wall_time": np.array([1.0]), "steps_per_second": np.array([2000.0]),
               "value_loss": np.array([0.5]), "entropy": np.array([0.7])}
    history = {"step": np.array([2048.0]), "wall_time": np.array([1.0]), "episode_return": np.array([3.0]),
               "rolling_return": np.array([3.0])}
    run = RunData(tmp_path, {"algo": "ppo", "env": "CartPole-v1"}, {"steps": 2048, "wall_seconds": 1.0},
                  history=history, updates=updates)
    report.update_stats(run)
    report.throughput(run)
    report.learning_curve(run)
    stats, speed, curve = figures
    assert len(stats.axes) == 2 and all(_shown(ax.lines[0]) for ax in stats.axes)
    assert _shown(speed.axes[0].lines[0])
    assert all(_shown(line) for line in curve.axes[0].lines)


def test_plot_marks_the_values_of_a_curve_between_nan_stretches(tmp_path):
    """canter plot of a run whose rolling return was NaN between two finite stretches (a NaN reward): the grid
    points next to the NaNs interpolate to NaN, so a finite one left between them, or at an end, was a line of no
    length: the plot had axes scaled to the data and nothing on them."""
    from canter.tools.plot import draw_groups, group_runs, new_figure

    nan = float("nan")
    steps = np.array([10.0, 20.0, 30.0, 40.0])
    rolling = np.array([5.0, nan, nan, 6.0])
    history = {"step": steps, "wall_time": steps / 100, "episode_return": rolling, "rolling_return": rolling}
    ax = new_figure(400, 300).add_subplot()
    draw_groups(ax, group_runs([RunData(tmp_path, {"algo": "ppo", "env": "CartPole-v1"}, {}, history)]))
    assert _shown(ax.lines[0])


def test_plot_of_runs_whose_every_return_is_nan_says_so(tmp_path):
    """A run whose rolling returns are all NaN (a NaN reward from its first episode) was plotted as empty axes
    centred on 0 (not even its steps), with exit code 0."""
    import pytest

    from canter.errors import CanterError
    from canter.logging.history import HISTORY_COLUMNS, write_parquet
    from canter.tools.plot import plot_runs

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("algo: ppo\nenv: CartPole-v1\n")
    nan = float("nan")
    write_parquet(run / "history.parquet", [
        {"step": s, "wall_time": s / 100, "episode_return": nan, "episode_length": 10, "rolling_return": nan}
        for s in (10, 20)], HISTORY_COLUMNS)
    with pytest.raises(CanterError, match="every return of the runs is NaN"):
        plot_runs([run], out=tmp_path / "curves.png")
    assert not (tmp_path / "curves.png").exists()


def test_report_marks_a_lone_evaluation_of_more_than_its_error_bars_show(tmp_path, monkeypatch):
    """Over MAX_MARKERS evaluations the report draws their mean as a line in a band: a finite mean between NaN ones
    (a diverged policy's evaluations) was a line of no length there, and its zero-width band nothing either."""
    figures = _figures(monkeypatch)
    n = report.MAX_MARKERS + 100
    mean = np.full(n, np.nan)
    mean[:100], mean[150] = 5.0, 7.0
    evaluations = {"step": np.arange(1.0, n + 1) * 1000, "mean_return": mean, "std_return": np.ones(n)}
    report.learning_curve(RunData(tmp_path, {"algo": "ppo", "env": "CartPole-v1"}, {}, evaluations=evaluations))
    (line,) = figures[0].axes[0].lines
    assert 7.0 in line.get_ydata() and line.get_markevery() == [int(np.flatnonzero(line.get_ydata() == 7.0)[0])]


def test_plot_keeps_a_finite_stretch_narrower_than_its_grid_between_nan_ones(tmp_path):
    """A rolling return finite at one step between two NaN stretches (two NaN rewards reward_window episodes apart)
    fell between grid points whose interpolations all took a NaN neighbour: the run plotted as empty axes."""
    from canter.tools.plot import draw_groups, group_runs, mean_band, new_figure

    nan = float("nan")
    steps = np.array([10.0, 20.0, 30.0])
    rolling = np.array([nan, 5.0, nan])
    history = {"step": steps, "wall_time": steps / 100, "episode_return": rolling, "rolling_return": rolling}
    ax = new_figure(400, 300).add_subplot()
    draw_groups(ax, group_runs([RunData(tmp_path, {"algo": "ppo", "env": "CartPole-v1"}, {}, history)]))
    assert _shown(ax.lines[0]) and 5.0 in ax.lines[0].get_ydata()
    xs = np.arange(1.0, 1001.0)  # three finite steps in a thousand: between two points of the 200-point grid
    ys = np.full(1000, nan)
    ys[400:403] = [3.0, 4.0, 5.0]
    grid, mean, _ = mean_band([(xs, ys)])
    shown = np.isfinite(mean)
    assert grid[shown][[0, -1]].tolist() == [401.0, 403.0] and mean[shown][[0, -1]].tolist() == [3.0, 5.0]
