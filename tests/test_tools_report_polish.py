"""Small readability fixes of canter report and canter plot: a throughput card without cents, a target far off
the data listed instead of flattening the curves."""

from __future__ import annotations

import numpy as np

from canter.tools.plot import draw_groups, group_runs, new_figure
from canter.tools.report import _cards
from canter.tools.rundata import RunData


def _run(path, target):
    steps = np.array([10.0, 500.0, 3000.0])
    history = {"step": steps, "wall_time": steps / 100, "episode_return": steps / 10, "rolling_return": steps / 10}
    return RunData(path, {"algo": "ppo", "env": "CartPole-v1", "target_reward": target}, {}, history)


def test_the_steps_per_second_card_is_a_whole_number(tmp_path):
    """It was '12,299.05'."""
    summary = {"steps": 1_229_905, "wall_seconds": 100.0, "stop_reason": "max_steps"}
    cards = _cards(RunData(tmp_path, {"algo": "ppo", "env": "CartPole-v1"}, summary))
    assert '<b class="">12,299</b><span>steps / s</span>' in cards
    slow = _cards(RunData(tmp_path, {"algo": "ppo", "env": "CartPole-v1"}, {**summary, "steps": 1234}))
    assert '<b class="">12.3</b><span>steps / s</span>' in slow


def test_a_target_far_above_the_data_does_not_flatten_the_curves(tmp_path):
    """A target line at 1e9 over returns up to 300 stretched the y-axis to 1e9: the curves lay flat on the floor."""
    ax = new_figure(400, 300).add_subplot()
    draw_groups(ax, group_runs([_run(tmp_path, 1e9)]))
    assert ax.get_ylim()[1] < 1000
    assert "target 1e+09 (above the axis)" in ax.get_legend_handles_labels()[1]


def test_a_target_near_the_data_is_drawn(tmp_path):
    ax = new_figure(400, 300).add_subplot()
    draw_groups(ax, group_runs([_run(tmp_path, 475)]))
    assert "target 475" in ax.get_legend_handles_labels()[1]
    assert ax.get_ylim()[1] >= 475


def test_report_evaluates_the_checkpoint_its_caption_names(tmp_path, monkeypatch):
    """The return distribution's caption named the checkpoint found first ('last', of a run still training) while
    the agent was loaded from the run directory again, after the run could have saved its first 'best': the
    histogram was of 'best' under a caption saying 'last'. The checkpoint is looked up once, as canter eval does."""
    import types

    import canter.api
    import canter.trainers.evaluation
    from canter.tools import report

    last = tmp_path / "checkpoints" / "last"
    monkeypatch.setattr(canter.api, "find_checkpoint", lambda d: last)  # the run saves 'best' right after this
    loaded = []
    monkeypatch.setattr(canter.api, "load", lambda d: loaded.append(d) or types.SimpleNamespace())
    monkeypatch.setattr(canter.trainers.evaluation, "evaluate_agent",
                        lambda *a, **k: types.SimpleNamespace(returns=[1.0, 2.0]))
    caption = report.eval_distribution(types.SimpleNamespace(dir=tmp_path, target_reward=None), 2)[1]
    assert "of checkpoint 'last'" in caption
    assert loaded == [last]


def test_report_out_named_only_html_says_the_file_name_is_missing(tmp_path):
    """``--out .html`` (a hidden file's name, no suffix) said "must be an .html file, e.g. .html.html"."""
    import pytest

    from canter.errors import CanterError
    from canter.tools.report import check_out

    with pytest.raises(CanterError, match=r"--out '.html' has no file name before '.html'; give one, e.g. report.html"):
        check_out(".html", tmp_path / "report.html")
    with pytest.raises(CanterError, match=r"must be an .html file, e.g. notes.html"):
        check_out("notes", tmp_path / "report.html")


def test_report_out_example_never_appends_html_to_a_hidden_name_or_a_trailing_dot(tmp_path):
    """``--out .htm`` suggested '.htm.html' and ``--out notes.`` 'notes..html' (the fault fixed for ``.html``)."""
    import pytest

    from canter.errors import CanterError
    from canter.tools.report import check_out

    for out, example in [(".htm", "report.html"), ("notes.", "notes.html"), ("x/.txt", "x/report.html"),
                         ("notes.txt", "notes.html")]:
        with pytest.raises(CanterError, match=rf"--out '{out}' must be an .html file, e.g. {example}$"):
            check_out(out, tmp_path / "report.html")
