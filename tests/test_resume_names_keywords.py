"""A resume's refusals name the settings as they were given: ``canter train --resume``'s options
(``--max-steps N``), ``canter.resume``'s keywords (``max_steps=N``)."""
from __future__ import annotations

import pytest

import canter
from canter.errors import CanterError
from support import assert_one_line_error, run_cli

TINY = dict(max_steps=64, n_envs=1, n_steps=32, batch_size=32, n_epochs=1, eval_every=0, eval_episodes=1, quiet=True)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("resume_names") / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, checkpoint_every=0, **TINY)
    return run_dir


def test_canter_resume_names_its_keywords_not_the_options(finished):
    """canter.resume(run, max_steps=10) said '--max-steps must be more than its 64 steps', an option Python has no
    use for; it now names the keyword, as other API errors do. The command line still names its options."""
    with pytest.raises(CanterError, match=r"; max_steps must be more than its 64 steps to extend it, got 10$"):
        canter.resume(finished, max_steps=10)
    with pytest.raises(CanterError, match=r"nothing to resume; pass max_steps=N to extend it$"):
        canter.resume(finished)
    with pytest.raises(CanterError, match=r"^keep_checkpoints keeps .*: give checkpoint_every=N too$"):
        canter.resume(finished, keep_checkpoints=1)
    with pytest.raises(CanterError, match=r"^ray_address names .*: drop ray_address$"):
        canter.resume(finished, ray_address="127.0.0.1:1")


def test_canter_train_resume_names_its_options(finished, capsys):
    code, _, err = run_cli(capsys, "train", "--resume", str(finished), "--max-steps", "10")
    assert_one_line_error(code, err, "; --max-steps must be more than its 64 steps to extend it, got 10")
    code, _, err = run_cli(capsys, "train", "--resume", str(finished))
    assert_one_line_error(code, err, "nothing to resume; pass --max-steps N to extend it")
    code, _, err = run_cli(capsys, "train", "--resume", str(finished), "--keep-checkpoints", "1")
    assert_one_line_error(code, err, "give --checkpoint-every N too")


def test_canter_resume_names_the_dataset_keyword(finished):
    """The refusals of a moved dataset's path (resume_dataset), a sibling of those above, still named --dataset
    and gave 'canter train --resume RUN --dataset NEW_PATH' to canter.resume's caller."""
    with pytest.raises(CanterError, match=r"^dataset is for runs of offline algorithms .*: drop dataset$"):
        canter.resume(finished, max_steps=128, dataset="elsewhere.safetensors")
    with pytest.raises(CanterError, match=r"^dataset needs the path .*: canter.resume\('.*', dataset=NEW_PATH\)$"):
        canter.resume(finished, max_steps=128, dataset=" ")


def test_canter_train_resume_names_the_dataset_option(finished, capsys):
    code, _, err = run_cli(capsys, "train", "--resume", str(finished), "--max-steps", "128", "--dataset", "x.safetensors")
    assert_one_line_error(code, err, "--dataset is for runs of offline algorithms", "drop --dataset")
