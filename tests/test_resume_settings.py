"""Settings that change no learning may change on resume (canter/resume_settings.py): keep_checkpoints,
checkpoint_every and wandb, from ``canter train --resume RUN --keep-checkpoints K --checkpoint-every N --wandb`` and
``canter.resume(RUN, keep_checkpoints=K, ...)``. The resumed run learns exactly what it learns resumed without the
change (returns, losses, evaluations at the same steps, final weights), saves the new value in config.yaml and its
``last`` (a later resume keeps it, and is not refused as a hand edit); the other settings stay refused."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch
import yaml

import canter
from canter.checkpoint import load_checkpoint
from canter.checkpoint_keep import periodic_checkpoints
from canter.errors import CanterError
from support import TINY_ARGV, assert_one_line_error, run_cli

#: a tiny PPO run: one 64-step iteration per record, a periodic checkpoint every 64 steps
PPO = dict(n_envs=1, n_steps=64, batch_size=64, n_epochs=1, net_arch=[8], eval_every=128, eval_episodes=1,
           checkpoint_every=64, tensorboard=False)


def _stop_at_128(trainer, losses) -> None:
    if trainer.step >= 128:
        trainer.stop_requested = "interrupted"


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> Path:
    """A PPO run stopped (resumably) at step 128 of 384, every periodic checkpoint kept."""
    run_dir = tmp_path_factory.mktemp("settings") / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=384, hooks={"after_update": _stop_at_128}, **PPO)
    assert json.loads((run_dir / "checkpoints" / "last.json").read_text())["step"] == 128
    return run_dir


def _copy(stopped: Path, tmp_path: Path, name: str) -> Path:
    shutil.copytree(stopped, tmp_path / name)
    return tmp_path / name


def _rows(run_dir: Path, name: str) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("wall_time", "steps_per_second")}
            for r in pq.read_table(run_dir / f"{name}.parquet").to_pylist()]


def _tensors(tree, prefix: str = "") -> dict:
    if isinstance(tree, dict):
        return {k: v for key, value in tree.items() for k, v in _tensors(value, f"{prefix}.{key}").items()}
    return {prefix: tree}


def assert_learned_the_same(run_dir: Path, reference: Path, tables=("history", "updates", "evaluations")) -> None:
    """Bitwise the same rows (returns, losses, evaluations at the same steps) and final agent state."""
    for name in tables:
        assert _rows(run_dir, name) == _rows(reference, name), name
    got, want = (_tensors(load_checkpoint(d / "checkpoints" / "last")[0]["agent"]) for d in (run_dir, reference))
    assert got.keys() == want.keys() and len(got) > 4
    for key, value in want.items():
        assert torch.equal(got[key], value) if isinstance(value, torch.Tensor) else got[key] == value, key


def _saved(run_dir: Path) -> tuple[dict, dict]:
    """(config.yaml, last's config)."""
    return (yaml.safe_load((run_dir / "config.yaml").read_text()),
            json.loads((run_dir / "checkpoints" / "last.json").read_text())["config"])


@pytest.mark.parametrize("settings, steps, later", [
    ({"keep_checkpoints": 2}, [320, 384], [448, 512]),
    ({"checkpoint_every": 128}, [64, 128, 256, 384], [64, 128, 256, 384, 512]),  # the next multiples of 128 after 128
    ({"checkpoint_every": 96}, [64, 128, 192, 320, 384], [64, 128, 192, 320, 384, 512]),  # 288 is saved at 320
    ({"checkpoint_every": 0}, [64, 128], [64, 128]),  # none any more (the old grid's 192 is not saved)
    ({"keep_checkpoints": 1, "checkpoint_every": 128}, [384], [512]),
])
def test_a_resume_changes_checkpoint_settings_and_learns_exactly_the_same(stopped, tmp_path, settings, steps, later):
    reference, changed = _copy(stopped, tmp_path, "plain"), _copy(stopped, tmp_path, "changed")
    canter.resume(reference)
    canter.resume(changed, **settings)
    assert_learned_the_same(changed, reference)
    assert sorted(periodic_checkpoints(changed / "checkpoints")) == steps
    for config in _saved(changed):
        assert {k: config[k] for k in settings} == settings
    # a later resume keeps them (config.yaml is not taken for a hand edit)
    canter.resume(changed, max_steps=512)
    for config in _saved(changed):
        assert {k: config[k] for k in settings} == settings
    assert sorted(periodic_checkpoints(changed / "checkpoints")) == later


def test_the_cli_resume_takes_the_settings(stopped, tmp_path, capsys):
    reference, changed = _copy(stopped, tmp_path, "plain"), _copy(stopped, tmp_path, "changed")
    canter.resume(reference)
    code, _, err = run_cli(capsys, "train", "--resume", str(changed), "--keep-checkpoints", "1",
                           "--checkpoint-every", "1.28e2", "--quiet")
    assert code == 0, err
    assert_learned_the_same(changed, reference)
    assert sorted(periodic_checkpoints(changed / "checkpoints")) == [384]
    for config in _saved(changed):
        assert (config["keep_checkpoints"], config["checkpoint_every"]) == (1, 128)


def test_keep_all_again_from_the_cli(stopped, tmp_path, capsys):
    run_dir = _copy(stopped, tmp_path, "run")
    canter.resume(run_dir, keep_checkpoints=1, max_steps=256)
    assert sorted(periodic_checkpoints(run_dir / "checkpoints")) == [256]
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--max-steps", "384", "--keep-checkpoints", "all",
                           "--quiet")
    assert code == 0, err
    assert sorted(periodic_checkpoints(run_dir / "checkpoints")) == [256, 320, 384]
    assert all(config["keep_checkpoints"] is None for config in _saved(run_dir))


