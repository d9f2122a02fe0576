"""The run option ``eval_deterministic``: evaluations in training with the deterministic policy (the default) or,
``false`` (the Atari presets, as rl-zoo3 evaluates Atari), with the policy's samples from a stream seeded per
evaluation, which is repeatable and leaves the training streams, and so the trained weights, as they were.
``canter eval`` / ``canter play`` (and ``canter.evaluate`` / ``play``) default to the run's setting."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import canter
from canter.cli import main
from canter.config import resolve_config
from canter.errors import CanterError
from canter.play import play
from support import forget_run_key, same_weights, stop_at_300

QUICK = dict(n_envs=2, n_steps=16, batch_size=32, n_epochs=1, eval_every=64, eval_episodes=3, eval_envs=2,
             max_steps=192, tensorboard=False)
DQN = dict(n_envs=2, train_freq=16, learning_starts=0, gradient_steps=1, eval_every=64, eval_episodes=3,
           eval_envs=2, max_steps=192, tensorboard=False)


def _train(algo: str, deterministic: bool, **kw):
    """A trained trainer (closed) and its evaluations (``EvalResult``s)."""
    trainer = canter.make_trainer(algo, "CartPole-v1", seed=0, eval_deterministic=deterministic,
                                  **{**(DQN if algo == "dqn" else QUICK), **kw})
    evaluations = [r.evaluation for r in trainer() if r.evaluation is not None]
    trainer.close()
    return trainer, evaluations


def test_the_option_defaults_to_the_deterministic_policy_and_is_a_run_key():
    run, _ = resolve_config("ppo", "CartPole-v1")
    assert run.eval_deterministic is True
    run, _ = resolve_config("ppo", "CartPole-v1", sets=["eval_deterministic=false"])
    assert run.eval_deterministic is False
    with pytest.raises(CanterError, match="canter calls it 'eval_deterministic'"):  # SB3's EvalCallback's name
        resolve_config("ppo", "CartPole-v1", sets=["deterministic=false"])


@pytest.mark.parametrize("algo", ["ppo", "dqn", "recurrent_ppo"])
def test_stochastic_evaluations_are_repeatable_and_leave_the_training_as_it_was(algo):
    """The evaluations sample the policy (other returns than the deterministic policy's, PPO's), the same with the
    same seed, and the trained weights are those of the run with deterministic evaluations."""
    short = {"max_steps": 128, "eval_episodes": 2} if algo == "recurrent_ppo" else {}  # (the slowest to act)
    det, det_evals = _train(algo, True, **short)
    sto, sto_evals = _train(algo, False, **short)
    again, again_evals = _train(algo, False, **short)
    n = 2 if short else 3
    assert [e.deterministic for e in det_evals] == [True] * n and [e.deterministic for e in sto_evals] == [False] * n
    assert [e.returns for e in sto_evals] == [e.returns for e in again_evals]
    if algo != "dqn":
        assert [e.returns for e in sto_evals] != [e.returns for e in det_evals]
    assert same_weights(det.agent, sto.agent) and same_weights(sto.agent, again.agent)
    assert det.best_eval_return == max(e.mean_return for e in det_evals)
    assert sto.best_eval_return == max(e.mean_return for e in sto_evals)  # the best follows the sampled returns


def test_the_run_dir_records_the_policy_of_its_evaluations(tmp_path):
    canter.train("ppo", "CartPole-v1", seed=0, run_dir=tmp_path / "run", eval_deterministic=False, **QUICK)
    table = pq.read_table(tmp_path / "run" / "evaluations.parquet").to_pylist()
    assert [row["deterministic"] for row in table] == [False] * 3
    best = json.loads((tmp_path / "run" / "checkpoints" / "best.json").read_text())
    assert best["config"]["eval_deterministic"] is False
    means = [row["mean_return"] for row in table]
    assert max(means) == best["trainer"]["best_eval_return"]
    k = means.index(max(means))  # canter.evaluate of the best checkpoint with that evaluation's seed: its episodes
    best_agent = canter.load(tmp_path / "run" / "checkpoints" / "best")
    again = canter.evaluate(best_agent, episodes=3, seed=1_000_003 + 7919 * k)
    assert not again.deterministic and again.mean_return == max(means)


def test_a_run_with_stochastic_evaluations_resumes_exactly(tmp_path):
    more = {**QUICK, "max_steps": 416, "eval_every": 96}
    canter.train("ppo", "CartPole-v1", seed=0, run_dir=tmp_path / "parts", eval_deterministic=False,
                 hooks={"after_update": stop_at_300}, **more)
    assert json.loads((tmp_path / "parts" / "summary.json").read_text())["steps"] == 320
    canter.resume(tmp_path / "parts", quiet=True)
    canter.train("ppo", "CartPole-v1", seed=0, run_dir=tmp_path / "first", eval_deterministic=False, **more)
    parts, first = (pq.read_table(tmp_path / d / "evaluations.parquet").to_pylist() for d in ("parts", "first"))
    drop = ("wall_time",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in parts] == \
           [{k: v for k, v in r.items() if k not in drop} for r in first]
    assert len(parts) == 5 and not any(r["deterministic"] for r in parts)
    assert same_weights(canter.load(tmp_path / "parts"), canter.load(tmp_path / "first"))


@pytest.fixture(scope="module")
def stochastic_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("sto") / "run"
    canter.train("ppo", "CartPole-v1", seed=0, run_dir=run_dir, eval_deterministic=False, **QUICK)
    return run_dir


def _eval_json(capsys, *argv: str) -> dict:
    assert main(["eval", *argv, "--episodes", "4", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_canter_eval_plays_as_the_runs_evaluations_unless_told(stochastic_run, capsys):
    run = str(stochastic_run)
    default, again = _eval_json(capsys, run), _eval_json(capsys, run)
    det = _eval_json(capsys, run, "--deterministic")
    assert (default["deterministic"], det["deterministic"]) == (False, True)
    assert default["returns"] == again["returns"] != det["returns"]  # the seed's samples, each time
    assert _eval_json(capsys, run, "--stochastic")["returns"] == default["returns"]
    assert _eval_json(capsys, run, "--stochastic", "--seed", "7")["returns"] != default["returns"]
    assert main(["eval", run, "--episodes", "2"]) == 0
    assert "over 2 episodes of the stochastic policy" in capsys.readouterr().out
    assert main(["eval", run, "--deterministic", "--stochastic"]) == 2
    assert "not allowed with argument --deterministic" in capsys.readouterr().err


def test_canter_evaluate_and_play_default_to_the_runs_setting(stochastic_run, capsys):
    agent = canter.load(stochastic_run)
    sampled = canter.evaluate(agent, episodes=4, seed=3)
    assert not sampled.deterministic and sampled.returns == canter.evaluate(agent, episodes=4, seed=3).returns
    assert canter.evaluate(agent, episodes=4, seed=3, deterministic=True).returns != sampled.returns
    played = play(agent, episodes=3, seed=5)
    assert played == play(agent, episodes=3, seed=5, deterministic=False) == play(agent, episodes=3, seed=5)
    assert played != play(agent, episodes=3, seed=5, deterministic=True)
    assert main(["play", str(stochastic_run), "--episodes", "3", "--seed", "5", "--deterministic"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [float(line.rsplit(" ", 1)[1]) for line in lines] == play(agent, episodes=3, seed=5, deterministic=True)


def test_a_run_saved_before_the_option_evaluates_and_resumes_as_it_did(tmp_path, capsys):
    """No eval_deterministic in its config and no 'deterministic' column: the deterministic policy, as then."""
    run_dir = tmp_path / "old"
    canter.train("ppo", "CartPole-v1", seed=0, run_dir=run_dir, hooks={"after_update": stop_at_300},
                 **{**QUICK, "max_steps": 416, "eval_every": 96})
    forget_run_key(run_dir, "eval_deterministic")
    path = run_dir / "evaluations.parquet"
    pq.write_table(pq.read_table(path).drop(["deterministic"]), path)
    assert _eval_json(capsys, str(run_dir))["deterministic"] is True
    canter.resume(run_dir, quiet=True)
    assert [r["deterministic"] for r in pq.read_table(path).to_pylist()] == [True] * 5


ATARI_PRESETS = sorted(p.parent.name for p in Path(canter.__file__).parent.glob("configs/*/atari.yaml"))


@pytest.mark.parametrize("algo", ATARI_PRESETS)
def test_the_atari_presets_evaluate_the_policy_s_samples_as_rl_zoo3(algo):
    """rl-zoo3's deterministic_eval = not is_atari(env_id): every ALE id, with or without a game preset of its own."""
    for env in ("ALE/Pong-v5", "PongNoFrameskip-v4", "ALE/Breakout-v5"):
        assert resolve_config(algo, env)[0].eval_deterministic is False
    assert resolve_config(algo, env="ALE/Pong-v5", sets=["eval_deterministic=true"])[0].eval_deterministic is True
    assert len(ATARI_PRESETS) == 6 and resolve_config("ppo", "CartPole-v1")[0].eval_deterministic is True


