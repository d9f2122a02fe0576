"""The last evaluation a resumable checkpoint keeps (``trainer.last_eval``, which callbacks and the console read
until the next evaluation) comes back whole from --resume."""
from __future__ import annotations

import pytest

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from support import ENV, stop_at_300  # noqa: E402


def test_a_resumed_multi_agent_run_s_last_evaluation_counts_episodes_not_agents(tmp_path):
    """A multi-agent env's episode gives one return per agent, which EvalResult.n_episodes counts as one episode;
    the resume state kept the returns but not n_episodes, so the resumed last_eval said 2 x the episodes."""
    canter.train("ppo", ENV, env_kwargs={"n_agents": 2}, seed=0, run_dir=tmp_path / "run", n_envs=2, n_steps=16,
                 batch_size=32, n_epochs=1, eval_every=160, eval_episodes=3, eval_envs=2, max_steps=416,
                 tensorboard=False, hooks={"after_update": stop_at_300}, quiet=True)
    run = canter.api.resume_trainer(tmp_path / "run")
    try:
        for record in run():  # the first iteration after the resume (step 384) does not evaluate
            assert record.evaluation is None
            ev = run.trainer.last_eval
            break
    finally:
        run.close()
    assert len(ev.returns) == 6 and ev.episodes == 3
