"""A ``canter.resume`` refused for a hand-edited config.yaml setting it may change is told the keyword that gives it
again (``canter.resume(RUN, checkpoint_every=16)``), as its other errors name keywords, not
``canter train --resume``'s options: the hint was the command line's whatever the caller."""
from __future__ import annotations

import pytest

import canter
from support import assert_one_line_error, run_cli

TINY = dict(max_steps=16, n_envs=1, n_steps=8, eval_episodes=0, tensorboard=False, quiet=True, checkpoint_every=8)


@pytest.fixture
def edited(tmp_path):
    """A finished run whose config.yaml was edited to checkpoint_every: 16 (it saved 8)."""
    run_dir = tmp_path / "bob's run"
    canter.train("a2c", "CartPole-v1", run_dir=run_dir, **TINY)
    path = run_dir / "config.yaml"
    assert "checkpoint_every: 8\n" in path.read_text()
    path.write_text(path.read_text().replace("checkpoint_every: 8\n", "checkpoint_every: 16\n"))
    return run_dir


def test_canter_resume_is_told_the_keyword(edited):
    with pytest.raises(canter.CanterError) as info:
        canter.resume(edited, max_steps=32)
    message = str(info.value)
    assert "canter train" not in message and "--checkpoint-every" not in message, message
    assert f"canter.resume({str(edited)!r}, checkpoint_every=16) (or undo the edit)" in message, message


def test_the_command_line_is_still_told_the_option(edited, capsys):
    code, _, err = run_cli(capsys, "train", "--resume", str(edited), "--max-steps", "32")
    assert_one_line_error(code, err, "--checkpoint-every 16 (or undo the edit)")


def test_canter_resume_edited_elsewhere_is_told_keywords_and_canter_train(tmp_path):
    """An edit of a setting a resume may not change: canter.resume was told --max-steps ... and
    'canter train ALGO -f RUN/config.yaml --run-dir NEW_DIR'."""
    run_dir = tmp_path / "run"
    canter.train("a2c", "CartPole-v1", run_dir=run_dir, **{**TINY, "checkpoint_every": 0})
    path = run_dir / "config.yaml"
    path.write_text(path.read_text().replace("eval_episodes: 0\n", "eval_episodes: 3\n"))
    with pytest.raises(canter.CanterError) as info:
        canter.resume(run_dir, max_steps=32)
    message = str(info.value)
    assert "--" not in message and "canter train" not in message, message
    assert "(only max_steps, max_seconds, a moved dataset's dataset, keep_checkpoints" in message, message
    assert message.endswith(f"canter.train(config_file={str(path)!r}, run_dir=NEW_DIR)"), message


def test_canter_resume_given_a_setting_it_may_not_change_is_told_canter_train(edited):
    """canter.resume(RUN, seed=3) was told 'start a new run: canter train ALGO -f RUN_DIR/config.yaml --run-dir
    NEW_DIR', the command line's, where the edited-config refusal (ed521861) tells canter.resume canter.train."""
    with pytest.raises(canter.CanterError) as info:
        canter.resume(edited, max_steps=32, seed=3)
    message = str(info.value)
    assert message.startswith("'seed' cannot change when a run is resumed"), message
    assert "canter train" not in message and "--" not in message, message
    assert message.endswith(f"canter.train(config_file={str(edited / 'config.yaml')!r}, run_dir=NEW_DIR)"), message


def test_canter_resume_of_a_damaged_config_yaml_names_canter_resume(edited, capsys):
    """A config.yaml that no longer reads as a mapping told canter.resume '--resume would replace it'."""
    (edited / "config.yaml").write_text("algo: [unclosed\n")
    with pytest.raises(canter.CanterError) as info:
        canter.resume(edited, max_steps=32)
    message = str(info.value)
    assert "; canter.resume would replace it with the config saved in checkpoints/last" in message, message
    assert "--resume" not in message, message
    code, _, err = run_cli(capsys, "train", "--resume", str(edited), "--max-steps", "32")
    assert_one_line_error(code, err, "; --resume would replace it with the config saved in checkpoints/last")
