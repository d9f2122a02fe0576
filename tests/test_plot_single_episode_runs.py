"""canter plot: a run of one episode at the grid's first point no longer starts its group's mean line with a jump
from its value to the others' mean (it counted there only, and in the legend's n)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from canter.tools.plot import draw_groups, group_runs, mean_band, new_figure, run_curve, runs_in_band
from canter.tools.rundata import RunData


def _run(name, steps, returns):
    steps, returns = np.asarray(steps, float), np.asarray(returns, float)
    history = {"step": steps, "wall_time": steps / 100, "episode_return": returns, "rolling_return": returns}
    return RunData(Path(name), {"algo": "ppo", "env": "CartPole-v1", "target_reward": None}, {}, history)


def _labels(runs):
    ax = new_figure(800, 500).add_subplot()
    draw_groups(ax, group_runs(runs))
    return [line.get_label() for line in ax.lines]


def test_a_single_episode_run_at_the_first_grid_point_does_not_make_a_jump():
    """Its one point was the grid's first: the mean started at (200 + 20) / 2 = 110, then fell to 20, and the
    legend said n=2 for a line that held one run everywhere else."""
    one = _run("one", [10], [200])
    long = _run("long", np.linspace(10, 1000, 50), np.full(50, 20.0))
    grid, mean, _ = mean_band([run_curve(one), run_curve(long)])
    np.testing.assert_allclose(mean, 20.0)
    assert grid[0] == 10 and grid[-1] == 1000
    assert runs_in_band([run_curve(one), run_curve(long)]) == 1
    assert _labels([one, long]) == ["ppo CartPole-v1"]  # not '(n=2)'


def test_single_episode_runs_alone_still_draw_and_a_held_one_counts():
    ones = [_run("x", [10], [200]), _run("y", [10], [100])]
    grid, mean, _ = mean_band([run_curve(r) for r in ones])
    np.testing.assert_allclose(mean, [150.0])
    long = _run("long", np.linspace(10, 1000, 50), np.full(50, 20.0))
    grid, mean, _ = mean_band([run_curve(ones[0]), run_curve(long)], hold=[True, False])  # it reached its target
    np.testing.assert_allclose(mean, 110.0)
