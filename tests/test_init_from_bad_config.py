"""``init_from`` a checkpoint whose JSON ``config`` was edited into something that is not a mapping (or whose
``hparams`` / ``policy_hparams`` is not one): a one-line error naming the checkpoint, exit 2, no run directory;
it was an AttributeError traceback ('list' object has no attribute 'get'), where canter.load said it in one line."""
from __future__ import annotations

import json
import shutil

import pytest

import canter
from canter.cli import main
from checkpoint_support import write_checkpoint_json


@pytest.fixture(scope="module")
def source_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("src") / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=128, n_envs=2, n_steps=64, eval_episodes=0,
                 tensorboard=False)
    return run_dir


@pytest.mark.parametrize("edit", [lambda c: [1], lambda c: {**c, "hparams": "x"},
                                  lambda c: {**c, "policy_hparams": ["x"]}], ids=["list", "hparams", "policy_hparams"])
def test_init_from_a_checkpoint_with_a_config_that_is_not_a_mapping_is_one_line(source_run, tmp_path, capsys, edit):
    src = tmp_path / "src"
    shutil.copytree(source_run, src)
    for path in (src / "checkpoints").glob("*.json"):
        meta = json.loads(path.read_text())
        meta["config"] = edit(meta["config"])
        write_checkpoint_json(path, meta)
    code = main(["train", "ppo", "--env", "CartPole-v1", "--set", f"init_from={src}", "--max-steps", "64",
                 "--eval-episodes", "0", "--run-dir", str(tmp_path / "new"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"init_from: checkpoint {src / 'checkpoints' / 'last'} has no valid 'config'" in err, err
    assert not (tmp_path / "new").exists()
