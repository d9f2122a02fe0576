"""What the command line says to a new user's common mistakes, and what its ``--help`` says of defaults."""
from __future__ import annotations

import pytest

from support import assert_one_line_error, run_cli


@pytest.mark.parametrize("argv", [["ppo", "--env", "CartPole-v1"], ["--lr", "0.1"], ["--set", "lr=0.1"],
                                  ["--n-envs", "4"], ["-f", "run.yaml"]],
                         ids=["new-run", "hyperparameter", "set", "run-flag", "config-file"])
def test_resume_with_a_new_runs_argument_suggests_no_look_alike(capsys, workdir, argv):
    """A new run's argument given to --resume was answered with the resume option spelt most like it: '--lr' with
    'did you mean --resume?', '--set' with '--dataset', 'ppo --env' with '--wandb' or '--quiet'. The line now
    says which options --resume takes, and nothing else."""
    code, out, err = run_cli(capsys, "train", "--resume", "x", *argv)
    line = assert_one_line_error(code, err, "unrecognized arguments:", "only --max-steps")
    assert "did you mean" not in line
    # a misspelt resume option keeps its closest spelling
    code, out, err = run_cli(capsys, "train", "--resume", "x", "--max-step", "3")
    assert_one_line_error(code, err, "did you mean '--max-steps'")


@pytest.mark.parametrize("argv,near", [
    (["train", "ppo", "--env", "CartPole-v1", "--vectorization", "asnyc"], "did you mean 'async'"),
    (["plot", "runs/x", "--x", "stpes"], "did you mean 'steps'?"),
], ids=["vectorization", "plot-x"])
def test_a_misspelt_choice_names_the_closest(capsys, workdir, argv, near):
    """argparse's 'invalid choice' listed the choices but named none, where '--set vectorization=asnyc' said
    "did you mean 'async'"."""
    code, out, err = run_cli(capsys, *argv)
    assert_one_line_error(code, err, "invalid choice: 'asnyc'" if "asnyc" in argv else "invalid choice: 'stpes'", near)
    assert list(workdir.iterdir()) == []
