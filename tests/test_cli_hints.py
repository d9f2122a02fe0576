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


def _help_lines(capsys, *argv: str) -> dict[str, str]:
    """``canter ARGV --help``'s option lines, by option (wrapped help joined)."""
    code, out, err = run_cli(capsys, *argv, "--help")
    assert code == 0, err
    lines: dict[str, str] = {}
    for line in out.replace("\n                        ", " ").splitlines():
        if line.startswith("  -"):
            lines[line.split()[0].rstrip(",")] = line
    return lines


def test_help_states_the_defaults_of_run_flags_and_seeds(capsys, monkeypatch):
    """'--max-steps environment-step budget', '--eval-every evaluate every N env steps' and eval's '--seed
    evaluation seed' did not say what they default to (100000, 10000, 12345: which docs/atari.md names)."""
    from canter.builtins import algorithm_info
    from canter.config import RunConfig

    monkeypatch.setenv("COLUMNS", "100")
    lines = _help_lines(capsys, "train", "ppo")
    for key in ("max_steps", "eval_every", "eval_episodes", "vectorization"):
        default = RunConfig.__dataclass_fields__[key].default
        assert f"default {default}" in lines[f"--{key.replace('_', '-')}"], lines[f"--{key.replace('_', '-')}"]
    for key in ("target_reward", "max_seconds"):
        assert "default: none" in lines[f"--{key.replace('_', '-')}"]
    assert f"default: {algorithm_info('ppo')['default_n_envs']}, the algorithm's" in lines["--n-envs"]
    assert "default 0: never" in lines["--record-every"]
    # a preset's value is shown instead, as before
    assert "default" not in _help_lines(capsys, "train", "ppo", "--env", "CartPole-v1")["--eval-every"]
    assert "(default 12345)" in _help_lines(capsys, "eval")["--seed"]
    assert "(default 0)" in _help_lines(capsys, "play")["--seed"]


def test_a_mistyped_module_names_the_modules_beside_it(capsys, tmp_path, monkeypatch):
    """'canter list --import my_pkg.componets' said 'No module named ...' and named none of the package's modules;
    a top-level name, which any installed module might resemble, is still answered without a guess."""
    package = tmp_path / "hint_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "components.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, err = run_cli(capsys, "list", "--import", "hint_pkg.componets")
    assert_one_line_error(code, err, "No module named 'hint_pkg.componets'; did you mean 'hint_pkg.components'?")
    code, out, err = run_cli(capsys, "list", "--import", "hint_pkk")
    assert "did you mean" not in assert_one_line_error(code, err, "No module named 'hint_pkk'")


@pytest.mark.parametrize("command", [["train", "ppo"], ["tune", "ppo"]])
def test_a_set_split_at_its_space_shows_the_one_word_form(capsys, workdir, command):
    """'--set lr 0.1' (argparse's and Hydra's habit of a space) was 'unrecognized arguments: 0.1' alone."""
    code, out, err = run_cli(capsys, *command, "--env", "CartPole-v1", "--set", "lr", "0.1")
    assert_one_line_error(code, err, "unrecognized arguments: 0.1; --set takes KEY=VALUE as one word: --set lr=0.1")
    assert list(workdir.iterdir()) == []



@pytest.mark.parametrize("argv,shown", [
    (["--set", "net_arch", "[64,", "64]"], "--set 'net_arch=[64, 64]'"),
    (["--gamma", "0.1", "--set", "lr", "0.1"], "--set lr=0.1"),
], ids=["bracketed-value", "value-given-before"])
def test_a_set_split_at_its_space_shows_the_whole_value(capsys, workdir, argv, shown):
    """'--set net_arch [64, 64]' was answered '--set net_arch=[64,' (half the value, an invalid one), and '--gamma 0.1
    --set lr 0.1' with no hint: the 0.1 looked up was gamma's."""
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *argv)
    line = assert_one_line_error(code, err, f"--set takes KEY=VALUE as one word: {shown}")
    assert line.endswith(shown)
    assert list(workdir.iterdir()) == []

def test_tune_help_states_the_trial_flags_defaults(capsys, monkeypatch):
    """canter tune's trial flags named no default either ('--max-steps step budget of each trial')."""
    monkeypatch.setenv("COLUMNS", "100")
    lines = _help_lines(capsys, "tune")
    assert "default 100000" in lines["--max-steps"] and "default 10000" in lines["--eval-every"]
    assert "default: the algorithm's" in lines["--n-envs"] and "default: none" in lines["--target-reward"]


@pytest.mark.parametrize("word", ["help", "-help"])
def test_help_as_a_command_points_to_the_help_flag(capsys, word):
    """'canter help' was answered "unknown command 'help'; did you mean 'eval'?"."""
    code, out, err = run_cli(capsys, word)
    line = assert_one_line_error(code, err, "canter --help lists the commands", "canter COMMAND --help")
    assert "eval" not in line


