"""``eval_episodes: 0`` switches evaluation off entirely (eval_every 0 still evaluated at the end, and 0 episodes
were refused): no evaluation, no best checkpoint, and what needs evaluations is refused in one line."""
from __future__ import annotations

import json
import warnings

import pytest

import canter
from canter.data.dataset import collect
from support import TINY_ARGV, assert_one_line_error, run_cli

NO_EVAL = [a if a != "1" or TINY_ARGV[i - 1] != "--eval-episodes" else "0" for i, a in enumerate(TINY_ARGV)]


def test_a_run_without_evaluations_writes_no_best_and_says_so(capsys, tmp_path):
    """The preset's target_reward (ppo on CartPole-v1: 475) needs evaluations: the run has none; the final line
    names no best evaluation return (there is none) but the training episodes' return."""
    assert "0" in NO_EVAL
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *NO_EVAL, "--run-dir", str(tmp_path / "r"))
    assert code == 0, err
    assert "no evaluations (eval_episodes 0), best rolling return" in out and "best eval return" not in out
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["best_eval_return"] is None and summary["last_eval_return"] is None
    assert summary["target_reward"] is None and summary["stop_reason"] == "max_steps"
    assert summary["best_rolling_return"] is not None
    assert not (tmp_path / "r" / "checkpoints" / "best.json").exists()
    assert (tmp_path / "r" / "checkpoints" / "last.json").exists()
    assert canter.load(tmp_path / "r").run_config.eval_episodes == 0  # eval/play take the last checkpoint


@pytest.mark.parametrize("stop", [{}, {"max_seconds": 1e-9}])
def test_no_evaluation_runs_even_at_the_end(stop):
    """eval_every 0 evaluates once, at the end (also a run stopped by its clock); eval_episodes 0 never."""
    trainer = canter.make_trainer("ppo", "CartPole-v1", max_steps=128, n_envs=2, n_steps=64, eval_every=0,
                                  eval_episodes=0, **stop)
    with trainer:
        records = list(trainer())
    assert records[-1].done and all(r.evaluation is None for r in records)
    assert trainer.evaluations == 0 and trainer.best_eval_return is None and trainer.eval_env is None


def test_an_offline_run_without_evaluations_takes_its_blocks_whole(tmp_path, capsys):
    collect("CartPole-v1", 200, None, seed=0).save(tmp_path / "data")
    trainer = canter.make_trainer("bc", dataset=str(tmp_path / "data"), max_steps=100, gradient_steps=50,
                                  eval_every=20, eval_episodes=0)
    with trainer:
        assert [(r.step, r.evaluation) for r in trainer()] == [(50, None), (100, None)]
    code, out, err = run_cli(capsys, "train", "bc", "--dataset", str(tmp_path / "data"), "--max-steps", "20",
                             "--eval-episodes", "0", "--run-dir", str(tmp_path / "r"))
    assert code == 0, err
    assert "eval off" in err and "no evaluations (eval_episodes 0) after 20 steps" in out


@pytest.mark.parametrize("argv,needles", [
    (["--target-reward", "100"], ["'target_reward' is checked at evaluations", "--set target_reward=null"]),
    (["--set", "early_stopping=3"], ["'early_stopping' counts evaluations"]),
    (["--set", "plateau_patience=3"], ["'plateau_patience' counts evaluations"]),
    (["--set", "divergence_guard=restore"], ["divergence_guard: restore", "divergence_guard: stop"]),
], ids=["target_reward", "early_stopping", "plateau_patience", "restore"])
def test_what_needs_evaluations_is_refused_in_one_line(capsys, tmp_path, argv, needles):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *NO_EVAL, *argv,
                           "--run-dir", str(tmp_path / "r"))
    assert_one_line_error(code, err, "eval_episodes: 0 runs none", *needles)
    assert not (tmp_path / "r").exists()


def test_tune_refuses_trials_without_evaluations(capsys, tmp_path):
    pytest.importorskip("optuna")
    code, _, err = run_cli(capsys, "tune", "ppo", "--env", "CartPole-v1", "--trials", "1", "--eval-episodes", "0",
                           "--out", str(tmp_path / "t"))
    assert_one_line_error(code, err, "tune scores each trial by its evaluations", "eval_episodes: 0")
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("monitor", ["eval", "rolling"])
def test_a_patience_that_one_evaluation_at_the_end_leaves_idle_is_warned_about_once(monitor):
    """early_stopping / plateau_patience with eval_every >= max_steps (one evaluation, at the end) were taken without
    a word, and never acted. Each counts evaluations whatever its monitor (rolling reads the training return at
    each), so both are warned about, in one line; with eval_every below max_steps, nothing is said."""
    tiny = dict(n_envs=2, n_steps=32, batch_size=64, eval_episodes=1, monitor=monitor)
    with pytest.warns(canter.CanterWarning) as seen:
        canter.make_trainer("ppo", "CartPole-v1", max_steps=128, eval_every=128, early_stopping=2, **tiny).close()
    idle = [str(w.message) for w in seen if "can never act" in str(w.message)]
    assert idle == ["early_stopping counts evaluations, but eval_every (128) >= max_steps (128) evaluates only at the "
                    "end, so it can never act; the run evaluates at most 2 times (once per rollout of 64 steps): set a "
                    "patience below 2 or a larger max_steps"]  # it said '--eval-every 12', which evaluates twice too
    with warnings.catch_warnings():
        warnings.simplefilter("error", canter.CanterWarning)
        canter.make_trainer("ppo", "CartPole-v1", max_steps=128, eval_every=64, plateau_patience=1, **tiny).close()


def test_a_resumed_runs_patience_is_not_warned_about(tmp_path):
    """A resume is not warned about: its patience counts the run's earlier evaluations, and a longer budget adds an
    evaluation at its end (here plateau_patience 1 lowers the rate at 256 after the evaluation at 128)."""
    tiny = dict(n_envs=2, n_steps=32, batch_size=64, eval_episodes=1, eval_every=128, plateau_patience=1, min_delta=1e9)
    with pytest.warns(canter.CanterWarning, match="plateau_patience counts evaluations"):
        canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "r", max_steps=128, **tiny)
    with warnings.catch_warnings():
        warnings.simplefilter("error", canter.CanterWarning)
        agent = canter.resume(tmp_path / "r", max_steps=256)
    assert agent.metadata["trainer"]["lr_scale"] == 0.5


def test_a_patience_that_whole_rollouts_leave_idle_is_warned_about():
    """An on-policy run evaluates at rollouts' ends: eval_every below max_steps still gave one evaluation, at the end,
    where the first rollout ending at or after eval_every is the last one (eval_every 100, rollouts of 64 steps,
    max_steps 128: first at 128) or the run is one rollout; nothing was said. Now warned; eval_every 64 is not."""
    tiny = dict(n_envs=2, n_steps=32, batch_size=64, eval_episodes=1, early_stopping=1)
    for max_steps, eval_every, needle in ((128, 100, "evaluates first at step 128, the run's end (max_steps 128)"),
                                          (64, 32, "max_steps (64) is one rollout (n_steps 32 x 2 envs = 64 steps)")):
        with pytest.warns(canter.CanterWarning) as seen:
            canter.make_trainer("ppo", "CartPole-v1", max_steps=max_steps, eval_every=eval_every, **tiny).close()
        assert [needle in str(w.message) for w in seen if "can never act" in str(w.message)] == [True]
    with warnings.catch_warnings():
        warnings.simplefilter("error", canter.CanterWarning)
        canter.make_trainer("ppo", "CartPole-v1", max_steps=128, eval_every=64, **tiny).close()
