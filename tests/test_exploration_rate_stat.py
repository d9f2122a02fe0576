"""The epsilon-greedy algorithms (DQN and its kin, QMIX) log the exploration rate their actions take as
``exploration_rate`` (Stable-Baselines3's ``rollout/exploration_rate``): in each update row, TensorBoard's
``losses/exploration_rate``, exact across a resume; a run saved before the column existed still resumes."""
import json

import pyarrow.parquet as pq
import pytest

import canter

SMALL = dict(seed=0, n_envs=2, max_steps=256, learning_starts=64, train_freq=4, gradient_steps=1, batch_size=32,
             net_arch=[32], eval_every=0, target_reward=None, exploration_initial_eps=1.0,
             exploration_final_eps=0.1, exploration_fraction=0.5)
MATCH = "pettingzoo:tests.match_agents"
ALGOS = {"dqn": {}, "c51": {"n_atoms": 11}, "qrdqn": {"n_quantiles": 8}, "iqn": {"n_quantiles": 8},
         "rainbow": {"n_quantiles": 8}, "qmix": {"env": MATCH, "env_kwargs": {"n_agents": 2, "team": True}}}


def losses_of(algo: str, **kwargs) -> list[tuple[int, dict]]:
    settings = {"env": "CartPole-v1", **SMALL, **kwargs}
    if algo == "qmix":
        settings.pop("net_arch")
    if algo == "sac_discrete":
        settings = {k: v for k, v in settings.items() if not k.startswith("exploration_")}
    trainer = canter.make_trainer(algo, **settings)
    with trainer:
        return [(r.step, dict(r.losses)) for r in trainer() if r.losses]


@pytest.mark.parametrize("algo", list(ALGOS))
def test_epsilon_greedy_algorithms_log_the_exploration_rate(algo):
    if algo == "qmix":
        pytest.importorskip("pettingzoo")
    rows = losses_of(algo, **ALGOS[algo])
    assert rows
    for step, losses in rows:  # the schedule at the record's step: 1.0 -> 0.1 over the first 128 steps
        assert losses["exploration_rate"] == pytest.approx(1.0 - 0.9 * min(1.0, step / 128)), step
    assert rows[-1][1]["exploration_rate"] == pytest.approx(0.1)


def test_no_exploration_rate_without_epsilon_greedy():
    # NoisyNet explores with its noisy layers (epsilon stays 0); SAC has no epsilon
    assert all("exploration_rate" not in losses for _, losses in losses_of("rainbow", n_quantiles=8, noisy=True))
    assert all("exploration_rate" not in losses for _, losses in losses_of("sac_discrete"))


@pytest.mark.slow
def test_exploration_rate_in_the_run_files_exact_across_resume_and_a_run_from_before_it_resumes(tmp_path):
    common = dict(SMALL, env="CartPole-v1", max_steps=600, quiet=True, eval_every=300, eval_episodes=1)
    canter.train("dqn", run_dir=tmp_path / "whole", **common)
    whole = pq.read_table(tmp_path / "whole" / "updates.parquet").to_pydict()
    assert whole["exploration_rate"][0] == pytest.approx(1.0 - 0.9 * whole["step"][0] / 300)

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "whole"))
    events.Reload()
    assert [e.value for e in events.Scalars("losses/exploration_rate")] == pytest.approx(whole["exploration_rate"])

    def interrupt(trainer, losses):
        if trainer.step >= 300 and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    for name, older in (("part", False), ("older", True)):
        canter.train("dqn", run_dir=tmp_path / name, hooks={"after_update": interrupt}, **common)
        updates = tmp_path / name / "updates.parquet"
        if older:  # as a run saved before the column was logged wrote it
            pq.write_table(pq.read_table(updates).drop(["exploration_rate"]), updates)
        canter.resume(tmp_path / name)
        assert json.loads((tmp_path / name / "summary.json").read_text())["resume_exact"] is True
        resumed = pq.read_table(updates).to_pydict()
        assert resumed["step"] == whole["step"]
        n = sum(step <= 300 for step in whole["step"])
        want = [None] * n + whole["exploration_rate"][n:] if older else whole["exploration_rate"]
        assert resumed["exploration_rate"] == want, name  # bit for bit
