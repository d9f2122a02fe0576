"""canter report shows the evaluations' success rate (goal envs, ``info["is_success"]``) where the evaluation
table has it: it never did, though a BitFlipping-v0 run's evaluations.parquet holds a ``success_rate`` column."""

from __future__ import annotations

import types

import numpy as np

from canter.tools.report import _cards, eval_distribution, success_curve
from canter.tools.rundata import RunData


def _run(path, success_rate=None):
    steps = np.array([500.0, 1000.0, 1500.0])
    evaluations = {"step": steps, "wall_time": steps / 100, "mean_return": np.array([-4.0, -3.0, -1.0]),
                   "std_return": np.zeros(3)}
    if success_rate is not None:
        evaluations["success_rate"] = np.asarray(success_rate, dtype=np.float64)
    return RunData(path, {"algo": "dqn", "env": "BitFlipping-v0", "target_reward": None},
                   {"steps": 1500, "wall_seconds": 3.0, "stop_reason": "max_steps"}, evaluations=evaluations)


def test_the_cards_and_a_plot_show_the_success_rate_where_the_evaluations_have_it(tmp_path):
    run = _run(tmp_path, [0.06, 0.5, 0.25])
    cards = _cards(run)
    assert '<b class="">50%</b><span>best eval success rate</span>' in cards
    assert '<b class="">25%</b><span>last eval success rate</span>' in cards
    section = success_curve(run)
    assert section.startswith("<h2>Success rate</h2>") and 'alt="success rate"' in section


def test_a_run_without_success_rates_has_no_success_card_or_section(tmp_path):
    for run in (_run(tmp_path), _run(tmp_path, [np.nan] * 3)):  # no column; a column of nulls only
        assert "success rate" not in _cards(run)
        assert success_curve(run) == ""


def test_evaluations_without_one_are_left_out_not_counted_as_failures(tmp_path):
    """A resumed run's first evaluations may lack the column (null): the rates are of the ones that have it."""
    cards = _cards(_run(tmp_path, [np.nan, 0.5, 1.0]))
    assert '<b class="">100%</b><span>last eval success rate</span>' in cards


def test_the_distribution_caption_gives_the_fresh_episodes_success_rate(tmp_path, monkeypatch):
    import canter.api
    import canter.trainers.evaluation

    monkeypatch.setattr(canter.api, "find_checkpoint", lambda d: tmp_path / "checkpoints" / "best")
    monkeypatch.setattr(canter.api, "load", lambda d: types.SimpleNamespace())
    monkeypatch.setattr(canter.trainers.evaluation, "evaluate_agent",
                        lambda *a, **k: types.SimpleNamespace(returns=[-1.0, -4.0], success_rate=0.5))
    caption = eval_distribution(types.SimpleNamespace(dir=tmp_path, target_reward=None), 2)[1]
    assert "success rate 50%" in caption
    monkeypatch.setattr(canter.trainers.evaluation, "evaluate_agent",
                        lambda *a, **k: types.SimpleNamespace(returns=[-1.0, -4.0], success_rate=None))
    assert "success" not in eval_distribution(types.SimpleNamespace(dir=tmp_path, target_reward=None), 2)[1]
