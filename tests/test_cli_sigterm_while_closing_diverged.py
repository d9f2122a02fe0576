"""canter train: a SIGTERM while a diverged run closes (its loggers: a W&B finish) still ends in the usual one-line
divergence error. The Ctrl-C it becomes replaced the run's TrainingDiverged, and _drive took it for one that came
after a finished run's end: it printed 'finished (diverged): ...' and exited 130."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import canter
from canter.cli import _drive
from canter.errors import CanterError
from test_cli_sigterm_while_closing import _TermAtClose
from support import default_sigterm  # noqa: E402,F401  (autouse: SIGTERM at its default action per test)


def _poison(trainer) -> None:
    if trainer.step >= 128:  # the value loss term becomes NaN: the guard stops the run
        trainer.algorithm.config.vf_coef = float("nan")


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_a_sigterm_while_a_diverged_run_closes_is_the_divergence_error(tmp_path: Path, tiny_ppo: dict,
                                                                      capsys: pytest.CaptureFixture) -> None:
    run_dir = tmp_path / "run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, **{**tiny_ppo, "eval_episodes": 0},
                              tensorboard=False, hooks={"before_collect": _poison})
    logger = _TermAtClose()
    run.loggers.append(logger)
    with pytest.raises(CanterError, match="training diverged at step") as error:
        _drive(run)
    assert logger.default_at_close is False, "SIGTERM had its default action as the loggers closed: the process dies"
    assert str(run_dir / "checkpoints" / "last") in str(error.value)
    assert "finished" not in capsys.readouterr().out
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "diverged"
    assert not (run_dir / ".canter.lock").exists()