@pytest.mark.slow  # ~3.5 s: three recordings with ffmpeg
def test_record_every_videos_play_as_the_runs_evaluations_and_change_no_training(stochastic_run, tmp_path):
    """A recording is an evaluation episode: sampled for a run of sampled evaluations (from its own seeded stream,
    the training streams untouched: the same weights with and without recordings)."""
    pytest.importorskip("moviepy")
    from types import SimpleNamespace

    from canter.tools.video import VideoRecorder

    agent = canter.load(stochastic_run)
    recorder = VideoRecorder(tmp_path / "rec", "CartPole-v1", 100, seed=4)
    recorder.start(SimpleNamespace(agent=agent))
    recorder.record(100)
    (entry,) = json.loads((tmp_path / "rec" / "videos" / "index.json").read_text())
    assert entry["return"] == play(agent, episodes=1, seed=4 + 10_007, deterministic=False)[0]
    kw = {**QUICK, "eval_deterministic": False}
    recorded = canter.make_trainer("ppo", "CartPole-v1", seed=0, run_dir=tmp_path / "run", record_every=96, **kw)
    plain = canter.make_trainer("ppo", "CartPole-v1", seed=0, **kw)
    for trainer in (recorded, plain):
        list(trainer())
        trainer.close()
    assert len(json.loads((tmp_path / "run" / "videos" / "index.json").read_text())) == 2
    assert same_weights(recorded.agent, plain.agent)


def test_a_resumed_run_s_last_evaluation_says_which_policy_played(tmp_path):
    """The last evaluation a checkpoint keeps (``trainer.last_eval``, restored on resume, which callbacks read until
    the next evaluation) came back as deterministic for a run of sampled evaluations: the saved dict lacked it."""
    canter.train("ppo", "CartPole-v1", seed=0, run_dir=tmp_path / "run", eval_deterministic=False,
                 hooks={"after_update": stop_at_300}, **{**QUICK, "max_steps": 416, "eval_every": 96})
    run = canter.api.resume_trainer(tmp_path / "run")
    try:
        seen = []
        for record in run():
            seen.append(run.trainer.last_eval.deterministic)
            break
    finally:
        run.close()
    assert seen == [False]
