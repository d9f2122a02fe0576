"""Recurrent PPO runs: a memory task learned (which PPO without memory cannot), sequences replayed exactly in
training, the critic's own LSTM, exact resume (also into fresh episodes), checkpoints, eval, play, user models,
refusals, images and a multi-agent env. The agent acting with its memory (predict, predict_with_state, explore,
evaluations, play, acting without the critic): tests/test_recurrent_memory.py."""
from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

import canter
from canter.cli import main
from support import CUE as ENV
from support import CUE_HP as HP
from checkpoint_support import write_checkpoint_json
from support import assert_train_refused


def _evals(run_dir) -> list[float]:
    table = pq.read_table(run_dir / "evaluations.parquet").to_pydict()
    return table[next(k for k in table if "mean" in k)]


def test_recurrent_ppo_remembers_what_ppo_cannot(tmp_path):
    """The cue is seen 5 steps before the query: +1 for naming it, -1 otherwise (no memory: ~0)."""
    canter.train("recurrent_ppo", env=ENV, seed=0, max_steps=20_000, target_reward=0.95, eval_every=2048,
                 eval_episodes=20, run_dir=tmp_path / "rppo", quiet=True, critic_lstm=False, **HP)  # memory, not
    # the critic's LSTM (which doubles the cost; its own test solves this task too)
    summary = json.loads((tmp_path / "rppo" / "summary.json").read_text())
    assert summary["solved"] and summary["best_eval_return"] >= 0.95, summary
    ppo = {k: v for k, v in HP.items() if k != "lstm_hidden"}
    canter.train("ppo", env=ENV, seed=0, max_steps=20_000, eval_every=4096, eval_episodes=20,
                 run_dir=tmp_path / "ppo", quiet=True, **ppo)
    assert max(_evals(tmp_path / "ppo")) <= 0.6  # memoryless: at best ~0 in expectation


