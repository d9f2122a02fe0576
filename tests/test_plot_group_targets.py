"""canter plot with several groups: each group's target line in its group's colour (all were the same grey dashes,
so which target was whose could not be told)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.colors import to_rgba

from canter.tools.plot import draw_groups, group_runs, new_figure
from canter.tools.rundata import RunData


def _run(name, steps, returns, target=None, algo="ppo"):
    steps, returns = np.asarray(steps, float), np.asarray(returns, float)
    history = {"step": steps, "wall_time": steps / 100, "episode_return": returns, "rolling_return": returns}
    return RunData(Path(name), {"algo": algo, "env": "CartPole-v1", "target_reward": target}, {}, history)


def _lines(runs):
    ax = new_figure(800, 500).add_subplot()
    draw_groups(ax, group_runs(runs))
    return {line.get_label(): line for line in ax.lines}


def test_each_groups_target_line_has_its_groups_colour_and_name():
    lines = _lines([_run("a", [10, 500, 3000], [10, 100, 300], 475),
                    _run("b", [10, 500, 3000], [10, 50, 100], 200, algo="a2c")])
    for target, group in ((475, "ppo CartPole-v1"), (200, "a2c CartPole-v1")):
        line = lines[f"target {target} ({group})"]
        assert to_rgba(line.get_color()) == to_rgba(lines[group].get_color())
        assert line.get_linestyle() == "--"
    assert to_rgba(lines["target 475 (ppo CartPole-v1)"].get_color()) != to_rgba(
        lines["target 200 (a2c CartPole-v1)"].get_color())


def test_a_target_every_group_shares_is_one_grey_line_and_one_groups_is_unnamed():
    lines = _lines([_run("a", [10, 3000], [10, 300], 475), _run("b", [10, 3000], [10, 100], 475, algo="a2c")])
    assert to_rgba(lines["target 475"].get_color()) == to_rgba("0.35")
    lines = _lines([_run("a", [10, 3000], [10, 300], 475)])
    assert to_rgba(lines["target 475"].get_color()) == to_rgba(lines["ppo CartPole-v1"].get_color())


def test_a_target_some_groups_share_names_them():
    lines = _lines([_run("a", [10, 3000], [10, 300], 475), _run("b", [10, 3000], [10, 100], 475, algo="a2c"),
                    _run("c", [10, 3000], [10, 50], 100, algo="dqn")])
    assert "target 475 (ppo CartPole-v1, a2c CartPole-v1)" in lines
    assert to_rgba(lines["target 100 (dqn CartPole-v1)"].get_color()) == to_rgba(lines["dqn CartPole-v1"].get_color())
