"""The ``canter`` command line itself: subcommands, misspelt or abbreviated flags, flags before the
algorithm, ``--help``, and the real process (``python -m canter``, ``python -m canter.cli``)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import TINY_ARGV as TINY
from support import assert_one_line_error, run_cli


def test_unknown_subcommand_suggests_train(capsys):
    code, out, err = run_cli(capsys, "trian")
    assert_one_line_error(code, err, "'train'")


def test_train_help_lists_hyperparameters(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # no wrapping inside "(default: 0.2)"
    code, out, err = run_cli(capsys, "train", "ppo", "--help")
    assert code == 0, err
    assert "--clip-range" in out
    assert "default: 0.2" in out
    assert "PPO hyperparameters" in out
    assert err == ""
    assert "with --env" not in out and "Give --env with --help" in out


def test_train_help_with_env_shows_the_presets_values(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--help")
    assert code == 0, err
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip().startswith("--")}
    assert "(default: 2048; with --env CartPole-v1: 32)" in lines["--n-steps"]  # configs/ppo/CartPole-v1.yaml
    assert "with --env" not in lines["--clip-range"]  # the preset keeps the default 0.2
    # and the run values it sets (they were not shown): n_envs 16, target_reward 475, eval_every 4096
    assert "parallel environments (with --env CartPole-v1: 16)" in out
    assert "stop at this mean evaluation return (with --env CartPole-v1: 475.0)" in out
    assert "evaluate every N env steps (with --env CartPole-v1: 4096)" in out
    assert "with --env" not in lines["--seed"] and "with --env" not in out.split("--env ENV", 1)[1].split("\n")[0]
    # the closing note told the reader to give --env, which they had; it now says what the marked values are
    assert "Give --env with --help" not in out and "Values marked 'with --env CartPole-v1' are the ones its preset" in out


def test_train_help_names_the_choices_of_a_hyperparameter(capsys, monkeypatch):
    """'--activation STR  hidden activation (default: relu)' did not say which values are valid."""
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = run_cli(capsys, "train", "dqn", "--help")
    assert code == 0, err
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip().startswith("--")}
    assert "hidden activation: tanh, relu, elu, gelu, silu (default: relu)" in lines["--activation"]
    assert "(the same episode's later steps, its last step, or any of its steps): future, final, episode" in (
        lines["--her-strategy"])
    code, out, err = run_cli(capsys, "train", "ppo", "--help")
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip().startswith("--")}
    assert lines["--lr-schedule"].endswith("constant or linear (to 0) (default: constant)")  # named in its doc


def run_subprocess(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "canter", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_subprocess_unknown_subcommand(tmp_path):
    proc = run_subprocess("trian", cwd=tmp_path)
    assert proc.returncode == 2
    assert_one_line_error(proc.returncode, proc.stderr, "'train'")
    assert proc.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_subprocess_bad_set_value(tmp_path):
    proc = run_subprocess("train", "ppo", "--env", "CartPole-v1", "--set", "lr=abc", "--run-dir", "run",
                          cwd=tmp_path)
    assert proc.returncode == 2
    assert_one_line_error(proc.returncode, proc.stderr, "lr", "abc")
    assert list(tmp_path.iterdir()) == []


def test_abbreviated_flag_is_not_silently_taken_for_another(capsys, workdir):
    """'--n-step' is DQN's n-step return; for PPO it must not silently become --n-steps (argparse prefixes)."""
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *TINY, "--n-step", "5",
                             "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "--n-step", "'--n-steps'")
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("argv,needles", [
    (["train", "ppo", "--env", "CartPole-v1", "--max-stpes", "100"], ["--max-stpes", "'--max-steps'"]),
    (["train", "ppo", "--env", "CartPole-v1", "--lrr", "1e-3"], ["--lrr", "'--lr'"]),
    (["eval", "x", "--episode", "3"], ["--episode", "'--episodes'"]),
    (["train", "--resume", "x", "--max-step", "3"], ["--max-step", "'--max-steps'"]),
    # run keys without a flag of their own: they were answered '--log-std-init' or '--max-steps' (xagents'
    # --early-stop-patience, --plateau-reduce-patience)
    (["train", "ppo", "--env", "CartPole-v1", "--early-stopping", "3"], ["did you mean '--set early_stopping=VALUE'?"]),
    (["train", "ppo", "--env", "CartPole-v1", "--early-stop-patience", "3"], ["'--set early_stopping=VALUE'"]),
    (["tune", "ppo", "--env", "CartPole-v1", "--plateau-reduce-patience", "3"], ["'--set plateau_patience=VALUE'"]),
    # another algorithm's hyperparameter was answered with close spellings alone ('--set' or '--dataset' for --tau),
    # where --set tau=... and a config file's tau: name the algorithms that have it
    (["train", "ppo", "--env", "CartPole-v1", "--tau", "0.01"],
     ["--tau 0.01: ppo has no hyperparameter 'tau', c51, cql, ddpg, dqn and", "(a flag of another algorithm?)"]),
    (["train", "dqn", "--env", "CartPole-v1", "--n-steps=8"],
     ["dqn has no hyperparameter 'n_steps', a2c, acer", "did you mean '--n-step'"]),
    # a misspelling of another algorithm's hyperparameter, as its config key's (--set learning_start=...): it was
    # answered with flags that only looked alike ('--set central_state=VALUE' or '--log-std-init')
    (["train", "ppo", "--env", "CartPole-v1", "--learning-start", "100"],
     ["did you mean '--learning-starts'? ppo has no hyperparameter 'learning_starts', c51, ddpg",
      "(a flag of another algorithm?)"]),
    (["train", "ppo", "--env", "CartPole-v1", "--buffer-siz=100"],
     ["did you mean '--buffer-size'? ppo has no hyperparameter 'buffer_size'"]),
    # canter tune ALGO answers as canter train ALGO: --tau was '--study' or '--trials' or '--set', --learning-start
    # '--prune-startup', and its own hyperparameter --gamma (tune takes them through --set) '--dataset'
    (["tune", "ppo", "--env", "CartPole-v1", "--tau", "3"],
     ["--tau 3: ppo has no hyperparameter 'tau', c51, cql, ddpg, dqn and", "(a flag of another algorithm?)"]),
    (["tune", "ppo", "--env", "CartPole-v1", "--learning-start", "3"],
     ["did you mean '--learning-starts'? ppo has no hyperparameter 'learning_starts', c51, ddpg"]),
    (["tune", "ppo", "--env", "CartPole-v1", "--gamma", "0.9"], ["did you mean '--set gamma=VALUE'?"]),
    (["tune", "-f", "ppo.yaml", "--tau", "3"], ["--tau: ppo has no hyperparameter 'tau'"]),  # the file's algorithm
    # a misspelt other library's name, as its config key (--set learnin_rate=...): --learnin-rate was '--clip-range'
    (["train", "ppo", "--env", "CartPole-v1", "--learnin-rate", "1e-3"], ["did you mean '--lr'?"]),
    (["train", "ppo", "--env", "CartPole-v1", "--estimation-steps", "3"],
     ["canter calls it --n-step, but ppo has no hyperparameter 'n_step'"]),
], ids=["train-typo", "train-hparam-typo", "eval-prefix", "resume-prefix", "run-key", "run-key-typo", "tune-run-key",
        "other-algorithm", "other-algorithm-close", "other-algorithm-misspelt", "other-algorithm-misspelt-equals",
        "tune-other-algorithm", "tune-other-algorithm-misspelt", "tune-own-hparam", "tune-file-algorithm",
        "library-name-misspelt",
        "library-name-misspelt-other-algorithm"])
