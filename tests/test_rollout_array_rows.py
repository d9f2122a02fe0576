"""A learner/explorer rollout too big for memory tells a multi-agent env's rows as agent rows, as the trainers'
own messages do (``rollout_rows``): it said "x 4 envs" of 2 env copies of 2 agents."""
from __future__ import annotations

import pytest

import canter
from canter.errors import CanterError
from tests.support import assert_one_line_error, run_cli

ROWS = "x 4 agent rows (2 env copies x 2 agents) does not fit in memory"


@pytest.mark.parametrize("algo", ["impala", "appo"])
def test_async_rollout_too_big_names_agent_rows(capsys, workdir, algo):
    """The learner's setup refuses the rollout before the run starts (one process, the in-process explorer)."""
    pytest.importorskip("pettingzoo")
    code, _, err = run_cli(capsys, "train", algo, "--env", "pettingzoo:tests.match_agents", "--n-envs", "2",
                           "--max-steps", "256", "--set", "n_steps=1e18", "--quiet", "--run-dir", str(workdir / "run"))
    lines = [ln for ln in err.splitlines() if not ln.startswith("canter: warning:")]  # max_steps < one rollout
    assert_one_line_error(code, "\n".join(lines), "a rollout of n_steps 1,000,000,000,000,000,000 " + ROWS,
                          "lower hparams.n_steps")


def test_explorers_own_rollout_too_big_names_agent_rows():
    """The explorer's own arrays (a Ray explorer's, where the learner's setup check is not what fails)."""
    pytest.importorskip("pettingzoo")
    trainer = canter.make_trainer("impala", "pettingzoo:tests.match_agents", seed=0, n_envs=2, max_steps=256,
                                  eval_every=0)
    try:
        with pytest.raises(CanterError, match=r"a rollout of n_steps 1,000,000,000,000,000,000 " + ROWS.replace(
                "(", r"\(").replace(")", r"\)")):
            trainer.pool.explorer.rollout(None, 0, 10**18)
    finally:
        trainer.close()


def test_single_agent_rows_stay_envs(capsys, workdir):
    """A single-agent env's rows are envs, as before."""
    code, _, err = run_cli(capsys, "train", "impala", "--env", "CartPole-v1", "--n-envs", "2", "--max-steps", "256",
                           "--set", "n_steps=1e18", "--quiet", "--run-dir", str(workdir / "run"))
    lines = [ln for ln in err.splitlines() if not ln.startswith("canter: warning:")]
    assert_one_line_error(code, "\n".join(lines), "x 2 envs does not fit in memory")
