"""A turn-based run keeps a copy of each frozen opponent (RUN_DIR/opponents/, canter.envs.opponents): training,
--resume, canter eval / play / collect and canter.evaluate play the copy, whatever became of the opponent's run."""
from __future__ import annotations

import json
import shutil
import warnings

import pytest
import torch
import yaml

import canter
from canter.checkpoint_keep import periodic_checkpoints
from support import assert_one_line_error, assert_train_refused, run_cli

pytest.importorskip("pettingzoo")
TTT = "pettingzoo:pettingzoo.classic.tictactoe_v3"
TINY = dict(env=TTT, n_envs=2, n_steps=32, batch_size=64, n_epochs=1, eval_every=64, eval_episodes=2,
            tensorboard=False, quiet=True)


def _train_further(run_dir) -> None:
    """The opponent's run saves a new best (another policy), as training further would."""
    opponent = canter.load(run_dir)
    with torch.no_grad():
        next(opponent.algorithm.model.parameters()).add_(0.5)
    opponent.save(run_dir / "checkpoints" / "best")


def _interrupt(trainer, losses) -> None:
    """As a Ctrl-C would: the run saves its resume state and stops (tests/test_determinism.py)."""
    if trainer.step >= 64 and trainer.stop_requested is None:
        trainer.stop_requested = "interrupted"


def _assert_resumed_equals_whole(tmp_path, resumed, whole) -> None:
    """The resumed run's whole state (weights, optimizers, statistics) and evaluations are the uninterrupted run's."""
    import pyarrow.parquet as pq

    from canter.checkpoint import flatten_state

    skeleton_a, a = flatten_state(whole.state_dict())
    skeleton_b, b = flatten_state(resumed.state_dict())
    assert skeleton_a == skeleton_b and [k for k in a if not torch.equal(a[k], b[k])] == []
    returns = [pq.read_table(tmp_path / r / "evaluations.parquet").column("mean_return").to_pylist()
               for r in ("whole", "run")]
    assert returns[0] == returns[1] and len(returns[0]) == 2
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["resume_exact"] is True


@pytest.mark.slow
def test_a_resumed_run_plays_its_copy_after_the_opponents_run_trained_further_and_was_deleted(tmp_path, capsys):
    """The run reloaded its opponent on --resume: after the opponent's run trained further the resumed run played
    another policy (warned, resume_exact: false), and once that run was deleted canter eval / play / collect of
    the run stopped ("opponent ... is neither random nor self ..."). Now it plays its copy: the resume equals the
    uninterrupted run, and the run works without the opponent's run."""
    opp = tmp_path / "opp"
    canter.train("ppo", max_steps=64, run_dir=opp, **TINY)
    pool = {"opponent": [str(opp), "random", str(opp / "checkpoints" / "best"), str(opp)]}  # one checkpoint, 3 ways
    whole = canter.train("ppo", max_steps=128, run_dir=tmp_path / "whole", env_kwargs=pool, **TINY)
    canter.train("ppo", max_steps=128, run_dir=tmp_path / "run", env_kwargs=pool, hooks={"after_update": _interrupt},
                 **TINY)
    files = sorted(p.name for p in (tmp_path / "run" / "opponents").iterdir())
    assert files == ["opp-best.json", "opp-best.safetensors", "opponents.json"]  # one copy of the one checkpoint
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["opponent_snapshots"] == {str(opp): "opponents/opp-best",
                                             str(opp / "checkpoints" / "best"): "opponents/opp-best"}
    config = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert config["env_kwargs"] == pool  # the paths as given (absolute), and nothing of the copies
    _train_further(opp)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "opponent ... has saved another checkpoint" warning
        resumed = canter.resume(tmp_path / "run")
    _assert_resumed_equals_whole(tmp_path, resumed, whole)
    shutil.rmtree(opp)
    shutil.move(tmp_path / "run", tmp_path / "moved")  # (to another machine, say)
    code, out, err = run_cli(capsys, "eval", str(tmp_path / "moved"), "--episodes", "2", "--json")
    assert code == 0, err
    assert json.loads(out)["episodes"] == 2
    assert run_cli(capsys, "play", str(tmp_path / "moved"))[0] == 0
    code, _, err = run_cli(capsys, "collect", str(tmp_path / "moved"), "--out", str(tmp_path / "data"),
                           "--transitions", "20")
    assert code == 0, err
    recorded = json.loads((tmp_path / "data.json").read_text())["env_kwargs"]
    assert recorded == pool  # the dataset names the opponents, not the run's files
    assert canter.evaluate(canter.load(tmp_path / "moved"), episodes=2).mean_return in (-1.0, -0.5, 0.0, 0.5, 1.0)