def test_unknown_flag_suggests_closest(capsys, workdir, argv, needles):
    if "ppo.yaml" in argv:
        (workdir / "ppo.yaml").write_text("algo: ppo\nenv: CartPole-v1\n")
    code, out, err = run_cli(capsys, *argv)
    assert_one_line_error(code, err, *needles)
    assert [p.name for p in workdir.iterdir()] == (["ppo.yaml"] if "ppo.yaml" in argv else [])


def test_resume_with_empty_path_is_one_line(capsys, workdir):
    code, out, err = run_cli(capsys, "train", "--resume=")
    assert_one_line_error(code, err, "--resume")
    assert "'.'" not in err


def test_no_command_is_one_line_on_stderr(capsys):
    code, out, err = run_cli(capsys)
    assert_one_line_error(code, err, "train", "--help")
    assert out == ""


def test_python_m_canter_cli_is_the_canter_command():
    """``python -m canter.cli train ...`` did nothing and exited 0 (the module had no main block)."""
    proc = subprocess.run([sys.executable, "-m", "canter.cli", "train", "nosuchalgo"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "unknown algorithm 'nosuchalgo'" in proc.stderr


def test_help_for_an_algorithm_that_cannot_be_found_says_why(capsys, tmp_path, monkeypatch):
    """``canter train ppo2 --help`` (a typo) or ``canter train my_mod:MyAlgo --help`` whose module fails to
    import printed the generic help without any hyperparameter and exited 0, not saying why."""
    code, _, err = run_cli(capsys, "train", "ppo2", "--help")
    assert_one_line_error(code, err, "unknown algorithm 'ppo2'", "did you mean 'ppo'")
    (tmp_path / "my_broken_algo.py").write_text("raise RuntimeError('broken at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = run_cli(capsys, "train", "my_broken_algo:Algo", "--help")
    assert_one_line_error(code, err, "cannot import module 'my_broken_algo'", "RuntimeError: broken at import")
    code, out, _ = run_cli(capsys, "train", "ppo", "--help")
    assert code == 0 and "--n-steps" in out


def test_train_flags_before_the_algorithm_keep_its_hyperparameter_flags(capsys, tmp_path):
    """``canter train --env CartPole-v1 ppo --lr 0.001`` (or ``--set imports=[my_pkg] NAME --my-knob 1``) took
    the first word not starting with '-' (the value of --env / --set) for the algorithm, so its hyperparameter
    flags were 'unrecognized arguments' (exit 2) and ``--help`` listed none; argparse reads the algorithm right."""
    import canter

    run = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "--env", "CartPole-v1", "--set", "n_steps=32", "ppo", "--lr", "0.002",
                           "--max-steps", "64", "--n-envs", "2", "--quiet", "--run-dir", str(run))
    assert code == 0, err
    assert canter.load(run).algorithm.config.lr == 0.002
    code, out, _ = run_cli(capsys, "train", "--env", "CartPole-v1", "ppo", "--help")
    assert code == 0 and "--n-steps" in out
    code, _, err = run_cli(capsys, "train", "--quiet", "ppo2", "--help")
    assert_one_line_error(code, err, "unknown algorithm 'ppo2'", "did you mean 'ppo'")


def test_train_hyperparameter_flags_before_the_algorithm(capsys, tmp_path):
    """``canter train --lr 0.001 ppo`` took 0.001 for the algorithm ('unrecognized arguments: --lr ppo'),
    and a misspelt algorithm with hyperparameter flags got 'unrecognized arguments' rather than its name."""
    import canter

    run = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "--lr", "0.002", "ppo", "--env", "CartPole-v1", "--n-steps", "32",
                           "--max-steps", "64", "--n-envs", "2", "--quiet", "--run-dir", str(run))
    assert code == 0, err
    assert canter.load(run).algorithm.config.lr == 0.002
    for argv in (["--lr", "0.002", "ppox"], ["ppox", "--lr", "0.002"]):
        code, _, err = run_cli(capsys, "train", *argv, "--env", "CartPole-v1", "--run-dir", str(tmp_path / "x"))
        assert_one_line_error(code, err, "unknown algorithm 'ppox'; did you mean 'ppo'")
    assert not (tmp_path / "x").exists()


def test_two_settings_after_one_set_flag_name_the_fix(capsys, tmp_path):
    """``--set a=1 b=2`` (as other tools' nargs flags take it) said only 'unrecognized arguments: b=2'."""
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", "n_steps=64", "batch_size=64",
                           "--run-dir", str(tmp_path / "x"))
    assert_one_line_error(code, err, "one KEY=VALUE per --set: --set batch_size=64")
    assert not (tmp_path / "x").exists()


