"""An unknown flag that other tools spell for what a canter command calls otherwise is answered with that
command's flag (``canter collect --steps``: ``--transitions``), not with the flags that only look alike, and a
positional argument given as a flag (``--run-dir``) says it takes none."""
from __future__ import annotations

import pytest

from support import assert_one_line_error, run_cli


@pytest.mark.parametrize("argv, meant", [
    (["collect", "runs/x", "--steps", "100", "--out", "d"], "did you mean '--transitions'?"),
    (["tune", "ppo", "--env", "CartPole-v1", "--run-dir", "x"], "did you mean '--out'?"),
    (["tune", "ppo", "--env", "CartPole-v1", "--n-trials", "5"], "did you mean '--trials'?"),
    (["tune", "ppo", "--env", "CartPole-v1", "--workers", "2"], "did you mean '--jobs'?"),
    (["train", "ppo", "--env", "CartPole-v1", "--steps", "100"], "did you mean '--max-steps'?"),
    (["train", "ppo", "--env", "CartPole-v1", "--output", "x"], "did you mean '--run-dir'?"),
    (["play", "runs/x", "--output-dir", "v"], "did you mean '--video-dir'?"),
    (["collect", "--run-dir", "runs/x", "--out", "d"], "RUN_DIR is given without a flag: canter collect RUN_DIR"),
    (["eval", "--run-dir", "runs/x"], "RUN_DIR is given without a flag: canter eval RUN_DIR"),
])
def test_flag_of_another_tool_names_the_commands_own(capsys, argv, meant):
    code, out, err = run_cli(capsys, *argv)
    assert_one_line_error(code, err, meant)


def test_a_flag_of_no_group_keeps_the_closest_spelling(capsys):
    code, out, err = run_cli(capsys, "collect", "--epsilom", "0.1", "--out", "d", "--env", "CartPole-v1")
    assert_one_line_error(code, err, "did you mean '--epsilon'?")
