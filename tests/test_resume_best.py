"""The ``best`` checkpoint across a resume: a run stopped inside an iteration after a new best resumes from an
older ``last``, and must neither forget that best nor replace its checkpoint with a worse policy."""
from __future__ import annotations

import json

import pytest

import canter
from canter.api import resume_trainer
from canter.checkpoint import read_metadata
from support import register_unsaveable, scripted

TINY = dict(n_envs=2, n_steps=16, batch_size=32, n_epochs=1, eval_every=32, eval_episodes=1, tensorboard=False)


def _crash_at_third_evaluation(trainer, result):
    if trainer.evaluations >= 3:
        raise RuntimeError("the env crashed")


@pytest.mark.parametrize("env", ["CartPole-v1", "unsaveable"])
def test_a_best_saved_after_last_is_kept_by_the_resumed_run(tmp_path, env):
    """Evaluations 1, 5, 2, then an error inside the iteration: ``best`` holds the 5 policy (step 64) while ``last``
    is the start's. Resumed (exactly or, with an env that cannot be saved, with fresh episodes), an evaluation of 3
    replaced ``best`` (a worse policy) and the summary called 3 the run's best."""
    env = register_unsaveable("CartPole-v1", "LockedCartPole-best-test") if env == "unsaveable" else env
    run_dir = tmp_path / "run"
    run = canter.make_trainer("ppo", env, run_dir=run_dir, max_steps=320, hooks={"on_evaluate": _crash_at_third_evaluation},
                              **TINY)
    scripted(run.trainer, [1.0, 5.0, 2.0])
    with pytest.raises(RuntimeError, match="the env crashed"):
        for _ in run():
            pass
    assert read_metadata(run_dir / "checkpoints" / "last")["step"] == 0
    assert read_metadata(run_dir / "checkpoints" / "best")["step"] == 64
    resumed = resume_trainer(run_dir, max_steps=96)
    seen = scripted(resumed.trainer, [3.0, 4.0, 6.0])
    records = list(resumed())
    resumed.close()
    assert seen == [3.0, 4.0, 6.0] and not any(r.new_best for r in records[:-1]) and records[-1].new_best
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["best_eval_return"] == 6.0 and summary["steps"] == 96
    assert read_metadata(run_dir / "checkpoints" / "best")["step"] == 96  # the 6, which beat the 5


def test_the_resumed_run_stops_with_the_best_it_had_saved(tmp_path):
    run_dir = tmp_path / "run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, max_steps=320,
                              hooks={"on_evaluate": _crash_at_third_evaluation}, **TINY)
    scripted(run.trainer, [1.0, 5.0, 2.0])
    with pytest.raises(RuntimeError):
        for _ in run():
            pass
    resumed = resume_trainer(run_dir, max_steps=32)
    scripted(resumed.trainer, [3.0])
    list(resumed())
    resumed.close()
    best = read_metadata(run_dir / "checkpoints" / "best")
    assert best["step"] == 64 and best["trainer"]["best_eval_return"] == 5.0  # before: step 32, the 3
    assert json.loads((run_dir / "summary.json").read_text())["best_eval_return"] == 5.0