def test_a_mistyped_pettingzoo_game_is_guessed_once(capsys, workdir):
    """PettingZoo's games have a hint of their own ('did you mean pettingzoo.classic.tictactoe_v3'): the module
    guess above is not added to it (the line said 'did you mean' twice)."""
    pytest.importorskip("pettingzoo")
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "pettingzoo:pettingzoo.classic.tictactoe_v2")
    line = assert_one_line_error(code, err, "did you mean pettingzoo.classic.tictactoe_v3")
    assert line.count("did you mean") == 1


@pytest.mark.parametrize("env,near", [("pettingzoo.clasic.tictactoe_v3", "did you mean 'pettingzoo.classic'?"),
                                      ("pz_hint_pkg.sub.envz.x", "did you mean 'pz_hint_pkg.sub.envs'?")],
                         ids=["family", "users-package"])
def test_a_mistyped_package_of_a_pettingzoo_env_is_guessed(capsys, workdir, monkeypatch, env, near):
    """Where PettingZoo's game hint has nothing to say (a mistyped family or package, not the game), the module
    guess was dropped too: 'pettingzoo:pettingzoo.clasic.tictactoe_v3' named no 'pettingzoo.classic', which
    '--import pettingzoo.clasic.tictactoe_v3' did."""
    pytest.importorskip("pettingzoo")
    (workdir / "pz_hint_pkg" / "sub").mkdir(parents=True)
    for name in ("__init__.py", "sub/__init__.py", "sub/envs.py"):
        (workdir / "pz_hint_pkg" / name).write_text("")
    monkeypatch.syspath_prepend(str(workdir))
    code, out, err = run_cli(capsys, "train", "ppo", "--env", f"pettingzoo:{env}")
    line = assert_one_line_error(code, err, near)
    assert line.count("did you mean") == 1


def test_resuming_a_tune_output_says_how_its_study_continues(capsys, workdir):
    """'canter train --resume runs/tune-ppo-CartPole-v1' said it 'has no checkpoints/last to resume from', as of a
    run directory (canter eval of it already named it a tune output)."""
    out = workdir / "tune-ppo-CartPole-v1"
    (out / "agents").mkdir(parents=True)
    (out / "best.yaml").write_text("algo: ppo\n")
    code, _, err = run_cli(capsys, "train", "--resume", str(out))
    assert_one_line_error(code, err, "is a canter tune output, not a run directory", "same canter tune command")


def test_resuming_a_tune_outputs_agents_folder_says_it_is_one(capsys, workdir):
    """'canter train --resume OUT/agents' still said 'has no checkpoints/last to resume from', where canter eval of
    OUT/agents names it a tune output: only OUT's own agents/ folder was looked at."""
    agents = workdir / "tune-ppo-CartPole-v1" / "agents"
    agents.mkdir(parents=True)
    for suffix in (".json", ".safetensors"):
        (agents / f"trial-3{suffix}").write_text("{}")
    code, _, err = run_cli(capsys, "train", "--resume", str(agents))
    assert_one_line_error(code, err, f"'{agents}' is a canter tune output", "same canter tune command")
    code, _, err = run_cli(capsys, "eval", str(agents))
    assert_one_line_error(code, err, f"'{agents}' is a canter tune output", f"'{agents / 'trial-3'}'")


def test_resuming_a_tune_output_holding_only_its_study_says_it_is_one(capsys, workdir):
    """A tune stopped before any trial finished leaves OUT/study.db alone: '--resume OUT' said it 'has no
    checkpoints/last to resume from', as of a run directory."""
    out = workdir / "tune-ppo-CartPole-v1"
    out.mkdir()
    (out / "study.db").write_bytes(b"")
    code, _, err = run_cli(capsys, "train", "--resume", str(out))
    assert_one_line_error(code, err, f"'{out}' is a canter tune output, not a run directory", "same canter tune command")


def test_evaluating_a_tune_output_holding_only_its_study_says_it_is_one(capsys, workdir):
    """'canter eval OUT' of a tune stopped before any trial finished said 'is not a canter run directory (no
    config.yaml or checkpoints/)'."""
    out = workdir / "tune-ppo-CartPole-v1"
    out.mkdir()
    (out / "study.db").write_bytes(b"")
    code, _, err = run_cli(capsys, "eval", str(out))
    assert_one_line_error(code, err, f"'{out}' is a canter tune output that has kept no agent yet", "same canter tune")


def test_evaluating_a_tune_output_whose_trials_all_failed_does_not_say_none_finished(capsys, workdir):
    """A tune whose trials all failed writes trials.csv alone: 'canter eval OUT' said it kept no agent because 'no
    trial finished', where its trials.csv lists the trials that did, failed."""
    out = workdir / "tune-ppo-CartPole-v1"
    out.mkdir()
    (out / "trials.csv").write_text("number,state,value,steps,seconds\n0,FAIL,,,\n1,FAIL,,,\n")
    code, _, err = run_cli(capsys, "eval", str(out))
    line = assert_one_line_error(code, err, f"'{out}' is a canter tune output that has kept no agent yet (its "
                                            f"trials.csv lists the trials it ran, which kept none)")
    assert "no trial finished" not in line
