"""``canter train --target-reward null`` (or ``none``) drops a shipped preset's target, as ``--set target_reward=null``
does, and ``--max-seconds null`` sets no time budget; before, both were argparse's 'invalid float value', and the
only way to train CartPole-v1 past PPO's preset target of 475 from the flags was --set."""
from __future__ import annotations

import json

import pytest

from support import run_cli_paths


@pytest.mark.parametrize("null", ["null", "none", "None"])
def test_target_reward_null_drops_the_presets_target(capsys, tmp_path, null):
    run_dir = tmp_path / "run"
    code, out, err = run_cli_paths(capsys, "train", "ppo", "--env", "CartPole-v1", "--max-steps", 512, "--eval-every",
                                 512, "--eval-episodes", 1, "--target-reward", null, "--max-seconds", null,
                                 "--run-dir", run_dir, "--quiet")
    assert code == 0, err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["target_reward"] is None and summary["stop_reason"] == "max_steps"
    assert "finished (max_steps)" in out + err  # a run without a target says so, not 'not solved'


def test_target_reward_that_is_no_number_says_null_is_taken(capsys, tmp_path):
    code, _, err = run_cli_paths(capsys, "train", "ppo", "--env", "CartPole-v1", "--target-reward", "high",
                                 "--run-dir", tmp_path / "run", "--quiet")
    assert code == 2 and "'high'" in err and "null" in err, err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("value, want", [("null", None), ("none", None), ("300", 300.0)])
def test_tune_takes_target_reward_null_for_its_trials(value, want):
    """canter tune's --target-reward likewise: its trials get target_reward None (the preset's 475 dropped, as
    'canter tune ppo --env CartPole-v1 --target-reward null' wrote best.yaml with target_reward: null)."""
    from canter.tools.commands import _parser, _run_overrides, _trial_flags

    p = _parser("canter tune", "")
    _trial_flags(p)
    assert _run_overrides(p.parse_args(["--target-reward", value])) == {"target_reward": want}
