"""A resume can drop a run's time budget: ``canter train --resume RUN --max-seconds null`` and
``canter.resume(RUN, max_seconds=None)``. Before, the flag was argparse's 'invalid float value' (``inf`` is refused as
not finite, as for a new run), and the keyword's None meant 'not given': the run kept its saved ``max_seconds`` and
a run stopped by it was refused as finished, while ``canter train --max-seconds null`` took null for a new run.
Not given, the saved budget is kept."""
from __future__ import annotations

import json

import pytest

import canter
from support import assert_one_line_error, run_cli

TINY = dict(max_steps=32, max_seconds=0.001, n_envs=1, n_steps=8, eval_episodes=0, tensorboard=False, quiet=True)


@pytest.fixture
def timed_out(tmp_path):
    """A run stopped by its tiny time budget after its first iteration."""
    run_dir = tmp_path / "run"
    canter.train("a2c", "CartPole-v1", run_dir=run_dir, **TINY)
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "max_seconds"
    return run_dir


def _finished(run_dir):
    summary = json.loads((run_dir / "summary.json").read_text())
    config = (run_dir / "config.yaml").read_text()
    return summary["steps"], summary["stop_reason"], "max_seconds: null" in config


@pytest.mark.parametrize("null", ["null", "none"])
def test_max_seconds_null_drops_the_budget_on_resume(timed_out, capsys, null):
    code, _, err = run_cli(capsys, "train", "--resume", str(timed_out), "--max-seconds", null, "--quiet")
    assert code == 0, err
    assert _finished(timed_out) == (32, "max_steps", True)


def test_resume_max_seconds_none_given_drops_it(timed_out):
    canter.resume(timed_out, max_seconds=None)
    assert _finished(timed_out) == (32, "max_steps", True)


def test_not_given_the_saved_budget_is_kept(timed_out, capsys):
    code, _, err = run_cli(capsys, "train", "--resume", str(timed_out))
    assert_one_line_error(code, err, "already finished (stop reason: max_seconds); nothing to resume; "
                                     "pass --max-seconds S to extend it (or --max-seconds null to drop the time budget)")
    with pytest.raises(canter.CanterError, match=r"nothing to resume; pass max_seconds=S to extend it \(or "
                                                 r"max_seconds=None to drop the time budget\)$"):
        canter.resume(timed_out)


def test_a_word_that_is_no_number_is_refused(timed_out, capsys):
    code, _, err = run_cli(capsys, "train", "--resume", str(timed_out), "--max-seconds", "forever")
    assert code == 2 and "'forever'" in err and "null" in err, err


def test_a_too_small_budget_given_is_told_null_drops_it_too(timed_out, capsys):
    """e93c29e7 named null beside S where no budget was given; a budget given too small still named only S."""
    code, _, err = run_cli(capsys, "train", "--resume", str(timed_out), "--max-seconds", "0.0001")
    assert_one_line_error(code, err, "s to extend it, got 0.0001 (or --max-seconds null to drop the time budget)")
    with pytest.raises(canter.CanterError, match=r"s to extend it, got 0\.0001 \(or max_seconds=None to drop the "
                                                 r"time budget\)$"):
        canter.resume(timed_out, max_seconds=0.0001)