def test_an_offline_run_changes_checkpoint_every_and_learns_the_same(tmp_path):
    """An offline iteration ends where a periodic checkpoint is due: the updates (and minibatches) are the same."""
    from canter.data.dataset import collect

    collect("CartPole-v1", 200, None, seed=0).save(tmp_path / "data")
    stop = {"after_update": lambda trainer, losses: trainer.step >= 40 and setattr(trainer, "stop_requested",
                                                                                     "interrupted")}
    base = tmp_path / "base"
    canter.train("bc", dataset=str(tmp_path / "data"), max_steps=100, gradient_steps=10, eval_every=30,
                 eval_episodes=1, net_arch=[16], checkpoint_every=20, run_dir=base, hooks=stop)
    reference, changed = _copy(base, tmp_path, "plain"), _copy(base, tmp_path, "changed")
    canter.resume(reference)
    canter.resume(changed, checkpoint_every=25, keep_checkpoints=2)
    assert_learned_the_same(changed, reference, tables=("history", "evaluations"))
    assert sorted(periodic_checkpoints(changed / "checkpoints")) == [75, 100]  # 50, 75, 100 on the new grid
    # its iterations were cut at 75 for the checkpoint (and at 90 for the evaluation): other update rows, the same
    # updates (the weights above)
    assert [r["step"] for r in _rows(changed, "updates")][-4:] == [75, 85, 90, 100]
    assert [r["step"] for r in _rows(reference, "updates")][-4:] == [70, 80, 90, 100]


@pytest.mark.slow
def test_wandb_on_and_off_on_resume_learns_the_same(stopped, tmp_path, monkeypatch, capsys):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    reference, changed = _copy(stopped, tmp_path, "plain"), _copy(stopped, tmp_path, "changed")
    canter.resume(reference)
    stop = {"after_update": lambda trainer, losses: trainer.step >= 256 and setattr(trainer, "stop_requested",
                                                                                      "interrupted")}
    canter.resume(changed, wandb=True, hooks=stop)
    assert (changed / "wandb" / "canter-run-id").is_file()
    assert all(config["wandb"] is True for config in _saved(changed))
    code, _, err = run_cli(capsys, "train", "--resume", str(changed), "--no-wandb", "--quiet")
    assert code == 0, err
    assert all(config["wandb"] is False for config in _saved(changed))
    assert_learned_the_same(changed, reference)


def test_settings_that_change_learning_stay_refused(stopped, tmp_path, capsys):
    run_dir = _copy(stopped, tmp_path, "run")
    before = (run_dir / "checkpoints" / "last.json").read_bytes()
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--seed", "3")
    # the list named --wandb without --no-wandb, which --resume takes too (README's synopsis, found auditing the docs)
    assert_one_line_error(code, err, "--seed",
                          "--keep-checkpoints, --checkpoint-every, --wandb / --no-wandb, --explorer-timeout, --ray-address and --quiet")
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--eval-every", "64")
    assert_one_line_error(code, err, "--eval-every")
    for key in ("seed", "n_envs", "eval_every", "eval_episodes", "lr", "hparams"):
        with pytest.raises(CanterError, match=f"'{key}' cannot change when a run is resumed"):
            canter.resume(run_dir, **{key: 3})
    with pytest.raises(CanterError, match="unknown resume argument 'keep_checkpoint'; did you mean 'keep_checkpoints'"):
        canter.resume(run_dir, keep_checkpoint=3)
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--keep-checkpoints", "0")
    assert_one_line_error(code, err, "keep_checkpoints")
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--keep-checkpoints", "2",
                           "--checkpoint-every", "0")
    assert_one_line_error(code, err, "--keep-checkpoints", "checkpoint_every: 0")
    assert (run_dir / "checkpoints" / "last.json").read_bytes() == before


def test_a_changed_setting_in_config_yaml_not_given_again_is_refused_with_the_flag(stopped, tmp_path, capsys):
    """As a resume given --keep-checkpoints and killed before its next 'last' leaves config.yaml: the next resume
    says how to go on with that value, and does with it."""
    run_dir = _copy(stopped, tmp_path, "run")
    path = run_dir / "config.yaml"
    path.write_text(path.read_text().replace("keep_checkpoints: null", "keep_checkpoints: 1"))
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--quiet")
    assert_one_line_error(code, err, "keep_checkpoints: 1", f"canter train --resume {run_dir} --keep-checkpoints 1")
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--keep-checkpoints", "1", "--quiet")
    assert code == 0, err
    assert sorted(periodic_checkpoints(run_dir / "checkpoints")) == [384]


def test_a_new_run_takes_checkpoint_every_as_a_flag(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *TINY_ARGV, "--checkpoint-every", "128",
                           "--keep-checkpoints", "1", "--run-dir", str(run_dir))
    assert code == 0, err
    assert sorted(periodic_checkpoints(run_dir / "checkpoints")) == [256]
    assert all((config["checkpoint_every"], config["keep_checkpoints"]) == (128, 1) for config in _saved(run_dir))


def test_keep_checkpoints_on_a_run_without_periodic_checkpoints_says_to_give_checkpoint_every(tmp_path, capsys):
    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=256, hooks={"after_update": _stop_at_128},
                 **{**PPO, "checkpoint_every": 0})
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--keep-checkpoints", "1")
    assert_one_line_error(code, err, "checkpoint_every: 0", "give --checkpoint-every N too")
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--keep-checkpoints", "1",
                           "--checkpoint-every", "64", "--quiet")
    assert code == 0, err
    assert sorted(periodic_checkpoints(run_dir / "checkpoints")) == [256]
