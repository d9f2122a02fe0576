"""One quantity, one name across algorithms: ACER logged its critic's loss as ``q_loss``, where SAC, SAC-discrete,
TD3, DDPG and TQC log theirs as ``critic_loss`` (ACER and SAC-discrete on CartPole: the same Q regression under two
names in TensorBoard, W&B and ``canter report``). It is ``critic_loss`` now; an older run's ``q_loss`` column is read
as ``critic_loss`` by ``canter report`` and ``plot`` (``canter.tools.rundata.load_run``)."""
from __future__ import annotations

import numpy as np
import pytest

import canter
from canter.logging.history import write_parquet
from canter.tools.rundata import load_run


def test_acer_logs_its_critics_loss_as_critic_loss():
    trainer = canter.make_trainer("acer", "CartPole-v1", n_envs=2, n_steps=8, replay_start=10_000, max_steps=32,
                                  eval_every=0, eval_episodes=1)
    records = list(trainer())
    trainer.close()
    assert records and all("critic_loss" in r.losses and "q_loss" not in r.losses for r in records)


def _run(tmp_path, algo, rows, extra=""):
    run = tmp_path / algo
    run.mkdir()
    (run / "config.yaml").write_text(f"algo: {algo}\nenv: CartPole-v1\n{extra}")
    write_parquet(run / "updates.parquet", [{"step": 10 * (i + 1), "wall_time": float(i), **r} for i, r in
                                            enumerate(rows)])
    return run


def test_an_older_acer_runs_q_loss_is_read_as_critic_loss(tmp_path):
    run = _run(tmp_path, "acer", [{"policy_loss": 1.0, "q_loss": 2.0, "entropy": 0.5}] * 2)
    updates = load_run(run).updates
    assert list(updates) == ["step", "wall_time", "policy_loss", "critic_loss", "entropy"]  # in its place
    assert updates["critic_loss"].tolist() == [2.0, 2.0]


def test_an_older_acer_run_resumed_since_has_one_critic_loss(tmp_path):
    """Its rows before the resume hold q_loss, those after critic_loss: one column, not two half-empty panels."""
    nan = float("nan")
    run = _run(tmp_path, "acer", [{"q_loss": 2.0, "critic_loss": nan}, {"q_loss": nan, "critic_loss": 3.0}])
    updates = load_run(run).updates
    assert "q_loss" not in updates and updates["critic_loss"].tolist() == [2.0, 3.0]


def test_a_multi_policy_acer_policys_q_loss_is_renamed(tmp_path):
    run = _run(tmp_path, "ppo", [{"a/q_loss": 1.0, "b/q_loss": 2.0}], "policy_hparams: {a: {algo: acer}}\n")
    assert set(load_run(run).updates) == {"step", "wall_time", "a/critic_loss", "b/q_loss"}


@pytest.mark.parametrize("algo", ["ppo", "my_algo"])
def test_another_algorithms_q_loss_is_left_as_it_is(tmp_path, algo):
    """A q_loss of another algorithm (one registered outside canter) is its own statistic."""
    updates = load_run(_run(tmp_path, algo, [{"q_loss": 1.0}])).updates
    assert np.array_equal(updates["q_loss"], [1.0]) and "critic_loss" not in updates
