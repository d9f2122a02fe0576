"""--resume of a run that its target, early stopping or a callback stopped said only 'already finished (stop reason:
early_stopping); nothing to resume', where a run that its budget stopped is told how to extend it: no budget trains
such a run on (the stop would stop it again), and the line now names the new run from its agent (init_from) that does,
without that stop. The command it names is run here and trains."""
from __future__ import annotations

import json

import pytest

import canter
from canter.errors import CanterError
from support import assert_one_line_error, run_cli_paths

TINY = ["--max-steps", 1024, "--eval-every", 256, "--eval-episodes", 1, "--set", "n_envs=2", "--set", "n_steps=32"]


@pytest.mark.parametrize("stop, drop", [(["--set", "early_stopping=1", "--set", "min_delta=1e9"],
                                         "--set early_stopping=null"),
                                        (["--target-reward", -1e9], "--target-reward null")])
def test_resume_of_a_run_its_stop_criterion_ended_names_the_new_run_that_trains_on(capsys, tmp_path, stop, drop):
    run = tmp_path / "run"
    code, _, err = run_cli_paths(capsys, "train", "ppo", "--env", "CartPole-v1", *TINY, *stop, "--run-dir", run,
                                 "--quiet")
    assert code == 0, err
    reason = json.loads((run / "summary.json").read_text())["stop_reason"]
    assert reason in ("early_stopping", "target_reward")
    code, _, err = run_cli_paths(capsys, "train", "--resume", run, "--max-steps", 4096, "--quiet")
    line = assert_one_line_error(code, err, f"already finished (stop reason: {reason})")
    command = f"canter train -f {run}/config.yaml --set init_from={run} {drop} --run-dir NEW_DIR"
    assert line.endswith(f"start a new run from it: {command}"), line
    new = tmp_path / "new"
    code, _, err = run_cli_paths(capsys, *command.split()[1:-1], new, "--max-steps", 512, "--quiet")
    assert code == 0, err
    summary = json.loads((new / "summary.json").read_text())
    assert summary["stop_reason"] == "max_steps" and summary["steps"] == 512


def test_canter_resume_names_the_python_call():
    with pytest.raises(CanterError, match=r"canter.train\(config_file='.*/config.yaml', init_from='.*', "
                                          r"target_reward=None, run_dir=NEW_DIR\)"):
        from canter.resume_settings import check_continues

        check_continues(__import__("pathlib").Path("RUN"), {"stop_reason": "target_reward", "step": 512},
                        canter.make_trainer("ppo", "CartPole-v1", max_steps=1024).run, 2048, None, flags=False)


def test_a_run_directory_with_a_space_is_quoted_in_the_command(tmp_path):
    """The command was pasted together unquoted: a run directory with a space split into two arguments."""
    import shlex

    from canter.resume_settings import check_continues

    run = tmp_path / "my run"
    trainer = canter.make_trainer("ppo", "CartPole-v1", max_steps=1024)
    with pytest.raises(CanterError) as info:
        check_continues(run, {"stop_reason": "target_reward", "step": 512}, trainer.run, 2048, None, flags=True)
    trainer.close()
    words = shlex.split(str(info.value).split("start a new run from it: ")[1])
    assert words[:6] == ["canter", "train", "-f", f"{run}/config.yaml", "--set", f"init_from={run}"]
