"""Hindsight experience replay in training (moved from test_her.py): learning a goal task that plain replay
cannot (DQN on ten bits, SAC on continuous goals), success rates, and exact resume with hindsight."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import torch

import canter
from canter.api import resume_trainer
from canter.cli import main

HER_DQN = dict(learning_starts=500, buffer_size=100_000, batch_size=256, lr=1e-3, exploration_fraction=0.1, train_freq=1,
               gradient_steps=1, exploration_final_eps=0.05, target_update_interval=500, gamma=0.95)


def _dqn_bits(tmp_path, her_goals: int, name: str) -> dict:
    run_dir = tmp_path / name
    canter.train("dqn", env="BitFlipping-v0", seed=0, max_steps=4000, eval_every=2000, eval_episodes=50,
                 run_dir=run_dir, quiet=True, her_goals=her_goals, **HER_DQN)
    return json.loads((run_dir / "summary.json").read_text())


def test_dqn_with_hindsight_solves_ten_bits_which_plain_replay_cannot(tmp_path, capsys):
    """10 bits: random play almost never meets the target, so plain DQN sees only -1 rewards.
    An optimal policy averages about -4 (flip the ~5 differing bits; the last step earns 0)."""
    her = _dqn_bits(tmp_path, 4, "her")
    assert her["best_eval_return"] >= -5.0, her
    evaluations = pq.read_table(tmp_path / "her" / "evaluations.parquet").to_pydict()  # as TensorBoard's
    assert len(evaluations["success_rate"]) == 2 and evaluations["success_rate"][-1] >= 0.5, evaluations
    assert main(["eval", str(tmp_path / "her"), "--episodes", "40", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["success_rate"] >= 0.9 and result["mean_return"] >= -5.0, result
    plain = _dqn_bits(tmp_path, 0, "plain")
    assert plain["best_eval_return"] <= -9.0, plain


def test_sac_with_hindsight_reaches_continuous_goals(tmp_path):
    """SAC on PointGoal-v0 (never terminates, 20 steps): uniform play succeeds ~2% of episodes."""
    trainer = canter.make_trainer("sac", "goal_env:PointGoal-v0", seed=0, max_steps=4000, eval_every=4000,
                                  eval_episodes=50, her_goals=4, learning_starts=500, batch_size=256,
                                  net_arch=[64, 64], gamma=0.95)
    records = list(trainer())
    trainer.close()
    evaluations = [r.evaluation for r in records if r.evaluation is not None]
    assert evaluations[-1].success_rate >= 0.6, evaluations[-1]
    # training episodes' rolling success rate (charts/success_rate, the last 100 exploring episodes):
    # 0 at first, rising with the policy (0.11 when measured)
    assert records[50].success_rate == 0.0 and records[-1].success_rate >= 0.05, records[-1].success_rate


@pytest.mark.slow
def test_sac_without_hindsight_does_not_reach_them():
    trainer = canter.make_trainer("sac", "goal_env:PointGoal-v0", seed=0, max_steps=4000, eval_every=4000,
                                  eval_episodes=50, learning_starts=500, batch_size=256, net_arch=[64, 64], gamma=0.95)
    evaluations = [r.evaluation for r in trainer() if r.evaluation is not None]
    trainer.close()
    assert evaluations[-1].success_rate <= 0.1, evaluations[-1]


def test_resume_continues_exactly_with_hindsight(tmp_path):
    common = dict(env="BitFlipping-v0", seed=3, eval_every=0, eval_episodes=2, quiet=True, her_goals=2,
                  **dict(HER_DQN, learning_starts=100))
    whole_run = canter.make_trainer("dqn", max_steps=800, run_dir=tmp_path / "whole", checkpoint_every=400, **common)
    rates = {r.step: r.success_rate for r in whole_run()}  # the training episodes' rolling success rate
    whole_run.close()
    whole = whole_run.agent
    canter.train("dqn", max_steps=400, run_dir=tmp_path / "part", checkpoint_every=400, **common)
    part = resume_trainer(tmp_path / "part", max_steps=800)
    resumed_rates = {r.step: r.success_rate for r in part()}
    part.close()
    resumed = part.agent
    for name, module in whole.algorithm.modules().items():
        for a, b in zip(module.parameters(), resumed.algorithm.modules()[name].parameters()):
            assert torch.equal(a, b), name
    assert resumed_rates and all(rates[step] == rate for step, rate in resumed_rates.items())
    assert any(rate is not None for rate in resumed_rates.values())
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["resume_exact"] is True
