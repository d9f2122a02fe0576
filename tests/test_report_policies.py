"""canter report of a run of several policies has a "Policies" section: each policy's training episodes and the
last and best of their rolling mean (history.parquet's ``policy`` column); a run of one policy's report is
unchanged."""
from __future__ import annotations

import re

import numpy as np
import pyarrow.parquet as pq
import pytest

import canter
import canter.tools.report as report
from canter.tools.report import write_report
from canter.tools.rundata import load_run


@pytest.fixture(autouse=True)
def _no_plots(monkeypatch):
    """The plots (most of a report's 2-3 s) are not what these tests read."""
    for name in ("learning_curve", "update_stats", "throughput"):
        monkeypatch.setattr(report, name, lambda run: "<img>")


def _rolling(returns: list[float], window: int) -> list[float]:
    return [float(np.mean(returns[max(0, i + 1 - window):i + 1])) for i in range(len(returns))]


def test_a_multi_policy_report_has_each_policys_rolling_return(tmp_path):
    pytest.importorskip("pettingzoo")
    from support import HPARAMS, MIXED

    canter.train("ppo", run_dir=tmp_path / "run", env=MIXED, policies="type", seed=3, target_reward=None,
                 max_steps=300, reward_window=5, **{**HPARAMS["ppo"], "n_envs": 2, "eval_every": 256})
    text = write_report(tmp_path / "run", eval_episodes=0).read_text()
    assert "<h2>Policies</h2>" in text and "rolling mean over 5 episodes" in text
    history = pq.read_table(tmp_path / "run" / "history.parquet").to_pydict()
    for policy in ("speaker", "listener"):
        mine = [r for r, p in zip(history["episode_return"], history["policy"]) if p == policy]
        rolling = _rolling(mine, 5)
        assert len(mine) > 5 and rolling[-1] != np.mean(mine)  # the window, not every episode
        row = f"<tr><td>{policy}</td><td>{len(mine):,}</td><td>{rolling[-1]:,.2f}</td><td>{max(rolling):,.2f}</td></tr>"
        assert row in text


def test_a_single_policy_report_is_unchanged(tmp_path, monkeypatch):
    canter.train("ppo", env="CartPole-v1", run_dir=tmp_path / "run", max_steps=256, n_steps=64, batch_size=64,
                 n_envs=2, n_epochs=1, eval_every=128, seed=0)
    run = load_run(tmp_path / "run")
    text = report.render(run, 0)
    assert "<h2>Policies</h2>" not in text
    assert re.search(r'</div></div>\n<h2>Learning curve</h2>', text)  # the cards, then the learning curve
    monkeypatch.setattr(report, "policy_section", lambda run, table: "")
    assert report.render(run, 0) == text  # byte for byte what a report without the section is


def test_a_nan_return_counts_only_while_it_is_in_the_window(tmp_path):
    """A NaN (or infinite) return made every later rolling return NaN (a running sum kept it); the member trainer's
    mean of its last reward_window returns is finite again once it has left the window."""
    from types import SimpleNamespace

    import pyarrow as pa

    from canter.tools.report_policies import policy_rows

    returns = {"a": [float("nan"), 1.0, 2.0, 3.0, 4.0, 5.0], "b": [1.0, float("inf"), 2.0, 6.0, 8.0]}
    order = ["a", "b", "a", "b", "a", "a", "b", "a", "b", "a", "b"]
    queue = {p: list(r) for p, r in returns.items()}
    pq.write_table(pa.table({"episode_return": [queue[p].pop(0) for p in order], "policy": order}),
                   tmp_path / "history.parquet")
    rows = policy_rows(SimpleNamespace(dir=tmp_path, config={"reward_window": 2}))
    assert rows == [{"policy": "a", "episodes": 6, "last_rolling_return": 4.5, "best_rolling_return": 4.5},
                    {"policy": "b", "episodes": 5, "last_rolling_return": 7.0, "best_rolling_return": float("inf")}]


def test_the_policies_table_names_the_policies_as_canter_plot_does(tmp_path):
    """The report's table read the policy column itself, row by row with str(): a row without a policy was 'None'
    there and '?' in canter plot's and the learning curve's legend (rundata.read_policies); one reader now."""
    from types import SimpleNamespace

    import pyarrow as pa

    from canter.tools.plot_policies import run_policies
    from canter.tools.report_policies import policy_rows
    from canter.tools.rundata import read_policies

    pq.write_table(pa.table({"episode_return": [1.0, 2.0, 3.0], "policy": ["a", None, "a"]}),
                   tmp_path / "history.parquet")
    rows = policy_rows(SimpleNamespace(dir=tmp_path, config={"reward_window": 2}))
    run = SimpleNamespace(history_policies=read_policies(tmp_path / "history.parquet"))
    assert [r["policy"] for r in rows] == run_policies(run) == ["a", "?"]
    assert [r["episodes"] for r in rows] == [2, 1]