@pytest.mark.slow
def test_a_pool_with_a_periodic_checkpoint_that_its_run_prunes(tmp_path, capsys):
    """An opponent named by another run's step-N checkpoint, which that run's keep_checkpoints deletes later:
    the run that plays it resumes exactly, and canter eval of it still works."""
    opp = tmp_path / "opp"
    canter.train("ppo", max_steps=128, run_dir=opp, checkpoint_every=64, **TINY)
    step = opp / "checkpoints" / "step-000000064"
    pool = {"opponent": ["random", str(step)]}
    whole = canter.train("ppo", max_steps=128, run_dir=tmp_path / "whole", env_kwargs=pool, **TINY)
    canter.train("ppo", max_steps=128, run_dir=tmp_path / "run", env_kwargs=pool, hooks={"after_update": _interrupt},
                 **TINY)
    canter.resume(opp, max_steps=256, keep_checkpoints=1)
    assert list(periodic_checkpoints(opp / "checkpoints")) == [256]  # step-000000064 was pruned
    _assert_resumed_equals_whole(tmp_path, canter.resume(tmp_path / "run"), whole)
    assert run_cli(capsys, "eval", str(tmp_path / "run"), "--episodes", "2")[0] == 0


def test_bad_opponents_and_a_missing_copy_are_one_line(tmp_path, capsys):
    """Refused before anything is written: an opponent run without a checkpoint, canter's own key given by hand;
    a run whose copy of its opponent was deleted names it (eval and --resume)."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.yaml").write_text("algo: ppo\n")
    argv = ["train", "ppo", "--env", TTT, "--max-steps", "64", "--set", "n_steps=32", "--n-envs", "2"]
    assert_train_refused(capsys, tmp_path, [*argv, "--set", f"env_kwargs={{opponent: {tmp_path / 'empty'}}}"],
                         "has no checkpoint yet")
    for given in ("env_kwargs={opponent: random, opponent_snapshots: {}}", "eval_env_kwargs={opponent_snapshots: {}}"):
        assert_train_refused(capsys, tmp_path, [*argv, "--set", given], "opponent_snapshots is canter's own")
    canter.train("ppo", max_steps=32, run_dir=tmp_path / "opp", **TINY)
    canter.train("ppo", max_steps=32, run_dir=tmp_path / "run", env_kwargs={"opponent": str(tmp_path / "opp")},
                 **TINY)
    (tmp_path / "run" / "opponents" / "opp-best.safetensors").unlink()
    (tmp_path / "run" / "opponents" / "opp-best.json").unlink()
    for command in (["eval", str(tmp_path / "run")], ["train", "--resume", str(tmp_path / "run"), "--max-steps", "128", "--quiet"]):
        code, _, err = run_cli(capsys, *command)
        assert_one_line_error(code, err, "snapshot of opponent", "opp-best", "is missing")
    (tmp_path / "run" / "opponents" / "opponents.json").write_text('{"format": "canter-opponents", "opponents": [')
    assert_one_line_error(*run_cli(capsys, "eval", str(tmp_path / "run"))[::2], "is not an opponents index canter wrote")
