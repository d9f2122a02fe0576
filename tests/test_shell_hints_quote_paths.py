"""The commands that one-line errors suggest quote a path with a space for the shell (26c5e2ef quoted the
train-on hint of a stopped run; these siblings pasted the path in unquoted, so it split into two arguments)."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from canter.errors import CanterError


def _command(message: str, start: str) -> list[str]:
    """The words of the command in ``message`` that begins with ``start``, up to a closing parenthesis."""
    return shlex.split(start + message.split(start, 1)[1].split(")")[0])


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run directory whose path has a space."""
    path = tmp_path / "my run"
    (path / "checkpoints").mkdir(parents=True)
    return path


def test_a_run_given_as_dataset_names_canter_collect_with_its_path_quoted(run_dir):
    from canter.data.dataset import _missing_dataset_hint

    (run_dir / "config.yaml").write_text("algo: ppo\n")
    words = _command(_missing_dataset_hint(run_dir), "canter collect")
    assert words == ["canter", "collect", str(run_dir), "--out", "PATH"], words


def test_a_run_killed_as_it_started_names_the_run_dir_quoted(run_dir):
    from canter.run_dirs import nothing_to_resume

    (run_dir / "checkpoints").rmdir()
    (run_dir / ".canter.lock").touch()
    words = _command(str(nothing_to_resume(run_dir)), "canter train ALGO")
    assert words == ["canter", "train", "ALGO", "--run-dir", str(run_dir)], words


def test_an_edited_changeable_setting_names_the_resume_command_quoted(run_dir):
    from canter.resume_checks import check_config_unedited

    (run_dir / "config.yaml").write_text("algo: ppo\nenv: CartPole-v1\nseed: 0\nkeep_checkpoints: 5\n")
    with pytest.raises(CanterError) as info:
        check_config_unedited(run_dir, {"algo": "ppo", "env": "CartPole-v1", "seed": 0, "keep_checkpoints": 3})
    words = _command(str(info.value), "canter train --resume")
    assert words[:4] == ["canter", "train", "--resume", str(run_dir)], words


def test_an_edited_config_names_the_new_run_command_quoted(run_dir):
    from canter.resume_checks import check_config_unedited

    (run_dir / "config.yaml").write_text("algo: ppo\nenv: CartPole-v1\nseed: 0\ngamma: 0.5\n")
    with pytest.raises(CanterError) as info:
        check_config_unedited(run_dir, {"algo": "ppo", "env": "CartPole-v1", "seed": 0, "gamma": 0.9})
    words = _command(str(info.value), "canter train ppo")
    assert words == ["canter", "train", "ppo", "-f", str(run_dir / "config.yaml"), "--run-dir", "NEW_DIR"], words


@pytest.mark.parametrize("flags", [True, False])
def test_a_moved_datasets_fix_names_the_run_quoted(run_dir, flags):
    from canter.resume_checks import resume_dataset

    with pytest.raises(CanterError) as info:
        resume_dataset(run_dir / "it's", {"dataset": "data/x"}, {"counters": {}}, "", flags=flags)
    if flags:
        words = _command(str(info.value), "canter train --resume")
        assert words == ["canter", "train", "--resume", str(run_dir / "it's"), "--dataset", "NEW_PATH"], words
    else:  # the Python call's path is a literal (a quote in it was not)
        call = str(info.value).split("canter.resume(", 1)[1].split(", dataset=")[0]
        assert eval(call) == str(run_dir / "it's"), call


def test_a_run_without_a_replay_names_canter_collect_quoted(run_dir):
    from canter.data.dataset_checks import missing_replay_error

    error = missing_replay_error(run_dir, run_dir / "checkpoints" / "last", {"trainer": {}}, {"algorithm": "ppo"})
    words = _command(str(error), "canter collect")
    assert words == ["canter", "collect", str(run_dir), "--out", "PATH"], words


# the siblings ee88fde3 left unquoted: Ctrl-C's resume line, a diverged run's save refusal, a run stopped before its
# first checkpoint, a config file without 'algo', a run file given as the config


@pytest.mark.parametrize("how", ["first_ctrl_c", "second_ctrl_c"])
def test_an_interrupted_runs_resume_line_quotes_its_run_dir(tmp_path, tiny_ppo, capsys, how):
    import canter
    from canter.cli import _drive

    def stop(trainer, losses):
        if how == "first_ctrl_c" and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"  # as a first Ctrl-C does
        elif how == "second_ctrl_c" and trainer.step >= 256:
            raise KeyboardInterrupt  # as a second Ctrl-C inside an iteration does

    run_dir = tmp_path / "my run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, **{**tiny_ppo, "max_steps": 1000, "eval_episodes": 0,
                                                                        "n_epochs": 1},
                              checkpoint_every=128, tensorboard=False, hooks={"after_update": stop})
    assert _drive(run) == 130
    line = capsys.readouterr().err.splitlines()[-1]
    assert line.startswith("interrupted at step" if how == "first_ctrl_c" else "interrupted; continue"), line
    words = _command(line + ")", "canter train --resume")
    assert words == ["canter", "train", "--resume", str(run_dir)], words


def test_a_diverged_runs_save_refusal_quotes_its_run_dir(tmp_path, tiny_ppo):
    import canter

    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "my run", **tiny_ppo, tensorboard=False)
    try:
        run.divergence = "the loss was NaN"
        with pytest.raises(CanterError) as info:
            run.save_resumable()
    finally:
        run.divergence = None
        run.close()
    words = _command(str(info.value), "canter train --resume")
    assert words[:4] == ["canter", "train", "--resume", str(tmp_path / "my run")]


def test_a_run_stopped_before_its_first_checkpoint_names_its_config_quoted(run_dir):
    from canter.run_dirs import stopped_before_checkpoint

    (run_dir / "config.yaml").write_text("algo: ppo\n")
    words = _command(stopped_before_checkpoint(run_dir).split(", or delete")[0] + ")", "canter train")
    assert words == ["canter", "train", "ppo", "-f", str(run_dir / "config.yaml"), "--run-dir", "NEW_DIR"], words


def test_a_config_file_without_algo_names_the_command_with_its_path_quoted(run_dir):
    from canter.cli_args import file_algo

    config = run_dir / "c.yaml"
    config.write_text("gamma: 0.9\n")
    with pytest.raises(CanterError) as info:
        file_algo(str(config))
    words = _command(str(info.value).split("(canter list")[0] + ")", "canter train ALGO")
    assert words == ["canter", "train", "ALGO", "-f", str(config)], words


def test_a_run_file_given_as_config_names_its_runs_config_quoted(run_dir):
    from canter.config_imports import load_config_file

    (run_dir / "config.yaml").write_text("algo: ppo\n")
    (run_dir / "summary.json").write_text('{"stop_reason": "max_steps", "wall_seconds": 1}')
    with pytest.raises(CanterError) as info:
        load_config_file(run_dir / "summary.json")
    words = _command(str(info.value).split("config (", 1)[1], "-f")
    assert words == ["-f", str(run_dir / "config.yaml")], words
