"""How Stable-Baselines3 callbacks port. EvalCallback(eval_freq=N) and CheckpointCallback(save_freq=N) count the callback's calls, one
per vector step (n_envs env steps); canter's eval_every and checkpoint_every count env steps of all the copies. A
config's eval_freq was answered "canter calls it 'eval_every'" and save_freq with "did you mean 'sde_sample_freq'?",
so a ported value evaluated (or saved) n_envs times as often; the answers now say eval_every = eval_freq x n_envs."""
from __future__ import annotations

import re

import pytest

import canter
from canter.callbacks import SB3_CALLBACKS
from canter.errors import CanterError


@pytest.mark.parametrize("theirs, ours", [("eval_freq", "eval_every"), ("save_freq", "checkpoint_every")])
def test_a_per_call_frequency_is_answered_with_canters_key_times_n_envs(theirs, ours):
    with pytest.raises(CanterError, match=rf"canter calls it '{ours}' \(Stable-Baselines3's '{theirs}', which counts "
                                          rf"its callback's calls, one per vector step: {ours} counts the env steps "
                                          rf"of all the env copies, so {ours} = {theirs} x n_envs\)"):
        canter.make_trainer("ppo", "CartPole-v1", sets=[f"{theirs}=1000"])


def test_the_sb3_callbacks_answers_say_so_too():
    assert "its eval_freq x n_envs" in SB3_CALLBACKS["EvalCallback"]
    assert "its save_freq x n_envs" in SB3_CALLBACKS["CheckpointCallback"]


def test_stop_training_on_no_model_improvement_is_early_stopping_one_more():
    """SB3's StopTrainingOnNoModelImprovement(max_no_improvement_evals=M) stops when its count of evaluations without a
    new best exceeds M, at the (M+1)th; canter's early_stopping P stops at the Pth. The answer said early_stopping=P,
    a port that stopped one evaluation early."""
    assert "early_stopping=P with P its max_no_improvement_evals + 1" in SB3_CALLBACKS["StopTrainingOnNoModelImprovement"]
    from canter.stop_criteria import EarlyStopping

    stop = EarlyStopping(3 + 1)  # SB3's max_no_improvement_evals=3: a first best, then 4 evaluations without one
    verdicts = []
    for value in (10.0, 9.0, 9.0, 9.0, 9.0):
        stop.update(value)
        verdicts.append(stop.should_stop(None))
    assert verdicts == [None, None, None, None, "early_stopping"]


@pytest.mark.parametrize("flag, ours", [("--eval-freq", "eval_every"), ("--save-freq", "checkpoint_every")])
def test_the_flags_are_answered_so_too(capsys, flag, ours):
    """canter train --eval-freq 1000 was answered "did you mean '--eval-every'?" alone."""
    from support import assert_one_line_error, run_cli

    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", flag, "1000", "--quiet")
    sb3 = flag[2:].replace("-", "_")
    assert_one_line_error(code, err, f"--{ours.replace('_', '-')}", f"Stable-Baselines3's {sb3} counts its callback's "
                          f"calls, one per vector step; canter's {ours} counts the env steps of all the env copies: "
                          f"{sb3} x n_envs")


@pytest.mark.parametrize("argv", [["eval", "RUN", "--eval-freq", "5"], ["train", "--resume", "RUN", "--eval-freq", "5"]])
def test_the_note_is_only_given_with_the_flag_it_explains(capsys, argv):
    """A command without --eval-every (canter eval, a resume) was answered "did you mean '--device' or ...? (...
    canter's eval_every counts the env steps ...)": a note on a flag the answer did not name."""
    from support import assert_one_line_error, run_cli

    code, _, err = run_cli(capsys, *argv)
    line = assert_one_line_error(code, err, "unrecognized arguments: --eval-freq")
    assert "eval_every" not in line, line


NO_IMPROVEMENT = ("StopTrainingOnNoModelImprovement, which stops after more than max_no_improvement_evals evaluations "
                  "without a new best, canter's early_stopping after that many: early_stopping = "
                  "max_no_improvement_evals + 1")


@pytest.mark.parametrize("given", [dict(sets=["max_no_improvement_evals=3"]), dict(max_no_improvement_evals=3)])
def test_max_no_improvement_evals_is_answered_with_early_stopping_one_more(given):
    """A config's (or keyword's) max_no_improvement_evals was answered "canter calls it 'log_every'
    (Stable-Baselines3's 'log_interval')", the closest spelling of SB3's names."""
    with pytest.raises(CanterError, match=rf"canter calls it 'early_stopping' \(Stable-Baselines3's "
                                          rf"'max_no_improvement_evals' of {re.escape(NO_IMPROVEMENT)}\)$"):
        canter.make_trainer("ppo", "CartPole-v1", **given)


def test_the_max_no_improvement_evals_flag_too(capsys):
    """--max-no-improvement-evals was answered "did you mean '--normalize-value'?"."""
    from support import assert_one_line_error, run_cli

    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--max-no-improvement-evals", "3", "--quiet")
    assert_one_line_error(code, err, "did you mean '--set early_stopping=VALUE'? (Stable-Baselines3's "
                          f"max_no_improvement_evals of {NO_IMPROVEMENT})")


@pytest.mark.parametrize("given", [dict(sets=["min_evals=3"]), dict(min_evals=3)])
def test_min_evals_is_answered_as_stable_baselines3s_own(given):
    """StopTrainingOnNoModelImprovement's min_evals was "did you mean 'n_envs' or 'min_lr' or 'min_delta'?"."""
    with pytest.raises(CanterError, match=r"unknown config key 'min_evals' \(Stable-Baselines3's\): "
                                          r"StopTrainingOnNoModelImprovement's .*early_stopping counts from the first "
                                          r"evaluation"):
        canter.make_trainer("ppo", "CartPole-v1", **given)


@pytest.mark.parametrize("flag", [["--min-evals", "3"], ["--min-evals=3"], ["--verbose", "1"]])
def test_stable_baselines3_only_flags_are_answered_as_their_keys(capsys, flag):
    """--min-evals was "did you mean '--n-envs' or '--set min_lr=VALUE' ...?", --verbose "did you mean '--set' or
    '--vf-coef'?": the flags of SB3-only names now get their config keys' answers."""
    from canter.config_errors import SB3_ONLY
    from support import assert_one_line_error, run_cli

    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *flag, "--quiet")
    name = flag[0][2:].split("=")[0].replace("-", "_")
    line = assert_one_line_error(code, err, f"Stable-Baselines3's {name}: {SB3_ONLY[name]}")
    assert "did you mean" not in line, line
