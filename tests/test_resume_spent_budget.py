"""A finished run whose ``last`` says ``stop_reason: null`` (older runs; an ``on_checkpoint`` hook that raised at the
final ``last`` before 3e319930) is finished by its counters: ``--resume`` with no new budget trained one more
iteration past ``max_steps`` (32 -> 40 steps), as the resume check read only the saved stop reason."""
from __future__ import annotations

import json

import pytest

import canter
from canter.resume_settings import spent_budget
from checkpoint_support import write_checkpoint_json
from support import assert_one_line_error, run_cli

TINY = dict(max_steps=32, n_envs=1, n_steps=8, eval_episodes=0, tensorboard=False, quiet=True)


@pytest.fixture
def reasonless(tmp_path):
    """A run trained to its 32 steps whose 'last' is hand-edited to say stop_reason null."""
    run_dir = tmp_path / "run"
    canter.train("a2c", "CartPole-v1", run_dir=run_dir, **TINY)
    last = run_dir / "checkpoints" / "last.json"
    meta = json.loads(last.read_text())
    assert (meta["step"], meta["stop_reason"]) == (32, "max_steps")
    meta["stop_reason"] = None
    write_checkpoint_json(last, meta)
    return run_dir


def test_a_finished_run_without_its_stop_reason_is_not_trained_further(reasonless, capsys):
    code, _, err = run_cli(capsys, "train", "--resume", str(reasonless))
    assert_one_line_error(code, err, "already finished (stop reason: max_steps); nothing to resume; "
                                     "pass --max-steps N to extend it")
    assert json.loads((reasonless / "checkpoints" / "last.json").read_text())["step"] == 32
    with pytest.raises(canter.CanterError, match=r"nothing to resume; pass max_steps=N to extend it$"):
        canter.resume(reasonless)


def test_a_new_budget_still_extends_it(reasonless):
    canter.resume(reasonless, max_steps=40, quiet=True)
    assert json.loads((reasonless / "summary.json").read_text())["steps"] == 40


def test_spent_budget_reads_the_counters():
    meta = {"step": 31, "config": {"max_steps": 32, "max_seconds": 5.0}, "trainer": {"wall_time": 4.9}}
    assert spent_budget(meta) is None
    assert spent_budget({**meta, "step": 32}) == "max_steps"
    assert spent_budget({**meta, "trainer": {"wall_time": 5.0}}) == "max_seconds"
    assert spent_budget({**meta, "config": {"max_steps": 32, "max_seconds": None}, "trainer": {"wall_time": 9}}) is None