def test_integer_flags_take_exponent_form_as_set_and_config_files_do(capsys, workdir):
    """--set max_steps=1e6 and 'max_steps: 1e6' in a file are 1,000,000, but --max-steps 1e6 was refused
    ('invalid int value'), as were --transitions 1e5 and --trials 1e2."""
    from canter.cli import _train_parser
    from canter.tools.collect import _collect_parser

    args = _train_parser("canter train", "ppo").parse_args(["ppo", "--max-steps", "1e6", "--eval-every", "2.5e4"])
    assert (args.max_steps, args.eval_every) == (1_000_000, 25_000)
    assert _collect_parser().parse_args(["--out", "x", "--transitions", "1e5"]).transitions == 100_000
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--max-steps", "1.5e0",
                           "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "argument --max-steps: invalid int value: '1.5e0'")
    assert not (workdir / "run").exists()


def test_the_algorithm_is_found_after_a_short_option_with_its_value_attached():
    """'canter train -fa.yaml ppo --lr 0.01': the algorithm finder took '-fa.yaml' for a flag whose value comes
    next, skipped 'ppo', and PPO's hyperparameter flags were 'unrecognized arguments: --lr 0.01'."""
    from canter.cli import _algo_arg

    assert _algo_arg(["-fa.yaml", "ppo", "--lr", "0.01"]) == "ppo"
    assert _algo_arg(["-f", "a.yaml", "ppo"]) == "ppo" and _algo_arg(["--env", "CartPole-v1", "dqn"]) == "dqn"


