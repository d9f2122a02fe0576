"""A logger whose close() raises an error (a full disk at its last flush) is a one-line warning naming it: the run's
outcome (finished, diverged, interrupted), its exit code and summary.json stand, and the other loggers still close.
The OSError(28) replaced the run's outcome: a diverged run's message was lost, and as it names no file, canter
train's main() raised it again as a traceback."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

import canter
from support import StubLogger
from canter.cli import _drive, main
from canter.errors import CanterError, CanterWarning
from canter.logging.history import HistoryLogger
from canter.tools.bench_spec import Cell
from canter.tools.benchmark import run_cell

TINY = dict(max_steps=256, n_envs=2, eval_episodes=0, eval_every=0, n_steps=64, batch_size=64, n_epochs=2,
            tensorboard=False)
WARNING = r"the run's HistoryLogger could not close: OSError: \[Errno 28\] No space left on device"


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """HistoryLogger.close() closes its files, then raises ENOSPC with no file name, as a last flush can."""
    real = HistoryLogger.close

    def full(self: HistoryLogger) -> None:
        real(self)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(HistoryLogger, "close", full)


_Closes = StubLogger  # records that it was closed


def _poison(trainer) -> None:
    if trainer.step >= 128:  # the value loss becomes NaN: the guard stops the run
        trainer.algorithm.config.vf_coef = float("nan")


def _interrupt(trainer) -> None:
    if trainer.step >= 128:  # a Ctrl-C, which the run catches to save itself as interrupted
        os.kill(os.getpid(), signal.SIGINT)


def test_a_diverged_run_keeps_its_divergence_error(tmp_path: Path, full_disk: None) -> None:
    run_dir = tmp_path / "run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, hooks={"before_collect": _poison}, **TINY)
    after = _Closes()
    run.loggers.append(after)
    with pytest.warns(CanterWarning, match=WARNING), pytest.raises(CanterError, match="training diverged at step"):
        _drive(run)
    assert after.closed
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "diverged"
    assert not (run_dir / ".canter.lock").exists()


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_an_interrupted_run_reports_its_step_and_exits_130(tmp_path: Path, full_disk: None,
                                                           capsys: pytest.CaptureFixture) -> None:
    run_dir = tmp_path / "run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, hooks={"before_collect": _interrupt},
                              **{**TINY, "max_steps": 512})
    with pytest.warns(CanterWarning, match=WARNING):
        assert _drive(run) == 130
    assert "run saved, continue with: canter train --resume" in capsys.readouterr().err
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "interrupted"


def test_canter_train_finishes_with_a_warning_line_and_exit_0(tmp_path: Path, full_disk: None,
                                                              capsys: pytest.CaptureFixture) -> None:
    run_dir = tmp_path / "run"
    code = main(["train", "ppo", "--env", "CartPole-v1", "--max-steps", "128", "--n-envs", "2", "--set", "n_steps=64",
                 "--set", "batch_size=64", "--set", "eval_episodes=0", "--set", "tensorboard=false",
                 "--run-dir", str(run_dir), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err
    assert [line for line in err.splitlines() if "could not close" in line] == [
        f"canter: warning: run {run_dir}: the run's HistoryLogger could not close: OSError: [Errno 28] No space left "
        "on device; the run's outcome and its summary.json stand"]
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "max_steps"


def test_a_benchmark_cell_is_its_runs_summary(tmp_path: Path, full_disk: None) -> None:
    """run_cell raised the OSError (a diverged cell's too, which it keeps as a result): the benchmark stopped."""
    cell = Cell("ppo", "CartPole-v1", 0, {**TINY, "sets": ["hooks.before_collect=test_logger_close_errors:_poison"]})
    with pytest.warns(CanterWarning, match=WARNING):
        summary = run_cell(cell, str(tmp_path / "run"), None)
    assert summary["stop_reason"] == "diverged" and "training diverged at step" in summary["diverged"]


def test_each_run_of_a_process_says_so(tmp_path: Path, full_disk: None) -> None:
    """Two runs from one line (a script's loop, canter benchmark's cells): the second run's logger failing to close was
    said nothing, its message the first one's, which Python shows once per place."""
    import warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")  # Python's own: once per place and message
        for name in ("a", "b"):
            canter.train("ppo", "CartPole-v1", run_dir=tmp_path / name, quiet=True, **{**TINY, "max_steps": 128})
    said = [str(w.message) for w in seen if "could not close" in str(w.message)]
    assert len(said) == 2 and str(tmp_path / "b") in said[1]


def test_a_run_whose_directory_was_deleted_says_no_summary_stands(tmp_path: Path, full_disk: None) -> None:
    """The run's directory deleted while it ran: nothing is written back, yet the warning said 'its summary.json
    stand(s)'."""
    import shutil

    run_dir = tmp_path / "run"

    def delete(trainer) -> None:
        if trainer.step >= 128:
            shutil.rmtree(run_dir, ignore_errors=True)

    with pytest.warns(CanterWarning) as seen:
        canter.train("ppo", "CartPole-v1", run_dir=run_dir, quiet=True, hooks={"before_collect": delete}, **TINY)
    (said,) = [str(w.message) for w in seen if "could not close" in str(w.message)]
    assert said.endswith("; the run's outcome stands (its directory was deleted while the run was open: nothing was "
                         "written back into it)") and "summary.json" not in said
    assert not run_dir.exists()


def test_a_run_that_failed_before_its_first_checkpoint_says_its_directory_was_removed(tmp_path: Path,
                                                                                     full_disk: None) -> None:
    def fail(trainer) -> None:
        raise RuntimeError("no simulator licence")

    run_dir = tmp_path / "run"
    with pytest.warns(CanterWarning) as seen, pytest.raises(RuntimeError, match="no simulator licence"):
        canter.train("ppo", "CartPole-v1", run_dir=run_dir, quiet=True, hooks={"on_train_start": fail}, **TINY)
    (said,) = [str(w.message) for w in seen if "could not close" in str(w.message)]
    assert said.endswith("; the run's outcome stands (it failed before its first checkpoint: its directory was "
                         "removed)") and not (run_dir / "summary.json").exists()