@pytest.mark.parametrize("critic_lstm", [False, True])
def test_training_replays_the_rollout_with_the_memory_acting_had(tmp_path, critic_lstm):
    """The first forward pass of ``learn`` gives exactly the log-probabilities and values stored while
    acting (memory carried across steps and rollouts, zeroed at episode starts): PPO's first ratio is 1.
    With a critic LSTM the memory carries both LSTMs' states."""
    trainer = canter.make_trainer("recurrent_ppo", ENV, seed=1, max_steps=64 * 8 * 3, eval_every=0,
                                  critic_lstm=critic_lstm, **HP)
    assert trainer.agent.algorithm.model.initial_state(2)[0].shape == (1, 2, 32 * (2 if critic_lstm else 1))
    seen = []
    algo = trainer.agent.algorithm
    learn = algo.learn

    def checking(batch):
        with torch.no_grad():
            out, values = algo.model.sequence(batch.obs, batch.state, batch.starts)
            logp = torch.log_softmax(out, -1).gather(-1, batch.actions.unsqueeze(-1)).squeeze(-1)
        valid = batch.valid
        torch.testing.assert_close(logp[valid], batch.log_probs[valid], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(values[valid], batch.values[valid], rtol=1e-5, atol=1e-5)
        seen.append((int(batch.starts.sum()), bool(batch.state[0].abs().sum() > 0)))
        return learn(batch)

    algo.learn = checking
    for _ in trainer():
        pass
    trainer.close()
    assert len(seen) == 3 and all(starts > 0 for starts, _ in seen)  # episodes began inside each rollout
    assert seen[1][1] and seen[2][1]  # later rollouts start from a carried, non-zero memory


@pytest.mark.parametrize("critic_lstm", [False, True])
def test_recurrent_run_resumes_exactly(tmp_path, critic_lstm):
    common = dict(seed=3, eval_every=1024, checkpoint_every=1024, critic_lstm=critic_lstm, **HP)
    whole = canter.train("recurrent_ppo", env=ENV, max_steps=2048, run_dir=tmp_path / "whole", quiet=True, **common)
    canter.train("recurrent_ppo", env=ENV, max_steps=1024, run_dir=tmp_path / "part", quiet=True, **common)
    resumed = canter.resume(tmp_path / "part", max_steps=2048)
    for a, b in zip(whole.algorithm.model.parameters(), resumed.algorithm.model.parameters()):
        assert torch.equal(a, b)
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["resume_exact"] is True


def test_a_critic_lstm_of_its_own_keeps_the_value_loss_out_of_the_actors_memory(tmp_path):
    trainer = canter.make_trainer("recurrent_ppo", ENV, seed=0, max_steps=12_288, eval_every=4096, eval_episodes=20,
                                  critic_lstm=True, **HP)
    model = trainer.agent.algorithm.model
    obs = torch.randn(5, 3, *trainer.env.single_observation_space.shape)
    _, values = model.sequence(obs, model.initial_state(3), torch.zeros(5, 3, dtype=torch.bool))
    grads = torch.autograd.grad(values.sum(), list(model.lstm.parameters()) + list(model.critic_lstm.parameters()),
                                allow_unused=True)
    n_actor = len(list(model.lstm.parameters()))
    assert all(g is None or not g.any() for g in grads[:n_actor])  # the actor's LSTM gets no value gradient
    assert all(g is not None and g.any() for g in grads[n_actor:])
    best = -1.0
    for record in trainer():
        if record.evaluation is not None:
            best = max(best, record.evaluation.mean_return)
        if best >= 0.9:
            break  # solved: the rest of the budget would not change the assertion
    trainer.close()
    assert best >= 0.9, best  # the cue task is still solved


def test_a_model_whose_run_takes_one_memory_is_refused_with_a_critic_lstm(capsys, tmp_path, monkeypatch):
    """A user's GRU with one memory for actor and critic, trained with critic_lstm true (the default), failed
    in its first step with torch's traceback ('Expected hidden size (1, 2, 8), got [1, 2, 16]')."""
    (tmp_path / "gru_models.py").write_text(GRU_MODELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert_train_refused(capsys, tmp_path, ["train", "recurrent_ppo", "--env", ENV, "--set", "model=gru_models:GRUPair"],
                         "a _run with one memory for actor and critic needs hparams.critic_lstm=false")


def test_the_critic_has_an_lstm_of_its_own_by_default():
    """The default was one LSTM for both (CleanRL's layout) until 2026-11-27; the critic's own LSTM
    (sb3-contrib's default) learned CartPoleNoVel-v1 and PickEntries better (docs/algorithms/recurrent_ppo.md)."""
    from canter.algorithms.recurrent_ppo import RecurrentPPOConfig

    assert RecurrentPPOConfig().critic_lstm is True
    trainer = canter.make_trainer("recurrent_ppo", ENV, seed=0, max_steps=64, n_envs=2, n_steps=32, lstm_hidden=8)
    trainer.close()
    assert trainer.agent.algorithm.model.critic_lstm is not None


def _drop_critic_lstm(path) -> None:
    """Remove hparams.critic_lstm from a checkpoint's JSON, as checkpoints saved before it existed were."""
    meta = json.loads(path.read_text())
    del meta["config"]["hparams"]["critic_lstm"]
    write_checkpoint_json(path, meta)


def test_checkpoints_of_a_shared_lstm_load_and_resume_with_one_lstm(tmp_path):
    """A run saved with critic_lstm false, and one saved before the key existed (one shared LSTM then),
    load and resume as they were trained, whatever the default is now."""
    run = tmp_path / "run"
    trained = canter.train("recurrent_ppo", env=ENV, seed=0, max_steps=64, n_envs=2, n_steps=32, lstm_hidden=8,
                           eval_every=0, run_dir=run, quiet=True, critic_lstm=False)
    obs = np.eye(3, dtype=np.float32)
    expected = trained.algorithm.model.step(torch.from_numpy(obs), trained.algorithm.model.initial_state(3))[0]
    for keyless in (False, True):
        if keyless:
            for path in (run / "checkpoints").glob("*.json"):
                _drop_critic_lstm(path)
            config = run / "config.yaml"
            config.write_text(config.read_text().replace("  critic_lstm: false\n", ""))
        agent = canter.load(run)
        model = agent.algorithm.model
        assert model.critic_lstm is None
        torch.testing.assert_close(model.step(torch.from_numpy(obs), model.initial_state(3))[0], expected)
    resumed = canter.resume(run, max_steps=128)
    assert resumed.algorithm.model.critic_lstm is None and resumed.algorithm.config.critic_lstm is False


def test_checkpoint_eval_play_and_predict_carry_memory(tmp_path, capsys):
    run = tmp_path / "run"
    canter.train("recurrent_ppo", env=ENV, seed=0, max_steps=20_000, target_reward=0.95, eval_every=2048,
                 eval_episodes=20, run_dir=run, quiet=True, **HP)
    assert main(["eval", str(run), "--episodes", "20", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mean_return"] >= 0.9
    assert main(["play", str(run), "--episodes", "4"]) == 0
    assert capsys.readouterr().out.count("return 1.00") >= 3
    agent = canter.load(str(run))  # the Python API: predict carries the memory; episode_start resets it
    import memory_env

    env = memory_env.Cue()
    wins = 0
    for episode in range(10):
        obs, _ = env.reset(seed=100 + episode)
        start, done = np.ones(1, bool), False
        while not done:
            action = agent.predict(obs[None], episode_start=start)[0]
            obs, reward, done, _, _ = env.step(action)
            start = np.zeros(1, bool)
        wins += reward > 0
    assert wins >= 9


@pytest.mark.parametrize("argv,needle", [
    (["--explorers", "2"], "cannot run on explorers"),
    (["--set", "manual_backward=true"], "learns through autograd"),
    (["--set", "normalize_value=true"], "no value normalisation"),
    (["--set", "agent=agent"], "needs the agent 'recurrent_agent'"),  # was an AttributeError traceback
    (["--set", "lstm_hidden=100000000"], "more memory than there is"),  # was torch's allocator traceback
])
def test_recurrent_ppo_refusals(argv, needle, capsys, tmp_path):
    assert_train_refused(capsys, tmp_path, ["train", "recurrent_ppo", "--env", ENV, *argv], needle)


def test_a_recurrent_agent_is_refused_for_a_memoryless_algorithm(capsys, tmp_path):
    """ppo with agent=recurrent_agent failed in its first step with a traceback (no initial_state)."""
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", ENV, "--set", "agent=recurrent_agent"],
                         "needs a recurrent algorithm")


def test_collect_refuses_a_recurrent_policy(tmp_path, capsys):
    run = tmp_path / "run"
    canter.train("recurrent_ppo", env=ENV, seed=0, max_steps=512, eval_every=0, run_dir=run, quiet=True,
                 **{**HP, "n_envs": 2})
    assert main(["collect", str(run), "--out", str(tmp_path / "data")]) == 2
    assert "recurrent policy" in capsys.readouterr().err


def test_cartpole_without_velocities_observes_positions_only():
    from canter.envs import make_env, make_vec_env

    env = make_vec_env("CartPoleNoVel-v1", 2)
    full = make_vec_env("CartPole-v1", 2, vectorization="sync")
    obs, ref = env.reset(seed=4), full.reset(seed=4)
    assert env.single_observation_space.shape == (2,)
    for _ in range(30):
        np.testing.assert_array_equal(obs, ref[:, [0, 2]])  # cart position, pole angle
        obs, ref = env.step(np.array([1, 0])).obs, full.step(np.array([1, 0])).obs
    env.close()
    full.close()
    assert make_env("CartPoleNoVel-v1").observation_space.shape == (2,)


def test_a_shared_recurrent_policy_on_a_multiagent_env_whose_agents_leave(tmp_path):
    """Rows of agents that left are invalid; their memory restarts with their copy's next episode."""
    pytest.importorskip("pettingzoo")
    canter.train("recurrent_ppo", env="pettingzoo:tests.match_agents", env_kwargs={"n_agents": 2, "miss_leaves": True},
                 seed=0, max_steps=30_000, target_reward=7.5, eval_every=2048, run_dir=tmp_path / "run", quiet=True,
                 critic_lstm=False, **{**HP, "n_envs": 4})  # about the rows' memory, not the critic's LSTM
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["solved"] and summary["best_eval_return"] >= 7.5  # random play: ~0.5 of 8


def test_image_observations_go_through_the_cnn_encoder(tmp_path):
    """uint8 frames: the Nature CNN encodes each frame before the LSTM; a cue shown in the first
    frame is named two frames later (no memory: ~0). One LSTM (the encoder path is the subject: a critic
    LSTM doubled the run's time)."""
    agent = canter.train("recurrent_ppo", env="memory_env:ImageCue-v0", seed=0, max_steps=2048, n_envs=4, n_steps=32,
                         batch_size=64, lr=1e-3, eval_every=0, eval_episodes=10, run_dir=tmp_path / "run", quiet=True,
                         critic_lstm=False)
    assert type(agent.algorithm.model.encoder).__name__ == "NatureCNN"
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["last_eval_return"] >= 0.9


def test_a_resume_that_starts_fresh_episodes_starts_them_with_empty_memory(tmp_path):
    """An env whose state cannot be saved is reset with a new seed on resume (fresh episodes): the
    first rollout must begin them with zeroed LSTM memory, not the memory of the dropped episodes."""
    from support import state_after_inexact_resume

    exact, memory = state_after_inexact_resume(
        "recurrent_ppo", "CartPole-v1", "LockedCartPoleRecurrent-test",
        lambda t: [m.clone() for m in t.rollout_memory], tmp_path / "run", hook="after_update",
        n_envs=2, n_steps=32, batch_size=32, n_epochs=1, max_steps=640, eval_every=0, eval_episodes=1,
        tensorboard=False, seed=0)
    assert exact is False
    assert all(float(m.abs().sum()) == 0.0 for m in memory)


GRU_MODELS = '''
from torch import nn
from canter.models.recurrent import LSTMActorCritic


class GRUPair(LSTMActorCritic):
    """A GRU whose memory is the pair (h, c) the agent carries; c is ignored."""

    def __init__(self, observation_space, action_space, lstm_hidden=8, **kw):
        super().__init__(observation_space, action_space, lstm_hidden=lstm_hidden, **kw)
        self.lstm = nn.GRU(self.encoder.out_dim, lstm_hidden)

    def _run(self, x, state):
        y, h = self.lstm(x, state[0].contiguous())
        return y, (h, state[1])


class GRUTensor(GRUPair):
    """The same GRU with its memory one tensor."""

    def initial_state(self, batch):
        return super().initial_state(batch)[0]
'''


def test_a_model_whose_memory_is_not_an_h_c_pair_is_refused_in_one_line(capsys, tmp_path, monkeypatch):
    """A user's GRU whose initial_state returned one tensor failed in the first step with a traceback
    ('ValueError: not enough values to unpack' in RecurrentAgent.training_memory); a GRU that pairs its h
    with an unused tensor trains and carries its memory."""
    (tmp_path / "gru_models.py").write_text(GRU_MODELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert_train_refused(capsys, tmp_path, ["train", "recurrent_ppo", "--env", ENV, "--set", "model=gru_models:GRUTensor"],
                         "initial_state(batch) must return the memory as a pair (h, c)")
    trainer = canter.make_trainer("recurrent_ppo", ENV, seed=0, max_steps=64, n_envs=2, n_steps=32, eval_every=0,
                                  model="gru_models:GRUPair", critic_lstm=False)  # one GRU in place of the one LSTM
    with trainer:
        list(trainer())
        assert trainer.algorithm.updates > 0 and trainer.agent.memory["sample"][0].abs().sum() > 0


def test_a_run_is_the_same_whether_acting_skips_the_critic_or_not(tmp_path, monkeypatch):
    """Skipping the critic in predict (the evaluations here) changes no result: the checkpoints' tensors and
    the evaluations are those of a run whose acting runs the whole model."""
    from safetensors.numpy import load_file

    from canter.models.recurrent import LSTMActorCritic

    def run(name: str) -> tuple[dict, list[float]]:
        canter.train("recurrent_ppo", env="CartPole-v1", seed=2, max_steps=512, eval_every=256, eval_episodes=2,
                     n_envs=2, n_steps=32, batch_size=64, n_epochs=2, lstm_hidden=8, run_dir=tmp_path / name,
                     quiet=True, tensorboard=False)
        ckpt = tmp_path / name / "checkpoints"
        return {f: load_file(ckpt / f) for f in ("best.safetensors", "last.safetensors")}, _evals(tmp_path / name)

    skipped, skipped_evals = run("skipped")
    monkeypatch.setattr(LSTMActorCritic, "policy_step", None)  # acting without it: the whole step
    whole, whole_evals = run("whole")
    assert skipped_evals == whole_evals and len(whole_evals) == 2
    for f, tensors in whole.items():
        assert tensors.keys() == skipped[f].keys()
        for key, value in tensors.items():
            np.testing.assert_array_equal(value, skipped[f][key], err_msg=f"{f}: {key}")