def test_train_help_of_an_offline_algorithm_counts_gradient_updates(capsys, monkeypatch):
    """'canter train bc --help' described --max-steps as an 'environment-step budget' and --eval-every as 'every N
    env steps', though an offline run steps no env: its steps are gradient updates (offline.md, the trainer)."""
    monkeypatch.setenv("COLUMNS", "200")
    for argv in (("train", "bc", "--help"), ("train", "cql", "--env", "CartPole-v1", "--help")):
        code, out, err = run_cli(capsys, *argv)
        assert code == 0, err
        text = " ".join(out.split())  # a long metavar puts the help on the next line
        assert "--max-steps MAX_STEPS gradient-update budget" in text and "environment-step" not in text
        assert "--eval-every EVAL_EVERY evaluate every N gradient updates" in text and "N env steps" not in text
        assert "videos every N gradient updates" in text
        assert "--n-envs N_ENVS unused: an offline run steps no training env" in text
    assert "evaluate every N gradient updates (with --env CartPole-v1: " in text  # the preset's value still shown
    code, out, err = run_cli(capsys, "train", "ppo", "--help")
    assert "environment-step budget" in out  # online runs keep theirs


def test_tune_help_says_an_offline_trials_steps_are_gradient_updates(capsys, monkeypatch):
    """'canter tune bc --help' gave --max-steps as the 'env-step budget of each trial'; an offline trial steps no
    env (its steps are gradient updates). tune's parser reads the algorithm with the flags, so the help names both."""
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = run_cli(capsys, "tune", "bc", "--help")
    assert code == 0, err
    text = " ".join(out.split())
    assert "--max-steps MAX_STEPS step budget of each trial (env steps; gradient updates for an offline algorithm" in text
